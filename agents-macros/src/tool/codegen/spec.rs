//! `impl Tool`: the tool's `ToolSpec` constant, built as tokens from the model, and the
//! compile-time check that the permission's path names the permission it was declared as.

use crate::tool::model::{Permission, Tool};
use proc_macro2::{Span, TokenStream};
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{Ident, LitStr};

/// `impl Tool for <tool>`.
pub(super) fn tool_impl(tool: &Tool<'_>, args_ident: &Ident, rt: &TokenStream) -> TokenStream {
    let fn_ident = &tool.func.sig.ident;
    let tool_name = &tool.name;
    let perm_ty = tool.permission_type(rt);
    let spec = spec(tool, rt);
    let json = quote!(#rt::__private::serde_json);
    quote! {
        impl #rt::Tool for #fn_ident {
            type Args = #args_ident;
            type Permission = #perm_ty;
            const NAME: &'static str = #tool_name;
            const SPEC: #rt::ToolSpec = #spec;
            fn parse_args(__v: &#json::Value) -> ::core::result::Result<#args_ident, ::std::string::String> {
                match __agents_read_args(__v) {
                    ::core::result::Result::Ok(__a) => ::core::result::Result::Ok(__a),
                    ::core::result::Result::Err(__e) => ::core::result::Result::Err(::std::string::ToString::to_string(&__e)),
                }
            }
            fn input_schema() -> &'static #json::Value {
                static SCHEMA: ::std::sync::OnceLock<#json::Value> = ::std::sync::OnceLock::new();
                SCHEMA.get_or_init(#rt::__private::schema_for::<#args_ident>)
            }
        }
    }
}

/// The tool's `ToolSpec`, a constant. Only `uses` keeps the user's tokens (a path that does
/// not resolve is reported where it was written).
fn spec(tool: &Tool<'_>, rt: &TokenStream) -> TokenStream {
    let (name, description, permission) = (&tool.name, &tool.description, tool.permission.name());
    let title = match &tool.title {
        Some(t) => quote!(::core::option::Option::Some(#t)),
        None => quote!(::core::option::Option::None),
    };
    let tier = Ident::new(&format!("{:?}", tool.tier), Span::call_site());
    let risk = Ident::new(&format!("{:?}", tool.risk), Span::call_site());
    let values = |list: &[LitStr]| list.iter().map(LitStr::value).collect::<Vec<_>>();
    let policy = &tool.policy;
    let (fs_read, fs_write) = (values(&policy.fs_read), values(&policy.fs_write));
    let (net_hosts, env_vars) = (values(&policy.net_hosts), values(&policy.env_vars));
    let params = tool.args.iter().map(|f| {
        let (key, ty, secret) = (&f.key, &f.rust_type, f.secret);
        quote!(#rt::ParamSpec { name: #key, rust_type: #ty, secret: #secret })
    });
    let uses = &tool.use_types;
    let (isolated, egress) = (tool.isolated, tool.egress);
    let handoff = crate::tool::handoff::spec_field(tool, rt);
    quote! {
        #rt::ToolSpec {
            name: #name,
            title: #title,
            description: #description,
            permission: #permission,
            tier: #rt::Tier::#tier,
            risk: #rt::Risk::#risk,
            policy: #rt::PolicySpec {
                fs_read: &[#(#fs_read),*],
                fs_write: &[#(#fs_write),*],
                net_hosts: &[#(#net_hosts),*],
                env_vars: &[#(#env_vars),*],
                isolated: #isolated,
                egress: #egress,
            },
            params: &[#(#params),*],
            uses: &[#(<#uses as #rt::Tool>::NAME),*],
            import: ::core::option::Option::None,
            handoff: #handoff,
        }
    }
}

/// The manifest names a permission by the last two segments of its path: the path must end
/// in the `area::action` it was declared as (not a renamed module or import), which the
/// compiler checks against the permission's own name.
pub(super) fn permission_check(tool: &Tool<'_>, rt: &TokenStream) -> TokenStream {
    let Permission::Declared { path, name } = &tool.permission else { return quote!() };
    let fn_ident = &tool.func.sig.ident;
    let msg = format!(
        "the permission is not declared as `{name}`, yet its path ends in `{}`: the manifest names a permission by the last two segments of its path, so write the path that ends in its declared `area::action` (not a renamed module or import)",
        name.replace('.', "::")
    );
    quote_spanned! {path.span()=>
        const _: () = ::core::assert!(
            #rt::__private::str_eq(#rt::__private::tool_permission_name::<#fn_ident>(), #name),
            #msg
        );
    }
}
