//! `permissions! { pub mod perms { athlete.read, rtp.signoff_doctor } }`: each permission
//! becomes a type at `perms::athlete::read`, so a misspelt permission does not compile.

use crate::context::Errors;
use crate::crate_path;
use proc_macro2::TokenStream;
use quote::{format_ident, quote};
use std::collections::BTreeMap;
use syn::parse::{Parse, ParseStream};
use syn::punctuated::Punctuated;
use syn::{Attribute, Ident, Token, Visibility};

/// One entry, `area.action`, with its doc comment.
struct PermissionDecl {
    /// The doc comment, kept on the permission's type.
    attrs: Vec<Attribute>,
    area: Ident,
    action: Ident,
}

impl Parse for PermissionDecl {
    fn parse(input: ParseStream<'_>) -> syn::Result<Self> {
        let attrs = input.call(Attribute::parse_outer)?;
        let area: Ident = input.call(syn::ext::IdentExt::parse_any).map_err(|e| {
            syn::Error::new(e.span(), "a permission is written `area.action`, without quotes, e.g. `athlete.read`")
        })?;
        input
            .parse::<Token![.]>()
            .map_err(|e| syn::Error::new(e.span(), "a permission is written `area.action`, e.g. `athlete.read`"))?;
        let action: Ident = input.call(syn::ext::IdentExt::parse_any).map_err(|e| {
            syn::Error::new(
                e.span(),
                "a permission is written `area.action`, e.g. `athlete.read`: the action is a name",
            )
        })?;
        Ok(PermissionDecl { attrs, area, action })
    }
}

/// `<vis> mod <name> { area.action, ... }`.
struct Input {
    attrs: Vec<Attribute>,
    vis: Visibility,
    name: Ident,
    perms: Punctuated<PermissionDecl, Token![,]>,
}

impl Parse for Input {
    fn parse(input: ParseStream<'_>) -> syn::Result<Self> {
        let attrs = input.call(Attribute::parse_outer)?;
        let vis: Visibility = input.parse()?;
        const TAKES: &str = "`permissions!` takes a module of permissions, e.g. `permissions! { pub mod perms { athlete.read, injury.write } }`";
        input.parse::<Token![mod]>().map_err(|e| syn::Error::new(e.span(), TAKES))?;
        let name: Ident = input.parse().map_err(|e| syn::Error::new(e.span(), TAKES))?;
        if !input.peek(syn::token::Brace) {
            return Err(input.error(TAKES));
        }
        let content;
        syn::braced!(content in input);
        let perms = content.parse_terminated(PermissionDecl::parse, Token![,])?;
        Ok(Input { attrs, vis, name, perms })
    }
}

/// The expansion of `permissions!`: a module with a module per area and a type per
/// permission, each implementing `Permission` with its `area.action` name.
pub(crate) fn expand(input: TokenStream) -> TokenStream {
    let input: Input = match syn::parse2(input) {
        Ok(i) => i,
        Err(e) => return e.to_compile_error(),
    };
    let errors = Errors::default();
    let rt = crate_path::runtime();
    let mut areas: BTreeMap<String, (Ident, Vec<&PermissionDecl>)> = BTreeMap::new();
    let mut seen = std::collections::BTreeSet::new();
    let mut all = Vec::new();
    for p in &input.perms {
        let name = format!("{}.{}", p.area, p.action);
        if !seen.insert(name.clone()) {
            errors.spanned(&p.action, format!("permission `{name}` is declared twice"));
        }
        all.push(name);
        areas.entry(p.area.to_string()).or_insert_with(|| (p.area.clone(), Vec::new())).1.push(p);
    }
    let modules = areas.values().map(|(area, decls)| {
        let items = decls.iter().map(|p| {
            let action = &p.action;
            let attrs = &p.attrs;
            let name = format!("{}.{}", p.area, p.action);
            let doc = if attrs.iter().any(|a| a.path().is_ident("doc")) {
                quote!()
            } else {
                let d = format!("The `{name}` permission.");
                quote!(#[doc = #d])
            };
            quote! {
                #(#attrs)*
                #doc
                #[allow(non_camel_case_types)]
                #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
                pub struct #action;
                impl #action {
                    /// The permission's name.
                    pub const NAME: &'static str = #name;
                }
                impl #rt::Permission for #action {
                    const NAME: &'static str = #name;
                }
            }
        });
        let doc = format!("Permissions of the `{area}` area.");
        let area = format_ident!("{}", area);
        quote! {
            #[doc = #doc]
            #[allow(non_snake_case)]
            pub mod #area { #(#items)* }
        }
    });
    let Input { attrs, vis, name, .. } = &input;
    let doc = if attrs.iter().any(|a| a.path().is_ident("doc")) {
        quote!()
    } else {
        quote!(#[doc = "The application's permissions."])
    };
    let errs = errors.into_tokens();
    quote! {
        #errs
        #(#attrs)*
        #doc
        #vis mod #name {
            #(#modules)*
            /// Every declared permission's name, in declaration order.
            pub const ALL: &[&str] = &[#(#all),*];
        }
    }
}
