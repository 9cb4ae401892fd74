//! The second step of `#[tool]`: every rule a tool must meet, each reported on the token it is
//! about, and the [`Tool`] model codegen reads. A rule that fails is reported here and its
//! consequence recorded in the model ([`Emit`], a default), never passed on as a flag.

use super::model::{ArgField, Body, Capability, Emit, Handler, Param, ParamKind, Permission, Tool};
use super::parse::{Policy, ToolArgs, ToolFn};
use crate::context::Errors;
use crate::util::type_string;
use agents_core::{Risk, Tier};
use proc_macro2::Span;
use quote::ToTokens;
use syn::{FnArg, Ident, LitStr, Pat, Signature, Token, Type};

/// The tool's name: `name = "..."`, or the function's name without `r#`.
pub(crate) fn tool_name(func: &ToolFn, args: &ToolArgs) -> String {
    args.name.as_ref().map(LitStr::value).unwrap_or_else(|| func.plain_name())
}

/// Applies every rule to the function and its arguments; the model is complete even when a
/// rule failed (its errors are in `errors`), so that the expansion still declares the tool.
pub(crate) fn check<'f>(func: &'f ToolFn, args: ToolArgs, errors: &Errors) -> Tool<'f> {
    let name = tool_name(func, &args);
    check_values(&args, errors);
    let description = description(func, &name, errors);
    let tier = tier(func, &args, &name, errors);
    let mut emit = Emit::default();
    if returns_nothing(func, tier, &name, errors) {
        emit.handler = Handler::Stub;
    }
    let permission = permission(func, &args, &name, errors);
    check_policy(&args.policy, errors);
    let (agent, uses, use_types) = agent_and_uses(&func.sig, &name, errors);
    if let Some(at) = args.isolated {
        check_isolated(at, &args.policy, tier, agent, &name, errors);
    }
    let params = params(&func.sig, &args, &name, errors);
    check_contexts(func, &params, agent, &uses, &name, errors, &mut emit);
    let args_fields = arg_fields(func, &params, tier, &name, errors);
    if let Some(target) = &args.handoff_target {
        super::handoff::check(target, &args_fields, &name, errors);
    }
    Tool {
        func,
        plain_name: func.plain_name(),
        name,
        description: description.unwrap_or_default(),
        title: args.title.as_ref().map(LitStr::value),
        permission,
        tier,
        risk: args.risk.map(|r| r.0).unwrap_or(Risk::Medium),
        isolated: args.isolated.is_some(),
        egress: args.egress.is_some(),
        policy: args.policy,
        params,
        args: args_fields,
        agent,
        uses,
        use_types,
        handoff: args.handoff_target,
        emit,
    }
}

/// The values given to `title` and `name`.
fn check_values(args: &ToolArgs, errors: &Errors) {
    if let Some(title) = &args.title
        && title.value().trim().is_empty()
    {
        errors.spanned(title, "the `title` is what a person reads before approving: it cannot be empty");
    }
    if let Some(name) = &args.name {
        let v = name.value();
        if v.is_empty() || v.len() > 64 || !v.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-') {
            errors.spanned(name, "a tool name is 1 to 64 characters of `a-z`, `A-Z`, `0-9`, `_` and `-`");
        }
    }
}

/// The description the model and the reviewer read: the doc comment without its
/// `# Arguments` section, which the parameters' schemas carry instead.
fn description(func: &ToolFn, name: &str, errors: &Errors) -> Option<String> {
    let description = crate::util::doc_string(&func.attrs)
        .map(|d| crate::util::without_arguments_section(&d))
        .filter(|d| !d.is_empty());
    if description.is_none() {
        errors.spanned(
            &func.sig.ident,
            format!("tool `{name}` has no description: add a doc comment (`/// ...`) above it saying what it does; the model and the reviewer read it"),
        );
    }
    description
}

/// The tier, from `mutating` and `handoff`, and what each tier needs: an action its title, a
/// read or action tool its body, a handoff tool none.
fn tier(func: &ToolFn, args: &ToolArgs, name: &str, errors: &Errors) -> Tier {
    let tier = match (args.mutating, args.handoff) {
        (Some(_), Some(h)) => {
            errors.at(h, "a tool is either `mutating` (an action a person confirms) or `handoff` (no execution path), not both; remove one");
            Tier::Handoff
        }
        (Some(_), None) => Tier::Action,
        (None, Some(_)) => Tier::Handoff,
        (None, None) => Tier::Read,
    };
    if tier == Tier::Action && args.title.is_none() && args.complete {
        errors.at(
            args.mutating.unwrap_or_else(Span::call_site),
            format!("action tool `{name}` needs a `title`: the text a person reads before approving, e.g. `title = \"Record injury\"`"),
        );
    }
    match (&func.body, tier) {
        (Some(body), Tier::Handoff) => errors.at(
            body.span(),
            format!("handoff tool `{name}` has a body, but a handoff tool has no execution path: remove the body and end the signature with `;`"),
        ),
        (None, Tier::Read | Tier::Action) => errors.spanned(
            &func.sig,
            format!("tool `{name}` has no body; only a `handoff` tool is written without one"),
        ),
        _ => {}
    }
    tier
}

/// A tool returns `Result<T, E>`; one that returns nothing is told so at its signature (its
/// handler is then a stub, so nothing else is reported).
fn returns_nothing(func: &ToolFn, tier: Tier, name: &str, errors: &Errors) -> bool {
    let nothing = matches!(func.sig.output, syn::ReturnType::Default) && tier != Tier::Handoff;
    if nothing {
        errors.at(
            func.sig.paren_token.span.close(),
            format!("tool `{name}` returns nothing, but a tool returns `Result<T, E>`: its value is sent to the model, its error is shown when it fails\nhelp: declare what it returns, e.g. `-> Result<String, String>`, and end the body with `Ok(...)`"),
        );
    }
    nothing
}

/// The permission: `public` or a declared one; a tool without one is refused (and declared
/// `public` in the expansion, so that nothing else is reported).
fn permission(func: &ToolFn, args: &ToolArgs, name: &str, errors: &Errors) -> Permission {
    let declared = args.permission.as_ref().and_then(|path| {
        let permission = Permission::of(path);
        if permission.is_none() {
            errors.spanned(
                path,
                "write the permission as the path of a declared permission ending in `area::action` (e.g. `perms::athlete::read`), or `public`",
            );
        }
        permission
    });
    if declared.is_none() && args.complete {
        errors.spanned(
            &func.sig.ident,
            format!("tool `{name}` needs a `permission`: `permission = perms::area::action` for a declared permission, or `permission = public` for a tool any user may call"),
        );
    }
    declared.unwrap_or(Permission::Public)
}

/// Policy entries are read by `agents_core::policy`, the one definition the manifest parser,
/// the runtime's matchers and the manifest diff share: an entry they would read differently
/// from the manifest, or that can never match, is refused here.
fn check_policy(policy: &Policy, errors: &Errors) {
    for lit in policy.fs_read.iter().chain(&policy.fs_write) {
        let g = lit.value();
        if let Err(e) = agents_core::policy::Glob::parse(&g) {
            errors.spanned(lit, if g.is_empty() { e.to_string() } else { format!("invalid glob `{g}`: {e}") });
        }
    }
    for lit in &policy.net_hosts {
        let h = lit.value();
        if let Err(e) = agents_core::policy::HostPattern::parse(&h) {
            errors.spanned(lit, format!("invalid host `{h}`: {e}"));
        }
    }
    for lit in &policy.env_vars {
        let v = lit.value();
        if let Err(e) = agents_core::policy::check_env_var(&v) {
            errors.spanned(lit, format!("invalid environment variable name `{v}`: {e}"));
        }
    }
}

/// What `isolated` needs: an execution path, no nested calls (they cannot cross the process
/// boundary), a literal directory root for every glob (the kernel's rules are set on
/// directories) and a port for every host (the kernel's network rules are per TCP port).
fn check_isolated(at: Span, policy: &Policy, tier: Tier, agent: Option<&syn::TypeParam>, name: &str, errors: &Errors) {
    if tier == Tier::Handoff {
        errors.at(
            at,
            format!("handoff tool `{name}` has no execution path, so there is nothing to isolate; remove `isolated`"),
        );
    }
    if let Some(a) = agent {
        errors.spanned(
            a,
            format!("isolated tool `{name}` cannot invoke other tools: its calls run in a separate process, outside the gate; remove the agent parameter or `isolated`"),
        );
    }
    for g in policy.fs_read.iter().chain(&policy.fs_write) {
        let text = g.value();
        if agents_core::policy::Glob::parse(&text).is_ok() && agents_core::policy::glob_literal_root(&text).is_none() {
            errors.spanned(
                g,
                format!("isolated tool `{name}`: the glob `{text}` has no literal directory root; the kernel confines an isolated tool to directories, so begin the glob with an absolute directory below `/`, e.g. `/srv/app/{}`", text.trim_start_matches('/')),
            );
        }
    }
    for h in &policy.net_hosts {
        let text = h.value();
        let port = text.rsplit_once(':').and_then(|(_, p)| p.parse::<u16>().ok());
        if agents_core::policy::HostPattern::parse(&text).is_ok() && port.is_none() {
            errors.spanned(
                h,
                format!("isolated tool `{name}`: the host `{text}` has no port; the kernel's network rules for an isolated tool are per TCP port, so write one, e.g. `{text}:443`"),
            );
        }
    }
}

/// The agent type parameter, if any, and the tools the tool invokes, from its `Grants<...>`
/// bounds: the identifiers as written (for the manifest entry; `agent!` maps them to tool
/// names) and the types (for the spec).
fn agent_and_uses<'f>(
    sig: &'f Signature,
    name: &str,
    errors: &Errors,
) -> (Option<&'f syn::TypeParam>, Vec<String>, Vec<syn::TypePath>) {
    let mut agent: Option<&syn::TypeParam> = None;
    for gp in &sig.generics.params {
        match gp {
            syn::GenericParam::Type(t) if agent.is_none() => agent = Some(t),
            syn::GenericParam::Lifetime(_) => {}
            other => errors.spanned(
                other,
                "a tool takes at most one type parameter, the agent (`A: Grants<other_tool>` to invoke other tools)",
            ),
        }
    }
    let (mut uses, mut use_types) = (Vec::new(), Vec::new());
    if let Some(tp) = agent {
        collect_uses(&tp.bounds, name, errors, &mut uses, &mut use_types);
        for pred in sig.generics.where_clause.iter().flat_map(|wc| &wc.predicates) {
            if let syn::WherePredicate::Type(pt) = pred
                && let Type::Path(p) = &pt.bounded_ty
                && p.path.is_ident(&tp.ident)
            {
                collect_uses(&pt.bounds, name, errors, &mut uses, &mut use_types);
            }
        }
    }
    (agent, uses, use_types)
}

/// The tools named by `Grants<...>` among the agent's bounds. Any other trait could imply
/// grants the manifest would not show (a helper trait with `Grants<...>` supertraits): only
/// the bounds the manifest reads are allowed.
fn collect_uses(
    bounds: &syn::punctuated::Punctuated<syn::TypeParamBound, Token![+]>,
    name: &str,
    errors: &Errors,
    uses: &mut Vec<String>,
    use_types: &mut Vec<syn::TypePath>,
) {
    for b in bounds {
        let syn::TypeParamBound::Trait(t) = b else { continue };
        let Some(last) = t.path.segments.last() else { continue };
        if !["Grants", "Agent", "Send", "Sync", "Sized", "Unpin"].contains(&last.ident.to_string().as_str()) {
            errors.spanned(
                t,
                format!(
                    "tool `{name}` bounds its agent by `{}`, which may grant tools the manifest does not list under `uses`; bound the agent only by `Grants<T>`, once for each tool it invokes",
                    type_string(&t.path)
                ),
            );
        }
        if last.ident != "Grants" {
            continue;
        }
        let syn::PathArguments::AngleBracketed(a) = &last.arguments else { continue };
        for ga in &a.args {
            if let syn::GenericArgument::Type(Type::Path(tp)) = ga
                && let Some(s) = tp.path.segments.last()
            {
                uses.push(syn::ext::IdentExt::unraw(&s.ident).to_string());
                use_types.push(tp.clone());
            }
        }
    }
}

/// Each parameter with its kind (see [`ParamKind::of`]); a capability handle needs its
/// section of the policy.
fn params(sig: &Signature, args: &ToolArgs, name: &str, errors: &Errors) -> Vec<Param> {
    let mut params = Vec::new();
    for input in &sig.inputs {
        let pt = match input {
            FnArg::Receiver(r) => {
                errors.spanned(r, "a tool is a free function; it cannot take `self`");
                continue;
            }
            FnArg::Typed(pt) => pt,
        };
        let Pat::Ident(pi) = &*pt.pat else {
            errors.spanned(&pt.pat, "tool parameters must be plain names (they become the JSON keys)");
            continue;
        };
        let kind = ParamKind::of(&pt.ty);
        if let ParamKind::Capability(c) = kind {
            let declared = match c {
                Capability::Fs => args.policy.fs_declared,
                Capability::Net => args.policy.net_declared,
                Capability::Env => args.policy.env_declared,
            };
            let (handle, what, example) = c.describe();
            if !declared && args.complete {
                errors.spanned(
                    &pt.ty,
                    format!("tool `{name}` takes `{handle}`, but its policy declares no {what} access; declare what it may touch in `#[tool(...)]`, e.g. `{example}`"),
                );
            }
        }
        params.push(Param { ident: pi.ident.clone(), ty: (*pt.ty).clone(), kind });
    }
    params
}

/// The context's agent argument must match the tool's shape: a tool generic over the agent
/// takes `ToolContext<'_, A>` (so `cx.invoke` checks `A`'s grants); any other takes
/// `ToolContext<'_>`, and then cannot invoke tools, since no agent grant can be checked. What
/// is reported is not compiled again (see [`Emit`]).
fn check_contexts(
    func: &ToolFn,
    params: &[Param],
    agent: Option<&syn::TypeParam>,
    uses: &[String],
    name: &str,
    errors: &Errors,
    emit: &mut Emit,
) {
    for p in params.iter().filter(|p| p.kind == ParamKind::Context) {
        let mut invokes = Vec::new();
        if let Some(body) = &func.body {
            find_invokes(body.to_token_stream(), &p.ident, &mut invokes);
        }
        match agent {
            Some(tp) => check_generic_context(p, tp, &invokes, uses, name, errors, emit),
            None => check_plain_context(func, p, &invokes, name, errors, emit),
        }
    }
}

/// The context of a tool generic over its agent `A`: `ToolContext<'_, A>`, and each tool it
/// invokes declared by a bound `A: Grants<T>`, so that the manifest's `uses` is complete.
fn check_generic_context(
    p: &Param,
    tp: &syn::TypeParam,
    invokes: &[(Span, Option<String>)],
    uses: &[String],
    name: &str,
    errors: &Errors,
    emit: &mut Emit,
) {
    let a = &tp.ident;
    let names_param = matches!(context_agent(&p.ty), Some(Type::Path(ap)) if ap.qself.is_none() && ap.path.is_ident(a));
    if !names_param {
        errors.spanned(
            &p.ty,
            format!("tool `{name}` is generic over the agent `{a}`: take its context as `ToolContext<'_, {a}>`, so that invoking a tool checks `{a}`'s grants"),
        );
        emit.handler = Handler::Stub;
        return;
    }
    for (at, invoked) in invokes {
        let Some(invoked) = invoked else { continue };
        let last = invoked.split('<').next().unwrap_or_default().rsplit("::").next().unwrap_or_default();
        if !uses.iter().any(|u| u == last) {
            errors.at(
                *at,
                format!("tool `{name}` invokes `{invoked}` without declaring it: add the bound `{a}: Grants<{invoked}>`, so that every agent granting `{name}` must grant `{invoked}` and the manifest lists it under `uses`"),
            );
            emit.body = Body::Unimplemented;
        }
    }
}

/// The context of a tool not generic over its agent: `ToolContext<'_>`, which invokes nothing.
fn check_plain_context(
    func: &ToolFn,
    p: &Param,
    invokes: &[(Span, Option<String>)],
    name: &str,
    errors: &Errors,
    emit: &mut Emit,
) {
    let (fn_ident, cx) = (&func.sig.ident, &p.ident);
    let async_kw = if func.sig.asyncness.is_some() { "async " } else { "" };
    let unit = match context_agent(&p.ty) {
        None => true,
        Some(Type::Tuple(t)) => t.elems.is_empty(),
        Some(_) => false,
    };
    if !unit {
        errors.spanned(
            &p.ty,
            format!("tool `{name}` takes the context of one agent, but any agent may grant a tool: take `ToolContext<'_>`, or, to invoke other tools, make the tool generic over the agent: `{async_kw}fn {fn_ident}<A: Grants<other_tool>>({cx}: &ToolContext<'_, A>, ...)`"),
        );
        emit.handler = Handler::Stub;
    } else if let Some((at, invoked)) = invokes.first() {
        let other = invoked.clone().unwrap_or_else(|| "other_tool".to_owned());
        errors.at(
            *at,
            format!("tool `{name}` invokes another tool, but it is not generic over the agent, so the agent's grant of `{other}` cannot be checked; declare the agent and the grant: `{async_kw}fn {fn_ident}<A: Grants<{other}>>({cx}: &ToolContext<'_, A>, ...)`"),
        );
        emit.body = Body::Unimplemented;
    }
}

/// The JSON arguments, each with its key, owned type and description; an action tool's are
/// each described, since the person who approves the call reads them.
fn arg_fields(func: &ToolFn, params: &[Param], tier: Tier, name: &str, errors: &Errors) -> Vec<ArgField> {
    let described = crate::util::argument_docs(&func.attrs);
    let marked: Vec<&Ident> = func
        .sig
        .inputs
        .iter()
        .filter_map(|input| match input {
            FnArg::Typed(pt) if pt.attrs.iter().any(|a| a.path().is_ident("secret")) => match &*pt.pat {
                Pat::Ident(pi) => Some(&pi.ident),
                _ => None,
            },
            _ => None,
        })
        .collect();
    let fields: Vec<ArgField> = params
        .iter()
        .filter(|p| p.kind == ParamKind::Arg)
        .map(|p| {
            let key = syn::ext::IdentExt::unraw(&p.ident).to_string();
            let description = described.iter().find(|(n, _)| *n == key).map(|(_, d)| d.clone()).unwrap_or_default();
            let rust_type = type_string(&p.ty);
            let marked_secret = marked.contains(&&p.ident);
            ArgField {
                ident: p.ident.clone(),
                ty: p.ty.clone(),
                owned: super::codegen::owned_type(&p.ty),
                key,
                description,
                secret: marked_secret || agents_core::manifest::type_names_secret(&rust_type),
                rust_type,
                marked_secret,
            }
        })
        .collect();
    if tier == Tier::Action {
        let idents: Vec<&Ident> = fields.iter().map(|f| &f.ident).collect();
        let descriptions: Vec<String> = fields.iter().map(|f| f.description.clone()).collect();
        crate::util::require_argument_docs(name, &idents, &descriptions, errors);
    }
    fields
}

/// The agent argument of a context parameter: `A` in `&ToolContext<'_, A>`.
fn context_agent(ty: &Type) -> Option<&Type> {
    let ty = match ty {
        Type::Reference(r) => &*r.elem,
        other => other,
    };
    let Type::Path(p) = ty else { return None };
    let syn::PathArguments::AngleBracketed(a) = &p.path.segments.last()?.arguments else { return None };
    a.args.iter().find_map(|g| match g {
        syn::GenericArgument::Type(t) => Some(t),
        _ => None,
    })
}

/// Finds each `cx.invoke` in a body: the span of `invoke` and the invoked tool, when named
/// by a turbofish (`cx.invoke::<list_athletes>(...)`).
fn find_invokes(tokens: proc_macro2::TokenStream, cx: &Ident, out: &mut Vec<(Span, Option<String>)>) {
    use proc_macro2::TokenTree as T;
    let tts: Vec<T> = tokens.into_iter().collect();
    for (i, tt) in tts.iter().enumerate() {
        match (tt, tts.get(i + 1), tts.get(i + 2)) {
            (T::Ident(c), Some(T::Punct(dot)), Some(T::Ident(m)))
                if c == cx && dot.as_char() == '.' && m == "invoke" =>
            {
                out.push((m.span(), turbofish_path(&tts[i + 3..])));
            }
            (T::Group(g), _, _) => find_invokes(g.stream(), cx, out),
            _ => {}
        }
    }
}

/// The path in a turbofish, `::<path>` (up to the matching `>`), as text.
fn turbofish_path(rest: &[proc_macro2::TokenTree]) -> Option<String> {
    use proc_macro2::TokenTree as T;
    let turbofish = matches!(rest, [T::Punct(a), T::Punct(b), T::Punct(lt), ..] if a.as_char() == ':' && b.as_char() == ':' && lt.as_char() == '<');
    if !turbofish {
        return None;
    }
    let mut depth = 0usize;
    let inner: proc_macro2::TokenStream = rest[3..]
        .iter()
        .take_while(|t| match t {
            T::Punct(p) if p.as_char() == '<' => {
                depth += 1;
                true
            }
            T::Punct(p) if p.as_char() == '>' => {
                let inside = depth > 0;
                depth = depth.saturating_sub(1);
                inside
            }
            _ => true,
        })
        .cloned()
        .collect();
    Some(type_string(&inner)).filter(|s| !s.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;
    use quote::{format_ident, quote};

    #[test]
    fn finds_each_invoke_through_the_context_with_the_invoked_tool() {
        let body = quote! {{
            let a = cx.invoke::<list_athletes>(json!({})).await;
            if a.is_ok() {
                other.invoke::<not_the_context>(v);
                cx.invoke::<crate::tools::report<u8>>(v).await;
            }
            cx.invoke(v);
        }};
        let mut found = Vec::new();
        find_invokes(body, &format_ident!("cx"), &mut found);
        let invoked: Vec<Option<String>> = found.into_iter().map(|(_, t)| t).collect();
        assert_eq!(invoked, [Some("list_athletes".to_owned()), Some("crate::tools::report<u8>".to_owned()), None]);
    }

    #[test]
    fn the_agent_argument_of_a_context() {
        let ty: Type = syn::parse_quote!(&ToolContext<'_, A>);
        assert_eq!(context_agent(&ty).map(type_string).as_deref(), Some("A"));
        let ty: Type = syn::parse_quote!(agents::ToolContext<'_>);
        assert!(context_agent(&ty).is_none());
    }

    #[test]
    fn the_context_is_told_by_its_shape_and_a_handle_by_its_name() {
        let kind = |ty: Type| ParamKind::of(&ty);
        assert_eq!(kind(syn::parse_quote!(&ToolContext<'_>)), ParamKind::Context);
        assert_eq!(kind(syn::parse_quote!(&Cx<'_>)), ParamKind::Context);
        assert_eq!(kind(syn::parse_quote!(&'a Ctx<'a, A>)), ParamKind::Context);
        assert_eq!(kind(syn::parse_quote!(FsAccess)), ParamKind::Capability(Capability::Fs));
        assert_eq!(kind(syn::parse_quote!(agents_runtime::EnvAccess)), ParamKind::Capability(Capability::Env));
        // What the model sends: owned values, `&T`, `Option<&T>`; and a `Cow`, left to the
        // refusal of borrowed arguments.
        for ty in [
            syn::parse_quote!(String),
            syn::parse_quote!(&str),
            syn::parse_quote!(Option<&str>),
            syn::parse_quote!(&Cow<'_, str>),
            syn::parse_quote!(Cx<'static>),
        ] {
            assert_eq!(kind(ty), ParamKind::Arg);
        }
    }
}
