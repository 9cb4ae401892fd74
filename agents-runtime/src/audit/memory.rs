//! An in-memory audit sink for tests and short-lived tools.

use super::Appended;
use super::{AuditRecord, AuditSink, GENESIS_HASH};
use std::sync::{Mutex, MutexGuard, PoisonError};

/// Keeps sealed records in memory. "Durable" here means "stored in this process": use it in
/// tests and examples, never where the record must outlive the process.
///
/// ```
/// use agents_runtime::audit::{AuditSink, MemorySink};
/// # let record: agents_runtime::audit::AuditRecord = serde_json::from_value(serde_json::json!({
/// #     "seq": 0, "ts": "2025-01-01T00:00:00Z", "run_id": "r", "session_id": "s",
/// #     "request_id": "q", "call_id": null, "user_id": "u", "org_id": "o", "role": "nurse",
/// #     "agent": "clinic", "tool": null, "tier": null, "status": "run_started", "reason": null,
/// #     "title": null, "args": null, "args_hash": null, "result": null,
/// #     "manifest_sha256": "00", "prev_hash": "", "hash": ""})).unwrap();
/// let sink = MemorySink::new();
/// let sealed = futures::executor::block_on(sink.append(record)).unwrap();
/// assert_eq!(sealed.seq, 1);
/// assert_eq!(sink.records(), vec![sealed]);
/// assert!(agents_core::audit::verify_jsonl(&sink.to_jsonl(), None).is_ok());
/// ```
#[derive(Debug, Default)]
pub struct MemorySink {
    records: Mutex<Vec<AuditRecord>>,
}

impl MemorySink {
    /// An empty sink.
    pub fn new() -> Self {
        Self::default()
    }

    /// A copy of the sealed records, in chain order.
    pub fn records(&self) -> Vec<AuditRecord> {
        self.lock().clone()
    }

    /// The records as a JSONL log (one canonical line per record), for
    /// [`agents_core::audit::verify_jsonl`] or a file.
    pub fn to_jsonl(&self) -> String {
        self.lock().iter().map(|r| r.to_line() + "\n").collect()
    }

    fn lock(&self) -> MutexGuard<'_, Vec<AuditRecord>> {
        // Records are pushed whole, so a panic elsewhere cannot leave a half-written chain.
        self.records.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl AuditSink for MemorySink {
    fn holds_final<'a>(&'a self, call_id: &'a str) -> crate::BoxFuture<'a, Result<Option<bool>, super::AuditError>> {
        let found =
            self.records().iter().any(|r| r.call_id.as_deref() == Some(call_id) && super::is_final_status(r.status));
        Box::pin(std::future::ready(Ok(Some(found))))
    }

    fn append(&self, mut record: AuditRecord) -> Appended<'_> {
        let mut records = self.lock();
        let prev = records.last().map_or(GENESIS_HASH, |r| r.hash.as_str());
        record.seal(records.len() as u64 + 1, prev);
        records.push(record.clone());
        Appended::ready(Ok(record))
    }
}
