//! The items of an agent's `agents: [...]` (see [`super::subagents`]): its link for the
//! agents that grant it, its `FitsCeilingOf` impls, the `AGENTS` const, `Registry::agent_at`,
//! and the checks that tie each granted path to the agent whose link was read.

use super::model::Model;
use super::subagents::{GrantedAgent, link_text};
use crate::util::type_string;
use proc_macro2::TokenStream;
use quote::{format_ident, quote, quote_spanned};
use syn::spanned::Spanned;

/// The agent's link, for the agents that grant it: a hidden exported `macro_rules!` under a
/// name unique in the crate, and the alias beside the agent's type that reaches it.
fn link(m: &Model) -> TokenStream {
    let ident = &m.agent.ident;
    let vis = &m.agent.vis;
    let text = link_text(&m.name, &m.manifest_hash, &super::capabilities::merged(m));
    static EXPANSIONS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = EXPANSIONS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let macro_ident = format_ident!("__agents_agent_{}_{}", n, ident);
    let name = ident.to_string();
    quote! {
        #[doc(hidden)]
        #[macro_export]
        macro_rules! #macro_ident {
            ([ $next:path $(, $rest:path)* ] { $($state:tt)* } { $($links:tt)* }) => {
                $next! { [ $($rest),* ] { $($state)* } { $($links)* #name #text } }
            };
        }
        #[doc(hidden)]
        #[allow(unused_imports)]
        #vis use #macro_ident as #ident;
    }
}

/// The `AGENTS` const of the `Agent` impl, sorted by name.
pub(crate) fn agents_const(m: &Model, rt: &TokenStream) -> TokenStream {
    if m.agents.is_empty() {
        return TokenStream::new();
    }
    let mut sorted: Vec<&GrantedAgent> = m.agents.iter().collect();
    sorted.sort_by(|a, b| a.entry.name.cmp(&b.entry.name));
    let specs = sorted.iter().map(|g| {
        let (name, sha) = (&g.entry.name, &g.entry.sha256);
        quote!(#rt::agents_core::subagent::SubAgentSpec { name: #name, sha256: #sha })
    });
    quote!(const AGENTS: &'static [#rt::agents_core::subagent::SubAgentSpec] = &[#(#specs),*];)
}

/// `Registry::agent_at`: each granted agent's entry at its position in `AGENTS` (sorted by
/// name), made from its own type; nothing when it grants none (the trait's default).
pub(crate) fn agent_at(m: &Model, rt: &TokenStream) -> TokenStream {
    if m.agents.is_empty() {
        return TokenStream::new();
    }
    let mut sorted: Vec<&GrantedAgent> = m.agents.iter().collect();
    sorted.sort_by(|a, b| a.entry.name.cmp(&b.entry.name));
    let arms = sorted.iter().enumerate().map(|(i, g)| {
        let p = &g.path;
        quote_spanned!(p.span()=> #i => ::core::option::Option::Some(#rt::__private::granted_agent::<#p>()))
    });
    quote! {
        fn agent_at(index: usize) -> ::core::option::Option<#rt::GrantedAgent> {
            match index {
                #(#arms,)*
                _ => ::core::option::Option::None,
            }
        }
    }
}

/// The agent's link, its `FitsCeilingOf` impls (bounded by the permissions of its tools and by
/// its granted agents' fit), and per granted agent: the check that its path names the agent
/// whose link was read, and the check that it fits the ceiling.
pub(crate) fn emit(m: &Model, rt: &TokenStream) -> TokenStream {
    let ident = &m.agent.ident;
    let seal = quote!(#rt::__private::seal);
    let link = link(m);
    let tool_bounds = m.tools.iter().map(|t| {
        let p = &t.path;
        quote!(GrantingAgent: #rt::WithinCeiling<<#p as #rt::Tool>::Permission>,)
    });
    let agent_bounds: Vec<TokenStream> = m
        .agents
        .iter()
        .chain(m.handoffs.iter().map(|h| &h.target))
        .map(|g| {
            let p = &g.path;
            quote!(#p: #rt::FitsCeilingOf<GrantingAgent>,)
        })
        .collect();
    let bounds = quote!(#(#tool_bounds)* #(#agent_bounds)*);
    let same_agent = m.agents.iter().map(|g| {
        let (p, sha) = (&g.path, &g.entry.sha256);
        let msg = format!(
            "`{}` names one agent as a macro and another as a type (an import or module makes them resolve differently), so the manifest would not name the agent that runs; name it by a path that leads to its `agent!` both ways",
            type_string(p)
        );
        quote_spanned!(p.span()=> const _: () = ::core::assert!(#rt::__private::str_eq(<#p as #rt::Agent>::MANIFEST_SHA256, #sha), #msg);)
    });
    let fits = m.agents.iter().map(|g| {
        let p = &g.path;
        let a = syn::Ident::new(&ident.to_string(), p.span());
        quote_spanned!(p.span()=> #rt::agents_core::permission::fits_ceiling::<#a, #p>();)
    });
    let handoffs = super::handoffs::checks(ident, &m.handoffs, rt);
    quote! {
        #link
        #handoffs
        const _: () = {
            impl<GrantingAgent> #seal::FitsByAgentMacro<GrantingAgent> for #ident where #bounds {}
            impl<GrantingAgent> #rt::FitsCeilingOf<GrantingAgent> for #ident where #bounds {}
            #(#same_agent)*
            #[allow(dead_code)]
            fn __agents_check_agents() {
                #(#fits)*
            }
        };
    }
}
