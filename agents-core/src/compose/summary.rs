//! An agent's capability summary, computed natively: what `agent!` writes as
//! `Agent::CAPABILITIES` (its manifest's own tools merged with the summaries of the agents it
//! grants and hands off to), and what the runtime recomputes to check it.

use super::graph::{Capabilities, Reach};
use crate::manifest::Manifest;
use crate::tool::Tier;
use std::collections::BTreeSet;

/// The owned form of [`super::Capabilities`]: each list sorted in byte order, no repeats.
///
/// [`CapabilityLists::of`] summarises one manifest's own tools; [`CapabilityLists::merge`]
/// adds what a granted agent or a handoff target reaches, so that an agent's summary covers
/// every tool a run entering it may reach. Its JSON form (`reaches` as the tier's lowercase
/// name, or `null`) is what an agent's link carries to the agents that grant it.
#[derive(Debug, Clone, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
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
    /// The summary of the tools the manifest `manifest` grants itself, and only those: the
    /// agents it grants and the targets of its handoff tools are merged in by
    /// [`CapabilityLists::merge`] (what `agent!` does for `Agent::CAPABILITIES`).
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

    /// The owned lists of a summary (an agent's `CAPABILITIES`), sorted without repeats.
    ///
    /// ```
    /// use agents_core::compose::{Capabilities, CapabilityLists, Reach};
    /// let summary = Capabilities { tools: &["read_ticket"], permissions: &["ticket.read"], reaches: Reach::Read, ..Capabilities::NONE };
    /// let lists = CapabilityLists::of_summary(&summary);
    /// assert_eq!(lists.tools, ["read_ticket"]);
    /// assert_eq!(lists.reach(), Reach::Read);
    /// ```
    pub fn of_summary(summary: &Capabilities) -> CapabilityLists {
        let owned = |list: &[&str]| -> Vec<String> {
            let set: BTreeSet<&str> = list.iter().copied().collect();
            set.into_iter().map(str::to_owned).collect()
        };
        CapabilityLists {
            actions: owned(summary.actions),
            handoffs: owned(summary.handoffs),
            permissions: owned(summary.permissions),
            tools: owned(summary.tools),
            reaches: match summary.reaches {
                Reach::None => None,
                Reach::Read => Some(Tier::Read),
                Reach::Action => Some(Tier::Action),
                Reach::Handoff => Some(Tier::Handoff),
            },
        }
    }

    /// These lists and `other`'s together (each list's union, sorted without repeats; the
    /// more dangerous reach): an agent's summary merged with what an agent it grants, or hands
    /// off to, reaches. `agent!` computes `Agent::CAPABILITIES` this way, and the runtime
    /// recomputes it this way to check it.
    ///
    /// ```
    /// use agents_core::compose::{Capabilities, CapabilityLists, Reach};
    /// let own = CapabilityLists::of_summary(&Capabilities { tools: &["lookup"], permissions: &["kb.read"], reaches: Reach::Read, ..Capabilities::NONE });
    /// let granted = CapabilityLists::of_summary(&Capabilities {
    ///     actions: &["reset_password"],
    ///     tools: &["reset_password"],
    ///     permissions: &["account.reset"],
    ///     reaches: Reach::Action,
    ///     ..Capabilities::NONE
    /// });
    /// let merged = own.merge(&granted);
    /// assert_eq!(merged.tools, ["lookup", "reset_password"]);
    /// assert_eq!(merged.permissions, ["account.reset", "kb.read"]);
    /// assert_eq!(merged.reach(), Reach::Action);
    /// ```
    #[must_use]
    pub fn merge(self, other: &CapabilityLists) -> CapabilityLists {
        let union = |mine: Vec<String>, theirs: &[String]| -> Vec<String> {
            let set: BTreeSet<String> = mine.into_iter().chain(theirs.iter().cloned()).collect();
            set.into_iter().collect()
        };
        let reaches = match (self.reaches, other.reaches) {
            (Some(a), Some(b)) => Some(if Reach::of_tier(b) > Reach::of_tier(a) { b } else { a }),
            (a, b) => a.or(b),
        };
        CapabilityLists {
            actions: union(self.actions, &other.actions),
            handoffs: union(self.handoffs, &other.handoffs),
            permissions: union(self.permissions, &other.permissions),
            tools: union(self.tools, &other.tools),
            reaches,
        }
    }

    /// The reach the summary names.
    pub fn reach(&self) -> Reach {
        self.reaches.map_or(Reach::None, Reach::of_tier)
    }
}
