//! A run tree's limit on spend, the tree's ledger (shared by its node runs, that every paid
//! call of the tree is reserved in and settled to), and where a node's run sits in its tree.

use super::outcome::RunUsage;
use super::sync::lock;
use crate::audit::AuditNode;
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

/// A run tree's ledger, shared by its node runs and its own model calls: one account for the
/// whole tree that every paid call goes through. A call is admitted only while what the tree
/// settled plus what its calls in flight hold (their estimates) stays below the limit, and
/// the call's estimate fits beside them; admission and holding are one step under one lock,
/// so two nodes (a caller and its callee, or the members of a parallel group) cannot both take
/// the last of the limit. A call's cost joins the ledger when it is settled, not when its node
/// ends: a callee sees what its caller spent so far.
#[derive(Debug, Default)]
pub(crate) struct TreeAllowance {
    limit: Option<TreeLimit>,
    ledger: Mutex<Ledger>,
    /// The tree's composite, as the tree's own records name it: its name and its graph
    /// manifest's hash (kept beside a node's proposal, for a resumption after a restart).
    /// For the tree an agent's run grows by calling a granted agent, that agent's name and
    /// manifest hash.
    pub(crate) composite: (&'static str, &'static str),
}

/// What the tree settled and what its calls in flight hold.
#[derive(Debug, Default)]
struct Ledger {
    settled: RunUsage,
    /// USD held by the calls in flight; exactly 0 once none is left, so rounding does not
    /// accumulate.
    held: f64,
    holds: usize,
}

/// What one call in flight holds of its tree's limit, from [`TreeAllowance::reserve`] until
/// [`TreeAllowance::settle`].
#[derive(Debug, PartialEq)]
#[must_use = "a tree hold keeps part of the tree's limit until it is settled"]
pub(crate) struct TreeHold {
    usd: f64,
}

impl TreeAllowance {
    pub(crate) fn new(limit: Option<TreeLimit>, composite: (&'static str, &'static str)) -> Self {
        TreeAllowance { limit, ledger: Mutex::new(Ledger::default()), composite }
    }

    /// What the tree's calls settled so far.
    #[cfg(test)]
    pub(crate) fn spent(&self) -> RunUsage {
        lock(&self.ledger).settled
    }

    /// Admits one call estimated at `estimate_usd` (the calling node's previous call's cost)
    /// and holds the estimate, or says why the tree's limit refuses it.
    pub(crate) fn reserve(&self, estimate_usd: f64) -> Result<TreeHold, String> {
        let estimate = if estimate_usd.is_finite() { estimate_usd.max(0.0) } else { 0.0 };
        let mut ledger = lock(&self.ledger);
        if let Some(why) = self.refused(&ledger, estimate) {
            return Err(why);
        }
        ledger.held += estimate;
        ledger.holds += 1;
        Ok(TreeHold { usd: estimate })
    }

    /// Releases `hold` (a call not made, or made and settled) and adds what the call (and
    /// anything its node spent unreserved since) used.
    pub(crate) fn settle(&self, hold: Option<TreeHold>, usage: RunUsage) {
        let mut ledger = lock(&self.ledger);
        if let Some(hold) = hold {
            ledger.holds = ledger.holds.saturating_sub(1);
            ledger.held = if ledger.holds == 0 { 0.0 } else { (ledger.held - hold.usd).max(0.0) };
        }
        ledger.settled.add(usage);
    }

    /// Why no further model call may be made (nor node started): the tree's settled spend
    /// and the holds of its calls in flight reach its limit.
    pub(crate) fn refusal(&self) -> Option<String> {
        self.refused(&lock(&self.ledger), 0.0)
    }

    fn refused(&self, ledger: &Ledger, estimate: f64) -> Option<String> {
        let limit = self.limit?;
        let settled = ledger.settled;
        let (usd, held) = (settled.cost_usd, ledger.held);
        let tokens = settled.input_tokens.saturating_add(settled.output_tokens);
        if let Some(max) = limit.max_usd.filter(|max| usd + held >= *max || usd + held + estimate > *max) {
            return Some(format!(
                "the run tree spent {usd:.6} USD and its calls in flight hold {held:.6} USD of its limit of {max:.6} USD (this call is estimated at {estimate:.6} USD)"
            ));
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

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn usd(cost_usd: f64) -> RunUsage {
        RunUsage { cost_usd, ..RunUsage::default() }
    }

    fn tree(max_usd: f64) -> TreeAllowance {
        TreeAllowance::new(Some(TreeLimit::new(Some(max_usd), None)), ("t", "h"))
    }

    #[test]
    fn a_call_that_does_not_fit_beside_the_calls_in_flight_is_refused() {
        let t = tree(1.0);
        t.settle(None, usd(0.5));
        // A caller's call holds 0.3 while it is made; a callee's call estimated at 0.3 would
        // take the tree past its limit beside it.
        let caller = t.reserve(0.3).expect("0.5 + 0.3 fits in 1.0");
        let why = t.reserve(0.3).expect_err("0.5 + 0.3 held + 0.3 does not fit");
        assert!(why.contains("0.300000 USD") && why.contains("limit of 1.000000"), "{why}");
        // Settling the caller's call frees its hold and counts its cost instead.
        t.settle(Some(caller), usd(0.3));
        assert_eq!(t.spent().cost_usd, 0.8);
        assert!(t.reserve(0.3).is_err(), "0.8 + 0.3 does not fit either");
        let last = t.reserve(0.2).expect("0.8 + 0.2 fits");
        assert!(t.refusal().is_some(), "no node starts while the holds reach the limit");
        t.settle(Some(last), usd(0.0));
        assert_eq!(t.refusal(), None);
    }

    #[test]
    fn a_refusal_changes_nothing_and_a_bad_estimate_counts_as_none() {
        let t = tree(1.0);
        t.settle(None, usd(0.9));
        assert!(t.reserve(0.5).is_err());
        let hold = t.reserve(f64::NAN).expect("a NaN estimate holds nothing");
        let other = t.reserve(0.1).expect("0.9 + 0 + 0.1 fits");
        t.settle(Some(hold), usd(0.0));
        t.settle(Some(other), usd(0.0));
        assert_eq!(t.spent().cost_usd, 0.9);
        assert_eq!(t.refusal(), None);
    }

    proptest! {
        /// Nodes of one tree reserving and settling in any interleaving: when no call costs
        /// more than its node holds for it, the tree's settled spend never passes its limit;
        /// a node's first call, whose estimate is 0 (nothing predicts it), is what can
        /// overshoot, by at most one call per node in flight.
        #[test]
        fn interleaved_nodes_never_spend_past_the_limit(
            costs in proptest::collection::vec(0.01f64..0.5, 2..6),
            schedule in proptest::collection::vec(0usize..6, 1..400),
            known in any::<bool>(),
        ) {
            const MAX: f64 = 1.0;
            let t = tree(MAX);
            // Per node: its call in flight, and whether it was refused (then it stops).
            let mut flight: Vec<Option<TreeHold>> = costs.iter().map(|_| None).collect();
            let mut calls = vec![0u32; costs.len()];
            let mut stopped = vec![false; costs.len()];
            for step in schedule {
                let n = step % costs.len();
                if stopped[n] {
                    continue;
                }
                match flight[n].take() {
                    Some(hold) => t.settle(Some(hold), usd(costs[n])),
                    None => {
                        // A node's estimate is its previous call's cost (0 for its first),
                        // or, when `known`, the cost of every call of it.
                        let estimate = if known || calls[n] > 0 { costs[n] } else { 0.0 };
                        match t.reserve(estimate) {
                            Ok(hold) => {
                                flight[n] = Some(hold);
                                calls[n] += 1;
                            }
                            Err(_) => stopped[n] = true,
                        }
                    }
                }
                let spent = t.spent().cost_usd;
                if known {
                    prop_assert!(spent <= MAX + 1e-9, "spent {} of {}", spent, MAX);
                } else {
                    let overshoot: f64 = costs.iter().sum();
                    prop_assert!(spent < MAX + overshoot, "spent {} of {}", spent, MAX);
                }
            }
            for (n, hold) in flight.into_iter().enumerate() {
                if let Some(hold) = hold {
                    t.settle(Some(hold), usd(costs[n]));
                }
            }
            prop_assert_eq!(lock(&t.ledger).held, 0.0);
        }
    }
}
