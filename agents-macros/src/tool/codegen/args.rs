//! The arguments type `<Name>Args`: one field per JSON argument, and its `Debug` (masking
//! `#[secret]` fields), `Clone`, `JsonSchema` and `Deserialize`, written out rather than
//! derived.
//!
//! Every use of a field's type goes through `ToolArgument`, spanned on the type the user
//! wrote: a type that cannot be a JSON argument gets one error there, in its words (the
//! identical errors of the other uses are merged by the compiler).

use crate::tool::model::{ArgField, Tool};
use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};
use syn::Ident;
use syn::spanned::Spanned;

/// `<T as ToolArgument>` for a field, spanned on the parameter's type.
fn as_arg(field: &ArgField, rt: &TokenStream) -> TokenStream {
    let ty = &field.owned;
    quote_spanned!(field.ty.span()=> <#ty as #rt::tool::ToolArgument>)
}

/// The struct and its `Debug`, `Clone` and `JsonSchema`.
pub(super) fn items(tool: &Tool<'_>, args_ident: &Ident, rt: &TokenStream) -> TokenStream {
    let vis = &tool.func.vis;
    let name = args_ident.to_string();
    let doc = format!("Arguments of the `{}` tool.", tool.name);
    let field_defs = tool.args.iter().map(|f| {
        let (ident, ty) = (&f.ident, &f.owned);
        let doc =
            if f.description.is_empty() { format!("Argument `{ident}` of the tool.") } else { f.description.clone() };
        quote! { #[doc = #doc] pub #ident: #ty }
    });
    let debug_fields = tool.args.iter().map(|f| {
        let (ident, key, arg) = (&f.ident, &f.key, as_arg(f, rt));
        if f.marked_secret {
            quote!(.field(#key, &"•••"))
        } else {
            quote!(.field(#key, #arg::debug_field(&self.#ident)))
        }
    });
    let clone_fields = tool.args.iter().map(|f| {
        let (ident, arg) = (&f.ident, as_arg(f, rt));
        quote!(#ident: #arg::clone_field(&self.#ident))
    });
    let schema_fields = tool.args.iter().map(|f| {
        let (key, desc, secret, arg) = (&f.key, &f.description, f.marked_secret, as_arg(f, rt));
        quote!((#key, #arg::field_schema(__g, #desc, #secret)))
    });
    let sc = quote!(#rt::__private::schemars);
    quote! {
        #[doc = #doc]
        #vis struct #args_ident { #(#field_defs,)* }

        impl ::core::fmt::Debug for #args_ident {
            fn fmt(&self, f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
                f.debug_struct(#name) #(#debug_fields)* .finish()
            }
        }
        impl ::core::clone::Clone for #args_ident {
            fn clone(&self) -> Self {
                #args_ident { #(#clone_fields,)* }
            }
        }
        impl #sc::JsonSchema for #args_ident {
            fn schema_name() -> ::std::borrow::Cow<'static, str> {
                ::std::borrow::Cow::Borrowed(#name)
            }
            fn json_schema(__g: &mut #sc::SchemaGenerator) -> #sc::Schema {
                #rt::__private::object_schema(::std::vec![#(#schema_fields),*])
            }
        }
    }
}

/// `Deserialize` for the arguments: serde's derive would compile a visitor for each tool;
/// here one visitor (generic only over the deserializer) reads the object and a plain
/// function takes its fields, with serde's messages.
pub(super) fn reader(tool: &Tool<'_>, args_ident: &Ident, rt: &TokenStream) -> TokenStream {
    let name = args_ident.to_string();
    let keys = tool.args.iter().map(|f| &f.key);
    // Spanned on the parameter's type: a type that cannot be deserialized is reported there.
    let fields = tool.args.iter().map(|f| {
        let (ident, key, ty) = (&f.ident, &f.key, &f.owned);
        let read = quote_spanned!(f.ty.span()=> <#ty as #rt::tool::ToolArgument>::read_field(__m, #key));
        quote!(#ident: #read?)
    });
    let sd = quote!(#rt::__private::serde);
    quote! {
        fn __agents_read_args(
            __v: &#rt::__private::serde_json::Value,
        ) -> ::core::result::Result<#args_ident, #rt::__private::serde_json::Error> {
            let __m = #rt::__private::args_object(__v, #name, &[#(#keys),*])?;
            ::core::result::Result::Ok(#args_ident { #(#fields,)* })
        }
        impl<'de> #sd::Deserialize<'de> for #args_ident {
            fn deserialize<__D: #sd::Deserializer<'de>>(__d: __D) -> ::core::result::Result<Self, __D::Error> {
                #rt::__private::deserialize_args(__d, #name, __agents_read_args)
            }
        }
    }
}
