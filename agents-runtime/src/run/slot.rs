//! A run's slot: one of a user's concurrent runs, leased in the state store and renewed while
//! the run lives, and counted on this node (the user's runs, the session's runs under way).

use super::outcome::StartError;
use super::shared::Inner;
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
    renewal: Option<tokio::task::JoinHandle<()>>,
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
        pending: PendingSlot,
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
        Ok(SlotGuard { inner: inner.clone(), key, session: session.to_owned(), slot: Some(slot), renewal: None })
    }

    /// Renews the slot's lease while the run lives; if the store says the slot is gone (this
    /// node could not renew it in time), the run is stopped, since the cap no longer counts it.
    pub(super) fn keep_renewed(&mut self, cancel: CancellationToken) {
        let (store, slot) = (self.inner.services.store.clone(), self.slot.clone().expect("held until drop"));
        let lease = self.inner.settings.slot_lease;
        self.renewal = Some(tokio::spawn(async move {
            loop {
                tokio::time::sleep(lease / 3).await;
                match store.renew_slot(&slot, lease).await {
                    Ok(true) => {}
                    Ok(false) => {
                        tracing::warn!(slot = %slot.0, "the run's slot lapsed; the run is stopped");
                        cancel.cancel();
                        return;
                    }
                    Err(e) => tracing::warn!(error = %e, slot = %slot.0, "the run's slot could not be renewed"),
                }
            }
        }));
    }
}

impl Drop for SlotGuard {
    fn drop(&mut self) {
        if let Some(renewal) = self.renewal.take() {
            renewal.abort();
        }
        if let Some(slot) = self.slot.take() {
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
