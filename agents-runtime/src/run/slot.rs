//! A run's slot: one of a user's concurrent runs, leased in the state store and renewed while
//! the run lives, and counted on this node (the user's runs, the session's runs under way).
//! One task renews every slot of the node, each a third of the lease after it was taken or
//! last renewed, a few at a time: a run that waits holds an entry in its list, not a task of
//! its own, and the renewals stay spread as the runs' starts were (a burst of them would
//! hold the store's connections that decided calls need).

use super::outcome::StartError;
use super::shared::{Inner, keep_running};
use super::sync::lock;
use crate::BoxFuture;
use crate::store::{SlotId, SlotOwner, answer_now, now_or_in_background};
use agents_core::Principal;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// One of a user's concurrent runs: a slot of the store, leased and renewed while the run
/// lives, and this runtime's own count of the user's runs. Both go down when the run's task
/// ends.
pub(super) struct SlotGuard {
    inner: Arc<Inner>,
    key: (String, String),
    /// The run's session: it has a run under way while the guard lives.
    session: String,
    pub(super) slot: Option<SlotId>,
}

/// A slot the store will answer about later (a shared store).
pub(super) type PendingSlot = BoxFuture<'static, crate::store::StoreResult<Option<SlotId>>>;

impl SlotGuard {
    /// Asks the store for a slot for `principal` (at most `max` at once). A store that
    /// answers at once gives the guard or the refusal now; a shared store's answer is awaited
    /// by [`SlotGuard::settle`] in the run's task.
    pub(super) fn take(
        inner: &Arc<Inner>,
        principal: &Principal,
        session: &str,
        max: u32,
    ) -> Result<Result<Self, PendingSlot>, StartError> {
        let owner = SlotOwner { org_id: principal.org_id.clone(), user_id: principal.user_id.clone() };
        let store = inner.services.store.clone();
        let lease = inner.settings.slot_lease;
        let acquire: PendingSlot = Box::pin(async move { store.acquire_slot(&owner, max, lease).await });
        match answer_now(acquire) {
            Ok(answer) => Self::granted(inner, principal, session, max, answer).map(Ok),
            Err(pending) => Ok(Err(pending)),
        }
    }

    /// Awaits a shared store's answer.
    pub(super) async fn settle(
        inner: &Arc<Inner>,
        principal: &Principal,
        session: &str,
        max: u32,
        pending: &mut PendingSlot,
    ) -> Result<Self, StartError> {
        Self::granted(inner, principal, session, max, pending.await)
    }

    fn granted(
        inner: &Arc<Inner>,
        principal: &Principal,
        session: &str,
        max: u32,
        answer: crate::store::StoreResult<Option<SlotId>>,
    ) -> Result<Self, StartError> {
        let slot = match answer {
            Ok(Some(slot)) => slot,
            Ok(None) => return Err(StartError::TooManyRuns(max)),
            Err(e) => return Err(StartError::StateUnavailable(e.to_string())),
        };
        let key = (principal.org_id.clone(), principal.user_id.clone());
        *lock(&inner.live.active).entry(key.clone()).or_insert(0) += 1;
        lock(&inner.live.sessions).entry(session.to_owned()).or_default().runs += 1;
        Ok(SlotGuard { inner: inner.clone(), key, session: session.to_owned(), slot: Some(slot) })
    }

    /// Renews the slot's lease while the run lives (the node's renewals, [`Inner::keep_renewing`]);
    /// if the store says the slot is gone (this node could not renew it in time), the run is
    /// stopped, since the cap no longer counts it.
    pub(super) fn keep_renewed(&mut self, cancel: CancellationToken) {
        let Some(slot) = self.slot.clone() else { return };
        let due = tokio::time::Instant::now() + self.inner.settings.slot_lease / 3;
        lock(&self.inner.live.renewals).insert(slot, (cancel, due));
        self.inner.keep_renewing();
    }
}

/// How many of the node's slots are renewed at once.
const RENEWED_AT_ONCE: usize = 4;

/// How often the node looks for slots due for renewal, in parts of the lease: a slot is
/// renewed at most a twelfth of its lease after it was due.
const LOOKS_PER_LEASE: u32 = 12;

impl Inner {
    /// Starts the node's renewal of its runs' slots, unless it runs: each slot in
    /// [`Live::renewals`](super::shared::Live) is renewed a third of the lease after it was
    /// taken or last renewed, [`RENEWED_AT_ONCE`] at a time; a run whose slot the store no
    /// longer holds is stopped. The task holds the runtime weakly and ends with it.
    fn keep_renewing(self: &Arc<Self>) {
        let (inner, lease) = (Arc::downgrade(self), self.settings.slot_lease);
        keep_running(&self.live.renewer, || {
            Some(tokio::spawn(async move {
                loop {
                    tokio::time::sleep(lease / LOOKS_PER_LEASE).await;
                    let Some(inner) = inner.upgrade() else { return };
                    let now = tokio::time::Instant::now();
                    let held: Vec<_> = lock(&inner.live.renewals)
                        .iter_mut()
                        .filter(|(_, (cancel, due))| !cancel.is_cancelled() && *due <= now)
                        .map(|(slot, (cancel, due))| {
                            *due = now + lease / 3;
                            (slot.clone(), cancel.clone())
                        })
                        .collect();
                    let mut renewing = tokio::task::JoinSet::new();
                    for (slot, cancel) in held {
                        if renewing.len() >= RENEWED_AT_ONCE {
                            renewing.join_next().await;
                        }
                        let store = inner.services.store.clone();
                        renewing.spawn(async move { renew(&*store, &slot, lease, &cancel).await });
                    }
                    while renewing.join_next().await.is_some() {}
                }
            }))
        });
    }
}

/// Renews one run's slot; stops the run when the store no longer holds it.
async fn renew(store: &dyn crate::store::Store, slot: &SlotId, lease: std::time::Duration, cancel: &CancellationToken) {
    match store.renew_slot(slot, lease).await {
        Ok(true) => {}
        Ok(false) => {
            tracing::warn!(slot = %slot.0, "the run's slot lapsed; the run is stopped");
            cancel.cancel();
        }
        Err(e) => tracing::warn!(error = %e, slot = %slot.0, "the run's slot could not be renewed"),
    }
}

impl Drop for SlotGuard {
    fn drop(&mut self) {
        if let Some(slot) = self.slot.take() {
            // Out of the node's renewals (if it was in them) before it is released.
            lock(&self.inner.live.renewals).remove(&slot);
            let store = self.inner.services.store.clone();
            // A slot whose release fails lapses with its lease.
            now_or_in_background("release a run slot", async move { store.release_slot(&slot).await });
        }
        if let Some(s) = lock(&self.inner.live.sessions).get_mut(&self.session) {
            s.runs = s.runs.saturating_sub(1);
            // The run's end is a use: the session's idle time counts from here.
            s.last_used = Some(tokio::time::Instant::now());
        }
        let mut active = lock(&self.inner.live.active);
        if let Some(n) = active.get_mut(&self.key) {
            *n -= 1;
            if *n == 0 {
                active.remove(&self.key);
            }
        }
    }
}
