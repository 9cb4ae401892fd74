//! The last step of `#[tool]`: the items, from the [`Tool`] model alone. Each part is built by
//! its own module: [`args`] the arguments type, [`spec`] the `ToolSpec` and the permission
//! check, [`function`] the function as the handler calls it, [`exec`] the execution by tier.
//! The manifest entry goes to the agents that grant the tool through [`crate::chain`].

mod args;
mod exec;
mod function;
mod spec;

use super::model::Tool;
use super::parse::ToolFn;
use crate::context::Errors;
use agents_core::Tier;
use proc_macro2::TokenStream;
use quote::{format_ident, quote};
use syn::{FnArg, Type};

pub(crate) use function::owned_type;

/// The tool's items: its marker type, its arguments type, its link for `agent!`, and, in a
/// block of their own, the function and the impls that run it.
pub(crate) fn emit(tool: &Tool<'_>, errors: Errors, rt: &TokenStream) -> TokenStream {
    let func = tool.func;
    let (fn_ident, vis) = (&func.sig.ident, &func.vis);
    let args_ident = format_ident!("{}Args", crate::util::camel(&tool.plain_name), span = fn_ident.span());
    let fragment = serde_json::to_string(&tool.entry()).expect("a tool entry always serializes");
    let entry_digest = crate::chain::entry_digest(&fragment);
    let args_items = args::items(tool, &args_ident, rt);
    let read_args = args::reader(tool, &args_ident, rt);
    let tool_impl = spec::tool_impl(tool, &args_ident, rt);
    let perm_check = spec::permission_check(tool, rt);
    let invoke = exec::invoke(tool, rt);
    let exec_impls = exec::impls(tool, &args_ident, &invoke, &quote!(#entry_digest), rt);
    let impl_fn = function::impl_fn(tool, rt);
    let direct_call = function::direct_call(func, rt);
    let link = crate::chain::tool_link(fn_ident, vis, &fragment);
    let registrations = registrations(tool, rt);
    let handoff = crate::tool::handoff::items(tool, rt);
    let errs = errors.into_tokens();
    let doc_attrs = func.attrs.iter().filter(|a| a.path().is_ident("doc"));
    let tool_name = &tool.name;
    let marker_doc = format!("The tool `{tool_name}`: a marker type; its arguments are `{args_ident}`.");
    quote! {
        #errs
        #(#doc_attrs)*
        #[doc = ""]
        #[doc = #marker_doc]
        #[allow(non_camel_case_types)]
        #vis struct #fn_ident {}

        // Written out rather than derived: one derive less for rustc to expand per tool.
        impl ::core::fmt::Debug for #fn_ident {
            fn fmt(&self, f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
                f.write_str(#tool_name)
            }
        }

        #args_items

        #link
        #handoff

        // schemars' derive calls `.into()` on its text: in a `#[no_implicit_prelude]` module the
        // trait is brought in unnamed, so it shadows nothing.
        #[allow(unused_imports)]
        use ::core::convert::Into as _;

        #direct_call

        const _: () = {
            #impl_fn
            #read_args
            #tool_impl
            #perm_check
            #exec_impls
            #registrations
        };
    }
}

/// The tool's registration for `linked_tools`, and, for a tool that can run in a worker
/// process, for the worker, which finds it by name: isolated in code, or by a runtime's
/// setting (`isolate::Isolation::isolate_tool`).
fn registrations(tool: &Tool<'_>, rt: &TokenStream) -> TokenStream {
    let fn_ident = &tool.func.sig.ident;
    let isolated = (tool.agent.is_none() && tool.tier != Tier::Handoff).then(|| {
        quote! {
            #rt::__private::inventory::submit! {
                #rt::__private::isolated_tool::<#fn_ident>()
            }
        }
    });
    quote! {
        #rt::__private::inventory::submit! {
            #rt::tool::ToolRegistration { spec: &<#fn_ident as #rt::Tool>::SPEC }
        }
        #isolated
    }
}

/// The expansion of a refused shape: the errors and the function as written (without the
/// `#[secret]` marks `#[tool]` reads), so that it still compiles where it stands (a method in
/// its `impl` block) and nothing generated adds a second error.
pub(crate) fn refused_stub(func: &ToolFn, errors: Errors) -> TokenStream {
    let errs = errors.into_tokens();
    let attrs = &func.attrs;
    let vis = &func.vis;
    let mut sig = func.sig.clone();
    for input in &mut sig.inputs {
        if let FnArg::Typed(pt) = input {
            pt.attrs.retain(|a| !a.path().is_ident("secret"));
        }
    }
    let body = match &func.body {
        Some(b) => quote!(#b),
        None => quote!({ ::core::unimplemented!() }),
    };
    quote! {
        #errs
        #(#attrs)*
        #[allow(dead_code)]
        #vis #sig #body
    }
}

/// `T` in `Option<&T>` (a borrowed optional parameter), written as `Option` or a path ending
/// in it.
fn option_of_ref(ty: &Type) -> Option<&Type> {
    let Type::Path(p) = ty else { return None };
    let last = p.path.segments.last()?;
    if last.ident != "Option" || p.qself.is_some() {
        return None;
    }
    let syn::PathArguments::AngleBracketed(a) = &last.arguments else { return None };
    match a.args.iter().collect::<Vec<_>>().as_slice() {
        [syn::GenericArgument::Type(Type::Reference(r))] => Some(&r.elem),
        _ => None,
    }
}
