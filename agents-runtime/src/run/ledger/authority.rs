//! The transition of a proposal whose authority changed (see [`crate::authority`]): the
//! principal source says the person the run acts for is gone or holds another role, so the
//! proposals they made under the old authority end undecided, each by one conditional update
//! of the state store (of every node and channel ending or deciding it, one does), and only
//! the one that ended it writes the final record, `skipped` with the reason.

use crate::run::decision::Verdict;
use crate::run::pending::{Heard, principal_of};
use crate::run::shared::Inner;
use crate::run::sync::lock;
use agents_core::Principal;
use std::sync::Arc;

impl Inner {
    /// Why `held` no longer holds (the reason, starting `authority changed`), when the runtime
    /// reads principals again and its source says so; `None` without a source (the snapshot
    /// holds) or when nothing changed.
    pub(in crate::run) async fn authority_changed(&self, held: &Principal) -> Option<String> {
        let source = self.services.principals.as_deref()?;
        crate::authority::changed(source, held).await
    }

    /// Ends every proposal still waiting for a decision that `held` made (under exactly that
    /// authority), with `reason`: those of other runs and nodes too, since the store lists them.
    pub(in crate::run) async fn end_under_authority(self: &Arc<Self>, held: &Principal, reason: &str) {
        let pending = match self.services.store.pending_for(&held.org_id, &held.user_id).await {
            Ok(pending) => pending,
            Err(e) => {
                // Each is refused anyway when decided or run: both read the principal again.
                tracing::error!(user = %held.user_id, error = %e, "the proposals of a changed authority could not be listed");
                return;
            }
        };
        for p in pending.iter().filter(|p| principal_of(p) == *held) {
            self.end_for_authority(&p.call_id, reason).await;
        }
    }

    /// Ends one proposal whose authority changed: a dialog call waiting for it on this node
    /// is told first (it finds the proposal not settled by it, and writes no record), then the
    /// proposal is closed in the store and, when this call closed it, recorded `skipped` with
    /// `reason` ([`Inner::close_waiting`]).
    pub(in crate::run) async fn end_for_authority(self: &Arc<Self>, call_id: &str, reason: &str) {
        let waiter = lock(&self.live.decisions).remove(call_id);
        if let Some(waiter) = waiter {
            let heard = Heard { verdict: Verdict::Reject, recorded: true, reason: Some(reason.to_owned()) };
            let _ = waiter.tx.send(heard);
        }
        self.close_waiting(call_id, reason.to_owned(), None).await;
    }
}
