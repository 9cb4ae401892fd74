//! `#[tool(...)]`, in steps: [`parse`] reads the attribute's arguments and the function as
//! written (the grammar only); [`crate::shape`] refuses the shapes of function a tool cannot
//! have, before anything is generated; [`check`] applies every rule and returns the
//! [`model::Tool`] that [`codegen`] reads to emit the items. The tool's manifest entry reaches
//! the agents that grant it through [`crate::chain`].

mod check;
mod codegen;
pub(crate) mod handoff;
mod model;
mod parse;

use crate::context::Errors;
use model::ParamKind;
use proc_macro2::TokenStream;
use quote::quote;

/// The expansion of `#[tool(args)] item`.
pub(crate) fn expand(args: TokenStream, item: TokenStream) -> TokenStream {
    let errors = Errors::default();
    let func = match parse::ToolFn::split(item.clone()) {
        Ok(f) => f,
        Err(e) => {
            let e = e.to_compile_error();
            return quote!(#e #item);
        }
    };
    let args = parse::args(args, &errors);
    let name = check::tool_name(&func, &args);
    let refusals = crate::shape::refusals(&func.sig, &name, |ty| ParamKind::of(ty) == ParamKind::Arg);
    if !refusals.is_empty() {
        for e in refusals {
            errors.push(e);
        }
        return codegen::refused_stub(&func, errors);
    }
    let tool = check::check(&func, args, &errors);
    codegen::emit(&tool, errors, &crate::crate_path::runtime())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn expanded(args: TokenStream, item: TokenStream) -> String {
        expand(args, item).to_string()
    }

    #[test]
    fn a_tool_not_generic_over_the_agent_cannot_invoke() {
        let out = expanded(
            quote!(permission = public),
            quote! {
                /// Summarises.
                async fn summary(cx: &ToolContext<'_>) -> Result<String, String> {
                    cx.invoke::<list_athletes>(v).await
                }
            },
        );
        assert!(out.contains("tool `summary` invokes another tool, but it is not generic over the agent"), "{out}");
        assert!(out.contains("fn summary<A: Grants<list_athletes>>(cx: &ToolContext<'_, A>, ...)"), "{out}");
        // The body is not type-checked again.
        assert!(out.contains("unimplemented"), "{out}");
    }

    #[test]
    fn a_generic_tool_declares_every_tool_it_invokes() {
        let out = expanded(
            quote!(permission = public),
            quote! {
                /// Summarises.
                async fn summary<A: Grants<list_athletes>>(cx: &ToolContext<'_, A>) -> Result<String, String> {
                    cx.invoke::<list_athletes>(v).await;
                    cx.invoke::<tools::list_injuries>(v).await
                }
            },
        );
        assert!(out.contains("tool `summary` invokes `tools::list_injuries` without declaring it: add the bound `A: Grants<tools::list_injuries>`"), "{out}");
        assert!(!out.contains("invokes `list_athletes`"), "{out}");
    }

    #[test]
    fn a_generic_tool_gets_the_agent_bound_and_names_what_it_invokes_by_tool_name() {
        let out = expanded(
            quote!(permission = public),
            quote! {
                /// Summarises.
                async fn summary<A: Grants<list_athletes>>(cx: &ToolContext<'_, A>) -> Result<String, String> {
                    cx.invoke::<list_athletes>(v).await
                }
            },
        );
        assert!(!out.contains("compile_error"), "{out}");
        assert!(out.contains("A : Grants < list_athletes > + :: agents_runtime :: Agent"), "{out}");
        assert!(out.contains("uses : & [< list_athletes as :: agents_runtime :: Tool > :: NAME]"), "{out}");
    }

    #[test]
    fn what_the_runtime_gives_is_chosen_by_the_compiler_from_the_type() {
        let out = expanded(
            quote!(permission = public, policy(env(vars = ["APP_REGION"]))),
            quote! {
                /// Tells the region.
                fn region(cx: &Cx<'_>, env: EnvAccess, n: u8) -> Result<String, String> { todo!() }
            },
        );
        assert!(!out.contains("compile_error"), "{out}");
        // Neither the context (an alias) nor the handle is a field the model sends.
        assert!(out.contains("struct RegionArgs { # [doc = \"Argument `n` of the tool.\"] pub n : u8 , }"), "{out}");
        assert_eq!(out.matches(":: agents_runtime :: tool :: Supplied :: supply (__call)").count(), 2, "{out}");
    }

    #[test]
    fn a_permission_that_cannot_name_one_is_refused_and_reported_missing() {
        let out = expanded(
            quote!(permission = athlete),
            quote! {
                /// Reads.
                fn read() -> Result<String, String> { todo!() }
            },
        );
        assert!(out.contains("write the permission as the path of a declared permission"), "{out}");
        assert!(out.contains("tool `read` needs a `permission`"), "{out}");
    }
}
