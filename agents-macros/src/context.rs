//! Error accumulation, as serde_derive's `Ctxt`: every error is collected, spanned on its
//! token, and reported together.

use proc_macro2::TokenStream;
use std::cell::RefCell;

/// The errors of one expansion. Each rule reports here and goes on, so that one build shows
/// every mistake; `into_tokens` emits them as `compile_error!`s, each at its own span.
#[derive(Default)]
pub(crate) struct Errors {
    errors: RefCell<Vec<syn::Error>>,
}

impl Errors {
    pub(crate) fn push(&self, e: syn::Error) {
        self.errors.borrow_mut().push(e);
    }

    pub(crate) fn spanned<T: quote::ToTokens, M: std::fmt::Display>(&self, tokens: T, msg: M) {
        self.push(syn::Error::new_spanned(tokens, msg));
    }

    pub(crate) fn at(&self, span: proc_macro2::Span, msg: impl std::fmt::Display) {
        self.push(syn::Error::new(span, msg));
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.errors.borrow().is_empty()
    }

    pub(crate) fn into_tokens(self) -> TokenStream {
        self.errors.into_inner().into_iter().map(|e| e.to_compile_error()).collect()
    }
}
