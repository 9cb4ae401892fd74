//! The items an agent's model becomes: its `MANIFEST`, its `Agent` and `Registry` impls, its
//! grants and ceiling (sealed), and the compile-time checks that tie the manifest's names to
//! the types that run.

use super::model::Model;
use crate::util::{permission_name, type_string};
use agents_core::Limits;
use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{Ident, Type};

/// Every item of the agent.
pub(crate) fn emit(m: &Model, rt: &TokenStream) -> TokenStream {
    let ident = &m.agent.ident;
    let (text, hash) = (&m.manifest_text, &m.manifest_hash);
    let manifest_doc = format!("The permission manifest of `{}`: canonical JSON, exactly these bytes.", m.name);
    let hash_doc = format!("Lowercase hex SHA-256 of exactly the [`{ident}::MANIFEST`] bytes: `{hash}`.");
    let agent_impl = agent_impl(m, rt);
    let registry = registry_impl(m, rt);
    let grants = grants(m, rt);
    let (consistency, checks) = checks(m, rt);
    let ceiling = ceiling_impls(m, rt);
    let declared_model = declared_model(m, rt);
    let skill_enum = super::skill_enum::emit(m, rt);
    let skill_types = super::skill_types::emit(m, rt);
    let subagents = super::granting::emit(m, rt);
    quote! {
        impl #ident {
            #[doc = #manifest_doc]
            pub const MANIFEST: &'static str = #text;
            #[doc = #hash_doc]
            pub const MANIFEST_SHA256: &'static str = #hash;
        }

        #declared_model

        #skill_enum

        #skill_types

        #subagents

        const _: () = {
            #agent_impl
            #registry
            #grants
            #consistency
            #ceiling
            #checks
        };
    }
}

/// `Agent`: the spec, the manifest and the tools' specs sorted by name.
fn agent_impl(m: &Model, rt: &TokenStream) -> TokenStream {
    let (ident, name, description) = (&m.agent.ident, &m.name, &m.description);
    let seal = quote!(#rt::__private::seal);
    let input_ty: Type = m.agent.input.clone().unwrap_or_else(|| syn::parse_quote!(::std::string::String));
    let output_ty: Type = m.agent.output.clone().unwrap_or_else(|| syn::parse_quote!(::std::string::String));
    let input = m.agent.input.as_ref().map(type_string).unwrap_or_else(|| "String".into());
    let output = m.agent.output.as_ref().map(type_string).unwrap_or_else(|| "String".into());
    let spec_refs = sorted(m).into_iter().map(|p| quote!(&<#p as #rt::Tool>::SPEC));
    let skill_specs = super::skill_types::specs(m, rt);
    let ceiling_spec = match &m.manifest.agent.ceiling {
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
    } = m.limits;
    let (text, hash) = (&m.manifest_text, &m.manifest_hash);
    let (models, budget) = surface_spec(m, rt);
    let unskilled = match m.manifest.agent.unskilled {
        agents_core::skill::Unskilled::None => quote!(None),
        agents_core::skill::Unskilled::Shared => quote!(Shared),
    };
    let (knowledge, tracked) = super::knowledge::spec_tokens(&m.knowledge, &quote!(#rt::agents_core));
    let audit_values = Ident::new(&format!("{:?}", m.manifest.agent.audit_values), proc_macro2::Span::call_site());
    let expose_mcp = m.manifest.agent.expose.mcp.iter().map(|e| {
        let way = Ident::new(&format!("{e:?}"), proc_macro2::Span::call_site());
        quote!(#rt::agents_core::expose::McpExposure::#way)
    });
    let capabilities = super::capabilities::emit(m, rt);
    let skill_schemas = super::skill_types::schemas(m, rt);
    let agents = super::granting::agents_const(m, rt);
    quote! {
        #tracked
        impl #seal::DeclaredByAgentMacro for #ident {}
        impl #rt::Agent for #ident {
            type Input = #input_ty;
            type Output = #output_ty;
            const SPEC: #rt::AgentSpec = #rt::AgentSpec {
                name: #name,
                description: #description,
                input: #input,
                output: #output,
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
                models: #models,
                budget: #budget,
                unskilled: #rt::agents_core::skill::Unskilled::#unskilled,
                knowledge: #knowledge,
                audit_values: #rt::agents_core::audit::AuditValues::#audit_values,
                expose_mcp: &[#(#expose_mcp),*],
            };
            const MANIFEST: &'static str = #text;
            const MANIFEST_SHA256: &'static str = #hash;
            fn tools() -> &'static [&'static #rt::ToolSpec] {
                &[#(#spec_refs),*]
            }
            #capabilities
            #skill_schemas
            #agents
        }
    }
}

/// The `models` and `budget` of the agent's spec, from the manifest's (sorted) entries.
fn surface_spec(m: &Model, rt: &TokenStream) -> (TokenStream, TokenStream) {
    let core = quote!(#rt::agents_core);
    let models = match &m.manifest.agent.models {
        None => quote!(::core::option::Option::None),
        Some(list) => {
            let specs = list.iter().map(|e| {
                let kind = Ident::new(&format!("{:?}", e.provider), proc_macro2::Span::call_site());
                let (model, host) = (e.model.as_deref().unwrap_or(""), e.host.as_deref().unwrap_or(""));
                quote!(#core::models::ModelSpec { provider: #core::models::ModelProvider::#kind, model: #model, host: #host })
            });
            quote!(::core::option::Option::Some(&[#(#specs),*]))
        }
    };
    let opt = |v: Option<u64>| match v {
        Some(v) => quote!(::core::option::Option::Some(#v)),
        None => quote!(::core::option::Option::None),
    };
    let b = &m.manifest.agent.budget;
    let (tokens, usd) = (opt(b.tokens_per_run), opt(b.usd_per_run_micros));
    let budget = quote!(#core::budget::BudgetSpec { tokens_per_run: #tokens, usd_per_run_micros: #usd });
    (models, budget)
}

/// `declared_model`: a model id the agent declares, checked in const evaluation.
fn declared_model(m: &Model, rt: &TokenStream) -> TokenStream {
    let ident = &m.agent.ident;
    let doc = format!(
        "`id` when `{}` declares a model of that id (or declares no models); otherwise a panic, which in a `const` is a compile error: `const MODEL: &str = {ident}::declared_model(\"...\");`.",
        m.name
    );
    quote! {
        impl #ident {
            #[doc = #doc]
            pub const fn declared_model(id: &'static str) -> &'static str {
                ::core::assert!(
                    #rt::__private::declares_model(<#ident as #rt::Agent>::SPEC.models, id),
                    "the agent does not declare this model: add it to `models: [...]` in its `agent!`, a widening reviewers see in the manifest"
                );
                id
            }
        }
    }
}

/// The granted tools' paths, sorted by tool name (the order of `tools()` and the registry).
fn sorted(m: &Model) -> Vec<&syn::Path> {
    let mut tools: Vec<_> = m.tools.iter().collect();
    tools.sort_by(|a, b| a.entry.name.cmp(&b.entry.name));
    tools.into_iter().map(|t| &t.path).collect()
}

/// `Registry`: each entry at its position in the name-sorted `tools()`, which the runtime
/// finds by binary search.
fn registry_impl(m: &Model, rt: &TokenStream) -> TokenStream {
    let ident = &m.agent.ident;
    let arms = sorted(m)
        .into_iter()
        .enumerate()
        .map(|(i, p)| quote_spanned!(p.span()=> #i => ::core::option::Option::Some(#rt::RegisteredTool::of::<#p>())));
    let agent_at = super::granting::agent_at(m, rt);
    let handoff_to = super::handoffs::handoff_to(&m.handoffs, rt);
    quote! {
        impl #rt::Registry for #ident {
            fn entry_at(index: usize) -> ::core::option::Option<#rt::RegisteredTool<Self>> {
                match index {
                    #(#arms,)*
                    _ => ::core::option::Option::None,
                }
            }
            #agent_at
            #handoff_to
        }
    }
}

/// `Grants<T>` for each granted tool, behind the seal only this macro implements.
fn grants(m: &Model, rt: &TokenStream) -> TokenStream {
    let ident = &m.agent.ident;
    let seal = quote!(#rt::__private::seal);
    let grants = m.tools.iter().map(|t| {
        let p = &t.path;
        quote_spanned!(p.span()=> impl #seal::GrantedByAgentMacro<#p> for #ident {} impl #rt::Grants<#p> for #ident {})
    });
    quote!(#(#grants)*)
}

/// `WithinCeiling<P>`: every permission without a ceiling; else `Public` and each ceiling
/// path, whose declared name must be the one the manifest shows.
fn ceiling_impls(m: &Model, rt: &TokenStream) -> TokenStream {
    let ident = &m.agent.ident;
    let seal = quote!(#rt::__private::seal);
    let Some(c) = &m.agent.ceiling else {
        return quote! {
            impl<__P: #rt::Permission> #seal::CeilingByAgentMacro<__P> for #ident {}
            impl<__P: #rt::Permission> #rt::WithinCeiling<__P> for #ident {}
        };
    };
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

/// The compile-time checks, each spanned on the path it is about: each path names one tool
/// as a macro and as a type; the manifest's `uses` are the tools the resolved bounds name;
/// each tool is within the ceiling; each skill's tool is granted (the last two as functions
/// that are never called).
fn checks(m: &Model, rt: &TokenStream) -> (TokenStream, TokenStream) {
    let ident = &m.agent.ident;
    let seal = quote!(#rt::__private::seal);
    let same_tool = m.tools.iter().map(|t| {
        let (p, d) = (&t.path, &t.digest);
        let msg = format!(
            "`{}` names one tool as a macro and another as a type (an import or module makes them resolve differently), so the manifest entry of `{}` would not describe the tool that runs; name each tool by a path that leads to its `#[tool]` function both ways",
            type_string(p),
            t.entry.name
        );
        quote_spanned!(p.span()=> const _: () = ::core::assert!(<#p as #seal::DeclaredByToolMacro>::MANIFEST_ENTRY == #d, #msg);)
    });
    let same_uses = m.tools.iter().filter(|t| !t.entry.uses.is_empty()).map(|t| {
        let (p, names) = (&t.path, &t.entry.uses);
        let msg = format!(
            "the manifest lists `uses` of `{}` as {:?}, which are not the tools its `Grants<...>` bounds resolve to; give the invoked tools distinct function names",
            t.entry.name, names
        );
        quote_spanned!(p.span()=> const _: () = ::core::assert!(#rt::__private::same_names(<#p as #rt::Tool>::SPEC.uses, &[#(#names),*]), #msg);)
    });
    // The agent named with the path's span, so that an error lands on the path.
    let agent_at = |p: &syn::Path| Ident::new(&ident.to_string(), p.span());
    let ceiling_checks = m.tools.iter().map(|t| {
        let (p, a) = (&t.path, agent_at(&t.path));
        quote_spanned!(p.span()=> let () = <#a as #rt::WithinCeiling<<#p as #rt::Tool>::Permission>>::WITHIN;)
    });
    let skill_checks = m.agent.skills.iter().flat_map(|(_, paths)| paths).map(|p| {
        let a = agent_at(p);
        quote_spanned!(p.span()=> let () = <#a as #rt::Grants<#p>>::GRANTED;)
    });
    let consistency = quote!(#(#same_tool)* #(#same_uses)*);
    let checks = quote! {
        #[allow(dead_code)]
        fn __agents_check_ceiling() {
            #(#ceiling_checks)*
        }

        #[allow(dead_code)]
        fn __agents_check_skills() {
            #(#skill_checks)*
        }
    };
    (consistency, checks)
}
