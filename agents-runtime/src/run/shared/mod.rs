//! What every run of one runtime shares (`Inner`), in three parts a lower room takes one of:
//! its settings (`settings`: fixed when it was built), its services (`services`: the audit
//! sink, the provider, the state store, the token store, the application's state) and its live
//! state on this node (`live`: sessions, decisions waiting here, the proposal book, the final
//! records it owes); and the records written with nobody waiting for them.

mod live;
mod services;
mod settings;
mod values;

pub(super) use live::{Live, LocalWaiter, keep_running};
pub use services::DisabledTools;
pub(super) use services::Services;
pub use settings::DisabledFallback;
pub(super) use settings::Settings;
pub(super) use values::ValuesSink;

use crate::audit::{AuditRecord, AuditStatus};
use agents_core::SharedStr;
use std::sync::Arc;

/// What every run of one runtime shares.
pub(super) struct Inner {
    /// What the builder fixed.
    pub(super) settings: Settings,
    /// What the runtime records, asks, keeps and calls through.
    pub(super) services: Services,
    /// This node's sessions, decisions, proposals and owed records.
    pub(super) live: Live,
}

impl Drop for Inner {
    fn drop(&mut self) {
        self.live.abort_tasks();
    }
}

/// The call id whose stored proposal a record of `status` settles, if this node owes it
/// (taken out of the list: one final record marks it).
pub(super) fn settles(live: &Live, call_id: Option<&SharedStr>, status: AuditStatus) -> Option<String> {
    let id = call_id.filter(|_| crate::audit::is_final_status(status))?;
    live.settling.take(id.as_ref())
}

/// Marks a stored proposal's final record written, once it is durable in the log. A store
/// that fails here leaves the claim unmarked: once the settle lease runs out a resumption
/// writes the record again (see [`RuntimeBuilder::settle_lease`](super::RuntimeBuilder::settle_lease)).
pub(super) async fn mark_recorded(services: &Services, call_id: &str) {
    if let Err(e) = services.store.mark_recorded(call_id).await {
        tracing::error!(call_id, error = %e, "a proposal's final record is written but could not be marked so in the state store");
    }
}

/// Writes a record nobody waits for. On a tokio runtime it is written by a task the runtime
/// counts (see [`Runtime::records_settled`](super::Runtime::records_settled)); without one, or
/// if that task never runs, the sink is polled once here, which hands the record to a sink that
/// writes on its own thread.
pub(super) fn append_detached(inner: &Arc<Inner>, record: AuditRecord) {
    struct Detached {
        inner: Arc<Inner>,
        record: Option<AuditRecord>,
    }
    impl Drop for Detached {
        fn drop(&mut self) {
            if let Some(record) = self.record.take() {
                let mut append = std::pin::pin!(self.inner.services.audit.append(record));
                let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
                if append.as_mut().poll(&mut cx).is_pending() {
                    tracing::error!("a final audit record was handed to a sink that did not finish it at once");
                }
            }
            self.inner.live.detached.leave();
        }
    }
    inner.live.detached.enter();
    let mut write = Detached { inner: inner.clone(), record: Some(record) };
    match tokio::runtime::Handle::try_current() {
        Ok(handle) => {
            handle.spawn(async move {
                if let Some(record) = write.record.take() {
                    let settled = settles(&write.inner.live, record.call_id.as_ref(), record.status);
                    match write.inner.services.audit.append(record).await {
                        Err(e) => tracing::error!(error = %e, "a final audit record could not be written"),
                        Ok(_) => {
                            if let Some(id) = settled {
                                mark_recorded(&write.inner.services, &id).await;
                            }
                        }
                    }
                }
                drop(write);
            });
        }
        Err(_) => drop(write),
    }
}
