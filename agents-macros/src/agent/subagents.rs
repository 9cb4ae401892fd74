//! `agents: [...]`: the agents an agent grants, run by its model as tools.
//!
//! A macro cannot read another agent's declaration, so each agent leaves, beside its type, a
//! link of the same chain its tools use (see [`crate::chain`]): a hidden `macro_rules!`
//! reached by the agent's own path that appends the agent's name, its manifest SHA-256 and
//! its capability summary (`Agent::CAPABILITIES`: its tools' lists merged with its granted
//! agents' and handoff targets', in turn, so every permission and tool it reaches). The granting
//! agent reads those links after its tools' and checks, by name, that each granted agent lies
//! within its ceiling (a message that names the permission); by type, that each granted path
//! is the agent whose link it read (its `MANIFEST_SHA256`) and that it fits the ceiling
//! (`FitsCeilingOf`, sealed, whose impl `agent!` bounds by the same permissions).
//!
//! An agent that grants itself is refused by name. Agents that grant each other in a cycle
//! cannot be written: each manifest names the other's SHA-256, so neither can be computed
//! first, and the chain stops at the macro the other's expansion has not yet produced.

use super::parse::AgentInput;
use crate::chain::Link;
use crate::context::Errors;
use crate::util::type_string;
use agents_core::compose::CapabilityLists;
use agents_core::subagent::SubAgentEntry;

/// A granted agent: the path `agents` names it by and what its link said.
pub(crate) struct GrantedAgent {
    pub(crate) path: syn::Path,
    pub(crate) entry: SubAgentEntry,
    /// The tool name the model calls it by.
    pub(crate) tool: String,
    /// Its capability summary (its `CAPABILITIES`): every tool and permission it reaches,
    /// through its own tools and, in turn, the agents it grants and hands off to.
    pub(crate) capabilities: CapabilityLists,
}

/// The text of an agent's link: its name, hash and capability summary, as JSON.
pub(super) fn link_text(name: &str, sha256: &str, capabilities: &CapabilityLists) -> String {
    let mut value = serde_json::json!({ "name": name, "sha256": sha256 });
    value["capabilities"] = serde_json::to_value(capabilities).expect("plain lists serialize");
    value.to_string()
}

/// An agent granted by its own name (`agents: [Me]` inside `struct Me`): refused before the
/// chain, which would otherwise wait for a link this very expansion writes.
pub(crate) fn check_not_itself(agent: &AgentInput, errors: &Errors) {
    let ident = &agent.ident;
    for p in &agent.agents {
        if p.segments.last().is_some_and(|s| s.ident == *ident || s.ident == "Self") {
            errors.spanned(
                p,
                format!(
                    "agent `{ident}` grants itself: its manifest would have to name its own SHA-256, and a run could call itself without end; remove `{}` from `agents`",
                    type_string(p)
                ),
            );
        }
    }
}

/// Reads the granted agents' links and checks them against the agent's own tools and ceiling.
pub(crate) fn read(
    agent: &AgentInput,
    links: &[Link],
    tool_names: &[&str],
    ceiling: Option<&[String]>,
    errors: &Errors,
) -> Vec<GrantedAgent> {
    let ident = &agent.ident;
    let mut out: Vec<GrantedAgent> = Vec::new();
    for (path, link) in agent.agents.iter().zip(links) {
        let Some(granted) = parse_link(path, link, errors) else { continue };
        if out.iter().any(|g| g.entry.name == granted.entry.name) {
            errors.spanned(
                path,
                format!("agent `{ident}` grants the agent `{}` twice; grant each agent once", granted.entry.name),
            );
            continue;
        }
        if tool_names.contains(&granted.tool.as_str()) || out.iter().any(|g| g.tool == granted.tool) {
            errors.spanned(
                path,
                format!(
                    "agent `{ident}` offers its model two tools named `{}`: a granted tool and the granted agent `{}`; give one of them another name",
                    granted.tool, granted.entry.name
                ),
            );
            continue;
        }
        if let Some(names) = ceiling {
            let remedy = format!("remove `{}` from `agents`", type_string(&granted.path));
            check_ceiling(
                ident,
                names,
                &granted,
                (&format!("the granted agent `{}`", granted.entry.name), &remedy),
                errors,
            );
        }
        out.push(granted);
    }
    out
}

/// One agent link's text, read back.
pub(crate) fn parse_link(path: &syn::Path, link: &Link, errors: &Errors) -> Option<GrantedAgent> {
    let value: serde_json::Value = match serde_json::from_str(&link.entry.value()) {
        Ok(v) => v,
        Err(e) => {
            errors.spanned(path, format!("internal: unreadable agent link: {e}"));
            return None;
        }
    };
    let text = |k: &str| value.get(k).and_then(|v| v.as_str()).map(str::to_owned);
    let capabilities: Option<CapabilityLists> =
        value.get("capabilities").and_then(|v| serde_json::from_value(v.clone()).ok());
    match (text("name"), text("sha256"), capabilities) {
        (Some(name), Some(sha256), Some(capabilities)) => Some(GrantedAgent {
            path: path.clone(),
            tool: agents_core::subagent::tool_name(&name),
            entry: SubAgentEntry { name, sha256 },
            capabilities,
        }),
        _ => {
            errors.spanned(path, "internal: an agent link without its name, hash or capabilities");
            None
        }
    }
}

/// Each permission the agent reaches (granted, or a handoff target) lies within the ceiling,
/// checked by name so that the message names it; the type-level check (`FitsCeilingOf`) stays
/// as the guarantee. `said` is how the message names that agent and what to do instead.
pub(crate) fn check_ceiling(
    ident: &syn::Ident,
    names: &[String],
    granted: &GrantedAgent,
    said: (&str, &str),
    errors: &Errors,
) {
    let within = if names.is_empty() {
        "it is empty: public tools only".to_owned()
    } else {
        names.iter().map(|n| format!("`{n}`")).collect::<Vec<_>>().join(", ")
    };
    let (subject, remedy) = said;
    for p in granted.capabilities.permissions.iter().filter(|p| *p != "public" && !names.contains(p)) {
        errors.spanned(
            &granted.path,
            format!(
                "{subject} reaches the permission `{p}` (through its tools or the agents it grants or hands off to), which lies outside the ceiling of agent `{ident}` ({within}); {remedy}, or add the permission (the path ending in `{}`) to `ceiling`, a widening reviewers see in the manifest",
                p.replace('.', "::"),
            ),
        );
    }
}
