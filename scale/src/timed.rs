//! An audit sink in front of another that notes when each call's records became durable.

use agents_runtime::audit::{Appended, AuditRecord, AuditSink, AuditStatus};
use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// What the sinks of one bench have seen, shared by the nodes' sinks.
#[derive(Default)]
pub struct Seen {
    executed: Mutex<HashMap<String, Instant>>,
    proposed: AtomicUsize,
}

impl Seen {
    /// When the `executed` record of `call_id` became durable, if it has.
    pub fn executed_at(&self, call_id: &str) -> Option<Instant> {
        self.executed.lock().expect("not poisoned").get(call_id).copied()
    }

    /// How many `proposed` records became durable.
    pub fn proposed(&self) -> usize {
        self.proposed.load(Ordering::Relaxed)
    }
}

/// Appends to `inner` and notes, once a record is durable, its call's `executed` time and
/// the count of `proposed` records.
pub struct Timed {
    inner: Arc<dyn AuditSink>,
    seen: Arc<Seen>,
}

impl Timed {
    /// A sink in front of `inner`, noting into `seen`.
    pub fn new(inner: Arc<dyn AuditSink>, seen: Arc<Seen>) -> Self {
        Timed { inner, seen }
    }
}

impl AuditSink for Timed {
    fn append(&self, record: AuditRecord) -> Appended<'_> {
        let status = record.status;
        let call = record.call_id.as_deref().map(str::to_owned);
        let inner = self.inner.append(record);
        let seen = self.seen.clone();
        Appended::pending(async move {
            let r = inner.await;
            if r.is_ok() {
                match (status, call) {
                    (AuditStatus::Executed, Some(call)) => {
                        seen.executed.lock().expect("not poisoned").insert(call, Instant::now());
                    }
                    (AuditStatus::Proposed, _) => {
                        seen.proposed.fetch_add(1, Ordering::Relaxed);
                    }
                    _ => {}
                }
            }
            r
        })
    }
}
