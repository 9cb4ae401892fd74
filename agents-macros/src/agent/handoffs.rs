//! Handoff tools that name their target (`#[tool(handoff = Target)]`), as the agents that grant
//! them see them: the target is part of the agent's reach, as a granted agent is
//! ([`super::subagents`]).
//!
//! The chain reads the tools' and the granted agents' links first. When a tool's entry names a
//! target, the finishing step calls the chain once more over each target's link, reached by
//! the alias beside the tool (`tools::__agents_handoff_<tool>`, see
//! [`crate::chain::handoff_ident`]), with the links collected so far; the second finish finds
//! one more link per targeted handoff tool, in `tools` order. Each target is then checked as a
//! granted agent is: by name against the ceiling, by type through the sealed `FitsCeilingOf`,
//! its path against the hash its link gave; and its output against the agent's own (the run
//! handed off ends with the target's output). The tool's manifest entry names the target by
//! its name and hash.
//!
//! An agent that grants a tool handing off to itself is refused by name (the tool's link
//! carries the target's name as written); its expansion still goes on without that target, so
//! the refusal is the only error the user reads. Two agents handing off to each other cannot be
//! written: each manifest names the other's hash, and the chain stops at the link the other's
//! expansion has not produced.

use super::parse::AgentInput;
use super::subagents::{GrantedAgent, check_ceiling, parse_link};
use crate::chain::Link;
use crate::context::Errors;
use crate::util::type_string;
use agents_core::manifest::ToolEntry;
use agents_core::subagent::SubAgentEntry;
use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;

/// A targeted handoff tool an agent grants: the tool's path and name, and its target as its
/// link said (its `path` is the alias beside the tool).
pub(crate) struct Handoff {
    pub(crate) tool_path: syn::Path,
    pub(crate) tool: String,
    pub(crate) target: GrantedAgent,
}

/// Whether the tool `entry` hands the run to the agent `ident` itself (its target as written).
fn hands_to_itself(ident: &syn::Ident, entry: &ToolEntry) -> bool {
    entry.handoff.as_ref().is_some_and(|h| *ident == h.name || h.name == "Self")
}

/// The paths of the targets of the targeted handoff tools among the tools' links, in `tools`
/// order: each the tool's path with its last segment the alias beside the tool. A tool handing
/// off to the agent itself is left out (refused by [`refuse_self_handoffs`]).
fn target_paths(agent: &AgentInput, tool_links: &[Link]) -> Vec<(syn::Path, Option<ToolEntry>)> {
    agent
        .tools
        .iter()
        .zip(tool_links)
        .filter_map(|(path, link)| {
            let entry = serde_json::from_str::<ToolEntry>(&link.entry.value()).ok()?;
            if entry.handoff.is_none() || hands_to_itself(&agent.ident, &entry) {
                return None;
            }
            let mut alias = path.clone();
            if let Some(last) = alias.segments.last_mut() {
                last.ident = crate::chain::handoff_ident(&syn::Ident::new(&link.function.value(), last.ident.span()));
            }
            Some((alias, Some(entry)))
        })
        .collect()
}

/// The refusal of each tool that hands the run to the agent itself, read from the tools'
/// links at the first finish (when the chain has read exactly the tools' and the granted
/// agents' links). The tool is then left out of the chain and read as a handoff without a
/// target (see [`read`]), so the agent's expansion goes on: the agent exists, the tool's own
/// checks (which name it as their target) find it, and the refusal is the one error shown.
pub(crate) fn refuse_self_handoffs(agent: &AgentInput, links: &[Link]) -> TokenStream {
    if links.len() != agent.tools.len() + agent.agents.len() {
        return TokenStream::new();
    }
    let ident = &agent.ident;
    let errors = Errors::default();
    for (path, link) in agent.tools.iter().zip(links) {
        let Ok(entry) = serde_json::from_str::<ToolEntry>(&link.entry.value()) else { continue };
        if hands_to_itself(ident, &entry) {
            errors.spanned(
                path,
                format!(
                    "agent `{ident}` grants the handoff tool `{}`, which hands the run to `{ident}` itself: its manifest would have to name its own SHA-256, and a run could hand off to itself without end; hand off to another agent, or remove the tool from `tools`",
                    entry.name
                ),
            );
        }
    }
    errors.into_tokens()
}

/// When the tools name targets whose links are not read yet: the chain called once more over
/// them. `None` when there is nothing more to read.
pub(crate) fn continue_chain(
    agent: &AgentInput,
    state: &TokenStream,
    links: &[Link],
    finish: &TokenStream,
) -> Option<TokenStream> {
    let read = agent.tools.len() + agent.agents.len();
    if links.len() != read {
        return None;
    }
    let targets = target_paths(agent, &links[..agent.tools.len().min(links.len())]);
    let collected = links.iter().map(|l| {
        let (f, e) = (&l.function, &l.entry);
        quote!(#f #e)
    });
    let paths: Vec<&syn::Path> = targets.iter().map(|(p, _)| p).collect();
    let (first, rest) = paths.split_first()?;
    Some(quote! { #first! { [ #(#rest,)* #finish ] { #state } { #(#collected)* } } })
}

/// Reads the targets' links (after the tools' and the granted agents'), writes each target in
/// its tool's entry, and checks each against the ceiling by name.
pub(crate) fn read(
    agent: &AgentInput,
    tool_links: &[Link],
    entries: &mut [ToolEntry],
    target_links: &[Link],
    ceiling: Option<&[String]>,
    errors: &Errors,
) -> Vec<Handoff> {
    let targets = target_paths(agent, tool_links);
    if targets.len() != target_links.len() {
        errors.spanned(&agent.ident, "internal: the chain's links do not match the handoff tools' targets");
        return Vec::new();
    }
    let mut out = Vec::new();
    let mut next = targets.iter().zip(target_links);
    for (path, entry) in agent.tools.iter().zip(entries.iter_mut()) {
        if hands_to_itself(&agent.ident, entry) {
            // Refused already (`refuse_self_handoffs`): read as a handoff without a target.
            entry.handoff = None;
        }
        if entry.handoff.is_none() {
            continue;
        }
        let Some(((alias, _), link)) = next.next() else { break };
        let Some(target) = parse_link(alias, link, errors) else { continue };
        entry.handoff = Some(SubAgentEntry { name: target.entry.name.clone(), sha256: target.entry.sha256.clone() });
        if let Some(names) = ceiling {
            let subject =
                format!("the agent `{}` that the handoff tool `{}` hands the run to", target.entry.name, entry.name);
            let remedy = format!("remove `{}` from `tools`", type_string(path));
            check_ceiling(&agent.ident, names, &target, (&subject, &remedy), errors);
        }
        out.push(Handoff { tool_path: path.clone(), tool: entry.name.clone(), target });
    }
    out
}

/// Per targeted handoff tool: the check that the alias names the agent whose link was read, that
/// the target fits the ceiling, and that its output is the agent's.
pub(crate) fn checks(ident: &syn::Ident, handoffs: &[Handoff], rt: &TokenStream) -> TokenStream {
    let each = handoffs.iter().map(|h| {
        let (p, sha, tool) = (&h.target.path, &h.target.entry.sha256, &h.tool_path);
        let msg = format!(
            "the handoff tool `{}` names one agent as a macro and another as a type (an import or module makes them resolve differently), so the manifest would not name the agent the run is handed to; name it by a path that leads to its `agent!` both ways",
            type_string(tool)
        );
        let a = syn::Ident::new(&ident.to_string(), tool.span());
        quote_spanned! {tool.span()=>
            const _: () = ::core::assert!(#rt::__private::str_eq(<#p as #rt::Agent>::MANIFEST_SHA256, #sha), #msg);
            const _: () = {
                #[allow(dead_code)]
                fn __agents_check_handoff() {
                    #rt::agents_core::permission::fits_ceiling::<#a, #p>();
                    #rt::tool::handoff_output::<<#a as #rt::Agent>::Output, #a, #p, #tool, <#p as #rt::Agent>::Output>();
                }
            };
        }
    });
    quote!(#(#each)*)
}

/// `Registry::handoff_to`: the target of each targeted handoff tool, by the tool's name, made
/// from the target's own type; nothing when no tool names one (the trait's default).
pub(crate) fn handoff_to(handoffs: &[Handoff], rt: &TokenStream) -> TokenStream {
    if handoffs.is_empty() {
        return TokenStream::new();
    }
    let arms = handoffs.iter().map(|h| {
        let (p, tool) = (&h.target.path, &h.tool);
        quote_spanned!(p.span()=> #tool => ::core::option::Option::Some(#rt::__private::granted_agent::<#p>()))
    });
    quote! {
        fn handoff_to(tool: &str) -> ::core::option::Option<#rt::GrantedAgent> {
            match tool {
                #(#arms,)*
                _ => ::core::option::Option::None,
            }
        }
    }
}

/// Whether every tool entry that names a target names it with its hash (read from the target's
/// link), and not only as written.
pub(crate) fn resolved<'a>(mut entries: impl Iterator<Item = &'a ToolEntry>) -> bool {
    entries.all(|e| e.handoff.as_ref().is_none_or(|h| !h.sha256.is_empty()))
}
