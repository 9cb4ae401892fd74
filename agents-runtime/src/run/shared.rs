//! What every run of one runtime shares: its settings, its services (the audit sink, the
//! provider, the state store, the token store, the application's state) and its live state
//! (sessions, decisions waiting on this node, the proposal book, the final records this node
//! owes), and the records written with nobody waiting for them.

use super::conversation::SessionState;
use super::decision::{ConfirmMode, Confirmer};
use super::lock;
use super::pending::Heard;
use super::proposal::Book;
use crate::BoxFuture;
use crate::audit::{AuditRecord, AuditSink, AuditStatus};
use crate::budget::{BudgetFallback, BudgetStore};
use crate::classifier::ConfirmationClassifier;
use crate::interceptor::Interceptor;
use crate::provider::Provider;
use crate::store::Store;
use crate::token::TokenStore;
use agents_core::redact::RedactionKeys;
use agents_core::{Limits, RoleMap, SharedStr};
use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::oneshot;

/// What to do when the administrator's disable list cannot be read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DisabledFallback {
    /// Use the role-only set (the disable list is a convenience, not a boundary); audited.
    #[default]
    RoleOnly,
    /// Offer no tools; audited.
    FailClosed,
}

/// The tools an administrator switched off. It can only remove capability.
pub trait DisabledTools: Send + Sync {
    /// The disabled tool names.
    fn disabled(&self) -> BoxFuture<'_, Result<BTreeSet<String>, String>>;
}

impl DisabledTools for BTreeSet<String> {
    fn disabled(&self) -> BoxFuture<'_, Result<BTreeSet<String>, String>> {
        let s = self.clone();
        Box::pin(async move { Ok(s) })
    }
}

/// What every run of one runtime shares.
pub(super) struct Inner {
    pub(super) roles: RoleMap,
    pub(super) audit: Arc<dyn AuditSink>,
    pub(super) provider: Arc<dyn Provider>,
    pub(super) disabled: Option<Arc<dyn DisabledTools>>,
    pub(super) disabled_fallback: DisabledFallback,
    pub(super) interceptors: Vec<Arc<dyn Interceptor>>,
    pub(super) budget: Option<Arc<dyn BudgetStore>>,
    pub(super) budget_fallback: BudgetFallback,
    pub(super) classifier: Arc<dyn ConfirmationClassifier>,
    pub(super) confirm_mode: ConfirmMode,
    pub(super) tokens: TokenStore,
    /// Where tokens and run slots are kept (shared with other nodes when it is a shared store).
    pub(super) store: Arc<dyn Store>,
    pub(super) redaction: RedactionKeys,
    pub(super) raw_results: bool,
    pub(super) limits: Option<Limits>,
    pub(super) system_prompt: String,
    pub(super) active: Mutex<HashMap<(String, String), u32>>,
    pub(super) sessions: Mutex<HashMap<String, SessionState>>,
    pub(super) decisions: Mutex<HashMap<String, LocalWaiter>>,
    /// This runtime's name in the store's execution claims.
    pub(super) node_id: String,
    /// How often a call waiting for a decision looks in the store for one made elsewhere.
    pub(super) decision_poll: Duration,
    /// Asks a person for the actions of model runs (dialog mode), beside [`Runtime::decide`].
    pub(super) confirmer: Option<Arc<dyn Confirmer>>,
    /// The lease of a run's slot in the store.
    pub(super) slot_lease: Duration,
    /// Final records written after their call's future was dropped, not yet durable.
    pub(super) detached: InFlight,
    /// The open proposals of every confirmation channel.
    pub(super) proposals: Book,
    /// How long one tool call may run before it is ended.
    pub(super) tool_timeout: Duration,
    /// The largest result (bytes of compact JSON) handed on whole.
    pub(super) max_result_bytes: usize,
    /// The largest part of one tool result (bytes of its compact JSON text) the model reads.
    pub(super) max_model_result_bytes: usize,
    /// The runtime's own isolation settings, workers and added isolated tools.
    pub(crate) isolation: Option<crate::isolate::Isolation>,
    /// Tool calls of one model answer that run; the rest are refused.
    pub(super) max_tool_calls_per_answer: usize,
    /// A session unused for this long starts afresh, and is purged.
    pub(super) session_idle_timeout: Duration,
    /// The most sessions this node holds (beyond those with a model run under way).
    pub(super) max_sessions: usize,
    /// How often the runtime's own timer sweeps expired tokens and idle sessions.
    pub(super) sweep_every: Option<Duration>,
    /// That timer's task, once a run or direct session started it.
    pub(super) sweeper: Mutex<Option<tokio::task::JoinHandle<()>>>,
    /// How long proposals that are over stay in the state store.
    pub(super) proposal_retention: Duration,
    /// How long a claim of a proposal's final record may stay unwritten before a resumption
    /// takes it over.
    pub(super) settle_lease: Duration,
    /// The call ids of this node's stored proposals whose final record, once written, is
    /// marked written in the store.
    pub(super) settling: Owed,
    /// Bytes of text of replayed history.
    pub(super) history_bytes: usize,
    /// The MCP servers imported tools are called on.
    pub(super) mcp_imports: Option<Arc<dyn crate::imported::ImportedTools>>,
    /// The application's state, reachable from every tool's context.
    pub(super) state: crate::tool::AppState,
}

impl Inner {
    /// Expired tokens and idle sessions dropped (see [`Runtime::purge_expired`]).
    pub(super) fn purge_expired(self: &Arc<Self>) -> usize {
        self.tokens.purge_expired() + self.purge_idle_sessions()
    }

    /// Starts the sweep timer ([`RuntimeBuilder::sweep_every`]) on `handle`, unless it runs.
    pub(super) fn keep_swept(self: &Arc<Self>, handle: &tokio::runtime::Handle) {
        let Some(every) = self.sweep_every else { return };
        let mut sweeper = lock(&self.sweeper);
        if sweeper.as_ref().is_some_and(|task| !task.is_finished()) {
            return;
        }
        let inner = Arc::downgrade(self);
        *sweeper = Some(handle.spawn(async move {
            let mut tick = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tick.tick().await;
                let Some(inner) = inner.upgrade() else { return };
                let swept = inner.purge_expired();
                if swept > 0 {
                    tracing::debug!(swept, "the runtime's sweep dropped expired tokens and idle sessions");
                }
            }
        }));
    }
}

impl Drop for Inner {
    fn drop(&mut self) {
        if let Some(task) = self.sweeper.get_mut().unwrap_or_else(std::sync::PoisonError::into_inner).take() {
            task.abort();
        }
    }
}

/// A count of detached record writes and a way to wait until there are none.
#[derive(Default)]
pub(super) struct InFlight {
    count: std::sync::atomic::AtomicUsize,
    idle: tokio::sync::Notify,
}

impl InFlight {
    pub(super) fn enter(&self) {
        self.count.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    }

    pub(super) fn leave(&self) {
        if self.count.fetch_sub(1, std::sync::atomic::Ordering::SeqCst) == 1 {
            self.idle.notify_waiters();
        }
    }

    pub(super) async fn settled(&self) {
        loop {
            let idle = self.idle.notified();
            tokio::pin!(idle);
            idle.as_mut().enable();
            if self.count.load(std::sync::atomic::Ordering::SeqCst) == 0 {
                return;
            }
            idle.await;
        }
    }
}

/// A dialog-mode action waiting on this node for [`Runtime::decide`](super::Runtime::decide),
/// registered by call id with the principal it may come from (user, organisation and role)
/// and the session and run it belongs to. A decision made on another node reaches the call
/// through the state store instead.
pub(super) struct LocalWaiter {
    pub(super) user_id: String,
    pub(super) org_id: String,
    pub(super) role: String,
    pub(super) session_id: String,
    pub(super) run_id: String,
    pub(super) tx: oneshot::Sender<Heard>,
}

/// The call id whose stored proposal a record of `status` settles, if this node owes it
/// (taken out of the list: one final record marks it).
pub(super) fn settles(inner: &Inner, call_id: Option<&SharedStr>, status: AuditStatus) -> Option<String> {
    let id = call_id.filter(|_| crate::audit::is_final_status(status))?;
    inner.settling.take(id.as_ref())
}

/// The call ids whose stored proposal this node holds the claim of and owes the final record
/// of (marked written once the record is in the log). Most final records (a read call's) owe
/// nothing: they are answered from a count, without the lock.
#[derive(Debug, Default)]
pub(super) struct Owed {
    ids: Mutex<std::collections::HashSet<String>>,
    held: std::sync::atomic::AtomicUsize,
}

impl Owed {
    pub(super) fn insert(&self, call_id: String) {
        let mut ids = super::lock(&self.ids);
        ids.insert(call_id);
        self.held.store(ids.len(), std::sync::atomic::Ordering::Release);
    }

    pub(super) fn remove(&self, call_id: &str) {
        self.take(call_id);
    }

    /// Takes `call_id` out, if it is owed.
    pub(super) fn take(&self, call_id: &str) -> Option<String> {
        if self.held.load(std::sync::atomic::Ordering::Acquire) == 0 {
            return None;
        }
        let mut ids = super::lock(&self.ids);
        let taken = ids.take(call_id);
        self.held.store(ids.len(), std::sync::atomic::Ordering::Release);
        taken
    }
}

/// Marks a stored proposal's final record written, once it is durable in the log. A store
/// that fails here leaves the claim unmarked: once the settle lease runs out a resumption
/// writes the record again (see [`RuntimeBuilder::settle_lease`](super::RuntimeBuilder::settle_lease)).
pub(super) async fn mark_recorded(inner: &Inner, call_id: &str) {
    if let Err(e) = inner.store.mark_recorded(call_id).await {
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
                let mut append = std::pin::pin!(self.inner.audit.append(record));
                let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
                if append.as_mut().poll(&mut cx).is_pending() {
                    tracing::error!("a final audit record was handed to a sink that did not finish it at once");
                }
            }
            self.inner.detached.leave();
        }
    }
    inner.detached.enter();
    let mut write = Detached { inner: inner.clone(), record: Some(record) };
    match tokio::runtime::Handle::try_current() {
        Ok(handle) => {
            handle.spawn(async move {
                if let Some(record) = write.record.take() {
                    let settled = settles(&write.inner, record.call_id.as_ref(), record.status);
                    match write.inner.audit.append(record).await {
                        Err(e) => tracing::error!(error = %e, "a final audit record could not be written"),
                        Ok(_) => {
                            if let Some(id) = settled {
                                mark_recorded(&write.inner, &id).await;
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
