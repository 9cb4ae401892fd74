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
#[proc_macro_attribute]
pub fn tool(args: TokenStream, item: TokenStream) -> TokenStream {
    tool::expand(args.into(), item.into()).into()
}

/// Declares an agent. See the `agents-runtime` docs.
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
