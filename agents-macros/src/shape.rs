//! The shapes of function `#[tool]` refuses before anything is generated: a method (`self`,
//! `Self`, or a function written in an `impl` block), a generic parameter other than the
//! agent, `impl Trait` arguments, and parameters that borrow in a way the macro cannot turn
//! into an owned JSON value.
//!
//! Each refusal is one error on the user's token with the fix; the expansion is then the
//! function as written and nothing else (as serde_derive emits its error and a minimal item),
//! so that the compiler adds no second error about code the user did not write.

use crate::util::type_string;
use proc_macro2::TokenStream;
use quote::ToTokens;
use syn::{FnArg, GenericParam, Signature, Type};

/// Whether the type parameter `tp` is the agent: bounded by `Grants<...>` or `Agent`, or
/// named as the agent of a `ToolContext<'_, A>` parameter.
pub(crate) fn is_agent_param(sig: &Signature, tp: &syn::TypeParam) -> bool {
    let bound_says_agent = |bounds: &syn::punctuated::Punctuated<syn::TypeParamBound, syn::Token![+]>| {
        bounds.iter().any(|b| {
            matches!(b, syn::TypeParamBound::Trait(t)
                if t.path.segments.last().is_some_and(|s| s.ident == "Grants" || s.ident == "Agent"))
        })
    };
    if bound_says_agent(&tp.bounds) {
        return true;
    }
    if let Some(wc) = &sig.generics.where_clause {
        for pred in &wc.predicates {
            if let syn::WherePredicate::Type(pt) = pred
                && let Type::Path(p) = &pt.bounded_ty
                && p.path.is_ident(&tp.ident)
                && bound_says_agent(&pt.bounds)
            {
                return true;
            }
        }
    }
    sig.inputs.iter().any(|input| match input {
        FnArg::Typed(pt) => names_context_of(&pt.ty, &tp.ident),
        FnArg::Receiver(_) => false,
    })
}

/// Whether the type is the context of the agent `agent`: `&Name<'_, agent>`, under any name
/// (see `tool::model::ParamKind::of`).
fn names_context_of(ty: &Type, agent: &syn::Ident) -> bool {
    let (elem, by_ref) = match ty {
        Type::Reference(r) => (&*r.elem, true),
        other => (other, false),
    };
    let Type::Path(p) = elem else { return false };
    let Some(last) = p.path.segments.last() else { return false };
    let syn::PathArguments::AngleBracketed(a) = &last.arguments else { return false };
    let context_shaped = last.ident == "ToolContext"
        || (by_ref && last.ident != "Cow" && matches!(a.args.first(), Some(syn::GenericArgument::Lifetime(_))));
    context_shaped
        && a.args.iter().any(|g| matches!(g, syn::GenericArgument::Type(Type::Path(t)) if t.path.is_ident(agent)))
}

/// Whether the tokens mention `Self` (the function is written inside an `impl` block).
fn mentions_self_type(tokens: TokenStream) -> bool {
    tokens.into_iter().any(|tt| match tt {
        proc_macro2::TokenTree::Ident(i) => i == "Self",
        proc_macro2::TokenTree::Group(g) => mentions_self_type(g.stream()),
        _ => false,
    })
}

/// The refusals of an unsupported shape, in the order a reader meets them; empty when the
/// shape is one `#[tool]` supports. `is_json_arg` tells whether a parameter's type is read
/// from the model's JSON (not the context or a capability handle).
pub(crate) fn refusals(sig: &Signature, tool: &str, is_json_arg: impl Fn(&Type) -> bool) -> Vec<syn::Error> {
    let mut out = Vec::new();
    let fn_ident = &sig.ident;
    if let Some(FnArg::Receiver(r)) = sig.inputs.first() {
        out.push(syn::Error::new_spanned(
            r,
            format!(
                "tool `{tool}` takes `{}`, but a tool is a free function the runtime calls with the model's arguments, not a method\nhelp: move `{fn_ident}` out of the `impl` block to the module level and pass what it needs as parameters, or reach shared state through `ToolContext`",
                type_string(r)
            ),
        ));
        return out;
    }
    if mentions_self_type(sig.to_token_stream()) {
        out.push(syn::Error::new_spanned(
            fn_ident,
            format!(
                "tool `{tool}` names `Self`, so it is written in an `impl` block, but a tool is a free function\nhelp: move `{fn_ident}` out of the `impl` block to the module level and name the type instead of `Self`"
            ),
        ));
        return out;
    }
    // Without `self` or `Self`, only the file around the function tells that it stands in an
    // `impl` block (see `source`).
    if crate::source::in_impl_block(fn_ident) {
        out.push(syn::Error::new_spanned(
            fn_ident,
            format!(
                "tool `{tool}` is written in an `impl` block, but a tool is a free function the runtime calls with the model's arguments, not an associated function\nhelp: move `{fn_ident}` out of the `impl` block to the module level; the tool is then named `{fn_ident}` in `agent! {{ tools: [...] }}`"
            ),
        ));
        return out;
    }
    for gp in &sig.generics.params {
        match gp {
            GenericParam::Lifetime(_) => {}
            GenericParam::Type(tp) if is_agent_param(sig, tp) => {}
            GenericParam::Type(tp) => {
                let t = &tp.ident;
                out.push(syn::Error::new_spanned(
                    gp,
                    format!(
                        "tool `{tool}` is generic over `{t}`, but the model sends its arguments as JSON, so each parameter has one concrete type\nhelp: replace `{t}` with the type the tool expects (`String`, `u64`, `serde_json::Value`, or your own `Deserialize` type); the only type parameter a tool takes is its agent, `A: Grants<other_tool>`, to invoke other tools"
                    ),
                ));
            }
            GenericParam::Const(c) => out.push(syn::Error::new_spanned(
                gp,
                format!(
                    "tool `{tool}` takes the const parameter `{}`, but the runtime calls a tool with one signature\nhelp: take the value as an ordinary parameter (`{}: {}`) or as a constant in the body",
                    c.ident,
                    c.ident.to_string().to_lowercase(),
                    type_string(&c.ty)
                ),
            )),
        }
    }
    for input in &sig.inputs {
        if let FnArg::Typed(pt) = input
            && let Some(e) = param_refusal(pt, tool, &is_json_arg)
        {
            out.push(e);
        }
    }
    out
}

/// The refusal of a parameter's type: `impl Trait`, or a borrow the macro cannot own.
fn param_refusal(pt: &syn::PatType, tool: &str, is_json_arg: impl Fn(&Type) -> bool) -> Option<syn::Error> {
    let refuse = |msg: String| Some(syn::Error::new_spanned(&pt.ty, msg));
    if let Type::ImplTrait(_) = &*pt.ty {
        return refuse(format!(
            "tool `{tool}` takes `{}`, but the model sends its arguments as JSON, so each parameter has one concrete type\nhelp: take the concrete type, e.g. `String` instead of `impl Into<String>`",
            type_string(&pt.ty)
        ));
    }
    if !is_json_arg(&pt.ty) {
        return None;
    }
    let name = type_string(&pt.pat);
    let problem = unowned(&pt.ty)?;
    refuse(format!(
        "parameter `{name}` of tool `{tool}` {problem}; the arguments are read from the model's JSON into owned values\nhelp: take `{name}: {}`",
        owned_suggestion(&pt.ty)
    ))
}

/// What keeps a parameter's type from being owned, when the macro cannot own it itself (it
/// owns `&T` and `Option<&T>`).
fn unowned(ty: &Type) -> Option<String> {
    match ty {
        Type::Reference(r) if r.mutability.is_some() => {
            Some("is a `&mut` borrow, but there is no caller's value to change".to_owned())
        }
        Type::Reference(r) => unowned_inside(&r.elem).then(|| "borrows inside a borrow".to_owned()),
        Type::Path(p) => {
            let last = p.path.segments.last()?;
            if last.ident == "Option"
                && let syn::PathArguments::AngleBracketed(a) = &last.arguments
                && let [syn::GenericArgument::Type(Type::Reference(r))] = a.args.iter().collect::<Vec<_>>().as_slice()
            {
                if r.mutability.is_some() {
                    return Some("is a `&mut` borrow, but there is no caller's value to change".to_owned());
                }
                return unowned_inside(&r.elem).then(|| "borrows inside a borrow".to_owned());
            }
            unowned_inside(ty).then(|| format!("borrows (`{}`)", type_string(ty)))
        }
        other => unowned_inside(other).then(|| format!("borrows (`{}`)", type_string(other))),
    }
}

/// Whether a reference or a lifetime other than `'static` appears in the type.
fn unowned_inside(ty: &Type) -> bool {
    fn walk(tokens: TokenStream) -> bool {
        let tts: Vec<proc_macro2::TokenTree> = tokens.into_iter().collect();
        tts.iter().enumerate().any(|(i, tt)| match tt {
            proc_macro2::TokenTree::Punct(p) if p.as_char() == '&' => true,
            proc_macro2::TokenTree::Punct(p) if p.as_char() == '\'' => {
                !matches!(tts.get(i + 1), Some(proc_macro2::TokenTree::Ident(l)) if l == "static")
            }
            proc_macro2::TokenTree::Group(g) => walk(g.stream()),
            _ => false,
        })
    }
    walk(ty.to_token_stream())
}

/// The owned form of a borrowed type, as the user would write it: `&str` → `String`,
/// `&[T]` → `Vec<T>`, `&Path` → `PathBuf`, `&mut T` → `T`, `Cow<'a, str>` → `String`.
pub(crate) fn owned_suggestion(ty: &Type) -> String {
    match ty {
        Type::Reference(r) => match &*r.elem {
            Type::Path(p) if p.path.is_ident("str") => "String".to_owned(),
            Type::Path(p) if p.path.is_ident("Path") => "std::path::PathBuf".to_owned(),
            Type::Slice(s) => format!("Vec<{}>", owned_suggestion(&s.elem)),
            other => owned_suggestion(other),
        },
        Type::Path(p) => {
            let Some(last) = p.path.segments.last() else { return type_string(ty) };
            let syn::PathArguments::AngleBracketed(a) = &last.arguments else { return type_string(ty) };
            let types: Vec<String> = a
                .args
                .iter()
                .filter_map(|g| match g {
                    syn::GenericArgument::Type(t) => Some(owned_suggestion(t)),
                    _ => None,
                })
                .collect();
            if last.ident == "Cow" {
                return types.into_iter().next().unwrap_or_else(|| "String".to_owned()).replace("str", "String");
            }
            let mut prefix: Vec<String> = p.path.segments.iter().map(|s| s.ident.to_string()).collect();
            prefix.pop();
            prefix.push(last.ident.to_string());
            format!("{}<{}>", prefix.join("::"), types.join(", "))
        }
        Type::Slice(s) => format!("Vec<{}>", owned_suggestion(&s.elem)),
        Type::Tuple(t) => format!("({})", t.elems.iter().map(owned_suggestion).collect::<Vec<_>>().join(", ")),
        other => type_string(other),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(sig: Signature) -> Vec<String> {
        refusals(&sig, "t", |ty| !type_string(ty).contains("Cx") && !type_string(ty).contains("ToolContext"))
            .into_iter()
            .map(|e| e.to_string())
            .collect()
    }

    #[test]
    fn a_method_is_refused_once() {
        let errs = refused(syn::parse_quote!(async fn t(&self, n: u64) -> Result<u64, String>));
        assert_eq!(errs.len(), 1, "{errs:?}");
        assert!(errs[0].contains("not a method"), "{errs:?}");
    }

    #[test]
    fn a_generic_parameter_other_than_the_agent_is_refused() {
        let errs = refused(syn::parse_quote!(fn t<T: serde::Serialize>(x: T) -> Result<T, String>));
        assert_eq!(errs.len(), 1, "{errs:?}");
        assert!(errs[0].contains("generic over `T`"), "{errs:?}");
        assert!(
            refused(syn::parse_quote!(fn t<A: Grants<x>>(cx: &ToolContext<'_, A>) -> Result<u8, String>)).is_empty()
        );
    }

    #[test]
    fn a_borrowed_cow_is_refused_as_a_borrow() {
        let errs = refused(syn::parse_quote!(fn t(c: &Cow<'_, str>) -> Result<u8, String>));
        assert!(errs[0].contains("borrows inside a borrow"), "{errs:?}");
    }

    #[test]
    fn the_agent_of_a_context_under_another_name_is_the_agent() {
        assert!(refused(syn::parse_quote!(fn t<A>(cx: &Cx<'_, A>) -> Result<u8, String>)).is_empty());
        let errs = refused(syn::parse_quote!(fn t<A>(cx: Vec<A>) -> Result<u8, String>));
        assert!(errs[0].contains("generic over `A`"), "{errs:?}");
    }

    #[test]
    fn borrows_the_macro_cannot_own_are_refused_with_the_owned_type() {
        let errs = refused(syn::parse_quote!(fn t(tags: Vec<&str>) -> Result<u8, String>));
        assert!(errs[0].contains("take `tags: Vec<String>`"), "{errs:?}");
        let errs = refused(syn::parse_quote!(fn t(n: &mut u64) -> Result<u8, String>));
        assert!(errs[0].contains("take `n: u64`"), "{errs:?}");
        assert!(
            refused(syn::parse_quote!(fn t(a: &str, b: Option<&str>, c: &'static str) -> Result<u8, String>))
                .is_empty()
        );
    }
}
