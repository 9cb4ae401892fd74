//! The function as the handler calls it: under its own name, inside the block of the tool's
//! impls, taking every parameter by value; and the tool's name in the value namespace, which
//! refuses a direct call.

use super::option_of_ref;
use crate::tool::model::{Body, Handler, Param, ParamKind, Tool};
use proc_macro2::TokenStream;
use quote::{format_ident, quote, quote_spanned};
use syn::{FnArg, Ident, Pat, PatType, Signature, Type};

/// `&str` → `<str as ToOwned>::Owned`, `Option<&T>` → `Option<<T as ToOwned>::Owned>`;
/// owned types unchanged.
pub(crate) fn owned_type(ty: &Type) -> TokenStream {
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

/// The function itself, inside the block of the tool's impls, under its own name (where it
/// shadows only the direct-call refusal, so what the compiler says of it names the user's
/// function), with owned parameters (see [`owned_signature`]) and without the `#[secret]`
/// marks; `None` for a handoff tool.
pub(super) fn impl_fn(tool: &Tool<'_>, rt: &TokenStream) -> Option<TokenStream> {
    let func = tool.func;
    let other_attrs = func.attrs.iter().filter(|a| !a.path().is_ident("doc"));
    let body = func.body.as_ref()?;
    let (sig, borrows) = owned_signature(tool, rt);
    // After a reported error, the body is not type-checked again (rustc would repeat the
    // error less clearly), or kept but not called.
    let (body, allow) = match tool.emit {
        e if e.body == Body::Unimplemented => {
            (quote!({ ::core::unimplemented!() }), quote!(#[allow(unused_variables)]))
        }
        e if e.handler == Handler::Stub => (quote!({ #(#borrows)* #body }), quote!(#[allow(dead_code)])),
        _ if borrows.is_empty() => (quote!(#body), quote!()),
        _ => (quote!({ #(#borrows)* #body }), quote!()),
    };
    Some(quote! {
        #(#other_attrs)*
        #allow
        #[allow(clippy::too_many_arguments, clippy::needless_lifetimes)]
        #sig #body
    })
}

/// The signature of the function the handler calls, and the borrows at the top of its body:
/// a parameter taken by reference is taken by value and borrowed at the top of the body,
/// under the name and pattern the user wrote, so the tool's future owns all it uses; a tool
/// generic over the agent gets the `Agent` bound `ToolContext::invoke` needs.
fn owned_signature(tool: &Tool<'_>, rt: &TokenStream) -> (Signature, Vec<TokenStream>) {
    let mut sig = tool.func.sig.clone();
    let mut borrows = Vec::new();
    for input in &mut sig.inputs {
        if let FnArg::Typed(pt) = input {
            pt.attrs.retain(|a| !a.path().is_ident("secret"));
            if let Some(borrow) = owned_param(pt, &tool.params) {
                borrows.push(borrow);
            }
        }
    }
    if let Some(tp) = tool.agent {
        add_agent_bound(&mut sig, tp, rt);
    }
    (sig, borrows)
}

/// Makes a borrowed parameter owned, and returns the borrow that gives the body the name
/// and type it was written with. `Option<&T>`: the argument owns an `Option<T::Owned>`, the
/// body sees a borrow. `&T`: a JSON argument owns `T::Owned`; the context or a handle is
/// passed by value.
fn owned_param(pt: &mut PatType, params: &[Param]) -> Option<TokenStream> {
    let Pat::Ident(pi) = &*pt.pat else { return None };
    let param = params.iter().find(|p| p.ident == pi.ident)?;
    let owned_ident = format_ident!("__agents_owned_{}", syn::ext::IdentExt::unraw(&pi.ident));
    let pat = &pt.pat;
    let (borrow, owned) = if let (Some(elem), ParamKind::Arg) = (option_of_ref(&pt.ty), param.kind) {
        let borrow = quote! {
            let #pat: ::core::option::Option<&#elem> = ::core::option::Option::map(
                ::core::option::Option::as_ref(&#owned_ident),
                ::core::borrow::Borrow::borrow,
            );
        };
        (borrow, owned_type(&pt.ty))
    } else if let Type::Reference(r) = &*pt.ty {
        let elem = &r.elem;
        // The reference's own lifetime is left out: the borrow is of a local.
        let borrow = quote! { let #pat: &#elem = ::core::borrow::Borrow::borrow(&#owned_ident); };
        let owned = match param.kind {
            ParamKind::Arg => owned_type(&pt.ty),
            ParamKind::Context | ParamKind::Capability(_) => quote!(#elem),
        };
        (borrow, owned)
    } else {
        return None;
    };
    *pt.pat = Pat::Ident(syn::PatIdent {
        attrs: Vec::new(),
        by_ref: None,
        mutability: None,
        ident: owned_ident,
        subpat: None,
    });
    *pt.ty = Type::Verbatim(owned);
    Some(borrow)
}

/// `ToolContext::invoke` needs `A: Agent`; a tool states only what it invokes. Added where
/// the user bounds the parameter, so that its bounds stay in one place.
fn add_agent_bound(sig: &mut Signature, tp: &syn::TypeParam, rt: &TokenStream) {
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
            if let Some(param) = sig.generics.type_params_mut().find(|p| p.ident == tp.ident) {
                param.bounds.push(agent);
            }
        }
    }
}

/// The tool's name in the value namespace: calling it like a function is an error that says
/// how a tool is called, rather than rustc's "expected function, found struct".
pub(super) fn direct_call(func: &crate::tool::parse::ToolFn, rt: &TokenStream) -> TokenStream {
    let (fn_ident, vis) = (&func.sig.ident, &func.vis);
    let generics: Vec<Ident> = (0..func.sig.inputs.len()).map(|i| format_ident!("__P{}", i)).collect();
    quote_spanned! {fn_ident.span()=>
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
