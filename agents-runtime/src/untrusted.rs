//! What an application does with a proposal fed by content the user did not write: an action
//! (or a read a person decides on) one of whose argument values came from a tool result, an
//! imported tool's result or a retrieved document (see [`crate::provenance`]).
//!
//! By default such a proposal is only flagged: its card, in every channel, says which value
//! came from where ([`Provenance::warning`]). Per tool, or per argument of a tool, an
//! application can have it refused outright ([`UntrustedPolicy::Refuse`]: a `denied` record
//! before anything is proposed, nothing runs, and the model is told why), or confirmed twice
//! ([`UntrustedPolicy::SecondConfirmation`]).
//!
//! ```
//! use agents_runtime::untrusted::{UntrustedPolicies, UntrustedPolicy};
//! let mut policies = UntrustedPolicies::default();
//! policies.set("send_money", None, UntrustedPolicy::Refuse);
//! policies.set("send_email", Some("to"), UntrustedPolicy::Refuse);
//! policies.set("send_email", Some("cc"), UntrustedPolicy::SecondConfirmation);
//! assert_eq!(policies.of("send_money", "/amount"), UntrustedPolicy::Refuse);
//! assert_eq!(policies.of("send_email", "/to/0"), UntrustedPolicy::Refuse);
//! assert_eq!(policies.of("send_email", "/cc"), UntrustedPolicy::SecondConfirmation);
//! assert_eq!(policies.of("send_email", "/body"), UntrustedPolicy::Flag);
//! ```
//!
//! # The second confirmation
//!
//! A proposal with a flagged value under [`UntrustedPolicy::SecondConfirmation`] needs two
//! decisions of the person the run acts for, in every channel:
//!
//! 1. Their first approval runs nothing. It is recorded (`first_approval`) and answered with
//!    the [`Acknowledgement`]: the warning and its keyed digest
//!    ([`DecisionError::AcknowledgementRequired`](crate::run::DecisionError::AcknowledgementRequired)
//!    from [`Runtime::decide_async`](crate::run::Runtime::decide_async); a second
//!    [`ConfirmRequest`](crate::run::ConfirmRequest) carrying it for a
//!    [`Confirmer`](crate::run::Confirmer), such as MCP elicitation).
//! 2. Only an approval that carries that digest back
//!    ([`Runtime::acknowledge`](crate::run::Runtime::acknowledge), or the confirmer's approval
//!    of the second request) approves it; its `confirmed` record says the warning was
//!    acknowledged. A digest of another proposal, another person or another warning changes
//!    nothing ([`DecisionError::AcknowledgementMismatch`](crate::run::DecisionError::AcknowledgementMismatch)).
//!
//! A decline at either step rejects it. The digest is bound to the stored proposal's seal, and
//! the warning is part of that seal, so a state store edited to drop the requirement approves
//! nothing. In conversational mode a reply cannot acknowledge: a "yes" is recorded as the first
//! approval and the proposal waits for the second in the decisions API (the model is told to
//! say so), since the conversation is where the untrusted content was.
//!
//! ```no_run
//! # async fn f(rt: agents_runtime::Runtime, me: agents_runtime::Principal, call_id: &str) {
//! use agents_runtime::run::{DecisionError, Verdict};
//! match rt.decide_async(call_id, &me, Verdict::Approve, None).await {
//!     Err(DecisionError::AcknowledgementRequired(ack)) => {
//!         // Show `ack.warning`; on the person's explicit "I checked" (`ack.phrase()`):
//!         rt.acknowledge(call_id, &me, &ack.digest).await.unwrap();
//!     }
//!     other => other.unwrap(),
//! }
//! # }
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
    /// It needs two decisions by the person the run acts for: a first approval runs nothing
    /// (a `first_approval` record); only a second approval that acknowledges the warning (by
    /// its keyed digest, [`Acknowledgement`]) runs it. A decline at either step rejects it.
    SecondConfirmation,
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
        let refused = self.flagged(tool, origins, UntrustedPolicy::Refuse);
        (!refused.is_empty()).then(|| {
            format!(
                "refused by the application's policy: `{tool}` does not take values from content the user did not write ({}); nothing ran. Ask the user to give the value themselves",
                refused.join("; ")
            )
        })
    }

    /// The warning a second confirmation of a proposal of `tool` with these origins must
    /// acknowledge: the sentences of the flagged values under
    /// [`UntrustedPolicy::SecondConfirmation`], when any is (and none is refused: refusal is
    /// checked first).
    pub(crate) fn acknowledgement(&self, tool: &str, origins: Option<&Provenance>) -> Option<String> {
        let flagged = self.flagged(tool, origins, UntrustedPolicy::SecondConfirmation);
        (!flagged.is_empty()).then(|| flagged.join("; "))
    }

    /// The warning sentences of the values of `origins` that content the user did not write
    /// supplied and whose policy is `policy`.
    fn flagged(&self, tool: &str, origins: Option<&Provenance>, policy: UntrustedPolicy) -> Vec<String> {
        let Some(origins) = origins.filter(|_| !(self.tools.is_empty() && self.arguments.is_empty())) else {
            return Vec::new();
        };
        origins
            .args
            .iter()
            .filter(|a| self.of(tool, &a.pointer) == policy)
            .filter_map(|a| a.warning(origins.results_forgotten))
            .collect()
    }
}

/// What the person a run acts for must acknowledge to confirm, a second time, a proposal
/// under [`UntrustedPolicy::SecondConfirmation`]: given only after their first approval is on
/// record ([`DecisionError::AcknowledgementRequired`](crate::run::DecisionError::AcknowledgementRequired),
/// or a [`Confirmer`](crate::run::Confirmer)'s second [`ConfirmRequest`](crate::run::ConfirmRequest)).
///
/// The `digest` is an HMAC under the server key of the stored proposal's seal (its call id,
/// run, person, tool and the MAC of its exact arguments) and the warning: only a runtime
/// holding the key computes it, it names one proposal of one person, and any node sharing the
/// state store and the key checks it. A second approval carries it back
/// ([`Runtime::acknowledge`](crate::run::Runtime::acknowledge)).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[non_exhaustive]
pub struct Acknowledgement {
    /// The proposal's call id.
    pub call_id: String,
    /// The warning: which argument value came from which content the user did not write.
    pub warning: String,
    /// What the second approval must carry (lowercase hex).
    pub digest: String,
}

impl Acknowledgement {
    pub(crate) fn new(call_id: &str, warning: &str, digest: String) -> Self {
        Acknowledgement { call_id: call_id.to_owned(), warning: warning.to_owned(), digest }
    }

    /// The sentence a person affirms, as a front end's button or a form's only choice says it.
    ///
    /// ```
    /// # use agents_runtime::untrusted::Acknowledgement;
    /// # let ack: Acknowledgement = serde_json::from_value(serde_json::json!({
    /// #     "call_id": "c", "digest": "00",
    /// #     "warning": "argument `to` was copied from the result of `read_email` (call c1)"})).unwrap();
    /// assert_eq!(ack.phrase(), "I checked: argument `to` was copied from the result of `read_email` (call c1)");
    /// ```
    pub fn phrase(&self) -> String {
        format!("I checked: {}", self.warning)
    }
}
