//! `#[tool(handoff = Target)]`: a handoff tool that names the agent a call hands the run to.
//!
//! The tool has no body, as every handoff tool. It takes exactly one parameter, the target's
//! input (`<Target as Agent>::In`), which the model fills through the tool's schema. Beside
//! the tool, an alias reaches the target (its type and its link, see [`crate::chain`]) by the
//! tool's own path, so the agents that grant the tool read the target's link after the tools'
//! and check it against their ceiling (`agent!`, `agent/handoffs.rs`).

use super::model::{ArgField, Tool};
use crate::context::Errors;
use crate::util::type_string;
use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;

/// A targeted handoff takes exactly one parameter the model fills: the target's input.
pub(super) fn check(target: &syn::Path, args: &[ArgField], name: &str, errors: &Errors) {
    if args.len() != 1 {
        let found: Vec<String> = args.iter().map(|a| format!("`{}`", a.key)).collect();
        errors.spanned(
            target,
            format!(
                "handoff tool `{name}` hands the run to `{t}`, so it takes exactly one parameter, the input of `{t}` (`<{t} as Agent>::Input`), which the model fills; it has {} ({}): write `fn {name}(input: <the input type of {t}>);`",
                args.len(),
                if found.is_empty() { "none".to_owned() } else { found.join(", ") },
                t = type_string(target),
            ),
        );
    }
}

/// The spec's `handoff`: the target's name and hash, read from its own type.
pub(super) fn spec_field(tool: &Tool<'_>, rt: &TokenStream) -> TokenStream {
    match &tool.handoff {
        Some(t) => quote_spanned! {t.span()=>
            ::core::option::Option::Some(#rt::agents_core::subagent::SubAgentSpec {
                name: <#t as #rt::Agent>::SPEC.name,
                sha256: <#t as #rt::Agent>::MANIFEST_SHA256,
            })
        },
        None => quote!(::core::option::Option::None),
    }
}

/// The alias that reaches the target by the tool's path, and the check that the parameter is
/// the target's input.
pub(super) fn items(tool: &Tool<'_>, rt: &TokenStream) -> TokenStream {
    let Some(target) = &tool.handoff else { return TokenStream::new() };
    let (fn_ident, vis) = (&tool.func.sig.ident, &tool.func.vis);
    let alias = crate::chain::handoff_ident(fn_ident);
    let input = tool.args.first().map(|a| {
        let ty = &a.owned;
        quote_spanned! {a.ty.span()=>
            #[allow(dead_code)]
            fn __agents_handoff_input() {
                #rt::tool::handoff_input::<#ty, #target, #fn_ident, <#target as #rt::Agent>::Input>();
            }
        }
    });
    quote! {
        #[doc(hidden)]
        #[allow(unused_imports)]
        #vis use #target as #alias;
        const _: () = { #input };
    }
}
