//! The service's upkeep of the state store, on start and on a timer
//! ([`ServiceLimits::maintenance_every`](crate::ServiceLimits::maintenance_every)): the
//! proposals of runs whose process is gone are settled (an approval carried out, a rejection
//! recorded with its reason, an undecided proposal past its window ended), and what can no
//! longer be used is pruned, so a decision made after a node died completes without
//! application code.

use crate::Shared;
use std::sync::{Arc, Weak};

/// One round: for every agent, its orphaned proposals, then its runtime's prune (a runtime
/// several agents share is pruned once per agent; a second prune finds nothing).
pub(crate) async fn once(shared: &Shared) {
    for kind in shared.agents.values() {
        match kind.resume_orphaned().await {
            Ok(done) => {
                for call in done {
                    tracing::info!(agent = kind.name(), call_id = %call.call_id, run_id = %call.run_id,
                        status = ?call.status, "settled a proposal of a run that is gone");
                }
            }
            Err(e) => tracing::warn!(agent = kind.name(), error = %e, "orphaned proposals could not be settled"),
        }
        match kind.runtime().prune_state().await {
            Ok(p) => tracing::debug!(tokens = p.tokens, sessions = p.sessions, proposals = p.proposals, "state pruned"),
            Err(e) => tracing::warn!(error = %e, "the state store could not be pruned"),
        }
    }
}

/// Runs [`once`] now and then every `every`, until the service is dropped.
pub(crate) fn start(shared: &Arc<Shared>, every: std::time::Duration) {
    let Ok(handle) = tokio::runtime::Handle::try_current() else {
        tracing::warn!("no tokio runtime: the service's state upkeep does not run; call Service::maintain on a timer");
        return;
    };
    let weak: Weak<Shared> = Arc::downgrade(shared);
    handle.spawn(async move {
        let mut tick = tokio::time::interval(every.max(std::time::Duration::from_millis(1)));
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tick.tick().await;
            let Some(shared) = weak.upgrade() else { return };
            once(&shared).await;
        }
    });
}
