//! Audit sinks. The audit log is the record; events are only a view.
//!
//! Every sink implements [`AuditSink`]: `append` seals a record onto the sink's hash chain and
//! resolves only once it is durable, so the run loop can persist `proposed` before a tool runs
//! and stop the call when the write fails (fail closed).
//!
//! | sink | durable in | use |
//! | --- | --- | --- |
//! | [`JsonlSink`] | a file, one canonical JSON line per record, `fdatasync` per batch | the embedded default |
//! | [`SqliteSink`] | an SQLite table made append-only by triggers (feature `sqlite`) | one host, queryable |
//! | [`MemorySink`] | this process only | tests and examples |
//!
//! The durable sinks share [`GroupCommitSink`]: concurrent appends are sealed in arrival order
//! by one writer thread and made durable together, one sync per batch. A failed write poisons
//! the sink (it refuses every later record) because the chain's durable end is then unknown;
//! opening the log again verifies it. Verify a log with [`verify_jsonl_file`] or
//! [`verify_sqlite`].

mod group_commit;
mod jsonl;
mod memory;
#[cfg(feature = "sqlite")]
mod sqlite;

pub use agents_core::audit::{AuditRecord, AuditStatus, ChainError, ChainSummary, GENESIS_HASH, PreparedRecord};
use futures::future::BoxFuture;
pub use group_commit::{DurableStore, GroupCommitSink, MAX_BATCH};
pub use jsonl::{JsonlOpenError, JsonlSink, RemovedTail, verify_jsonl_bytes, verify_jsonl_file};
pub use memory::MemorySink;
#[cfg(feature = "sqlite")]
pub use sqlite::{SQLITE_TABLE, SqliteAuditError, SqliteSink, verify_sqlite};

/// Why an audit write failed. A failed write stops the call (fail closed).
#[derive(Debug, thiserror::Error)]
pub enum AuditError {
    /// I/O failed.
    #[error("audit write failed: {0}")]
    Io(#[from] std::io::Error),
    /// The sink refused the record.
    #[error("audit sink refused the record: {0}")]
    Refused(String),
}

/// Where audit records go. `append` seals the record (sequence number, previous hash, hash)
/// and resolves only once the record is durable; it returns the sealed record.
pub trait AuditSink: Send + Sync {
    /// Appends one record.
    fn append(&self, record: AuditRecord) -> BoxFuture<'_, Result<AuditRecord, AuditError>>;
}
