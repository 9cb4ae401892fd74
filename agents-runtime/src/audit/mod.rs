//! Audit sinks. The audit log is the record; events are only a view.

pub use agents_core::audit::{AuditRecord, AuditStatus, ChainError, ChainSummary, GENESIS_HASH};
use futures::future::BoxFuture;

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
