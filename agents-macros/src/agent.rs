//! `agent! { ... }`: declares an agent. The tools' manifest entries are gathered through a
//! chain of hidden `macro_rules!` that `#[tool]` generates next to each tool (one expansion
//! level per tool), so the last step sees every entry and computes `MANIFEST` and its SHA-256
//! natively, leaving const evaluation nothing expensive to do.

use crate::context::Errors;
use crate::crate_path;
use crate::util::{doc_string, permission_name, suggest, type_string};
use agents_core::Limits;
use agents_core::manifest::{AgentEntry, LimitsEntry, Manifest, SkillEntry, ToolEntry};
use proc_macro2::{TokenStream, TokenTree};
use quote::{quote, quote_spanned};
use syn::parse::{Parse, ParseStream};
use syn::spanned::Spanned;
use syn::{Attribute, Ident, LitInt, LitStr, Token, Type, Visibility};

const KEYS: &[&str] = &["name", "input", "output", "tools", "skills", "ceiling", "limits"];
const LIMIT_KEYS: &[&str] = &[
    "max_iterations",
    "provider_timeout_secs",
    "confirm_timeout_secs",
    "max_concurrent_runs",
    "token_ttl_secs",
    "history_messages",
];

pub(crate) struct AgentInput {
    attrs: Vec<Attribute>,
    vis: Visibility,
    ident: Ident,
    name: Option<LitStr>,
    input: Option<Type>,
    output: Option<Type>,
    tools: Vec<syn::Path>,
    skills: Vec<(Ident, Vec<syn::Path>)>,
    ceiling: Option<Vec<syn::Path>>,
    limits: Vec<(Ident, LitInt)>,
    /// Errors found while parsing, reported with the expansion.
    errors: Vec<syn::Error>,
}

fn path_list(input: ParseStream<'_>) -> syn::Result<Vec<syn::Path>> {
    let content;
    syn::bracketed!(content in input);
    Ok(content.parse_terminated(syn::Path::parse_mod_style, Token![,])?.into_iter().collect())
}

impl Parse for AgentInput {
    fn parse(input: ParseStream<'_>) -> syn::Result<Self> {
        let attrs = input.call(Attribute::parse_outer)?;
        let vis: Visibility = input.parse()?;
        input
            .parse::<Token![struct]>()
            .map_err(|e| syn::Error::new(e.span(), "an agent starts with its type: `pub struct MyAgent;`"))?;
        let ident: Ident = input.parse()?;
        input.parse::<Token![;]>()?;
        let mut out = AgentInput {
            attrs,
            vis,
            ident,
            name: None,
            input: None,
            output: None,
            tools: Vec::new(),
            skills: Vec::new(),
            ceiling: None,
            limits: Vec::new(),
            errors: Vec::new(),
        };
        let mut seen: Vec<String> = Vec::new();
        let mut tools_seen = false;
        while !input.is_empty() {
            let key: Ident = input.call(syn::ext::IdentExt::parse_any).map_err(|e| {
                syn::Error::new(
                    e.span(),
                    "expected a key of `agent!`, written `key: value`, e.g. `tools: [list_athletes]`",
                )
            })?;
            let k = key.to_string();
            let takes = key_takes(&k);
            input.parse::<Token![:]>().map_err(|e| {
                syn::Error::new(e.span(), format!("write `{k}: ...` with a colon; `{k}` takes {takes}"))
            })?;
            let wrong = |e: syn::Error| syn::Error::new(e.span(), format!("`{k}` takes {takes}"));
            if KEYS.contains(&k.as_str()) {
                if seen.contains(&k) {
                    out.errors
                        .push(syn::Error::new(key.span(), format!("duplicate `agent!` key `{k}`; give each key once")));
                }
                seen.push(k.clone());
            }
            match k.as_str() {
                "name" => out.name = Some(input.parse().map_err(wrong)?),
                "input" => out.input = Some(input.parse().map_err(wrong)?),
                "output" => out.output = Some(input.parse().map_err(wrong)?),
                "tools" => {
                    tools_seen = true;
                    out.tools = path_list(input).map_err(wrong)?;
                }
                "ceiling" => out.ceiling = Some(path_list(input).map_err(wrong)?),
                "skills" => {
                    if !input.peek(syn::token::Brace) {
                        return Err(wrong(input.error("")));
                    }
                    let content;
                    syn::braced!(content in input);
                    while !content.is_empty() {
                        let skill: Ident = content.parse().map_err(wrong)?;
                        content.parse::<Token![:]>().map_err(wrong)?;
                        let tools = path_list(&content).map_err(wrong)?;
                        out.skills.push((skill, tools));
                        if !content.is_empty() {
                            content.parse::<Token![,]>()?;
                        }
                    }
                }
                "limits" => {
                    if !input.peek(syn::token::Brace) {
                        return Err(wrong(input.error("")));
                    }
                    let content;
                    syn::braced!(content in input);
                    while !content.is_empty() {
                        let lk: Ident = content.parse().map_err(wrong)?;
                        content.parse::<Token![:]>().map_err(wrong)?;
                        let v: LitInt = content.parse().map_err(wrong)?;
                        let name = lk.to_string();
                        if !LIMIT_KEYS.contains(&name.as_str()) {
                            out.errors.push(syn::Error::new(
                                lk.span(),
                                format!("unknown limit `{name}`{}", suggest(&name, LIMIT_KEYS)),
                            ));
                        } else if out.limits.iter().any(|(k, _)| *k == lk) {
                            out.errors.push(syn::Error::new(
                                lk.span(),
                                format!("limit `{name}` is given twice; give each limit once"),
                            ));
                        } else {
                            let (max, ty) = limit_range(&name);
                            let wrong_suffix = !v.suffix().is_empty() && v.suffix() != ty;
                            match v.base10_parse::<u128>() {
                                _ if wrong_suffix => out.errors.push(syn::Error::new(
                                    v.span(),
                                    format!("limit `{name}` is a `{ty}`: write the number without the `{}` suffix", v.suffix()),
                                )),
                                Ok(n) if n == 0 || n > max => out.errors.push(syn::Error::new(
                                    v.span(),
                                    format!("limit `{name}` is {}, out of range for its type `{ty}`: write an integer from 1 to {max}", v.base10_digits()),
                                )),
                                Ok(_) => {}
                                Err(_) => out.errors.push(syn::Error::new(
                                    v.span(),
                                    format!("limit `{name}` is {}, out of range for its type `{ty}`: write an integer from 1 to {max}", v.base10_digits()),
                                )),
                            }
                        }
                        out.limits.push((lk, v));
                        if !content.is_empty() {
                            content.parse::<Token![,]>()?;
                        }
                    }
                }
                other => {
                    out.errors.push(syn::Error::new(
                        key.span(),
                        format!("unknown `agent!` key `{other}`{}", suggest(other, KEYS)),
                    ));
                    // Skip the value up to the next top-level comma.
                    while !input.is_empty() && !input.peek(Token![,]) {
                        input.parse::<TokenTree>()?;
                    }
                }
            }
            if !input.is_empty() {
                input.parse::<Token![,]>()?;
            }
        }
        if !tools_seen {
            out.errors.push(syn::Error::new(
                out.ident.span(),
                format!("agent `{}` grants no tools: add `tools: [...]`", out.ident),
            ));
        }
        Ok(out)
    }
}

/// What a key of `agent!` takes, with an example of the right form (for the error of a value
/// of another shape).
fn key_takes(key: &str) -> &'static str {
    match key {
        "name" => "the agent's name as a string, e.g. `name: \"triage\"`",
        "input" => "the type of the agent's input, e.g. `input: String`",
        "output" => "the type of the agent's output, e.g. `output: Summary`",
        "tools" => {
            "the tools it grants, as paths in square brackets, e.g. `tools: [list_athletes, tools::record_injury]`"
        }
        "ceiling" => {
            "the permissions it may never exceed, as paths in square brackets (not strings), e.g. `ceiling: [perms::athlete::read]`"
        }
        "skills" => "named groups of its tools in braces, e.g. `skills: { triage: [list_athletes, record_injury] }`",
        "limits" => "limits in braces, each a name and a positive integer, e.g. `limits: { max_iterations: 8 }`",
        _ => "a value",
    }
}

/// The largest value of a limit and its type's name, as `Limits` declares it.
fn limit_range(key: &str) -> (u128, &'static str) {
    match key {
        "provider_timeout_secs" | "confirm_timeout_secs" | "token_ttl_secs" => (u128::from(u64::MAX), "u64"),
        _ => (u128::from(u32::MAX), "u32"),
    }
}

impl AgentInput {
    fn limits(&self) -> Limits {
        let mut l = Limits::DEFAULT;
        for (k, v) in &self.limits {
            // In range: checked when parsed (an out-of-range limit never reaches here).
            let wide: u64 = v.base10_parse().unwrap_or(0);
            let narrow = || u32::try_from(wide).unwrap_or(0);
            match k.to_string().as_str() {
                "max_iterations" => l.max_iterations = narrow(),
                "provider_timeout_secs" => l.provider_timeout_secs = wide,
                "confirm_timeout_secs" => l.confirm_timeout_secs = wide,
                "max_concurrent_runs" => l.max_concurrent_runs = narrow(),
                "token_ttl_secs" => l.token_ttl_secs = wide,
                "history_messages" => l.history_messages = narrow(),
                _ => {}
            }
        }
        l
    }
}

pub(crate) fn expand(tokens: TokenStream) -> TokenStream {
    let parsed: AgentInput = match syn::parse2(tokens.clone()) {
        Ok(p) => p,
        Err(e) => return e.to_compile_error(),
    };
    let rt = crate_path::runtime();
    let AgentInput { attrs, vis, ident, .. } = &parsed;
    let errors = Errors::default();
    for e in &parsed.errors {
        errors.push(e.clone());
    }
    if doc_string(attrs).is_none() {
        errors.spanned(
            ident,
            format!("agent `{ident}` has no description: add a doc comment (`/// ...`) above `struct {ident}`"),
        );
    }
    let strukt = quote! {
        #(#attrs)*
        #[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
        #vis struct #ident;
    };
    if !errors.is_empty() {
        let errs = errors.into_tokens();
        return quote!(#errs #strukt);
    }
    let finish = quote!(#rt::tool::agent_manifest);
    // Each tool's macro appends its manifest entry and calls the next path in the list; the
    // last one is the finishing macro, which receives the empty list.
    // A tool named like one of this crate's macros is reached by its `__agents_tool_` name.
    let chain_paths: Vec<syn::Path> = parsed
        .tools
        .iter()
        .map(|p| {
            let mut p = p.clone();
            if let Some(last) = p.segments.last_mut() {
                last.ident = crate::util::chain_ident(&last.ident);
            }
            p
        })
        .collect();
    let chain = match chain_paths.split_first() {
        Some((first, rest)) => quote! { #first! { [ #(#rest,)* #finish ] { #tokens } { } } },
        None => quote! { #finish! { [ ] { #tokens } { } } },
    };
    quote! { #strukt #chain }
}

struct FinishInput {
    state: TokenStream,
    /// Per granted tool, in `tools` order: its function's identifier and its manifest entry.
    fragments: Vec<(LitStr, LitStr)>,
}

impl Parse for FinishInput {
    fn parse(input: ParseStream<'_>) -> syn::Result<Self> {
        // The tool list, empty by now.
        let rest;
        syn::bracketed!(rest in input);
        let _: TokenStream = rest.parse()?;
        let state;
        syn::braced!(state in input);
        let state: TokenStream = state.parse()?;
        let frags;
        syn::braced!(frags in input);
        let mut fragments = Vec::new();
        while !frags.is_empty() {
            fragments.push((frags.parse()?, frags.parse()?));
        }
        Ok(FinishInput { state, fragments })
    }
}

pub(crate) fn finish(tokens: TokenStream) -> TokenStream {
    let fin: FinishInput = match syn::parse2(tokens) {
        Ok(f) => f,
        Err(e) => return e.to_compile_error(),
    };
    let agent: AgentInput = match syn::parse2(fin.state) {
        Ok(a) => a,
        Err(e) => return e.to_compile_error(),
    };
    let rt = crate_path::runtime();
    let errors = Errors::default();
    let ident = &agent.ident;
    let agent_name = agent.name.as_ref().map(LitStr::value).unwrap_or_else(|| ident.to_string());

    let raw_digests: Vec<proc_macro2::Literal> =
        fin.fragments.iter().map(|(_, f)| crate::util::entry_digest(&f.value())).collect();
    let mut entries: Vec<ToolEntry> = Vec::new();
    for (_, f) in &fin.fragments {
        match serde_json::from_str::<ToolEntry>(&f.value()) {
            Ok(e) => entries.push(e),
            Err(e) => errors.spanned(f, format!("internal: unreadable tool entry: {e}")),
        }
    }
    // A tool names what it invokes by identifier (`Grants<list_athletes>`); the manifest lists
    // tool names, which `name = "..."` may change. The agent grants every tool a granted tool
    // invokes (a type-level check), so each identifier is among its tools' functions.
    let names_by_fn: Vec<(String, String)> =
        fin.fragments.iter().map(|(f, _)| f.value()).zip(entries.iter().map(|e| e.name.clone())).collect();
    // Two granted tools may share a function name (in different modules): the identifier then
    // does not say which one is invoked, and the manifest refuses to guess. Each attribution is
    // also confirmed against the resolved types below (`same_uses`).
    let entries: Vec<ToolEntry> = entries
        .into_iter()
        .map(|mut e| {
            for u in &mut e.uses {
                let found: Vec<&String> = names_by_fn.iter().filter(|(f, _)| f == u).map(|(_, n)| n).collect();
                match found.as_slice() {
                    [name] => u.clone_from(name),
                    [] => {}
                    several => errors.spanned(
                        ident,
                        format!(
                            "tool `{}` invokes `{u}`, but agent `{ident}` grants several tools whose function is named `{u}` ({}); the manifest cannot tell which one is invoked: give the functions distinct names",
                            e.name,
                            several.iter().map(|n| format!("`{n}`")).collect::<Vec<_>>().join(", ")
                        ),
                    ),
                }
            }
            e.normalized()
        })
        .collect();
    if entries.len() != agent.tools.len() {
        errors.spanned(ident, "internal: tool entries do not match the tools list");
        return errors.into_tokens();
    }
    // Pair each path with its entry; refuse two tools with one name.
    let mut tools: Vec<(&syn::Path, ToolEntry)> = Vec::new();
    let mut digests: Vec<proc_macro2::Literal> = Vec::new();
    for ((path, entry), digest) in agent.tools.iter().zip(entries).zip(raw_digests) {
        if tools.iter().any(|(_, e)| e.name == entry.name) {
            errors.spanned(
                path,
                format!("agent `{ident}` has two tools named `{}`; tool names must be unique within an agent (remove one, or give one `name = \"...\"`)", entry.name),
            );
            continue;
        }
        tools.push((path, entry));
        digests.push(digest);
    }
    // A skill may name a tool by another path than `tools` does (`list_athletes` for
    // `tools::list_athletes`): match the whole path, else the one granted tool with that last
    // segment. A type-level check below confirms that the agent grants what the skill names.
    let last = |p: &syn::Path| p.segments.last().map(|s| s.ident.to_string());
    let name_of = |p: &syn::Path| -> Result<String, usize> {
        let key = type_string(p);
        if let Some((_, e)) = tools.iter().find(|(tp, _)| type_string(*tp) == key) {
            return Ok(e.name.clone());
        }
        let same: Vec<&ToolEntry> = tools.iter().filter(|(tp, _)| last(tp) == last(p)).map(|(_, e)| e).collect();
        match same.as_slice() {
            [one] => Ok(one.name.clone()),
            more => Err(more.len()),
        }
    };
    let mut skills = Vec::new();
    for (skill, paths) in &agent.skills {
        let mut names = Vec::new();
        for p in paths {
            match name_of(p) {
                Ok(n) => names.push(n),
                Err(0) => errors.spanned(p, format!("skill `{skill}` lists `{}`, which agent `{ident}` does not grant; add it to `tools` first", type_string(p))),
                Err(_) => errors.spanned(p, format!("skill `{skill}` lists `{}`, which matches several granted tools; write its path as `tools` does", type_string(p))),
            }
        }
        skills.push(SkillEntry { name: skill.to_string(), tools: names });
    }
    let mut ceiling_names = Vec::new();
    if let Some(c) = &agent.ceiling {
        for p in c {
            if p.is_ident("public") {
                continue;
            }
            match permission_name(p) {
                Some(n) => ceiling_names.push(n),
                None => errors
                    .spanned(p, "write a ceiling permission as its `area::action` path, e.g. `perms::athlete::read`"),
            }
        }
    }
    // The ceiling, checked by name so the message can name the tool and its permission; the
    // type-level check below stays as the guarantee (names are tied to types by const asserts).
    if agent.ceiling.is_some() {
        let within = if ceiling_names.is_empty() {
            "it is empty: public tools only".to_owned()
        } else {
            ceiling_names.iter().map(|n| format!("`{n}`")).collect::<Vec<_>>().join(", ")
        };
        for (path, entry) in &tools {
            if entry.permission != "public" && !ceiling_names.contains(&entry.permission) {
                errors.spanned(
                    path,
                    format!(
                        "tool `{}` requires the permission `{}`, which lies outside the ceiling of agent `{ident}` ({within}); remove the tool from `tools`, or add its permission (the path ending in `{}`) to `ceiling`, a widening reviewers see in the manifest",
                        entry.name,
                        entry.permission,
                        entry.permission.replace('.', "::"),
                    ),
                );
            }
        }
    }
    let input_ty: Type = agent.input.clone().unwrap_or_else(|| syn::parse_quote!(::std::string::String));
    let output_ty: Type = agent.output.clone().unwrap_or_else(|| syn::parse_quote!(::std::string::String));
    let input_str = agent.input.as_ref().map(type_string).unwrap_or_else(|| "String".into());
    let output_str = agent.output.as_ref().map(type_string).unwrap_or_else(|| "String".into());
    let description = doc_string(&agent.attrs).unwrap_or_default();
    let limits = agent.limits();
    let agent_entry = AgentEntry {
        name: agent_name.clone(),
        description: description.clone(),
        input: input_str.clone(),
        output: output_str.clone(),
        skills: skills.clone(),
        ceiling: agent.ceiling.as_ref().map(|_| ceiling_names.clone()),
        limits: LimitsEntry::from(limits),
    };
    if !errors.is_empty() {
        return errors.into_tokens();
    }
    let manifest = match Manifest::from_entries(agent_entry, tools.iter().map(|(_, e)| e.clone()).collect()) {
        Ok(m) => m,
        Err(e) => {
            errors.spanned(ident, e.to_string());
            return errors.into_tokens();
        }
    };
    let manifest_text = manifest.to_canonical_string();
    let manifest_hash = agents_core::canonical::sha256_hex(manifest_text.as_bytes());

    let mut sorted: Vec<&(&syn::Path, ToolEntry)> = tools.iter().collect();
    sorted.sort_by(|a, b| a.1.name.cmp(&b.1.name));
    let spec_refs = sorted.iter().map(|(p, _)| quote!(&<#p as #rt::Tool>::SPEC));
    // Positions in the name-sorted `tools()`, which the runtime finds by binary search.
    let entry_arms = sorted
        .iter()
        .enumerate()
        .map(|(i, (p, _))| quote_spanned!(p.span()=> #i => ::core::option::Option::Some(#rt::ToolEntry::of::<#p>())));
    let seal = quote!(#rt::__private::seal);
    let grants = tools.iter().map(|(p, _)| {
        quote_spanned!(p.span()=> impl #seal::GrantedByAgentMacro<#p> for #ident {} impl #rt::Grants<#p> for #ident {})
    });
    // The entry each path gave as a macro must be the entry of the type it names: a module
    // that makes the two resolve to different tools is refused here, at compile time.
    // The manifest's `uses` of each tool are the tools its resolved bounds name, as a set.
    let same_uses = tools.iter().filter(|(_, e)| !e.uses.is_empty()).map(|(p, e)| {
        let names = &e.uses;
        let msg = format!(
            "the manifest lists `uses` of `{}` as {:?}, which are not the tools its `Grants<...>` bounds resolve to; give the invoked tools distinct function names",
            e.name, names
        );
        quote_spanned!(p.span()=> const _: () = ::core::assert!(#rt::__private::same_names(<#p as #rt::Tool>::SPEC.uses, &[#(#names),*]), #msg);)
    });
    let same_tool = tools.iter().zip(&digests).map(|((p, e), d)| {
        let msg = format!(
            "`{}` names one tool as a macro and another as a type (an import or module makes them resolve differently), so the manifest entry of `{}` would not describe the tool that runs; name each tool by a path that leads to its `#[tool]` function both ways",
            type_string(*p),
            e.name
        );
        quote_spanned!(p.span()=> const _: () = ::core::assert!(<#p as #seal::DeclaredByToolMacro>::MANIFEST_ENTRY == #d, #msg);)
    });
    let ceiling_impls = match &agent.ceiling {
        None => quote! {
            impl<__P: #rt::Permission> #seal::CeilingByAgentMacro<__P> for #ident {}
            impl<__P: #rt::Permission> #rt::WithinCeiling<__P> for #ident {}
        },
        Some(c) => {
            let impls = c.iter().filter(|p| !p.is_ident("public")).map(|p| {
                let n = permission_name(p).unwrap_or_default();
                let msg = format!("the ceiling path does not end in `{}`", n.replace('.', "::"));
                quote_spanned! {p.span()=>
                    impl #seal::CeilingByAgentMacro<#p> for #ident {}
                    impl #rt::WithinCeiling<#p> for #ident {}
                    const _: () = ::core::assert!(#rt::__private::str_eq(<#p as #rt::Permission>::NAME, #n), #msg);
                }
            });
            quote!(impl #seal::CeilingByAgentMacro<#rt::Public> for #ident {} impl #rt::WithinCeiling<#rt::Public> for #ident {} #(#impls)*)
        }
    };
    let ceiling_checks = tools.iter().map(|(p, _)| {
        // The agent named with the tool's span, so an error lands on the tool in `tools`.
        let agent_here = Ident::new(&ident.to_string(), p.span());
        quote_spanned!(p.span()=> let () = <#agent_here as #rt::WithinCeiling<<#p as #rt::Tool>::Permission>>::WITHIN;)
    });
    let skill_checks = agent.skills.iter().flat_map(|(_, paths)| paths).map(|p| {
        let agent_here = Ident::new(&ident.to_string(), p.span());
        quote_spanned!(p.span()=> let () = <#agent_here as #rt::Grants<#p>>::GRANTED;)
    });
    let skill_specs = manifest.agent.skills.iter().map(|s| {
        let n = &s.name;
        let t = &s.tools;
        quote!(#rt::SkillSpec { name: #n, tools: &[#(#t),*] })
    });
    let ceiling_spec = match &manifest.agent.ceiling {
        Some(c) => quote!(::core::option::Option::Some(&[#(#c),*])),
        None => quote!(::core::option::Option::None),
    };
    let Limits {
        max_iterations,
        provider_timeout_secs,
        confirm_timeout_secs,
        max_concurrent_runs,
        token_ttl_secs,
        history_messages,
    } = limits;
    let manifest_doc = format!("The permission manifest of `{agent_name}`: canonical JSON, exactly these bytes.");
    let hash_doc = format!("Lowercase hex SHA-256 of exactly the [`{ident}::MANIFEST`] bytes: `{manifest_hash}`.");

    quote! {
        impl #ident {
            #[doc = #manifest_doc]
            pub const MANIFEST: &'static str = #manifest_text;
            #[doc = #hash_doc]
            pub const MANIFEST_SHA256: &'static str = #manifest_hash;
        }

        const _: () = {
            impl #seal::DeclaredByAgentMacro for #ident {}
            impl #rt::Agent for #ident {
                type Input = #input_ty;
                type Output = #output_ty;
                const SPEC: #rt::AgentSpec = #rt::AgentSpec {
                    name: #agent_name,
                    description: #description,
                    input: #input_str,
                    output: #output_str,
                    skills: &[#(#skill_specs),*],
                    ceiling: #ceiling_spec,
                    limits: #rt::Limits {
                        max_iterations: #max_iterations,
                        provider_timeout_secs: #provider_timeout_secs,
                        confirm_timeout_secs: #confirm_timeout_secs,
                        max_concurrent_runs: #max_concurrent_runs,
                        token_ttl_secs: #token_ttl_secs,
                        history_messages: #history_messages,
                    },
                };
                const MANIFEST: &'static str = #manifest_text;
                const MANIFEST_SHA256: &'static str = #manifest_hash;
                fn tools() -> &'static [&'static #rt::ToolSpec] {
                    &[#(#spec_refs),*]
                }
            }

            impl #rt::Registry for #ident {
                fn entry_at(index: usize) -> ::core::option::Option<#rt::ToolEntry<Self>> {
                    match index {
                        #(#entry_arms,)*
                        _ => ::core::option::Option::None,
                    }
                }
            }

            #(#grants)*
            #(#same_tool)*
            #(#same_uses)*
            #ceiling_impls

            #[allow(dead_code)]
            fn __agents_check_ceiling() {
                #(#ceiling_checks)*
            }

            #[allow(dead_code)]
            fn __agents_check_skills() {
                #(#skill_checks)*
            }
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use agents_core::manifest::PolicyEntry;
    use agents_core::{Risk, Tier};

    fn entry(name: &str, permission: &str, uses: &[&str]) -> String {
        let e = ToolEntry {
            name: name.to_owned(),
            title: None,
            description: format!("The {name} tool."),
            permission: permission.to_owned(),
            tier: Tier::Read,
            mutating: false,
            risk: Risk::Low,
            policy: PolicyEntry::default(),
            parameters: Vec::new(),
            uses: uses.iter().map(|u| (*u).to_owned()).collect(),
        };
        serde_json::to_string(&e).unwrap()
    }

    #[test]
    fn uses_name_tools_as_the_manifest_does_even_when_renamed() {
        let (a, s) = (entry("athletes", "athlete.read", &[]), entry("summary", "athlete.read", &["list_athletes"]));
        let out = finish(quote! {
            []
            { #[doc = "Helps."] pub struct Clinic; tools: [list_athletes, summary], }
            { "list_athletes" #a "summary" #s }
        })
        .to_string();
        assert!(!out.contains("compile_error"), "{out}");
        assert!(out.contains(r#"\"uses\":[\"athletes\"]"#), "{out}");
    }

    #[test]
    fn a_tool_outside_the_ceiling_is_named_with_its_permission() {
        let (a, w) = (entry("list_athletes", "athlete.read", &[]), entry("create_injury", "injury.write", &[]));
        let out = finish(quote! {
            []
            { #[doc = "Helps."] pub struct Clinic; tools: [list_athletes, create_injury], ceiling: [perms::athlete::read], }
            { "list_athletes" #a "create_injury" #w }
        })
        .to_string();
        assert!(
            out.contains("tool `create_injury` requires the permission `injury.write`, which lies outside the ceiling of agent `Clinic` (`athlete.read`)"),
            "{out}"
        );
    }

    #[test]
    fn a_skill_may_name_a_tool_by_its_last_segment() {
        let a = entry("list_athletes", "athlete.read", &[]);
        let out = finish(quote! {
            []
            { #[doc = "Helps."] pub struct Clinic; tools: [tools::list_athletes], skills: { read: [list_athletes] }, }
            { "list_athletes" #a }
        })
        .to_string();
        assert!(!out.contains("compile_error"), "{out}");
        assert!(out.contains(r#"\"skills\":[{\"name\":\"read\",\"tools\":[\"list_athletes\"]}]"#), "{out}");
    }
}
