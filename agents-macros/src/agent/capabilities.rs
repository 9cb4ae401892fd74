//! `Agent::CAPABILITIES`: the agent's capability summary, computed natively from its manifest
//! by the one function the readers of manifests share.

use super::model::Model;
use agents_core::compose::{CapabilityLists, Reach};
use proc_macro2::{Span, TokenStream};
use quote::quote;

/// The `CAPABILITIES` const of the agent's `Agent` impl.
pub(crate) fn emit(m: &Model, rt: &TokenStream) -> TokenStream {
    let lists = CapabilityLists::of(&m.manifest);
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
