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
//! [`verify_sqlite`], or with `agents audit verify`.
//!
//! # What a chain proves
//!
//! By default a chain is *plain*: each record carries the SHA-256 of its canonical JSON and of
//! the previous record's hash. That detects accidents (a damaged byte, a lost line, a torn
//! write), and nothing else: anyone who can write the log can edit a record and re-hash every
//! record after it, or cut records off the end, and the chain still verifies.
//!
//! Against someone with write access, open the sink with [`ChainOptions`]:
//!
//! - `key`: a [`SealingKey`] makes the chain *keyed*. Each record is sealed with HMAC-SHA-256
//!   under the key of its epoch, and the key steps one way every epoch ([`EpochPolicy`]: N
//!   records or T seconds), the old key overwritten. Without the [`ChainKey`] (which the
//!   verifier keeps, or derives from a passphrase) no edit, insertion, deletion, reordering or
//!   re-sealing verifies; someone who steals the writer's key at epoch `k` cannot forge or
//!   rewrite any record of an epoch before `k`.
//! - `checkpoints`: [`Checkpoints`] sign the head with Ed25519 every N records and at close,
//!   and publish it to a second place ([`CheckpointPublisher`]: [`CheckpointFile`],
//!   [`CheckpointWriter`] for standard output). A log cut below (or rewritten up to) the last
//!   published checkpoint is then detected. Records written after the last checkpoint can still
//!   be cut off unnoticed.
//!
//! ```no_run
//! # fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use agents_runtime::audit::*;
//! // Once, at setup: keep `chain_key.to_hex()` for the verifier, off this machine.
//! let chain_key = ChainKey::generate()?;
//! SealingKey::create_file("/var/lib/app/audit.key", &chain_key, EpochPolicy::default())?;
//! # let signer_hex = "";
//! // Every start:
//! let key = SealingKey::open_file("/var/lib/app/audit.key", EpochPolicy::default())?;
//! let signer = CheckpointSigningKey::from_hex(signer_hex)?;
//! let published = CheckpointFile::open("/mnt/other-volume/audit.checkpoints")?;
//! let sink = JsonlSink::open_with(
//!     "/var/lib/app/audit.jsonl",
//!     ChainOptions { key: Some(key), checkpoints: Some(Checkpoints::new(signer, published, 1000)) },
//! )?;
//! # Ok(()) }
//! ```

pub mod declared;
mod group_commit;
mod identity;
mod jsonl;
mod keyed;
mod memory;
#[cfg(feature = "sqlite")]
mod sqlite;

use crate::BoxFuture;
pub use agents_core::audit::{
    AuditImport, AuditNode, AuditRecord, AuditResult, AuditStatus, ChainError, ChainKey, ChainSummary, ChainVerifier,
    Checkpoint, CheckpointSigningKey, CheckpointVerifyingKey, EpochKey, EpochPolicy, GENESIS_HASH, PreparedRecord,
    SealCheck, severe,
};
pub use group_commit::{ChainOptions, DurableStore, GroupCommitSink, MAX_BATCH};
pub use identity::FileIdentity;
pub use jsonl::{
    JsonlOpenError, JsonlSink, RemovedTail, verify_jsonl_bytes, verify_jsonl_file, verify_jsonl_file_with,
};
pub use keyed::{CheckpointFile, CheckpointPublisher, CheckpointWriter, Checkpoints, SealingKey};
pub use memory::MemorySink;
#[cfg(feature = "sqlite")]
pub use sqlite::{SQLITE_TABLE, SqliteAuditError, SqliteSink, verify_sqlite, verify_sqlite_with};

/// Why an audit write failed. A failed write stops the call (fail closed).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
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
///
/// A sink that is done when `append` returns (in memory, say) answers [`Appended::ready`];
/// one that waits for a disk or a server answers [`Appended::pending`] with its future.
///
/// ```
/// use agents_runtime::audit::{Appended, AuditRecord, AuditSink};
///
/// /// Counts the records and keeps none of them.
/// #[derive(Default)]
/// struct Counting(std::sync::atomic::AtomicU64);
///
/// impl AuditSink for Counting {
///     fn append(&self, record: AuditRecord) -> Appended<'_> {
///         self.0.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
///         Appended::ready(Ok(record))
///     }
/// }
/// ```
pub trait AuditSink: Send + Sync {
    /// Appends one record.
    fn append(&self, record: AuditRecord) -> Appended<'_>;

    /// Whether the log holds a final record (`executed`, `failed`, `rejected`, `skipped` or
    /// `denied`) of call `call_id`: `Some(found)`, or `None` when this sink cannot look (the
    /// default). A resumption taking over the claim of a holder that died looks before it
    /// writes, so a record that reached the log just before its holder died is not written a
    /// second time; a resumption carrying out a stored approval looks before it runs the call, so an
    /// approval put back in the state store after its call ended does not run it again. It reads
    /// the log (or the call's rows).
    fn holds_final<'a>(&'a self, call_id: &'a str) -> BoxFuture<'a, Result<Option<bool>, AuditError>> {
        let _ = call_id;
        Box::pin(std::future::ready(Ok(None)))
    }

    /// The `proposed` records of this log whose final record is still owed since longer than
    /// `older_than`, and whose call has no proposal kept in the state store (those are settled
    /// through the proposal's claims), oldest first, at most `limit`: the debts a resumption
    /// settles when the call's own writer could not (its final record's write failed, or its
    /// process died). Only a sink that keeps the debts durably beside its records answers
    /// (a store's stream, [`StoreAuditSink`](crate::store::StoreAuditSink)); the default owes
    /// nothing.
    fn owed_finals(
        &self,
        older_than: std::time::Duration,
        limit: u32,
    ) -> BoxFuture<'_, Result<Vec<AuditRecord>, AuditError>> {
        let _ = (older_than, limit);
        Box::pin(std::future::ready(Ok(Vec::new())))
    }

    /// Claims the debt of call `call_id` of run `run_id` for `node` (see
    /// [`AuditSink::owed_finals`]), in one conditional update that holds for one claimer per
    /// `lease`: `true` when this node is to write the final record. The default claims nothing.
    fn claim_owed<'a>(
        &'a self,
        call_id: &'a str,
        run_id: &'a str,
        node: &'a str,
        lease: std::time::Duration,
    ) -> BoxFuture<'a, Result<bool, AuditError>> {
        let _ = (call_id, run_id, node, lease);
        Box::pin(std::future::ready(Ok(false)))
    }
}

/// Whether a record of `status` ends a call (its final record): every `proposed` record is
/// owed exactly one of them, under the same call id.
pub fn is_final_status(status: AuditStatus) -> bool {
    matches!(
        status,
        AuditStatus::Executed
            | AuditStatus::Failed
            | AuditStatus::Rejected
            | AuditStatus::Skipped
            | AuditStatus::Denied
    )
}

/// Whether a canonical line is a final record of `call_id` (what a sink's
/// [`AuditSink::holds_final`] looks for).
pub fn line_is_final_of(line: &str, call_id: &str) -> bool {
    serde_json::from_str::<AuditRecord>(line)
        .is_ok_and(|r| r.call_id.as_deref() == Some(call_id) && is_final_status(r.status))
}

/// What [`AuditSink::append`] returns: a future of the sealed record, or of the failure.
/// An answer known at once is held as it is; only a pending one is boxed.
#[must_use = "the record is durable only once this future resolves"]
pub struct Appended<'a>(AppendedState<'a>);

// The ready answer is held inline on purpose: an in-memory sink then allocates nothing per
// record. The runtime reads it at once (`Appended::outcome_now`).
#[allow(clippy::large_enum_variant)]
enum AppendedState<'a> {
    Ready(Option<Result<AuditRecord, AuditError>>),
    Pending(BoxFuture<'a, Result<AuditRecord, AuditError>>),
}

impl<'a> Appended<'a> {
    /// An answer known now.
    pub fn ready(result: Result<AuditRecord, AuditError>) -> Self {
        Appended(AppendedState::Ready(Some(result)))
    }

    /// An answer `future` gives later.
    pub fn pending(future: impl std::future::Future<Output = Result<AuditRecord, AuditError>> + Send + 'a) -> Self {
        Appended(AppendedState::Pending(Box::pin(future)))
    }

    /// Whether the record was appended, when that is known now (the sealed record is dropped
    /// where it lies, not moved out); otherwise the future that tells.
    pub(crate) fn outcome_now(self) -> Result<Result<(), AuditError>, BoxFuture<'a, Result<AuditRecord, AuditError>>> {
        match self.0 {
            AppendedState::Ready(Some(Ok(_))) => Ok(Ok(())),
            AppendedState::Ready(Some(Err(e))) => Ok(Err(e)),
            AppendedState::Ready(None) => {
                Ok(Err(AuditError::Refused("the sink's answer was already taken".to_owned())))
            }
            AppendedState::Pending(future) => Err(future),
        }
    }
}

impl std::fmt::Debug for Appended<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match &self.0 {
            AppendedState::Ready(_) => "Appended::Ready",
            AppendedState::Pending(_) => "Appended::Pending",
        })
    }
}

impl std::future::Future for Appended<'_> {
    type Output = Result<AuditRecord, AuditError>;

    fn poll(self: std::pin::Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> std::task::Poll<Self::Output> {
        match &mut self.get_mut().0 {
            AppendedState::Ready(answer) => {
                std::task::Poll::Ready(answer.take().expect("`Appended` polled after it resolved"))
            }
            AppendedState::Pending(future) => future.as_mut().poll(cx),
        }
    }
}
