//! Classified differences between two permission manifests.
//!
//! [`diff`] compares an old and a new [`Manifest`] and classifies every change as a
//! [`ChangeKind::Widening`] (the agent may do something it could not do before), a
//! [`ChangeKind::Narrowing`] (it may do less) or [`ChangeKind::Neutral`] (nothing it may do
//! changed, but a reviewer should still see it). Every [`Change`] names the [`Rule`] that
//! classified it and says why in plain words.
//!
//! The rules, per tool:
//!
//! | change | kind |
//! | --- | --- |
//! | a tool added / removed | widening / narrowing |
//! | the permission changed (to `public`: widening; from `public`: narrowing; otherwise widening, because other roles may hold the new permission) | see left |
//! | `mutating` removed / added | widening / narrowing |
//! | `isolated` removed / added (the kernel no longer / now enforces the policy) | widening / narrowing |
//! | `egress` removed / added (arguments copied from tool results no longer / now wait for a person) | widening / narrowing |
//! | tier lowered (handoff → action → read) / raised | widening / narrowing |
//! | risk lowered / raised | widening / narrowing |
//! | a filesystem glob or host added or broadened / removed or narrowed | widening / narrowing |
//! | an environment variable added / removed (variables are granted by exact name) | widening / narrowing |
//! | a policy entry added or removed that another entry covers | neutral |
//! | a parameter stops being secret (`#[secret]` removed, or its type no longer names `Secret`) / becomes secret | widening / narrowing |
//! | a parameter added / removed | widening / narrowing |
//! | a parameter's type changed | widening |
//! | parameters reordered | neutral |
//! | a tool it `uses` added / removed | widening / narrowing |
//! | title or description changed | neutral |
//! | an imported tool's pin, server or remote name changed, or a tool became / stopped being imported | widening |
//!
//! and for the agent:
//!
//! | change | kind |
//! | --- | --- |
//! | the permission ceiling removed / declared | widening / narrowing |
//! | a permission added to / removed from the ceiling | widening / narrowing |
//! | a limit raised / lowered (iterations, timeouts, concurrent runs, token lifetime, history) | widening / narrowing |
//! | the declared models removed (any provider may run it) / declared | widening / narrowing |
//! | a model added (or its host pattern broadened) / removed (or narrowed) | widening / narrowing |
//! | a model added or removed that another declared model covers | neutral |
//! | a budget cap per run removed or raised / declared or lowered | widening / narrowing |
//! | a skill offers an action tool it did not offer (a new skill reaching an action, an action tool moved into a skill, an action shared by `unskilled: shared`) | widening |
//! | `unskilled` changed from `shared` to `none` / from `none` to `shared` (each action it shares is a widening above) | narrowing / neutral |
//! | the audit records' values widened (omitted → masked → full) / narrowed | widening / narrowing |
//! | skills regrouped, name, description, input or output type changed | neutral |
//! | a knowledge source added / removed | widening / narrowing |
//! | a knowledge source's contents changed (its SHA-256: text no reviewer has read reaches the model) | widening |
//! | a knowledge source's path changed, its contents the same | neutral |
//! | an MCP server added / removed (the servers the imported tools come from) | widening / narrowing |
//! | an MCP server's endpoint changed (another program, scheme, host or path; a new host is named) | widening |
//! | a way of being served over MCP added / removed (`expose.mcp`: a transport, or HTTP behind another authentication) | widening / narrowing |
//! | an agent granted (`agents`: the model may run it as a tool) / no longer granted | widening / narrowing |
//! | a granted agent's manifest SHA-256 changed (review the diff of its own manifest) | widening |
//! | a handoff tool's target agent named / another agent or its SHA-256 changed / no longer named | widening / widening / narrowing |
//!
//! and, between reviewed documents ([`crate::reviewed`], compared by [`diff_documents`]):
//!
//! | change | kind |
//! | --- | --- |
//! | the input schema may accept a value the old one refused (a new property, a widened type, a property no longer required, a relaxed enum or bound, anything [`crate::reviewed::admits_no_more`] cannot show accepts nothing more) | widening |
//! | the input schema accepts only values the old one did, not all of them | narrowing |
//! | the input schema changed, accepting the same values | neutral |
//! | the output schema changed | neutral (reported) |
//! | one side is a plain manifest, the other a reviewed document | widening |
//!
//! # What the classification guarantees
//!
//! Against a contributor who edits tools, policies and agent declarations in any way (the
//! input is two manifests that [`Manifest::parse`] accepted, or that `agent!` generated):
//! when [`ManifestDiff::has_widening`] is `false`, then for every tool of the new manifest,
//! every path its filesystem policy admits, every host and port its network policy admits
//! and every variable its environment policy grants was admitted by the same tool in the old
//! manifest, as the runtime's own matchers decide ([`crate::policy`] defines them once, for
//! the runtime and for this module); no tool was added, lost its confirmation, lowered its
//! tier or risk, changed its permission, gained a parameter, changed a parameter's type or
//! stopped masking one; no limit went up; the ceiling did not grow; every provider the new
//! manifest's models admit ([`crate::models::admits`]) was admitted by the old one; no budget
//! cap per run went up or away; no knowledge source was added or changed its contents; the
//! audit records keep no more of a call's values; no tool is imported from a server the old
//! manifest did not name, nor from one reached at another endpoint; the agent is served over
//! MCP in no way it was not; no agent was granted and no granted agent's manifest changed.
//!
//! When whether a new entry is covered is not certain, the entry counts as a widening: the
//! "covers" decision ([`crate::policy::Glob::covers`], [`crate::policy::HostPattern::covers`])
//! is sound but not complete, so a reviewer may see a widening that is not one, never the
//! reverse. A policy entry that [`crate::policy`] refuses covers nothing.
//!
//! What it does not see: anything the manifest does not hold. A type keeps its name while its
//! definition changes (the manifest holds names only; a reviewed document holds the agent's
//! input and output schemas, and [`diff_documents`] classifies their changes); what a tool's body does with its
//! capabilities is bounded by the runtime's handles, not by this diff.

mod agent;
mod agents;
mod audit_values;
mod expose;
mod io;
mod knowledge;
mod lists;
mod model;
mod params;
mod rule;
mod servers;
mod skills;
mod surface;
mod tool;

pub use io::diff_documents;
pub use model::{Change, ChangeKind, ManifestDiff};
pub(crate) use model::{change, quote};
pub use rule::Rule;

use crate::manifest::Manifest;

/// Compares two manifests and classifies every difference.
pub fn diff(old: &Manifest, new: &Manifest) -> ManifestDiff {
    let mut out = Vec::new();
    agent::diff_agent(old, new, &mut out);
    knowledge::diff_knowledge(&old.agent.knowledge, &new.agent.knowledge, &mut out);
    servers::diff_servers(old, new, &mut out);
    expose::diff_expose(&old.agent.expose.mcp, &new.agent.expose.mcp, &mut out);
    agents::diff_agents(&old.agent.agents, &new.agent.agents, &mut out);
    tool::diff_tools(old, new, &mut out);
    ManifestDiff { old_sha256: old.sha256(), new_sha256: new.sha256(), changes: out }
}
