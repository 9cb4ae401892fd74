//! Decisions recorded through other nodes (or runtimes) sharing the state store, heard by the
//! dialog calls waiting on this one: one task per runtime, not one poll per waiting call.
//!
//! The task hears the store's signals ([`Store::watch_decisions`](crate::store::Store::watch_decisions):
//! PostgreSQL's notifications) and, every [`RuntimeBuilder::decision_poll`](crate::run::RuntimeBuilder::decision_poll)
//! and whenever the store says signals may have been lost, looks up every call waiting here in
//! one query ([`Store::decided`](crate::store::Store::decided)). Either way the row read back
//! decides: a signal only names a call id to look up, and a verdict read from the store is
//! handed to the waiting call through the channel a decision made on this node uses
//! (`live.decisions`), marked recorded, so the call goes on to check its seal and claim it as
//! it does for every stored approval.

use crate::run::decision::Verdict;
use crate::run::pending::{Heard, verdict_of};
use crate::run::shared::{Inner, keep_running};
use crate::run::sync::{first_of, lock};
use crate::store::{DecisionSignal, ProposalState};
use std::sync::{Arc, Weak};
use std::time::Duration;
use tokio::sync::mpsc::Receiver;

/// The most signals taken at once into one lookup.
const SIGNALS_PER_LOOKUP: usize = 512;

/// What one wake of the watch looks up.
enum Wanted {
    /// Every call waiting here.
    All,
    /// These call ids (signalled), those of them waiting here.
    Ids(Vec<String>),
}

impl Inner {
    /// Starts this runtime's watch over the decisions its calls wait for, on the current tokio
    /// runtime, unless it runs (a call registering for a decision calls it).
    pub(in crate::run) fn keep_watching(self: &Arc<Self>) {
        keep_running(&self.live.watcher, || {
            let Ok(handle) = tokio::runtime::Handle::try_current() else {
                tracing::warn!("no tokio runtime runs: decisions made through other nodes are not heard");
                return None;
            };
            let _entered = handle.enter();
            let signals = self.services.store.watch_decisions();
            Some(handle.spawn(watch(Arc::downgrade(self), signals, self.settings.decision_poll)))
        });
    }

    /// Hands each decided proposal among `wanted` to the call waiting here for it.
    async fn hear_decided(&self, wanted: Wanted) {
        let ids: Vec<String> = {
            let waiting = lock(&self.live.decisions);
            match wanted {
                Wanted::All => waiting.keys().cloned().collect(),
                Wanted::Ids(ids) => ids.into_iter().filter(|id| waiting.contains_key(id)).collect(),
            }
        };
        if ids.is_empty() {
            return;
        }
        match self.services.store.decided(&ids).await {
            Ok(decided) => decided.into_iter().for_each(|state| self.hand_decided(state)),
            Err(e) => {
                tracing::warn!(error = %e, waiting = ids.len(), "the state store could not be asked for decisions")
            }
        }
    }

    /// Hands a decided proposal read from the store to the call waiting here for it, if any.
    fn hand_decided(&self, state: ProposalState) {
        let Some(verdict) = state.verdict else { return };
        let waiter = lock(&self.live.decisions).remove(&state.proposal.call_id);
        if let Some(waiter) = waiter {
            let verdict: Verdict = verdict_of(verdict);
            let _ = waiter.tx.send(Heard { verdict, recorded: true, reason: state.reason });
        }
    }
}

/// The watch: wakes on a signal or at each poll, and ends with its runtime.
async fn watch(inner: Weak<Inner>, mut signals: Option<Receiver<DecisionSignal>>, every: Duration) {
    let mut tick = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        // A signal is taken before a tick due at the same time (whose lookup follows).
        let woke = first_of(async { Some(next(&mut signals).await) }, async {
            tick.tick().await;
            None
        })
        .await;
        let wanted = match woke {
            None => Wanted::All,
            Some(Some(first)) => taken(first, signals.as_mut()),
            // The store stopped signalling: the lookups go on alone.
            Some(None) => {
                signals = None;
                continue;
            }
        };
        let Some(inner) = inner.upgrade() else { return };
        inner.hear_decided(wanted).await;
    }
}

/// The next signal, or never without a receiver.
async fn next(signals: &mut Option<Receiver<DecisionSignal>>) -> Option<DecisionSignal> {
    match signals {
        Some(rx) => rx.recv().await,
        None => std::future::pending().await,
    }
}

/// What `first` and the signals already queued behind it ask to look up.
fn taken(first: DecisionSignal, signals: Option<&mut Receiver<DecisionSignal>>) -> Wanted {
    let mut queued = vec![first];
    if let Some(rx) = signals {
        while queued.len() < SIGNALS_PER_LOOKUP {
            match rx.try_recv() {
                Ok(signal) => queued.push(signal),
                Err(_) => break,
            }
        }
    }
    let mut ids = Vec::with_capacity(queued.len());
    for signal in queued {
        match signal {
            DecisionSignal::Decided(id) => ids.push(id),
            _ => return Wanted::All,
        }
    }
    Wanted::Ids(ids)
}
