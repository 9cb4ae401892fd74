//! The chain between `#[tool]` and `agent!`: the one place that says what a tool leaves for
//! the agents that grant it and how an agent collects it.
//!
//! A macro sees only its own tokens, so `agent! { tools: [a, b] }` cannot read the `#[tool]`
//! functions it names. Each `#[tool]` therefore emits, beside its marker type, a hidden
//! `macro_rules!` (a *link*) that is reached by the tool's own path (so any import of the tool
//! brings it along). `agent!` calls the first tool's link with the list of the others, its own
//! input and the links collected so far; each link appends its [`Link`] and calls the next
//! path; the last path is the finishing macro, which receives every link in `tools` order:
//!
//! ```text
//! a! { [b, finish] { <agent input> } { } }
//! b! { [finish]    { <agent input> } { "a" "<entry of a>" } }
//! finish! { [ ]    { <agent input> } { "a" "<entry of a>" "b" "<entry of b>" } }
//! ```
//!
//! A link's entry is the tool's manifest entry as JSON text. Since a module can make a path
//! name one tool as a macro and another as a type, the tool also declares the digest of that
//! text ([`entry_digest`], as `DeclaredByToolMacro::MANIFEST_ENTRY`), and the agent checks at
//! compile time that each type it grants declares the digest of the entry its link gave.

use proc_macro2::{Literal, TokenStream};
use quote::{format_ident, quote};
use syn::parse::{Parse, ParseStream};
use syn::{Ident, LitStr, Visibility};

/// What one tool adds to the chain.
pub(crate) struct Link {
    /// The tool's function name, as written in the `#[tool]` function (without `r#`): the
    /// name a `Grants<...>` bound of another tool names it by.
    pub(crate) function: LitStr,
    /// The tool's manifest entry, as JSON text.
    pub(crate) entry: LitStr,
}

impl Link {
    /// The digest of the entry's text (see [`entry_digest`]).
    pub(crate) fn digest(&self) -> Literal {
        entry_digest(&self.entry.value())
    }
}

/// The first 128 bits of the SHA-256 of a tool's manifest entry text, as a literal: what the
/// tool declares and the agent compares with the entry its link gave.
pub(crate) fn entry_digest(entry_text: &str) -> Literal {
    let digest = agents_core::canonical::sha256_hex(entry_text.as_bytes());
    let n = u128::from_str_radix(&digest[..32], 16).expect("hex");
    Literal::u128_suffixed(n)
}

/// The tool's side: its link, a hidden exported `macro_rules!` under a name unique in the
/// crate, and the alias beside the tool that `agent!` reaches it by ([`link_ident`]).
pub(crate) fn tool_link(fn_ident: &Ident, vis: &Visibility, entry_text: &str) -> TokenStream {
    let plain_name = syn::ext::IdentExt::unraw(fn_ident).to_string();
    // Unique within the crate: identical tools may appear in several modules (the exported
    // macro lives at the crate root). The counter only names a hidden item; the manifest does
    // not depend on it. The name leaves the body out on purpose: editing a body must not rename
    // an item at the crate root, which would make an incremental build redo every module.
    static EXPANSIONS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = EXPANSIONS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let macro_ident = format_ident!("__agents_chain_{}_{}", n, plain_name);
    let alias = link_ident(fn_ident);
    quote! {
        #[doc(hidden)]
        #[macro_export]
        macro_rules! #macro_ident {
            ([ $next:path $(, $rest:path)* ] { $($state:tt)* } { $($links:tt)* }) => {
                $next! { [ $($rest),* ] { $($state)* } { $($links)* #plain_name #entry_text } }
            };
        }
        #[doc(hidden)]
        #[allow(unused_imports)]
        #vis use #macro_ident as #alias;
    }
}

/// The agent's side: the call of the first link, with the other tools' paths (each ending in
/// its link's name) and the finishing macro last.
pub(crate) fn start(tools: &[syn::Path], state: &TokenStream, finish: &TokenStream) -> TokenStream {
    let paths: Vec<syn::Path> = tools
        .iter()
        .map(|p| {
            let mut p = p.clone();
            if let Some(last) = p.segments.last_mut() {
                last.ident = link_ident(&last.ident);
            }
            p
        })
        .collect();
    match paths.split_first() {
        Some((first, rest)) => quote! { #first! { [ #(#rest,)* #finish ] { #state } { } } },
        None => quote! { #finish! { [ ] { #state } { } } },
    }
}

/// The finished chain, as the finishing macro receives it: the agent's input and the links.
pub(crate) struct Finished {
    /// The tokens `agent!` was given.
    pub(crate) state: TokenStream,
    /// Per granted tool, in `tools` order.
    pub(crate) links: Vec<Link>,
}

impl Parse for Finished {
    fn parse(input: ParseStream<'_>) -> syn::Result<Self> {
        // The list of paths still to call, empty by now.
        let rest;
        syn::bracketed!(rest in input);
        let _: TokenStream = rest.parse()?;
        let state;
        syn::braced!(state in input);
        let state: TokenStream = state.parse()?;
        let links;
        syn::braced!(links in input);
        let mut out = Vec::new();
        while !links.is_empty() {
            out.push(Link { function: links.parse()?, entry: links.parse()? });
        }
        Ok(Finished { state, links: out })
    }
}

/// The alias beside a handoff tool that names its target (`#[tool(handoff = Target)]`):
/// `__agents_handoff_<tool>`, reaching the target's type and its link, so that an agent that
/// grants the tool by a path reaches the target by the same path (see `agent/handoffs.rs`).
pub(crate) fn handoff_ident(fn_ident: &Ident) -> Ident {
    let plain = syn::ext::IdentExt::unraw(fn_ident).to_string();
    Ident::new(&format!("__agents_handoff_{plain}"), fn_ident.span())
}

/// Macros of this crate: a tool named like one would clash with the user's import of it.
const OWN_MACROS: &[&str] = &["agent", "tool", "permissions"];

/// The name `agent!` reaches a tool's link by: the tool's own name (so that any import of the
/// tool brings it along), or `__agents_tool_<name>` for a tool named like one of this crate's
/// macros or a std macro (a macro made by a macro may not shadow the prelude's, and would
/// clash with the user's import of `agent!`). Such a tool is granted by a path to its module
/// (`tools::format`) or in the module that declares it.
pub(crate) fn link_ident(fn_ident: &Ident) -> Ident {
    let plain = syn::ext::IdentExt::unraw(fn_ident).to_string();
    if OWN_MACROS.contains(&plain.as_str()) || STD_MACROS.contains(&plain.as_str()) {
        Ident::new(&format!("__agents_tool_{plain}"), fn_ident.span())
    } else {
        fn_ident.clone()
    }
}

/// The standard library's macros a user's module may call by their bare names.
const STD_MACROS: &[&str] = &[
    "assert",
    "assert_eq",
    "assert_ne",
    "cfg",
    "column",
    "compile_error",
    "concat",
    "dbg",
    "debug_assert",
    "debug_assert_eq",
    "debug_assert_ne",
    "env",
    "eprint",
    "eprintln",
    "file",
    "format",
    "format_args",
    "include",
    "include_bytes",
    "include_str",
    "line",
    "matches",
    "module_path",
    "option_env",
    "panic",
    "print",
    "println",
    "stringify",
    "thread_local",
    "todo",
    "unimplemented",
    "unreachable",
    "vec",
    "write",
    "writeln",
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_finishing_macro_reads_what_the_links_append() {
        let start = start(&[syn::parse_quote!(a), syn::parse_quote!(tools::format)], &quote!(S), &quote!(fin));
        assert_eq!(start.to_string(), quote!(a! { [tools::__agents_tool_format, fin] { S } { } }).to_string());
        let finished: Finished = syn::parse2(quote!([] { S } { "a" "{}" "format" "{\"x\":1}" })).unwrap();
        let read: Vec<(String, String)> =
            finished.links.iter().map(|l| (l.function.value(), l.entry.value())).collect();
        assert_eq!(read, [("a".into(), "{}".into()), ("format".into(), "{\"x\":1}".into())]);
        assert_eq!(finished.state.to_string(), "S");
    }
}
