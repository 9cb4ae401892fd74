//! Finds the path of `agents-runtime` as the calling crate names it (renames included).

use proc_macro_crate::{FoundCrate, crate_name};
use proc_macro2::{Span, TokenStream};
use quote::quote;

pub(crate) fn runtime() -> TokenStream {
    match crate_name("agents-runtime") {
        Ok(FoundCrate::Name(name)) => {
            let ident = syn::Ident::new(&name, Span::call_site());
            quote!(::#ident)
        }
        _ => quote!(::agents_runtime),
    }
}

/// The runtime path as a string for `#[serde(crate = "...")]`.
pub(crate) fn runtime_str(path: &TokenStream) -> String {
    path.to_string().replace(' ', "")
}
