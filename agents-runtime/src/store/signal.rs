//! What a store tells a node about decisions as they are recorded ([`Store::watch_decisions`]),
//! so a run waiting on this node for a decision made on another one hears it at once, and the
//! one lookup a node makes for all of its waiting calls ([`Store::decided`]).
//!
//! A signal only wakes: the node reads the proposal's row again, and the row (its verdict and
//! its seal) decides what happens, never the signal. A forged or stale signal costs one read.

use super::{ProposalState, Store, StoreResult};
use crate::BoxFuture;

/// One signal of [`Store::watch_decisions`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum DecisionSignal {
    /// A decision on this call id was committed (on any node). The id is the signal's text as
    /// received: a node reads the row it names before it believes anything of it.
    Decided(String),
    /// Signals may have been lost (the store's listening connection was down and is back):
    /// a node looks up every call it has waiting ([`Store::decided`]).
    Missed,
}

/// How many signals a store's watcher may hold before the store waits for the node to take
/// them (the database keeps the rest queued meanwhile).
pub const DECISION_SIGNALS_HELD: usize = 1024;

/// [`Store::decided`] for a store without a lookup of its own: [`Store::proposal`] for each id.
pub(super) fn decided_one_by_one<'a, S: Store + ?Sized>(
    store: &'a S,
    call_ids: &'a [String],
) -> BoxFuture<'a, StoreResult<Vec<ProposalState>>> {
    Box::pin(async move {
        let mut decided = Vec::new();
        for call_id in call_ids {
            if let Some(state) = store.proposal(call_id).await?.filter(|s| s.verdict.is_some()) {
                decided.push(state);
            }
        }
        Ok(decided)
    })
}
