//! A run tree's limit on spend, what the tree spent so far (shared by its node runs, read by
//! each node's budget gate), and where a node's run sits in its tree.

use super::outcome::RunUsage;
use super::sync::lock;
use crate::audit::AuditNode;
use agents_core::budget::RunSpend;
use std::sync::{Arc, Mutex};
use tokio_util::sync::CancellationToken;

/// A whole run tree's limit on spend: money and tokens across all its nodes' runs (each node
/// keeps its own agent's limits too). Set with
/// [`RuntimeBuilder::tree_limit`](super::RuntimeBuilder::tree_limit).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
#[non_exhaustive]
pub struct TreeLimit {
    /// The most a tree's model calls may cost, in USD.
    pub max_usd: Option<f64>,
    /// The most prompt and completion tokens a tree's model calls may use.
    pub max_tokens: Option<u64>,
}

impl TreeLimit {
    /// A limit of `max_usd` USD and `max_tokens` tokens (`None`: that one is not limited).
    pub fn new(max_usd: Option<f64>, max_tokens: Option<u64>) -> Self {
        TreeLimit { max_usd, max_tokens }
    }
}

/// What a run tree spent so far, shared by its node runs: each node's model calls are refused
/// once the tree's spend (the nodes that ended, and the node's own calls) reaches the limit.
#[derive(Debug, Default)]
pub(crate) struct TreeAllowance {
    limit: Option<TreeLimit>,
    spent: Mutex<RunUsage>,
    /// The tree's composite, as the tree's own records name it: its name and its graph
    /// manifest's hash (kept beside a node's proposal, for a resumption after a restart).
    /// For the tree an agent's run grows by calling a granted agent, that agent's name and
    /// manifest hash.
    pub(crate) composite: (&'static str, &'static str),
}

impl TreeAllowance {
    pub(crate) fn new(limit: Option<TreeLimit>, composite: (&'static str, &'static str)) -> Self {
        TreeAllowance { limit, spent: Mutex::new(RunUsage::default()), composite }
    }

    /// Adds what a node's run spent, once it ended.
    pub(crate) fn add(&self, usage: RunUsage) {
        lock(&self.spent).add(usage);
    }

    /// What the nodes that ended spent.
    pub(crate) fn spent(&self) -> RunUsage {
        *lock(&self.spent)
    }

    /// Why no further model call may be made, with `run` spent by the calling node so far.
    pub(crate) fn refusal(&self, run: RunSpend) -> Option<String> {
        let limit = self.limit?;
        let spent = self.spent();
        let usd = spent.cost_usd + run.usd;
        let tokens = spent.input_tokens.saturating_add(spent.output_tokens).saturating_add(run.tokens);
        if let Some(max) = limit.max_usd.filter(|max| usd >= *max) {
            return Some(format!("the run tree spent {usd:.6} USD of its limit of {max:.6} USD"));
        }
        if let Some(max) = limit.max_tokens.filter(|max| tokens >= *max) {
            return Some(format!("the run tree used {tokens} tokens of its limit of {max}"));
        }
        None
    }
}

/// Where a node's run sits in its tree: the tree's stop (a child token per node), the node's
/// place in its records and the tree's allowance.
pub(crate) struct NodeScope {
    pub(crate) cancel: CancellationToken,
    pub(crate) node: AuditNode,
    pub(crate) allowance: Arc<TreeAllowance>,
}
