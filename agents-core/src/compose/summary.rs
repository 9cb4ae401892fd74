//! An agent's capability summary, computed natively from its manifest: what `agent!` writes
//! as `Agent::CAPABILITIES`, and what a reader of a manifest file recomputes to check it.

use super::graph::Reach;
use crate::manifest::Manifest;
use crate::tool::Tier;
use std::collections::BTreeSet;

/// The owned form of [`super::Capabilities`]: each list sorted in byte order, no repeats.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CapabilityLists {
    /// The action tools.
    pub actions: Vec<String>,
    /// The handoff tools.
    pub handoffs: Vec<String>,
    /// The permissions of all its tools.
    pub permissions: Vec<String>,
    /// All its tools.
    pub tools: Vec<String>,
    /// The most dangerous tier among its tools.
    pub reaches: Option<Tier>,
}

impl CapabilityLists {
    /// The summary of the agent whose manifest is `manifest`.
    ///
    /// ```
    /// use agents_core::compose::CapabilityLists;
    /// use agents_core::manifest::{AgentEntry, Manifest};
    /// let manifest = Manifest::from_entries(AgentEntry::new("empty", "Does nothing."), Vec::new()).unwrap();
    /// assert_eq!(CapabilityLists::of(&manifest), CapabilityLists::default());
    /// ```
    pub fn of(manifest: &Manifest) -> CapabilityLists {
        let names = |tier: Option<Tier>| -> Vec<String> {
            let set: BTreeSet<&str> = manifest
                .tools
                .iter()
                .filter(|t| tier.is_none_or(|tier| t.tier == tier))
                .map(|t| t.name.as_str())
                .collect();
            set.into_iter().map(str::to_owned).collect()
        };
        let permissions: BTreeSet<&str> = manifest.tools.iter().map(|t| t.permission.as_str()).collect();
        CapabilityLists {
            actions: names(Some(Tier::Action)),
            handoffs: names(Some(Tier::Handoff)),
            permissions: permissions.into_iter().map(str::to_owned).collect(),
            tools: names(None),
            reaches: manifest.tools.iter().map(|t| t.tier).max_by_key(|t| Reach::of_tier(*t)),
        }
    }

    /// The reach the summary names.
    pub fn reach(&self) -> Reach {
        self.reaches.map_or(Reach::None, Reach::of_tier)
    }
}
