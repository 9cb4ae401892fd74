//! The manifest of an agent as the runtime rebuilds it, with the agents it grants.

use super::{SubAgentEntry, SubAgentSpec};
use crate::agent::AgentSpec;
use crate::manifest::{AgentEntry, Manifest, ManifestError, ToolEntry};
use crate::tool::ToolSpec;

impl Manifest {
    /// The manifest of an agent spec, the agents it grants ([`crate::Agent::AGENTS`]) and its
    /// tool specs, as the runtime sees them.
    pub fn from_specs_granting(
        agent: &AgentSpec,
        agents: &[SubAgentSpec],
        tools: &[&ToolSpec],
    ) -> Result<Self, ManifestError> {
        let entry = AgentEntry {
            agents: agents.iter().map(SubAgentEntry::from_spec).collect(),
            ..AgentEntry::from_spec(agent)
        };
        Self::from_entries(entry, tools.iter().map(|t| ToolEntry::from_spec(t)).collect())
    }
}
