//! What a reply reads as, the proposal it answers, and the trait every classifier implements.

use crate::BoxFuture;
use crate::budget::MeteredCalls;
use serde_json::Value;
use std::sync::Arc;

/// How a reply to a pending proposal reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum Classification {
    /// Agreement to exactly the proposal.
    Confirm,
    /// Agreement with changes: the proposal does not stand.
    Modify,
    /// No.
    Cancel,
    /// Anything else, including attacks: the proposal stays pending.
    Unclear,
}

impl Classification {
    /// Every reading, for exhaustive checks.
    pub const ALL: [Classification; 4] =
        [Classification::Confirm, Classification::Unclear, Classification::Modify, Classification::Cancel];

    /// How strict the reading is: 0 for `Confirm` (the proposal runs), then `Unclear` (it
    /// stays pending), `Modify` (it ends) and `Cancel` (it ends and is not retried).
    pub fn strictness(self) -> u8 {
        match self {
            Classification::Confirm => 0,
            Classification::Unclear => 1,
            Classification::Modify => 2,
            Classification::Cancel => 3,
        }
    }

    /// The stricter of two readings of one reply: the composition every chain of
    /// classifiers uses. `Confirm` only when both are `Confirm`; commutative, associative and
    /// idempotent, so neither the order nor the number of classifiers can make a reply
    /// confirm that one of them does not confirm.
    pub fn strictest(self, other: Classification) -> Classification {
        if other.strictness() > self.strictness() { other } else { self }
    }
}

/// A proposal as the person saw it.
#[derive(Debug, Clone, PartialEq)]
pub struct ProposalSummary {
    /// The tool.
    pub tool: String,
    /// Its title.
    pub title: String,
    /// Redacted arguments.
    pub args: Value,
}

/// Classifies the reply to a pending proposal.
///
/// An implementation fails towards `Unclear`, never towards `Confirm`: an error, a timeout or
/// an answer it cannot read is `Unclear`.
pub trait ConfirmationClassifier: Send + Sync {
    /// The classification.
    fn classify<'a>(&'a self, proposal: &'a ProposalSummary, reply: &'a str) -> BoxFuture<'a, Classification>;

    /// The classification, with every model call made through `calls`: the runtime calls
    /// this with the run's budget gate, so a classifier's paid calls are reserved, counted and
    /// recorded like the agent's. A classifier that calls a model overrides it; the default
    /// (for classifiers that make no model call) is [`classify`](Self::classify).
    fn classify_metered<'a>(
        &'a self,
        proposal: &'a ProposalSummary,
        reply: &'a str,
        calls: &'a dyn MeteredCalls,
    ) -> BoxFuture<'a, Classification> {
        let _ = calls;
        self.classify(proposal, reply)
    }
}

impl<C: ConfirmationClassifier + ?Sized> ConfirmationClassifier for Arc<C> {
    fn classify<'a>(&'a self, proposal: &'a ProposalSummary, reply: &'a str) -> BoxFuture<'a, Classification> {
        (**self).classify(proposal, reply)
    }

    fn classify_metered<'a>(
        &'a self,
        proposal: &'a ProposalSummary,
        reply: &'a str,
        calls: &'a dyn MeteredCalls,
    ) -> BoxFuture<'a, Classification> {
        (**self).classify_metered(proposal, reply, calls)
    }
}
