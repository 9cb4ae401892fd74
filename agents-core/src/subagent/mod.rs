//! Agents granted to an agent (`agent! { agents: [SecondReviewer] }`): each is named in the
//! granting agent's manifest by its name and the SHA-256 of its own manifest, so that any
//! change to a granted agent (a tool, a permission, an agent it grants in turn) changes the
//! granting agent's hash too, and a reviewer's diff shows it.
//!
//! The granted agent's whole capability set (the permissions of its tools and, in turn, of
//! the agents it grants) must lie within the granting agent's ceiling: `agent!` checks it by
//! name with a message that names the permission, and by type through the sealed
//! [`FitsCeilingOf`](crate::permission::FitsCeilingOf) (see there).

mod manifest;

use serde::{Deserialize, Serialize};

/// A granted agent, as `agent!` writes it in [`Agent::AGENTS`](crate::Agent::AGENTS).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SubAgentSpec {
    /// The granted agent's name (its `SPEC.name`).
    pub name: &'static str,
    /// The granted agent's `MANIFEST_SHA256`.
    pub sha256: &'static str,
}

/// A granted agent in a manifest: `"agents": [{"name": "...", "sha256": "..."}]`, sorted by
/// name. The key is absent when an agent grants no agent, so such a manifest keeps its bytes.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SubAgentEntry {
    /// The granted agent's name.
    pub name: String,
    /// The SHA-256 of the granted agent's manifest (lowercase hex).
    pub sha256: String,
}

impl SubAgentEntry {
    /// The entry of a granted agent's spec.
    ///
    /// ```
    /// use agents_core::subagent::{SubAgentEntry, SubAgentSpec};
    /// let e = SubAgentEntry::from_spec(&SubAgentSpec { name: "second-reviewer", sha256: "ab" });
    /// assert_eq!((e.name.as_str(), e.sha256.as_str()), ("second-reviewer", "ab"));
    /// ```
    pub fn from_spec(spec: &SubAgentSpec) -> Self {
        SubAgentEntry { name: spec.name.to_owned(), sha256: spec.sha256.to_owned() }
    }
}

/// The name under which a granted agent is offered to the model as a tool: its name, each
/// character a tool name may not hold (anything but ASCII letters, digits, `_` and `-`)
/// written `_`.
///
/// ```
/// assert_eq!(agents_core::subagent::tool_name("kyc second.reviewer"), "kyc_second_reviewer");
/// assert_eq!(agents_core::subagent::tool_name("SecondReviewer"), "SecondReviewer");
/// ```
pub fn tool_name(agent_name: &str) -> String {
    agent_name.chars().map(|c| if c.is_ascii_alphanumeric() || c == '_' || c == '-' { c } else { '_' }).collect()
}

/// Sorts the granted agents by name and drops repeated entries; refuses a name granted twice
/// with two hashes (the error is the name).
pub(crate) fn sort_granted(agents: &mut Vec<SubAgentEntry>) -> Result<(), String> {
    agents.sort();
    agents.dedup();
    match agents.windows(2).find(|w| w[0].name == w[1].name) {
        Some(w) => Err(w[0].name.clone()),
        None => Ok(()),
    }
}
