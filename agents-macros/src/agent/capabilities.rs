//! `Agent::CAPABILITIES`: the agent's capability summary, computed natively from its manifest
//! and the links of the agents it grants and hands off to, by the functions the runtime's
//! check shares ([`CapabilityLists::of`], [`CapabilityLists::merge`]).

use super::model::Model;
use agents_core::compose::{CapabilityLists, Reach};
use proc_macro2::{Span, TokenStream};
use quote::quote;

/// The agent's summary: its own tools' lists merged with each granted agent's and each handoff
/// target's (each read from that agent's link, which carries its own merged summary, so the
/// merge is transitive).
pub(crate) fn merged(m: &Model) -> CapabilityLists {
    let callees = m.agents.iter().chain(m.handoffs.iter().map(|h| &h.target));
    callees.fold(CapabilityLists::of(&m.manifest), |lists, g| lists.merge(&g.capabilities))
}

/// The `CAPABILITIES` const of the agent's `Agent` impl.
pub(crate) fn emit(m: &Model, rt: &TokenStream) -> TokenStream {
    let lists = merged(m);
    let (actions, handoffs, permissions, tools) = (&lists.actions, &lists.handoffs, &lists.permissions, &lists.tools);
    let reach = syn::Ident::new(
        match lists.reach() {
            Reach::None => "None",
            Reach::Read => "Read",
            Reach::Action => "Action",
            Reach::Handoff => "Handoff",
        },
        Span::call_site(),
    );
    let compose = quote!(#rt::agents_core::compose);
    quote! {
        const CAPABILITIES: #compose::Capabilities = #compose::Capabilities {
            actions: &[#(#actions),*],
            handoffs: &[#(#handoffs),*],
            permissions: &[#(#permissions),*],
            tools: &[#(#tools),*],
            reaches: #compose::Reach::#reach,
            expose_mcp: <Self as #rt::agents_core::Agent>::SPEC.expose_mcp,
        };
    }
}
