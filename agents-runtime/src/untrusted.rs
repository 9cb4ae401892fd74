//! What an application does with a proposal fed by content the user did not write: an action
//! (or a read a person decides on) one of whose argument values came from a tool result, an
//! imported tool's result or a retrieved document (see [`crate::provenance`]).
//!
//! By default such a proposal is only flagged: its card, in every channel, says which value
//! came from where ([`Provenance::warning`]). Per tool, or per argument of a tool, an
//! application can have it refused outright ([`UntrustedPolicy::Refuse`]: a `denied` record
//! before anything is proposed, nothing runs, and the model is told why).
//!
//! ```
//! use agents_runtime::untrusted::{UntrustedPolicies, UntrustedPolicy};
//! let mut policies = UntrustedPolicies::default();
//! policies.set("send_money", None, UntrustedPolicy::Refuse);
//! policies.set("send_email", Some("to"), UntrustedPolicy::Refuse);
//! assert_eq!(policies.of("send_money", "/amount"), UntrustedPolicy::Refuse);
//! assert_eq!(policies.of("send_email", "/to/0"), UntrustedPolicy::Refuse);
//! assert_eq!(policies.of("send_email", "/body"), UntrustedPolicy::Flag);
//! ```

use crate::provenance::Provenance;
use std::collections::HashMap;

/// What happens to a proposal one of whose values came from content the user did not write.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[non_exhaustive]
pub enum UntrustedPolicy {
    /// Its card says so, in every channel; a person decides as for any proposal (the default).
    #[default]
    Flag,
    /// It is refused before anyone is asked: a `denied` record saying which value came from
    /// where; nothing runs.
    Refuse,
}

/// The policies an application set, per tool and per argument of a tool
/// ([`RuntimeBuilder::untrusted_policy`](crate::run::RuntimeBuilder::untrusted_policy)).
#[derive(Debug, Clone, Default)]
pub struct UntrustedPolicies {
    tools: HashMap<String, UntrustedPolicy>,
    arguments: HashMap<(String, String), UntrustedPolicy>,
}

impl UntrustedPolicies {
    /// Sets the policy of `tool`, or of its top-level `argument` (a name, such as `to`: every
    /// value within it) when given. An argument's own policy wins over its tool's.
    pub fn set(&mut self, tool: &str, argument: Option<&str>, policy: UntrustedPolicy) {
        match argument {
            Some(a) => self.arguments.insert((tool.to_owned(), a.trim_start_matches('/').to_owned()), policy),
            None => self.tools.insert(tool.to_owned(), policy),
        };
    }

    /// The policy for the value at `pointer` (a JSON pointer into the arguments) of `tool`.
    pub fn of(&self, tool: &str, pointer: &str) -> UntrustedPolicy {
        let top = pointer.trim_start_matches('/').split('/').next().unwrap_or_default();
        self.arguments
            .get(&(tool.to_owned(), top.to_owned()))
            .or_else(|| self.tools.get(tool))
            .copied()
            .unwrap_or_default()
    }

    /// The refusal of a proposal of `tool` with these origins: the sentences of the flagged
    /// values whose policy refuses them, when any does.
    pub(crate) fn refusal(&self, tool: &str, origins: Option<&Provenance>) -> Option<String> {
        if self.tools.is_empty() && self.arguments.is_empty() {
            return None;
        }
        let origins = origins?;
        let refused: Vec<String> = origins
            .args
            .iter()
            .filter(|a| self.of(tool, &a.pointer) == UntrustedPolicy::Refuse)
            .filter_map(|a| a.warning(origins.results_forgotten))
            .collect();
        (!refused.is_empty()).then(|| {
            format!(
                "refused by the application's policy: `{tool}` does not take values from content the user did not write ({}); nothing ran. Ask the user to give the value themselves",
                refused.join("; ")
            )
        })
    }
}
