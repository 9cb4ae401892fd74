//! Proc macros for bounded agents. Use them through `agents-runtime`, which re-exports them.
//!
//! | macro | what it does |
//! | --- | --- |
//! | [`macro@tool`] | turns a function into a tool: marker type, typed args, spec, execution by tier |
//! | [`agent!`] | declares an agent: grants, ceiling, skills, limits, registry, `MANIFEST` |
//! | [`permissions!`] | declares the application's permissions once, as types |

mod agent;
mod context;
mod crate_path;
mod permissions;
mod tool;
mod util;

use proc_macro::TokenStream;

/// Turns an ordinary (async) function into a tool. See the `agents-runtime` docs.
///
/// Against safe downstream code: the tool's traits are sealed, its handler is its own body, an
/// action tool's body runs only with the witness of this call's approval, and its capability
/// handles come only from the runtime, for its declared policy. `unsafe` code in the declaring
/// crate is outside these guarantees (`#![forbid(unsafe_code)]` makes them hold); a body that
/// ignores its policy (calling `std::fs` itself) is bound only by a sandboxed subprocess. The
/// table "Whom each guarantee holds against" in the `agents-runtime` docs says which check
/// holds against which code.
#[proc_macro_attribute]
pub fn tool(args: TokenStream, item: TokenStream) -> TokenStream {
    tool::expand(args.into(), item.into()).into()
}

/// Declares an agent. See the `agents-runtime` docs.
///
/// Against safe downstream code: `MANIFEST` is exactly what the registry runs (one source,
/// compile-time checks that each tool path names one tool, and a run-time refusal of any
/// registry that does not produce the `MANIFEST` bytes); grants and the ceiling cannot be
/// widened by hand-written impls. Limits out of range for their type, or given twice, are
/// compile errors. `unsafe` code in the declaring crate is outside the compile-time guarantee;
/// the run-time checks still hold against it.
#[proc_macro]
pub fn agent(input: TokenStream) -> TokenStream {
    agent::expand(input.into()).into()
}

/// Declares the application's permissions once, as types. See the `agents-runtime` docs.
#[proc_macro]
pub fn permissions(input: TokenStream) -> TokenStream {
    permissions::expand(input.into()).into()
}

#[doc(hidden)]
#[proc_macro]
pub fn __agent_finish(input: TokenStream) -> TokenStream {
    agent::finish(input.into()).into()
}
