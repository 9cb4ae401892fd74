//! Audit records: append-only, event-sourced, chained.
//!
//! Each status change of a tool call is a new record. Every record carries the `hash` of the
//! previous one and the agent's `MANIFEST_SHA256`, so a record joins back to the reviewed
//! manifest. A chain is sealed in one of two modes, and they prove different things:
//!
//! | mode | a record's `hash` | detects | against whom |
//! | --- | --- | --- | --- |
//! | plain (default) | SHA-256 of its canonical JSON without `hash` | accidental damage: a flipped byte, a lost or duplicated line, a torn write | nobody: anyone who can write the file can edit a record and re-hash everything after it, or cut the end off |
//! | keyed ([`keyed`]) | HMAC-SHA-256 of the same text under the key of its `epoch`, the key stepping one way every epoch | any edit, insertion, deletion, reordering, re-sealing or record from another chain | someone with write access but no key, and someone who steals the writer's key at epoch `k`, for every record of an epoch before `k` |
//! | keyed + [`checkpoint`]s | as keyed, plus Ed25519-signed statements of the head published elsewhere | also a log cut below (or rewritten up to) the last checkpoint | as keyed, as long as the published checkpoints are out of the attacker's reach |
//!
//! Records appended after the last checkpoint can be cut off without a trace in any mode; how
//! often the writer publishes checkpoints bounds that loss.

pub mod checkpoint;
mod error;
pub mod filter;
pub mod keyed;
pub mod lines;
mod members;
mod record;
mod seal;
pub mod severe;
#[cfg(feature = "sqlite")]
pub mod sqlite;
mod summary;
mod values;
mod verify;

pub use checkpoint::{CHECKPOINT_FORMAT, Checkpoint, CheckpointError, CheckpointSigningKey, CheckpointVerifyingKey};
pub use error::ChainError;
pub use filter::{RecordFilter, Selected};
pub use keyed::{ChainKey, EpochKey, EpochPolicy, KeyError, MAX_EPOCH_GAP, TIMESTAMP_GRACE, unix_seconds};
pub use record::{AuditImport, AuditNode, AuditRecord, AuditResult, AuditStatus, GENESIS_HASH};
pub use seal::PreparedRecord;
pub use summary::{ChainSummary, SealCheck};
pub use values::{
    AuditValues, DIGEST_MEMBER, MIN_OMITTED_BYTES, OMITTED, is_value_digest, omit_args, omit_in_text, values_omitted,
};
pub use verify::{ChainVerifier, verify_jsonl};
