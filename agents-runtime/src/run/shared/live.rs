//! A runtime's live state on this node: its run slots, its sessions, the decisions waiting on
//! it, the proposal book, the final records it owes and the detached writes under way.

use crate::run::conversation::SessionState;
use crate::run::pending::Heard;
use crate::run::proposal::Book;
use crate::run::sync::lock;
use std::collections::HashMap;
use std::sync::Mutex;
use tokio::sync::oneshot;

/// A runtime's live state on this node.
#[derive(Default)]
pub(in crate::run) struct Live {
    /// Runs under way on this node, by organisation and user.
    pub(in crate::run) active: Mutex<HashMap<(String, String), u32>>,
    /// What this node keeps of each session beside the store, by session id.
    pub(in crate::run) sessions: Mutex<HashMap<String, SessionState>>,
    /// Dialog calls waiting on this node for a decision, by call id.
    pub(in crate::run) decisions: Mutex<HashMap<String, LocalWaiter>>,
    /// Final records written after their call's future was dropped, not yet durable.
    pub(in crate::run) detached: InFlight,
    /// The open proposals of every confirmation channel.
    pub(in crate::run) proposals: Book,
    /// The sweep timer's task ([`RuntimeBuilder::sweep_every`](crate::run::RuntimeBuilder::sweep_every)),
    /// once a run or direct session started it.
    pub(in crate::run) sweeper: NodeTask,
    /// The slots of this node's runs, each with its run's cancellation and when it is next
    /// renewed: renewed by one task (`run::slot`), which stops a run whose slot the store no
    /// longer holds.
    pub(in crate::run) renewals:
        Mutex<HashMap<crate::store::SlotId, (tokio_util::sync::CancellationToken, tokio::time::Instant)>>,
    /// That task, once a run took a slot.
    pub(in crate::run) renewer: NodeTask,
    /// The task that hears decisions recorded through other nodes for the calls waiting
    /// here (`ledger::watch`), once a call waited.
    pub(in crate::run) watcher: NodeTask,
    /// The call ids of this node's stored proposals whose final record, once written, is
    /// marked written in the store.
    pub(in crate::run) settling: Owed,
}

/// One of the node's own tasks (the sweep, the decisions' watch, the slots' renewal), started
/// by the first run or call that needs it and aborted with the runtime.
pub(in crate::run) type NodeTask = Mutex<Option<tokio::task::JoinHandle<()>>>;

/// Starts `task` with `start` unless it runs (`start` may decline: no task then).
pub(in crate::run) fn keep_running(task: &NodeTask, start: impl FnOnce() -> Option<tokio::task::JoinHandle<()>>) {
    let mut task = lock(task);
    if task.as_ref().is_some_and(|t| !t.is_finished()) {
        return;
    }
    if let Some(started) = start() {
        *task = Some(started);
    }
}

impl Live {
    /// Aborts the node's own tasks (the runtime is going).
    pub(in crate::run) fn abort_tasks(&mut self) {
        for task in [&mut self.sweeper, &mut self.watcher, &mut self.renewer] {
            if let Some(task) = task.get_mut().unwrap_or_else(std::sync::PoisonError::into_inner).take() {
                task.abort();
            }
        }
    }
}

/// A count of detached record writes and a way to wait until there are none.
#[derive(Default)]
pub(in crate::run) struct InFlight {
    count: std::sync::atomic::AtomicUsize,
    idle: tokio::sync::Notify,
}

impl InFlight {
    pub(in crate::run) fn enter(&self) {
        self.count.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    }

    pub(in crate::run) fn leave(&self) {
        if self.count.fetch_sub(1, std::sync::atomic::Ordering::SeqCst) == 1 {
            self.idle.notify_waiters();
        }
    }

    pub(in crate::run) async fn settled(&self) {
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
/// through the same channel, read back from the state store by the runtime's watch over its
/// waiting calls (`ledger::watch`).
pub(in crate::run) struct LocalWaiter {
    pub(in crate::run) user_id: String,
    pub(in crate::run) org_id: String,
    pub(in crate::run) role: String,
    pub(in crate::run) session_id: String,
    pub(in crate::run) run_id: String,
    pub(in crate::run) tx: oneshot::Sender<Heard>,
    /// The proposal needs a second confirmation: an approval handed here would skip it, so
    /// approvals go through the decisions API (see [`crate::untrusted`]).
    pub(in crate::run) acknowledge: bool,
}

/// The call ids whose stored proposal this node holds the claim of and owes the final record
/// of (marked written once the record is in the log). Most final records (a read call's) owe
/// nothing: they are answered from a count, without the lock.
#[derive(Debug, Default)]
pub(in crate::run) struct Owed {
    ids: Mutex<std::collections::HashSet<String>>,
    held: std::sync::atomic::AtomicUsize,
}

impl Owed {
    pub(in crate::run) fn insert(&self, call_id: String) {
        let mut ids = lock(&self.ids);
        ids.insert(call_id);
        self.held.store(ids.len(), std::sync::atomic::Ordering::Release);
    }

    pub(in crate::run) fn remove(&self, call_id: &str) {
        self.take(call_id);
    }

    /// Takes `call_id` out, if it is owed.
    pub(in crate::run) fn take(&self, call_id: &str) -> Option<String> {
        if self.held.load(std::sync::atomic::Ordering::Acquire) == 0 {
            return None;
        }
        let mut ids = lock(&self.ids);
        let taken = ids.take(call_id);
        self.held.store(ids.len(), std::sync::atomic::Ordering::Release);
        taken
    }
}
