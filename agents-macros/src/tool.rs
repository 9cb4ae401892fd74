//! `#[tool(...)]`: parse → model → validate → expand.

use crate::context::Errors;
use crate::crate_path;
use crate::util::{camel, doc_string, permission_name, suggest, type_string};
use agents_core::manifest::{EnvPolicyEntry, FsPolicyEntry, NetPolicyEntry, ParamEntry, PolicyEntry, ToolEntry};
use agents_core::{Risk, Tier};
use proc_macro2::{Span, TokenStream};
use quote::{ToTokens, format_ident, quote, quote_spanned};
use syn::parse::{Parse, ParseStream};
use syn::spanned::Spanned;
use syn::{Attribute, FnArg, Ident, LitStr, Pat, Signature, Token, Type, Visibility};

const ARGS: &[&str] = &["permission", "mutating", "handoff", "title", "risk", "policy", "name", "isolated", "egress"];
const POLICY_ARGS: &[&str] = &["fs", "net", "env"];
const FS_ARGS: &[&str] = &["read", "write"];
const RISKS: &[&str] = &["low", "medium", "high", "critical"];

/// The function as written; the body is optional so a handoff tool can have none. The body
/// is kept as tokens (a braced group): it is re-emitted, never inspected as syntax, and
/// parsing every statement would cost each build for nothing.
struct ToolFn {
    attrs: Vec<Attribute>,
    vis: Visibility,
    sig: Signature,
    body: Option<proc_macro2::Group>,
}

impl ToolFn {
    /// Parses the function with its body set aside first: syn reads every token it is given
    /// (each one fetched from the compiler), and the body is only re-emitted.
    fn split(item: TokenStream) -> syn::Result<Self> {
        let mut trees: Vec<proc_macro2::TokenTree> = item.into_iter().collect();
        let body = match trees.last() {
            Some(proc_macro2::TokenTree::Group(g)) if g.delimiter() == proc_macro2::Delimiter::Brace => {
                let g = g.clone();
                trees.pop();
                Some(g)
            }
            _ => None,
        };
        let head: TokenStream = trees.into_iter().collect();
        match body {
            Some(body) => {
                let mut func: ToolFn = syn::parse2(quote!(#head ;))?;
                func.body = Some(body);
                Ok(func)
            }
            None => syn::parse2(head),
        }
    }
}

impl Parse for ToolFn {
    /// The function without its body (see [`ToolFn::split`]): a signature ending in `;`.
    fn parse(input: ParseStream<'_>) -> syn::Result<Self> {
        let attrs = input.call(Attribute::parse_outer)?;
        let vis: Visibility = input.parse()?;
        let sig: Signature = input.parse()?;
        if !input.peek(Token![;]) {
            return Err(input.error("expected the function body `{ ... }` or `;`"));
        }
        input.parse::<Token![;]>()?;
        Ok(ToolFn { attrs, vis, sig, body: None })
    }
}

enum PermissionArg {
    Public,
    Path(syn::Path, String),
}

#[derive(Default)]
struct Policy {
    fs_read: Vec<LitStr>,
    fs_write: Vec<LitStr>,
    net_hosts: Vec<LitStr>,
    env_vars: Vec<LitStr>,
    fs_declared: bool,
    net_declared: bool,
    env_declared: bool,
}

struct ToolArgs {
    /// Every argument was read (false after a syntax error, which stops the parser).
    complete: bool,
    permission: Option<PermissionArg>,
    mutating: Option<Span>,
    handoff: Option<Span>,
    title: Option<LitStr>,
    risk: Option<(Risk, Span)>,
    policy: Policy,
    name: Option<LitStr>,
    /// `isolated`: each call runs in a child process the kernel confines to the policy.
    isolated: Option<Span>,
    /// `egress`: the tool's arguments leave the application; the gate checks where they came from.
    egress: Option<Span>,
}

enum ParamKind {
    Context,
    Capability(Capability),
    Arg,
}

#[derive(Clone, Copy, PartialEq)]
enum Capability {
    Fs,
    Net,
    Env,
}

struct Param {
    ident: Ident,
    ty: Type,
    kind: ParamKind,
    secret: bool,
}

/// `key = ["a", "b"]`; a value of another shape is refused with what the key takes
/// (`example` is the right form, e.g. `read = ["/srv/app/**"]`).
fn parse_str_list(meta: &syn::meta::ParseNestedMeta<'_>, example: &str) -> syn::Result<Vec<LitStr>> {
    let key = type_string(&meta.path);
    let takes = format!("`{key}` takes a list of strings in square brackets, e.g. `{example}`");
    if !meta.input.peek(Token![=]) {
        return Err(syn::Error::new(meta.path.span(), format!("{takes}; `{key}` needs a value")));
    }
    let value = meta.value()?;
    if !value.peek(syn::token::Bracket) {
        let found: syn::Expr = value.parse().map_err(|e| syn::Error::new(e.span(), &takes))?;
        return Err(syn::Error::new_spanned(found, takes));
    }
    let content;
    let bracket = syn::bracketed!(content in value);
    let items = content
        .parse_terminated(|p: ParseStream<'_>| p.parse::<LitStr>(), Token![,])
        .map_err(|e| syn::Error::new(e.span(), format!("{takes}; each entry is a string literal")))?;
    if items.is_empty() {
        return Err(syn::Error::new(
            bracket.span.join(),
            format!(
                "`{key} = []` admits nothing, so the tool could never use it: list what it may use, e.g. `{example}`, or leave `{key}` out"
            ),
        ));
    }
    Ok(items.into_iter().collect())
}

/// `key = value` for an argument that takes one value of the shape `T`; a missing or
/// wrong-shaped value is refused with what the argument takes (`takes`, with an example).
fn parse_value<T: Parse>(meta: &syn::meta::ParseNestedMeta<'_>, takes: &str) -> syn::Result<T> {
    let key = type_string(&meta.path);
    if !meta.input.peek(Token![=]) {
        return Err(syn::Error::new(meta.path.span(), format!("`{key}` takes {takes}")));
    }
    let value = meta.value()?;
    let fork = value.fork();
    match fork.parse::<T>() {
        Ok(_) if fork.is_empty() || fork.peek(Token![,]) => value.parse(),
        _ => {
            let found: syn::Expr =
                value.parse().map_err(|e| syn::Error::new(e.span(), format!("`{key}` takes {takes}")))?;
            Err(syn::Error::new_spanned(found, format!("`{key}` takes {takes}")))
        }
    }
}

/// A flag (`mutating`, `handoff`): written alone. `mutating = true` is refused with the right
/// form, and the value is consumed so the arguments after it are still read.
fn parse_flag(meta: &syn::meta::ParseNestedMeta<'_>, errors: &Errors) -> syn::Result<()> {
    let key = type_string(&meta.path);
    if meta.input.peek(Token![=]) {
        let value: syn::Expr = meta.value()?.parse()?;
        errors.spanned(
            &value,
            format!("`{key}` is a flag and takes no value: write `#[tool(..., {key}, ...)]`, and leave it out for a read tool"),
        );
    } else if meta.input.peek(syn::token::Paren) {
        let content;
        syn::parenthesized!(content in meta.input);
        let _: TokenStream = content.parse()?;
        errors.spanned(&meta.path, format!("`{key}` is a flag and takes no value: write `#[tool(..., {key}, ...)]`"));
    }
    Ok(())
}

fn parse_args(tokens: TokenStream, errors: &Errors) -> ToolArgs {
    let mut args = ToolArgs {
        complete: true,
        permission: None,
        mutating: None,
        handoff: None,
        title: None,
        risk: None,
        policy: Policy::default(),
        name: None,
        isolated: None,
        egress: None,
    };
    let mut seen: Vec<String> = Vec::new();
    let parser = syn::meta::parser(|meta| {
        let key = meta.path.get_ident().map(|i| i.to_string()).unwrap_or_else(|| type_string(&meta.path));
        if ARGS.contains(&key.as_str()) {
            if seen.contains(&key) {
                errors.spanned(&meta.path, format!("duplicate `tool` argument `{key}`; give each argument once"));
            }
            seen.push(key.clone());
        }
        match key.as_str() {
            "permission" => {
                let path: syn::Path = parse_value(
                    &meta,
                    "the path of a permission declared with `permissions!`, e.g. `permission = perms::athlete::read`, or `permission = public` (not a string)",
                )?;
                if path.is_ident("public") {
                    args.permission = Some(PermissionArg::Public);
                } else if let Some(name) = permission_name(&path) {
                    args.permission = Some(PermissionArg::Path(path, name));
                } else {
                    errors.spanned(
                        &path,
                        "write the permission as the path of a declared permission ending in `area::action` (e.g. `perms::athlete::read`), or `public`",
                    );
                }
            }
            "mutating" => {
                parse_flag(&meta, errors)?;
                args.mutating = Some(meta.path.span());
            }
            "handoff" => {
                parse_flag(&meta, errors)?;
                args.handoff = Some(meta.path.span());
            }
            "isolated" => {
                parse_flag(&meta, errors)?;
                args.isolated = Some(meta.path.span());
            }
            "egress" => {
                parse_flag(&meta, errors)?;
                args.egress = Some(meta.path.span());
            }
            "title" => {
                let lit: LitStr = parse_value(
                    &meta,
                    "the text a person reads before approving, as a string, e.g. `title = \"Record injury\"`",
                )?;
                if lit.value().trim().is_empty() {
                    errors.spanned(&lit, "the `title` is what a person reads before approving: it cannot be empty");
                }
                args.title = Some(lit);
            }
            "name" => {
                let lit: LitStr = parse_value(
                    &meta,
                    "the name the model calls the tool by, as a string, e.g. `name = \"list-athletes\"`",
                )?;
                let v = lit.value();
                if v.is_empty() || v.len() > 64 || !v.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
                {
                    errors.spanned(&lit, "a tool name is 1 to 64 characters of `a-z`, `A-Z`, `0-9`, `_` and `-`");
                }
                args.name = Some(lit);
            }
            "risk" => {
                let ident: Ident = parse_value(
                    &meta,
                    "one of `low`, `medium`, `high`, `critical`, written without quotes, e.g. `risk = high`",
                )?;
                let risk = match ident.to_string().as_str() {
                    "low" => Some(Risk::Low),
                    "medium" => Some(Risk::Medium),
                    "high" => Some(Risk::High),
                    "critical" => Some(Risk::Critical),
                    other => {
                        errors.spanned(&ident, format!("unknown risk `{other}`{}", suggest(other, RISKS)));
                        None
                    }
                };
                if let Some(r) = risk {
                    args.risk = Some((r, ident.span()));
                }
            }
            "policy" => {
                expect_parens(&meta, "policy(fs(read = [\"/srv/app/**\"]), net(hosts = [\"api.example.com:443\"]))")?;
                meta.parse_nested_meta(|pm| {
                    let pkey = pm.path.get_ident().map(|i| i.to_string()).unwrap_or_default();
                    match pkey.as_str() {
                        "fs" => {
                            expect_parens(&pm, "fs(read = [\"/srv/app/uploads/**\"], write = [\"/srv/app/out/**\"])")?;
                            args.policy.fs_declared = true;
                            pm.parse_nested_meta(|fm| {
                                let fkey = fm.path.get_ident().map(|i| i.to_string()).unwrap_or_default();
                                match fkey.as_str() {
                                    "read" => args
                                        .policy
                                        .fs_read
                                        .extend(parse_str_list(&fm, "read = [\"/srv/app/uploads/**\"]")?),
                                    "write" => args
                                        .policy
                                        .fs_write
                                        .extend(parse_str_list(&fm, "write = [\"/srv/app/out/**\"]")?),
                                    other => {
                                        errors.spanned(
                                            &fm.path,
                                            format!(
                                                "unknown `fs` policy argument `{other}`{}",
                                                suggest(other, FS_ARGS)
                                            ),
                                        );
                                        skip_value(&fm)?;
                                    }
                                }
                                Ok(())
                            })
                        }
                        "net" => {
                            expect_parens(&pm, "net(hosts = [\"api.example.com:443\"])")?;
                            args.policy.net_declared = true;
                            pm.parse_nested_meta(|nm| {
                                if nm.path.is_ident("hosts") {
                                    args.policy
                                        .net_hosts
                                        .extend(parse_str_list(&nm, "hosts = [\"api.example.com:443\"]")?);
                                } else {
                                    let k = type_string(&nm.path);
                                    errors.spanned(
                                        &nm.path,
                                        format!("unknown `net` policy argument `{k}`{}", suggest(&k, &["hosts"])),
                                    );
                                    skip_value(&nm)?;
                                }
                                Ok(())
                            })
                        }
                        "env" => {
                            expect_parens(&pm, "env(vars = [\"APP_REGION\"])")?;
                            args.policy.env_declared = true;
                            pm.parse_nested_meta(|em| {
                                if em.path.is_ident("vars") {
                                    args.policy.env_vars.extend(parse_str_list(&em, "vars = [\"APP_REGION\"]")?);
                                } else {
                                    let k = type_string(&em.path);
                                    errors.spanned(
                                        &em.path,
                                        format!("unknown `env` policy argument `{k}`{}", suggest(&k, &["vars"])),
                                    );
                                    skip_value(&em)?;
                                }
                                Ok(())
                            })
                        }
                        other => {
                            errors.spanned(
                                &pm.path,
                                format!("unknown `policy` section `{other}`{}", suggest(other, POLICY_ARGS)),
                            );
                            skip_value(&pm)
                        }
                    }
                })?
            }
            other => {
                errors.spanned(&meta.path, format!("unknown `tool` argument `{other}`{}", suggest(other, ARGS)));
                skip_value(&meta)?;
            }
        }
        Ok(())
    });
    if let Err(e) = syn::parse::Parser::parse2(parser, tokens) {
        errors.push(e);
        // The arguments after the mistake were not read: a "missing" argument may be there.
        args.complete = false;
    }
    args
}

/// A section written `key(...)`; another shape is refused with the right form.
fn expect_parens(meta: &syn::meta::ParseNestedMeta<'_>, example: &str) -> syn::Result<()> {
    if meta.input.peek(syn::token::Paren) {
        return Ok(());
    }
    let key = type_string(&meta.path);
    let takes = format!("`{key}` takes its entries in parentheses, e.g. `{example}`");
    if meta.input.peek(Token![=]) {
        let value: syn::Expr = meta.value()?.parse().map_err(|e| syn::Error::new(e.span(), &takes))?;
        return Err(syn::Error::new_spanned(value, takes));
    }
    Err(syn::Error::new(meta.path.span(), takes))
}

/// Skips `= value` or `(...)` after an unknown key so parsing can go on and report more.
fn skip_value(meta: &syn::meta::ParseNestedMeta<'_>) -> syn::Result<()> {
    if meta.input.peek(Token![=]) {
        let _: syn::Expr = meta.value()?.parse()?;
    } else if meta.input.peek(syn::token::Paren) {
        let content;
        syn::parenthesized!(content in meta.input);
        let _: TokenStream = content.parse()?;
    }
    Ok(())
}

// Policy entries are read by `agents_core::policy`, the one definition the manifest parser,
// the runtime's matchers and the manifest diff share.
fn validate_glob(lit: &LitStr, errors: &Errors) {
    let g = lit.value();
    if let Err(e) = agents_core::policy::Glob::parse(&g) {
        errors.spanned(lit, if g.is_empty() { e.to_string() } else { format!("invalid glob `{g}`: {e}") });
    }
}

/// Secret however declared, for the spec and the manifest: `#[secret]`, or a type that names
/// `Secret` (whose values are masked by its own `Debug` and schema mark).
fn is_secret(p: &Param, rust_type: &str) -> bool {
    p.secret || agents_core::manifest::type_names_secret(rust_type)
}

fn validate_host(lit: &LitStr, errors: &Errors) {
    let h = lit.value();
    if let Err(e) = agents_core::policy::HostPattern::parse(&h) {
        errors.spanned(lit, format!("invalid host `{h}`: {e}"));
    }
}

fn validate_env(lit: &LitStr, errors: &Errors) {
    let v = lit.value();
    if let Err(e) = agents_core::policy::check_env_var(&v) {
        errors.spanned(lit, format!("invalid environment variable name `{v}`: {e}"));
    }
}

fn last_ident(ty: &Type) -> Option<(String, bool)> {
    match ty {
        Type::Reference(r) => last_ident(&r.elem).map(|(n, _)| (n, true)),
        Type::Path(p) => p.path.segments.last().map(|s| (s.ident.to_string(), false)),
        _ => None,
    }
}

pub(crate) fn expand(args: TokenStream, item: TokenStream) -> TokenStream {
    let errors = Errors::default();
    let func: ToolFn = match ToolFn::split(item.clone()) {
        Ok(f) => f,
        Err(e) => {
            let e = e.to_compile_error();
            return quote!(#e #item);
        }
    };
    let targs = parse_args(args, &errors);
    let rt = crate_path::runtime();
    let fn_ident = &func.sig.ident;
    // The function's name without `r#`: what the model calls, and the base of hidden names.
    let plain_name = syn::ext::IdentExt::unraw(fn_ident).to_string();
    let tool_name = targs.name.as_ref().map(LitStr::value).unwrap_or_else(|| plain_name.clone());

    // --- shapes refused before anything is generated ------------------------------------
    let refusals = crate::shape::refusals(
        &func.sig,
        &tool_name,
        |ty| !matches!(last_ident(ty), Some((n, _)) if ["ToolContext", "FsAccess", "NetAccess", "EnvAccess"].contains(&n.as_str())),
    );
    if !refusals.is_empty() {
        for e in refusals {
            errors.push(e);
        }
        return refused_stub(&func, errors);
    }

    // --- model and validation ---------------------------------------------------------
    // The `# Arguments` section describes the parameters in the schema; the tool's own
    // description is the rest.
    let description =
        doc_string(&func.attrs).map(|d| crate::util::without_arguments_section(&d)).filter(|d| !d.is_empty());
    if description.is_none() {
        errors.spanned(
            fn_ident,
            format!("tool `{tool_name}` has no description: add a doc comment (`/// ...`) above it saying what it does; the model and the reviewer read it"),
        );
    }
    let tier = match (targs.mutating, targs.handoff) {
        (Some(_), Some(h)) => {
            errors.at(h, "a tool is either `mutating` (an action a person confirms) or `handoff` (no execution path), not both; remove one");
            Tier::Handoff
        }
        (Some(_), None) => Tier::Action,
        (None, Some(_)) => Tier::Handoff,
        (None, None) => Tier::Read,
    };
    if tier == Tier::Action && targs.title.is_none() && targs.complete {
        errors.at(
            targs.mutating.unwrap_or_else(Span::call_site),
            format!("action tool `{tool_name}` needs a `title`: the text a person reads before approving, e.g. `title = \"Record injury\"`"),
        );
    }
    match (&func.body, tier) {
        (Some(body), Tier::Handoff) => errors.at(
            body.span(),
            format!("handoff tool `{tool_name}` has a body, but a handoff tool has no execution path: remove the body and end the signature with `;`"),
        ),
        (None, Tier::Read | Tier::Action) => errors.spanned(
            &func.sig,
            format!("tool `{tool_name}` has no body; only a `handoff` tool is written without one"),
        ),
        _ => {}
    }
    // A tool returns `Result<T, E>`; one that returns nothing is told so at its signature,
    // and its handler is a stub (nothing else is reported).
    let returns_nothing = matches!(func.sig.output, syn::ReturnType::Default) && tier != Tier::Handoff;
    if returns_nothing {
        let close = func.sig.paren_token.span.close();
        errors.at(
            close,
            format!("tool `{tool_name}` returns nothing, but a tool returns `Result<T, E>`: its value is sent to the model, its error is shown when it fails\nhelp: declare what it returns, e.g. `-> Result<String, String>`, and end the body with `Ok(...)`"),
        );
    }
    if targs.permission.is_none() && targs.complete {
        errors.spanned(
            fn_ident,
            format!("tool `{tool_name}` needs a `permission`: `permission = perms::area::action` for a declared permission, or `permission = public` for a tool any user may call"),
        );
    }
    check_policy(&targs.policy, &errors);

    let (agent_param, uses, use_types) = agent_and_uses(&func.sig, &tool_name, &errors);
    if let Some(at) = targs.isolated {
        check_isolated(at, &targs.policy, tier, agent_param, &tool_name, &errors);
    }

    let params = classify_params(&func.sig, &targs, &tool_name, &errors);

    let mut reported = check_contexts(&func, &params, agent_param, &uses, &tool_name, &errors);
    reported.handler |= returns_nothing;

    // --- expansion ----------------------------------------------------------------------
    let vis = &func.vis;
    let args_ident = format_ident!("{}Args", camel(&plain_name), span = fn_ident.span());
    let doc_attrs: Vec<&Attribute> = func.attrs.iter().filter(|a| a.path().is_ident("doc")).collect();

    let arg_params: Vec<&Param> = params.iter().filter(|p| matches!(p.kind, ParamKind::Arg)).collect();
    // Each field's type: a borrowed parameter's owned form (`&str` becomes `String`).
    let field_types: Vec<TokenStream> = arg_params.iter().map(|p| owned_type(&p.ty)).collect();
    // A parameter's name as the model, the schema and the manifest spell it: without `r#`.
    let keys: Vec<String> = arg_params.iter().map(|p| syn::ext::IdentExt::unraw(&p.ident).to_string()).collect();
    // Each parameter's description, from the `# Arguments` section of the doc comment.
    let described = crate::util::argument_docs(&func.attrs);
    let descriptions: Vec<String> = keys
        .iter()
        .map(|k| described.iter().find(|(n, _)| n == k).map(|(_, d)| d.clone()).unwrap_or_default())
        .collect();
    if tier == Tier::Action {
        let idents: Vec<&Ident> = arg_params.iter().map(|p| &p.ident).collect();
        crate::util::require_argument_docs(&tool_name, &idents, &descriptions, &errors);
    }
    let field_defs = arg_params.iter().zip(&field_types).zip(&descriptions).map(|((p, ty), desc)| {
        let ident = &p.ident;
        let doc = if desc.is_empty() { format!("Argument `{ident}` of the tool.") } else { desc.clone() };
        quote! { #[doc = #doc] pub #ident: #ty }
    });
    // Every use of a parameter's type goes through `ToolArgument`, spanned on the type the user
    // wrote: a type that cannot be a JSON argument gets one error there, in its words (the
    // identical errors of the other uses are merged by the compiler).
    let as_arg: Vec<TokenStream> = arg_params
        .iter()
        .zip(&field_types)
        .map(|(p, ty)| quote_spanned!(p.ty.span()=> <#ty as #rt::tool::ToolArgument>))
        .collect();
    let debug_fields = arg_params.iter().zip(&keys).zip(&as_arg).map(|((p, name), arg)| {
        let ident = &p.ident;
        if p.secret {
            quote!(.field(#name, &"•••"))
        } else {
            quote!(.field(#name, #arg::debug_field(&self.#ident)))
        }
    });
    let clone_fields = arg_params.iter().zip(&as_arg).map(|(p, arg)| {
        let ident = &p.ident;
        quote!(#ident: #arg::clone_field(&self.#ident))
    });
    let schema_fields = keys.iter().zip(&as_arg).zip(&descriptions).zip(&arg_params).map(|(((key, arg), desc), p)| {
        let secret = p.secret;
        quote!((#key, #arg::field_schema(__g, #desc, #secret)))
    });
    let args_doc = format!("Arguments of the `{tool_name}` tool.");
    let args_name_str = args_ident.to_string();

    let perm_ty = match &targs.permission {
        Some(PermissionArg::Path(p, _)) => quote!(#p),
        _ => quote!(#rt::Public),
    };
    let perm_name = match &targs.permission {
        Some(PermissionArg::Path(_, n)) => n.clone(),
        _ => "public".to_owned(),
    };
    let perm_check = match &targs.permission {
        Some(PermissionArg::Path(p, n)) => {
            let msg = format!(
                "the permission is not declared as `{n}`, yet its path ends in `{}`: the manifest names a permission by the last two segments of its path, so write the path that ends in its declared `area::action` (not a renamed module or import)",
                n.replace('.', "::")
            );
            quote_spanned! {p.span()=>
                const _: () = ::core::assert!(
                    #rt::__private::str_eq(#rt::__private::tool_permission_name::<#fn_ident>(), #n),
                    #msg
                );
            }
        }
        _ => quote!(),
    };

    let risk = targs.risk.map(|r| r.0).unwrap_or(Risk::Medium);
    // Each parameter's type as text, for the manifest and the spec (asked of the compiler once).
    let rust_types: Vec<String> = arg_params.iter().map(|p| type_string(&p.ty)).collect();
    let entry = ToolEntry {
        name: tool_name.clone(),
        title: targs.title.as_ref().map(LitStr::value),
        description: description.clone().unwrap_or_default(),
        permission: perm_name.clone(),
        tier,
        mutating: tier == Tier::Action,
        risk,
        policy: PolicyEntry {
            fs: FsPolicyEntry {
                read: targs.policy.fs_read.iter().map(LitStr::value).collect(),
                write: targs.policy.fs_write.iter().map(LitStr::value).collect(),
            },
            net: NetPolicyEntry { hosts: targs.policy.net_hosts.iter().map(LitStr::value).collect() },
            env: EnvPolicyEntry { vars: targs.policy.env_vars.iter().map(LitStr::value).collect() },
            isolated: targs.isolated.is_some(),
            egress: targs.egress.is_some(),
        },
        parameters: arg_params
            .iter()
            .zip(&rust_types)
            .zip(&keys)
            .map(|((p, ty), name)| ParamEntry { name: name.clone(), rust_type: ty.clone(), secret: is_secret(p, ty) })
            .collect(),
        uses: uses.clone(),
        import: None,
    }
    .normalized();
    let fragment = serde_json::to_string(&entry).expect("a tool entry always serializes");
    let entry_digest = crate::chain::entry_digest(&fragment);

    let spec = spec_tokens(&SpecParts {
        rt: &rt,
        tool_name: &tool_name,
        title: targs.title.as_ref(),
        description: description.as_deref().unwrap_or_default(),
        permission: &perm_name,
        tier,
        risk,
        policy: &targs.policy,
        isolated: targs.isolated.is_some(),
        egress: targs.egress.is_some(),
        params: arg_params
            .iter()
            .zip(&rust_types)
            .zip(&keys)
            .map(|((p, ty), key)| (*p, ty.as_str(), key.as_str()))
            .collect(),
        uses: &use_types,
    });

    let invoke = invoke_tokens(&func, &params, agent_param, reported, &rt);
    let impl_fn = impl_fn_tokens(&func, &params, agent_param, reported, &rt);

    let exec_impls = exec_tokens(&ExecParts {
        rt: &rt,
        fn_ident,
        args_ident: &args_ident,
        tier,
        agent_param,
        sig: &func.sig,
        invoke: &invoke,
        entry_digest: &quote!(#entry_digest),
    });

    let errs = errors.into_tokens();
    // `Debug` (masking `#[secret]` fields), `Clone` and `JsonSchema`, written out rather than
    // derived: each field goes through `ToolArgument` (see `as_arg`).
    let args_impls = {
        let sc = quote!(#rt::__private::schemars);
        quote! {
            impl ::core::fmt::Debug for #args_ident {
                fn fmt(&self, f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
                    f.debug_struct(#args_name_str) #(#debug_fields)* .finish()
                }
            }
            impl ::core::clone::Clone for #args_ident {
                fn clone(&self) -> Self {
                    #args_ident { #(#clone_fields,)* }
                }
            }
            impl #sc::JsonSchema for #args_ident {
                fn schema_name() -> ::std::borrow::Cow<'static, str> {
                    ::std::borrow::Cow::Borrowed(#args_name_str)
                }
                fn json_schema(__g: &mut #sc::SchemaGenerator) -> #sc::Schema {
                    #rt::__private::object_schema(::std::vec![#(#schema_fields),*])
                }
            }
        }
    };
    // `Deserialize` for the arguments, written out: serde's derive would compile a visitor for
    // each tool; here one visitor (generic only over the deserializer) reads the object and a
    // plain function takes its fields, with serde's messages.
    let read_args = {
        // Spanned on the parameter's type: a type that cannot be deserialized is reported there.
        let fields = arg_params.iter().zip(&keys).zip(&field_types).map(|((p, key), ty)| {
            let ident = &p.ident;
            let read = quote_spanned!(p.ty.span()=> <#ty as #rt::tool::ToolArgument>::read_field(__m, #key));
            quote!(#ident: #read?)
        });
        let sd = quote!(#rt::__private::serde);
        quote! {
            fn __agents_read_args(
                __v: &#rt::__private::serde_json::Value,
            ) -> ::core::result::Result<#args_ident, #rt::__private::serde_json::Error> {
                let __m = #rt::__private::args_object(__v, #args_name_str, &[#(#keys),*])?;
                ::core::result::Result::Ok(#args_ident { #(#fields,)* })
            }
            impl<'de> #sd::Deserialize<'de> for #args_ident {
                fn deserialize<__D: #sd::Deserializer<'de>>(__d: __D) -> ::core::result::Result<Self, __D::Error> {
                    #rt::__private::deserialize_args(__d, #args_name_str, __agents_read_args)
                }
            }
        }
    };
    // The tool's name in the value namespace: calling it like a function is an error that says
    // how a tool is called, rather than rustc's "expected function, found struct".
    let direct_call = direct_call_tokens(&func, &rt);
    // What `agent!` reads of this tool (see `chain`).
    let link = crate::chain::tool_link(fn_ident, vis, &fragment);
    // A tool that can run in a worker process is registered for it, which finds it by name:
    // isolated in code, or by a runtime's setting (`isolate::Isolation::isolate_tool`).
    let isolated_registration = if agent_param.is_none() && tier != Tier::Handoff {
        quote! {
            #rt::__private::inventory::submit! {
                #rt::isolate::IsolatedTool::of::<#fn_ident>()
            }
        }
    } else {
        quote!()
    };
    let args_ty_doc = format!("The tool `{tool_name}`: a marker type; its arguments are `{args_name_str}`.");
    quote! {
        #errs
        #(#doc_attrs)*
        #[doc = ""]
        #[doc = #args_ty_doc]
        #[allow(non_camel_case_types)]
        #vis struct #fn_ident {}

        // Written out rather than derived: one derive less for rustc to expand per tool.
        impl ::core::fmt::Debug for #fn_ident {
            fn fmt(&self, f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
                f.write_str(#tool_name)
            }
        }

        #[doc = #args_doc]
        #vis struct #args_ident { #(#field_defs,)* }

        #args_impls

        #link

        // schemars' derive calls `.into()` on its text: in a `#[no_implicit_prelude]` module the
        // trait is brought in unnamed, so it shadows nothing.
        #[allow(unused_imports)]
        use ::core::convert::Into as _;

        #direct_call

        const _: () = {
            #impl_fn

            #read_args

            impl #rt::Tool for #fn_ident {
                type Args = #args_ident;
                type Permission = #perm_ty;
                const NAME: &'static str = #tool_name;
                const SPEC: #rt::ToolSpec = #spec;
                fn parse_args(__v: &#rt::__private::serde_json::Value) -> ::core::result::Result<#args_ident, ::std::string::String> {
                    match __agents_read_args(__v) {
                        ::core::result::Result::Ok(__a) => ::core::result::Result::Ok(__a),
                        ::core::result::Result::Err(__e) => ::core::result::Result::Err(::std::string::ToString::to_string(&__e)),
                    }
                }
                fn input_schema() -> &'static #rt::__private::serde_json::Value {
                    static SCHEMA: ::std::sync::OnceLock<#rt::__private::serde_json::Value> = ::std::sync::OnceLock::new();
                    SCHEMA.get_or_init(#rt::__private::schema_for::<#args_ident>)
                }
            }

            #perm_check

            #exec_impls

            #rt::__private::inventory::submit! {
                #rt::tool::ToolRegistration { spec: &<#fn_ident as #rt::Tool>::SPEC }
            }

            #isolated_registration
        };
    }
}

/// What the checks have already reported, so that the expansion adds no second error.
#[derive(Default, Clone, Copy)]
struct Reported {
    /// The body would repeat a reported error: it is replaced by `unimplemented!()`.
    body: bool,
    /// The handler cannot call the function as written (a context of the wrong type, no
    /// result): it is a stub that fails the call, and the function is kept but not called.
    handler: bool,
}

/// Checks each context parameter against the tool's shape.
fn check_contexts(
    func: &ToolFn,
    params: &[Param],
    agent_param: Option<&syn::TypeParam>,
    uses: &[String],
    tool_name: &str,
    errors: &Errors,
) -> Reported {
    let fn_ident = &func.sig.ident;
    // The context's agent argument must match the tool's shape: a tool generic over the agent
    // takes `ToolContext<'_, A>` (so `cx.invoke` checks `A`'s grants); any other takes
    // `ToolContext<'_>`, and then cannot invoke tools, since no agent grant can be checked.
    // Set when an error is reported: the body is then not type-checked again (rustc would
    // repeat the error less clearly), and a context of the wrong type is not passed.
    let mut reported = Reported::default();
    let async_kw = if func.sig.asyncness.is_some() { "async " } else { "" };
    for p in params.iter().filter(|p| matches!(p.kind, ParamKind::Context)) {
        let agent_arg = context_agent(&p.ty);
        let mut invokes = Vec::new();
        if let Some(body) = &func.body {
            find_invokes(body.to_token_stream(), &p.ident, &mut invokes);
        }
        let cx = &p.ident;
        match agent_param {
            Some(tp) => {
                let a = &tp.ident;
                let names_param =
                    matches!(agent_arg, Some(Type::Path(ap)) if ap.qself.is_none() && ap.path.is_ident(a));
                if !names_param {
                    errors.spanned(
                    &p.ty,
                    format!("tool `{tool_name}` is generic over the agent `{a}`: take its context as `ToolContext<'_, {a}>`, so that invoking a tool checks `{a}`'s grants"),
                );
                    reported.handler = true;
                    continue;
                }
                // Every invoked tool is declared, so the manifest's `uses` is complete.
                for (at, invoked) in &invokes {
                    let Some(invoked) = invoked else { continue };
                    let last = invoked.split('<').next().unwrap_or_default().rsplit("::").next().unwrap_or_default();
                    if !uses.iter().any(|u| u == last) {
                        errors.at(
                        *at,
                        format!("tool `{tool_name}` invokes `{invoked}` without declaring it: add the bound `{a}: Grants<{invoked}>`, so that every agent granting `{tool_name}` must grant `{invoked}` and the manifest lists it under `uses`"),
                    );
                        reported.body = true;
                    }
                }
            }
            None => {
                let unit = match agent_arg {
                    None => true,
                    Some(Type::Tuple(t)) => t.elems.is_empty(),
                    Some(_) => false,
                };
                if !unit {
                    errors.spanned(
                    &p.ty,
                    format!(
                        "tool `{tool_name}` takes the context of one agent, but any agent may grant a tool: take `ToolContext<'_>`, or, to invoke other tools, make the tool generic over the agent: `{async_kw}fn {fn_ident}<A: Grants<other_tool>>({cx}: &ToolContext<'_, A>, ...)`"
                    ),
                );
                    reported.handler = true;
                } else if let Some((at, invoked)) = invokes.first() {
                    let other = invoked.clone().unwrap_or_else(|| "other_tool".to_owned());
                    errors.at(
                    *at,
                    format!(
                        "tool `{tool_name}` invokes another tool, but it is not generic over the agent, so the agent's grant of `{other}` cannot be checked; declare the agent and the grant: `{async_kw}fn {fn_ident}<A: Grants<{other}>>({cx}: &ToolContext<'_, A>, ...)`"
                    ),
                );
                    reported.body = true;
                }
            }
        }
    }
    reported
}

/// Policy entries are read by `agents_core::policy`, the dialect the runtime's matchers and
/// the manifest diff share: an entry they would read differently from the manifest, or that
/// can never match, is refused here.
/// What `isolated` needs: an execution path, no nested calls (they cannot cross the process
/// boundary), a literal directory root for every glob (the kernel's rules are set on
/// directories) and a port for every host (the kernel's network rules are per TCP port).
fn check_isolated(
    at: Span,
    policy: &Policy,
    tier: Tier,
    agent_param: Option<&syn::TypeParam>,
    tool_name: &str,
    errors: &Errors,
) {
    if tier == Tier::Handoff {
        errors.at(
            at,
            format!(
                "handoff tool `{tool_name}` has no execution path, so there is nothing to isolate; remove `isolated`"
            ),
        );
    }
    if let Some(a) = agent_param {
        errors.spanned(
            a,
            format!("isolated tool `{tool_name}` cannot invoke other tools: its calls run in a separate process, outside the gate; remove the agent parameter or `isolated`"),
        );
    }
    for g in policy.fs_read.iter().chain(&policy.fs_write) {
        let text = g.value();
        if agents_core::policy::Glob::parse(&text).is_ok() && agents_core::policy::glob_literal_root(&text).is_none() {
            errors.spanned(
                g,
                format!("isolated tool `{tool_name}`: the glob `{text}` has no literal directory root; the kernel confines an isolated tool to directories, so begin the glob with an absolute directory below `/`, e.g. `/srv/app/{}`", text.trim_start_matches('/')),
            );
        }
    }
    for h in &policy.net_hosts {
        let text = h.value();
        let port = text.rsplit_once(':').and_then(|(_, p)| p.parse::<u16>().ok());
        if agents_core::policy::HostPattern::parse(&text).is_ok() && port.is_none() {
            errors.spanned(
                h,
                format!("isolated tool `{tool_name}`: the host `{text}` has no port; the kernel's network rules for an isolated tool are per TCP port, so write one, e.g. `{text}:443`"),
            );
        }
    }
}

fn check_policy(policy: &Policy, errors: &Errors) {
    for g in policy.fs_read.iter().chain(&policy.fs_write) {
        validate_glob(g, errors);
    }
    for h in &policy.net_hosts {
        validate_host(h, errors);
    }
    for v in &policy.env_vars {
        validate_env(v, errors);
    }
}

/// The agent type parameter, if any, and the tools the tool invokes, from its `Grants<...>`
/// bounds: the identifiers as written (for the manifest fragment; `agent!` maps them to tool
/// names) and the types (for the spec).
fn agent_and_uses<'f>(
    sig: &'f Signature,
    tool_name: &str,
    errors: &Errors,
) -> (Option<&'f syn::TypeParam>, Vec<String>, Vec<syn::TypePath>) {
    let mut agent_param: Option<&syn::TypeParam> = None;
    for gp in &sig.generics.params {
        match gp {
            syn::GenericParam::Type(t) if agent_param.is_none() => agent_param = Some(t),
            syn::GenericParam::Lifetime(_) => {}
            other => errors.spanned(
                other,
                "a tool takes at most one type parameter, the agent (`A: Grants<other_tool>` to invoke other tools)",
            ),
        }
    }
    // The tools this tool invokes, from its `Grants<...>` bounds: the identifiers as written
    // (for the manifest fragment; `agent!` maps them to tool names) and the types (for the spec).
    let mut uses: Vec<String> = Vec::new();
    let mut use_types: Vec<syn::TypePath> = Vec::new();
    let mut collect_uses = |bounds: &syn::punctuated::Punctuated<syn::TypeParamBound, Token![+]>| {
        for b in bounds {
            // Any other trait could imply grants the manifest would not show (a helper trait
            // with `Grants<...>` supertraits): only the bounds the manifest reads are allowed.
            if let syn::TypeParamBound::Trait(t) = b
                && let Some(last) = t.path.segments.last()
                && !["Grants", "Agent", "Send", "Sync", "Sized", "Unpin"].contains(&last.ident.to_string().as_str())
            {
                errors.spanned(
                t,
                format!(
                    "tool `{tool_name}` bounds its agent by `{}`, which may grant tools the manifest does not list under `uses`; bound the agent only by `Grants<T>`, once for each tool it invokes",
                    type_string(&t.path)
                ),
            );
            }
            if let syn::TypeParamBound::Trait(t) = b
                && let Some(last) = t.path.segments.last()
                && last.ident == "Grants"
                && let syn::PathArguments::AngleBracketed(a) = &last.arguments
            {
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
    };
    if let Some(tp) = agent_param {
        collect_uses(&tp.bounds);
        if let Some(wc) = &sig.generics.where_clause {
            for pred in &wc.predicates {
                if let syn::WherePredicate::Type(pt) = pred
                    && let Type::Path(p) = &pt.bounded_ty
                    && p.path.is_ident(&tp.ident)
                {
                    collect_uses(&pt.bounds);
                }
            }
        }
    }
    (agent_param, uses, use_types)
}

/// Each parameter with its kind: the context, a capability handle (whose policy must be
/// declared), or a JSON argument.
fn classify_params(sig: &Signature, targs: &ToolArgs, tool_name: &str, errors: &Errors) -> Vec<Param> {
    let mut params: Vec<Param> = Vec::new();
    for input in &sig.inputs {
        match input {
            FnArg::Receiver(r) => errors.spanned(r, "a tool is a free function; it cannot take `self`"),
            FnArg::Typed(pt) => {
                let ident = match &*pt.pat {
                    Pat::Ident(pi) => pi.ident.clone(),
                    other => {
                        errors.spanned(other, "tool parameters must be plain names (they become the JSON keys)");
                        continue;
                    }
                };
                let secret = pt.attrs.iter().any(|a| a.path().is_ident("secret"));
                let kind = match last_ident(&pt.ty) {
                    Some((n, _)) if n == "ToolContext" => ParamKind::Context,
                    Some((n, _)) if n == "FsAccess" => ParamKind::Capability(Capability::Fs),
                    Some((n, _)) if n == "NetAccess" => ParamKind::Capability(Capability::Net),
                    Some((n, _)) if n == "EnvAccess" => ParamKind::Capability(Capability::Env),
                    _ => ParamKind::Arg,
                };
                if let ParamKind::Capability(c) = kind {
                    let (declared, handle, what, example) = match c {
                        Capability::Fs => (
                            targs.policy.fs_declared,
                            "FsAccess",
                            "filesystem",
                            "policy(fs(read = [\"/var/app/uploads/**\"]))",
                        ),
                        Capability::Net => (
                            targs.policy.net_declared,
                            "NetAccess",
                            "network",
                            "policy(net(hosts = [\"api.example.com:443\"]))",
                        ),
                        Capability::Env => (
                            targs.policy.env_declared,
                            "EnvAccess",
                            "environment",
                            "policy(env(vars = [\"APP_REGION\"]))",
                        ),
                    };
                    if !declared && targs.complete {
                        errors.spanned(
                        &pt.ty,
                        format!("tool `{tool_name}` takes `{handle}`, but its policy declares no {what} access; declare what it may touch in `#[tool(...)]`, e.g. `{example}`"),
                    );
                    }
                }
                params.push(Param { ident, ty: (*pt.ty).clone(), kind, secret });
            }
        }
    }
    params
}

/// The handler's body: unpack the arguments, build the context and the capability handles,
/// call the function and convert its result. Every parameter is passed by value: the
/// function takes what the tool borrows as an owned value and borrows it itself (see
/// [`owned_signature`]), so the tool's own future owns everything it uses and is the
/// handler's future, boxed once, with no wrapper future per tool.
fn invoke_tokens(
    func: &ToolFn,
    params: &[Param],
    agent_param: Option<&syn::TypeParam>,
    reported: Reported,
    rt: &TokenStream,
) -> TokenStream {
    let fn_ident = &func.sig.ident;
    // The handler body: unpack args, build the context and capabilities, call the function.
    let is_generic = agent_param.is_some();
    let ctx_agent = if is_generic { quote!(__A) } else { quote!(()) };
    // Every parameter is passed by value: the hidden function takes what the tool borrows as
    // an owned value and borrows it itself (below), so the tool's own future owns everything
    // it uses and is the handler's future, boxed once, with no wrapper future per tool.
    let call_args = params.iter().map(|p| {
        let ident = &p.ident;
        match &p.kind {
            ParamKind::Context => quote!(__cx),
            // The handle for the policy of the tool this call runs, made by the runtime.
            ParamKind::Capability(c) => match c {
                Capability::Fs => quote!(#rt::__private::fs_access(__call)),
                Capability::Net => quote!(#rt::__private::net_access(__call)),
                Capability::Env => quote!(#rt::__private::env_access(__call)),
            },
            ParamKind::Arg => quote!(__args.#ident),
        }
    });
    let turbofish = if is_generic { quote!(::<__A>) } else { quote!() };
    let context = params
        .iter()
        .any(|p| matches!(p.kind, ParamKind::Context))
        .then(|| quote!(let __cx = #rt::ToolContext::<#ctx_agent>::__new(__call);));
    if reported.handler {
        // Already reported; a stub keeps the tool's impls, so its users see no follow-on errors.
        quote! {
            let _ = (__call, &__args);
            #rt::__private::ToolFuture::new(async {
                ::core::result::Result::<#rt::__private::serde_json::Value, _>::Err("this tool failed to compile")
            })
        }
    } else if let Some(ret) = nameable_return(&func.sig) {
        // Converted through the return type, spanned on it: a return type that is not
        // `Result<T: Serialize, E: Display>`, or a future that is not `Send`, is reported
        // there, in `IntoToolResult`'s words.
        let call = quote!(#fn_ident #turbofish(#(#call_args),*));
        let future = if func.sig.asyncness.is_some() { call } else { quote!(async move { #call }) };
        // Bound to a local first: a future that is not `Send` is then named by the user's
        // return type, not by the hidden function that makes it.
        let convert = quote_spanned!(ret.span()=> <#ret as #rt::tool::IntoToolResult>::tool_future(__future));
        quote! {
            #context
            let __future = #future;
            #convert
        }
    } else if func.sig.asyncness.is_some() {
        quote! {
            #context
            #rt::__private::IntoToolFuture::into_tool_future(#fn_ident #turbofish(#(#call_args),*))
        }
    } else {
        // A synchronous body runs when the future is first polled, as an async one would.
        quote! {
            #context
            #rt::__private::ToolFuture::new(async move { #fn_ident #turbofish(#(#call_args),*) })
        }
    }
}

/// The function itself, inside the block of the tool's impls, under its own name (where it
/// shadows only the direct-call refusal, so what the compiler says of it names the user's
/// function), with owned parameters (see
/// [`owned_signature`]) and without the `#[secret]` marks; `None` for a handoff tool.
fn impl_fn_tokens(
    func: &ToolFn,
    params: &[Param],
    agent_param: Option<&syn::TypeParam>,
    reported: Reported,
    rt: &TokenStream,
) -> Option<TokenStream> {
    let other_attrs = func.attrs.iter().filter(|a| !a.path().is_ident("doc"));
    // The function itself, renamed and hidden; `#[secret]` attributes removed.
    func.body.as_ref().map(|body| {
        let (sig, borrows) = owned_signature(&func.sig, &func.sig.ident, params, agent_param, rt);
        // Already reported; an empty body keeps rustc from repeating the error less clearly.
        let (body, allow_unused) = if reported.body {
            (quote!({ ::core::unimplemented!() }), quote!(#[allow(unused_variables)]))
        } else if reported.handler {
            (quote!({ #(#borrows)* #body }), quote!(#[allow(dead_code)]))
        } else if borrows.is_empty() {
            (quote!(#body), quote!())
        } else {
            (quote!({ #(#borrows)* #body }), quote!())
        };
        quote! {
            #(#other_attrs)*
            #allow_unused
            #[allow(clippy::too_many_arguments, clippy::needless_lifetimes)]
            #sig #body
        }
    })
}

/// What the execution impls are built from (see [`exec_tokens`]).
struct ExecParts<'a> {
    rt: &'a TokenStream,
    fn_ident: &'a Ident,
    args_ident: &'a Ident,
    tier: Tier,
    agent_param: Option<&'a syn::TypeParam>,
    sig: &'a Signature,
    /// The handler's body: the call of the function, converted to a tool future.
    invoke: &'a TokenStream,
    entry_digest: &'a TokenStream,
}

/// The tool's execution by tier (`ReadTool`, `ActionTool` behind its witness, `HandoffTool`)
/// and its registry handler (`Dispatch`), bounded as the tool bounds its agent.
fn exec_tokens(parts: &ExecParts<'_>) -> TokenStream {
    let ExecParts { rt, fn_ident, args_ident, tier, agent_param, sig, invoke, entry_digest } = *parts;
    let is_generic = agent_param.is_some();
    let agent_where = if let Some(tp) = agent_param {
        let bounds = &tp.bounds;
        let mut preds = vec![quote!(__A: #rt::Agent)];
        if !bounds.is_empty() {
            preds.push(quote!(__A: #bounds));
        }
        if let Some(wc) = &sig.generics.where_clause {
            preds.extend(wc.predicates.iter().map(|p| quote!(#p)));
        }
        // The bounds name the user's parameter; in the impl header it is `__A`.
        substitute_ident(quote!(where #(#preds),*), &tp.ident, &format_ident!("__A"))
    } else {
        quote!()
    };

    // A non-generic tool's body is compiled once, in its `ReadTool`/`ActionTool` impl, and the
    // registry handler delegates to it; only a tool generic over the agent builds its body in
    // the handler, where the agent type is known.
    let downcast = quote!(let __args: #args_ident = #rt::__private::downcast_args(__erased););
    let seal = quote!(#rt::__private::seal);
    let (exec_impl, handler, dispatch_where) = match tier {
        Tier::Read if is_generic => (
            quote!(impl #seal::ReadByToolMacro for #fn_ident {}),
            quote!(#rt::tool::Handler::Read(|__call, __erased| { #downcast #invoke })),
            agent_where,
        ),
        Tier::Read => (
            quote! {
                impl #seal::ReadByToolMacro for #fn_ident {}
                impl #rt::ReadTool for #fn_ident {
                    fn run<'__a>(
                        __call: &'__a #rt::CallContext,
                        __args: #args_ident,
                    ) -> #rt::__private::ToolFuture<'__a> {
                        #invoke
                    }
                }
            },
            quote!(#rt::tool::Handler::Read(#rt::__private::read_handler::<#fn_ident>)),
            agent_where,
        ),
        // The witness is this call's approval record, or nothing runs.
        Tier::Action if is_generic => (
            quote!(impl #seal::ActionByToolMacro for #fn_ident {}),
            quote!(#rt::tool::Handler::Action(|__call, __erased| {
                match #rt::__private::approval_of::<#fn_ident>(__call) {
                    ::core::result::Result::Ok(_) => {}
                    ::core::result::Result::Err(__e) => return #rt::__private::refused(__e),
                }
                #downcast
                #invoke
            })),
            agent_where,
        ),
        Tier::Action => (
            quote! {
                impl #seal::ActionByToolMacro for #fn_ident {}
                impl #rt::ActionTool for #fn_ident {
                    fn run_approved<'__a>(
                        __call: &'__a #rt::CallContext,
                        __args: #args_ident,
                        __approval: #rt::Approval<'__a, Self>,
                    ) -> #rt::__private::ToolFuture<'__a> {
                        // The witness must be the one the gate recorded for this very call.
                        if let ::core::result::Result::Err(__e) = #rt::__private::verify_approval(&__approval, __call) {
                            return #rt::__private::refused(__e);
                        }
                        #invoke
                    }
                }
            },
            quote!(#rt::tool::Handler::Action(#rt::__private::action_handler::<#fn_ident>)),
            agent_where,
        ),
        // Nothing runs, so any agent may dispatch it, whatever the tool's bounds.
        Tier::Handoff => (
            quote!(impl #seal::HandoffByToolMacro for #fn_ident {} impl #rt::HandoffTool for #fn_ident {}),
            quote!(#rt::tool::Handler::Handoff(::core::marker::PhantomData)),
            quote!(),
        ),
    };
    let exec_impls = quote! {
        #exec_impl
        impl #seal::DeclaredByToolMacro for #fn_ident {
            const MANIFEST_ENTRY: u128 = #entry_digest;
        }
        impl<__A> #seal::DispatchedByToolMacro<__A> for #fn_ident #dispatch_where {}
        impl<__A> #rt::Dispatch<__A> for #fn_ident #dispatch_where {
            fn handler() -> #rt::tool::Handler<__A> {
                #handler
            }
        }
    };
    exec_impls
}

/// What the spec is built from (see [`spec_tokens`]).
struct SpecParts<'a> {
    rt: &'a TokenStream,
    tool_name: &'a str,
    title: Option<&'a LitStr>,
    description: &'a str,
    permission: &'a str,
    tier: Tier,
    risk: Risk,
    policy: &'a Policy,
    isolated: bool,
    egress: bool,
    /// Each JSON argument with its type as text and its key.
    params: Vec<(&'a Param, &'a str, &'a str)>,
    uses: &'a [syn::TypePath],
}

/// The tool's `ToolSpec`, a constant. Only `uses` keeps the user's tokens (a path that does
/// not resolve is reported where it was written).
fn spec_tokens(s: &SpecParts<'_>) -> TokenStream {
    let rt = s.rt;
    let (name, description, permission) = (s.tool_name, s.description, s.permission);
    let title = match s.title {
        Some(t) => {
            let t = t.value();
            quote!(::core::option::Option::Some(#t))
        }
        None => quote!(::core::option::Option::None),
    };
    let tier = Ident::new(&format!("{:?}", s.tier), Span::call_site());
    let risk = Ident::new(&format!("{:?}", s.risk), Span::call_site());
    let values = |list: &[LitStr]| list.iter().map(LitStr::value).collect::<Vec<_>>();
    let (fs_read, fs_write) = (values(&s.policy.fs_read), values(&s.policy.fs_write));
    let (net_hosts, env_vars) = (values(&s.policy.net_hosts), values(&s.policy.env_vars));
    let params = s.params.iter().map(|(p, ty, key)| {
        let secret = is_secret(p, ty);
        quote!(#rt::ParamSpec { name: #key, rust_type: #ty, secret: #secret })
    });
    let uses = s.uses;
    let (isolated, egress) = (s.isolated, s.egress);
    quote! {
        #rt::ToolSpec {
            name: #name,
            title: #title,
            description: #description,
            permission: #permission,
            tier: #rt::Tier::#tier,
            risk: #rt::Risk::#risk,
            policy: #rt::PolicySpec {
                fs_read: &[#(#fs_read),*],
                fs_write: &[#(#fs_write),*],
                net_hosts: &[#(#net_hosts),*],
                env_vars: &[#(#env_vars),*],
                isolated: #isolated,
                egress: #egress,
            },
            params: &[#(#params),*],
            uses: &[#(<#uses as #rt::Tool>::NAME),*],
            import: ::core::option::Option::None,
        }
    }
}

/// The signature of the function the handler calls, and the borrows at the top of its body:
/// a parameter taken by reference is taken by value and borrowed at the top of the body,
/// under the name and pattern the user wrote, so the tool's future owns all it uses; a tool
/// generic over the agent gets the `Agent` bound `ToolContext::invoke` needs.
fn owned_signature(
    user: &Signature,
    ident: &Ident,
    params: &[Param],
    agent_param: Option<&syn::TypeParam>,
    rt: &TokenStream,
) -> (Signature, Vec<TokenStream>) {
    let mut sig = user.clone();
    sig.ident = ident.clone();
    let mut borrows = Vec::new();
    for input in &mut sig.inputs {
        if let FnArg::Typed(pt) = input {
            pt.attrs.retain(|a| !a.path().is_ident("secret"));
            // `Option<&T>`: the argument owns an `Option<T::Owned>`, the body sees a borrow.
            if let (Some(elem), Pat::Ident(pi)) = (option_of_ref(&pt.ty), &*pt.pat)
                && params.iter().any(|p| p.ident == pi.ident && matches!(p.kind, ParamKind::Arg))
            {
                let owned_ident = format_ident!("__agents_owned_{}", syn::ext::IdentExt::unraw(&pi.ident));
                let pat = &pt.pat;
                borrows.push(quote! {
                    let #pat: ::core::option::Option<&#elem> = ::core::option::Option::map(
                        ::core::option::Option::as_ref(&#owned_ident),
                        ::core::borrow::Borrow::borrow,
                    );
                });
                let owned = owned_type(&pt.ty);
                *pt.pat = Pat::Ident(syn::PatIdent {
                    attrs: Vec::new(),
                    by_ref: None,
                    mutability: None,
                    ident: owned_ident,
                    subpat: None,
                });
                *pt.ty = Type::Verbatim(owned);
                continue;
            }
            let (Type::Reference(r), Pat::Ident(pi)) = (&*pt.ty, &*pt.pat) else { continue };
            let Some(param) = params.iter().find(|p| p.ident == pi.ident) else { continue };
            let owned = match param.kind {
                ParamKind::Arg => owned_type(&pt.ty),
                ParamKind::Context | ParamKind::Capability(_) => {
                    let elem = &r.elem;
                    quote!(#elem)
                }
            };
            let owned_ident = format_ident!("__agents_owned_{}", syn::ext::IdentExt::unraw(&pi.ident));
            let (pat, elem) = (&pt.pat, &r.elem);
            // The reference's own lifetime is left out: the borrow is of a local.
            borrows.push(quote! {
                let #pat: &#elem = ::core::borrow::Borrow::borrow(&#owned_ident);
            });
            *pt.pat = Pat::Ident(syn::PatIdent {
                attrs: Vec::new(),
                by_ref: None,
                mutability: None,
                ident: owned_ident,
                subpat: None,
            });
            *pt.ty = Type::Verbatim(owned);
        }
    }
    // `ToolContext::invoke` needs `A: Agent`; a tool states only what it invokes.
    // Added where the user bounds the parameter, so that its bounds stay in one place.
    if let Some(tp) = agent_param {
        let agent: syn::TypeParamBound = syn::parse_quote!(#rt::Agent);
        let in_where = sig.generics.where_clause.as_mut().and_then(|wc| {
            wc.predicates.iter_mut().find_map(|p| match p {
                syn::WherePredicate::Type(pt) if matches!(&pt.bounded_ty, Type::Path(b) if b.path.is_ident(&tp.ident)) => {
                    Some(pt)
                }
                _ => None,
            })
        });
        match in_where {
            Some(pt) if tp.bounds.is_empty() => pt.bounds.push(agent),
            _ => {
                let param = sig.generics.type_params_mut().find(|p| p.ident == tp.ident);
                if let Some(param) = param {
                    param.bounds.push(agent);
                }
            }
        }
    }
    (sig, borrows)
}

/// The tool's name in the value namespace: calling it like a function is an error that says
/// how a tool is called, rather than rustc's "expected function, found struct".
fn direct_call_tokens(func: &ToolFn, rt: &TokenStream) -> TokenStream {
    let (fn_ident, vis) = (&func.sig.ident, &func.vis);
    let n_params = func.sig.inputs.len();
    let generics: Vec<Ident> = (0..n_params).map(|i| format_ident!("__P{}", i)).collect();
    let span = fn_ident.span();
    quote_spanned! {span=>
        #[doc(hidden)]
        #[allow(dead_code, non_snake_case, unreachable_pub, missing_docs, clippy::too_many_arguments)]
        #vis fn #fn_ident<'__a, #(#generics,)* __R>(#(_: #generics),*) -> __R
        where
            // The lifetime keeps the bound from being checked where it is declared.
            #fn_ident: #rt::tool::NotCalledDirectly<(&'__a (), #(#generics,)*)>,
        {
            // The result is whatever the call site expects (`.await`, `?`, a comparison in a
            // test): the refused bound is then the call's only error.
            ::core::unreachable!("a tool is not called as a function")
        }
    }
}

/// The expansion of a refused shape: the errors and the function as written (without the
/// `#[secret]` marks `#[tool]` reads), so that it still compiles where it stands (a method in
/// its `impl` block) and nothing generated adds a second error.
fn refused_stub(func: &ToolFn, errors: Errors) -> TokenStream {
    let errs = errors.into_tokens();
    let attrs = &func.attrs;
    let vis = &func.vis;
    let mut sig = func.sig.clone();
    for input in &mut sig.inputs {
        if let FnArg::Typed(pt) = input {
            pt.attrs.retain(|a| !a.path().is_ident("secret"));
        }
    }
    let body = match &func.body {
        Some(b) => quote!(#b),
        None => quote!({ ::core::unimplemented!() }),
    };
    quote! {
        #errs
        #(#attrs)*
        #[allow(dead_code)]
        #vis #sig #body
    }
}

/// The type a tool's future yields, when the handler can name it (no `impl Trait`, no
/// lifetime or type parameter of the function's own): the handler then converts the result
/// through `<T as IntoToolResult>`, so that a return type that is not `Result<T, E>` (or a
/// future that is not `Send`) is reported on the user's return type.
fn nameable_return(sig: &Signature) -> Option<&Type> {
    let syn::ReturnType::Type(_, ty) = &sig.output else { return None };
    fn mentions(tokens: TokenStream, names: &[String]) -> bool {
        let tts: Vec<proc_macro2::TokenTree> = tokens.into_iter().collect();
        tts.iter().enumerate().any(|(i, tt)| match tt {
            proc_macro2::TokenTree::Ident(id) => id == "impl" || id == "Self" || names.contains(&id.to_string()),
            proc_macro2::TokenTree::Punct(p) if p.as_char() == '\'' => {
                !matches!(tts.get(i + 1), Some(proc_macro2::TokenTree::Ident(l)) if l == "static" || l == "_")
            }
            proc_macro2::TokenTree::Group(g) => mentions(g.stream(), names),
            _ => false,
        })
    }
    let params: Vec<String> = sig.generics.type_params().map(|t| t.ident.to_string()).collect();
    (!mentions(ty.to_token_stream(), &params)).then_some(&**ty)
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
fn find_invokes(tokens: TokenStream, cx: &Ident, out: &mut Vec<(Span, Option<String>)>) {
    use proc_macro2::TokenTree as T;
    let tts: Vec<T> = tokens.into_iter().collect();
    for (i, tt) in tts.iter().enumerate() {
        match (tt, tts.get(i + 1), tts.get(i + 2)) {
            (T::Ident(c), Some(T::Punct(dot)), Some(T::Ident(m)))
                if c == cx && dot.as_char() == '.' && m == "invoke" =>
            {
                // `:: <` then the tool's path up to the matching `>`.
                let rest = &tts[i + 3..];
                let turbofish = matches!(rest, [T::Punct(a), T::Punct(b), T::Punct(lt), ..] if a.as_char() == ':' && b.as_char() == ':' && lt.as_char() == '<');
                let invoked = turbofish.then(|| {
                    let mut depth = 0usize;
                    let inner: TokenStream = rest[3..]
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
                    type_string(&inner)
                });
                out.push((m.span(), invoked.filter(|s| !s.is_empty())));
            }
            (T::Group(g), _, _) => find_invokes(g.stream(), cx, out),
            _ => {}
        }
    }
}

/// `&str` → `<str as ToOwned>::Owned`; owned types unchanged.
fn owned_type(ty: &Type) -> TokenStream {
    match ty {
        Type::Reference(r) => {
            let elem = &r.elem;
            quote!(<#elem as ::std::borrow::ToOwned>::Owned)
        }
        other => match option_of_ref(other) {
            Some(elem) => quote!(::core::option::Option<<#elem as ::std::borrow::ToOwned>::Owned>),
            None => quote!(#other),
        },
    }
}

/// `T` in `Option<&T>` (a borrowed optional parameter), written as `Option` or a path ending
/// in it.
fn option_of_ref(ty: &Type) -> Option<&Type> {
    let Type::Path(p) = ty else { return None };
    let last = p.path.segments.last()?;
    if last.ident != "Option" || p.qself.is_some() {
        return None;
    }
    let syn::PathArguments::AngleBracketed(a) = &last.arguments else { return None };
    match a.args.iter().collect::<Vec<_>>().as_slice() {
        [syn::GenericArgument::Type(Type::Reference(r))] => Some(&r.elem),
        _ => None,
    }
}

fn substitute_ident(tokens: TokenStream, from: &Ident, to: &Ident) -> TokenStream {
    tokens
        .into_iter()
        .map(|tt| match tt {
            proc_macro2::TokenTree::Ident(i) if i == *from => proc_macro2::TokenTree::Ident(to.clone()),
            proc_macro2::TokenTree::Group(g) => {
                let mut ng = proc_macro2::Group::new(g.delimiter(), substitute_ident(g.stream(), from, to));
                ng.set_span(g.span());
                proc_macro2::TokenTree::Group(ng)
            }
            other => other,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn expanded(args: TokenStream, item: TokenStream) -> String {
        expand(args, item).to_string()
    }

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
    fn a_tool_not_generic_over_the_agent_cannot_invoke() {
        let out = expanded(
            quote!(permission = public),
            quote! {
                /// Summarises.
                async fn summary(cx: &ToolContext<'_>) -> Result<String, String> {
                    cx.invoke::<list_athletes>(v).await
                }
            },
        );
        assert!(out.contains("tool `summary` invokes another tool, but it is not generic over the agent"), "{out}");
        assert!(out.contains("fn summary<A: Grants<list_athletes>>(cx: &ToolContext<'_, A>, ...)"), "{out}");
        // The body is not type-checked again.
        assert!(out.contains("unimplemented"), "{out}");
    }

    #[test]
    fn a_generic_tool_declares_every_tool_it_invokes() {
        let out = expanded(
            quote!(permission = public),
            quote! {
                /// Summarises.
                async fn summary<A: Grants<list_athletes>>(cx: &ToolContext<'_, A>) -> Result<String, String> {
                    cx.invoke::<list_athletes>(v).await;
                    cx.invoke::<tools::list_injuries>(v).await
                }
            },
        );
        assert!(out.contains("tool `summary` invokes `tools::list_injuries` without declaring it: add the bound `A: Grants<tools::list_injuries>`"), "{out}");
        assert!(!out.contains("invokes `list_athletes`"), "{out}");
    }

    #[test]
    fn a_generic_tool_gets_the_agent_bound_and_names_what_it_invokes_by_tool_name() {
        let out = expanded(
            quote!(permission = public),
            quote! {
                /// Summarises.
                async fn summary<A: Grants<list_athletes>>(cx: &ToolContext<'_, A>) -> Result<String, String> {
                    cx.invoke::<list_athletes>(v).await
                }
            },
        );
        assert!(!out.contains("compile_error"), "{out}");
        assert!(out.contains("A : Grants < list_athletes > + :: agents_runtime :: Agent"), "{out}");
        assert!(out.contains("uses : & [< list_athletes as :: agents_runtime :: Tool > :: NAME]"), "{out}");
    }

    #[test]
    fn a_capability_is_made_by_the_runtime_from_the_call() {
        let out = expanded(
            quote!(permission = public, policy(env(vars = ["APP_REGION"]))),
            quote! {
                /// Tells the region.
                fn region(env: EnvAccess) -> Result<String, String> { todo!() }
            },
        );
        assert!(!out.contains("__call . spec"), "{out}");
        assert!(out.contains("__private :: env_access (__call)"), "{out}");
    }
}
