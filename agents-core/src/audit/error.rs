//! Where a chain stops being trustworthy: the first break a verifier finds.

/// Where a chain stops being trustworthy.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ChainError {
    /// The line is not an audit record.
    #[error("line {line}: not an audit record: {detail}")]
    Malformed {
        /// 1-based line number.
        line: usize,
        /// What the parser said.
        detail: String,
    },
    /// The record's content does not match its hash: it was edited.
    #[error("line {line}: the record does not match its hash (edited)")]
    HashMismatch {
        /// 1-based line number.
        line: usize,
    },
    /// The record's content does not match its keyed seal: it was edited, forged, re-sealed
    /// without the key, or sealed with another key.
    #[error("line {line}: the record does not match its keyed seal (edited, forged, or sealed with another key)")]
    SealMismatch {
        /// 1-based line number.
        line: usize,
    },
    /// A key was given but the record is not sealed with one, or the chain switches between
    /// plain and keyed records: records were replaced or re-sealed with the plain hash.
    #[error("line {line}: the record is {found}, but {expected} (records replaced or re-sealed)")]
    ModeMismatch {
        /// 1-based line number.
        line: usize,
        /// What the record is (`a plain record`, `a keyed record`).
        found: &'static str,
        /// What the chain needs.
        expected: &'static str,
    },
    /// The record's epoch is not the one its sequence number and time give (it was re-sealed
    /// with a later key, or the verifier uses another epoch policy than the writer).
    #[error(
        "line {line}: the record says sealing epoch {found}, but its sequence number and time give epoch {expected} \
         (after epoch {previous}): re-sealed with another epoch's key, or the writer used another epoch policy"
    )]
    Epoch {
        /// 1-based line number.
        line: usize,
        /// The record's epoch.
        found: u64,
        /// The epoch its sequence number and time give.
        expected: u64,
        /// The previous record's epoch.
        previous: u64,
    },
    /// The record does not follow the previous one: a record was deleted, inserted or moved.
    #[error("line {line}: the record does not follow the previous one (deleted, inserted or reordered records)")]
    BrokenLink {
        /// 1-based line number.
        line: usize,
    },
    /// The sequence number is not the next one.
    #[error("line {line}: sequence number {found}, expected {expected}")]
    Sequence {
        /// 1-based line number.
        line: usize,
        /// What the record says.
        found: u64,
        /// What the chain needs.
        expected: u64,
    },
    /// The last line has no newline and does not parse: a write was cut off by a crash.
    #[error("line {line}: torn last line (a write was cut off); nothing after line {} is trustworthy", line - 1)]
    TornTail {
        /// 1-based line number.
        line: usize,
    },
    /// The record names another manifest.
    #[error("line {line}: manifest hash {found} is not the expected {expected}")]
    ManifestMismatch {
        /// 1-based line number.
        line: usize,
        /// What the record says.
        found: String,
        /// What the caller expected.
        expected: String,
    },
    /// A signed checkpoint names this record with another hash: the chain was rewritten.
    #[error(
        "line {line}: record {seq} does not have the hash signed checkpoint {number} names ({hash}): the chain was rewritten"
    )]
    CheckpointMismatch {
        /// 1-based line number.
        line: usize,
        /// The record's sequence number.
        seq: u64,
        /// 1-based number of the checkpoint, in sequence order.
        number: usize,
        /// The hash the checkpoint names.
        hash: String,
    },
    /// The log ends before a record a signed checkpoint names: records were cut off.
    #[error(
        "line {line}: the log ends after {records} record(s), but signed checkpoint {number} names record {seq}: records were cut off the end"
    )]
    Truncated {
        /// 1-based number of the first missing line.
        line: usize,
        /// Records the log holds.
        records: u64,
        /// The sequence number the checkpoint names.
        seq: u64,
        /// 1-based number of the checkpoint, in sequence order.
        number: usize,
    },
}

impl ChainError {
    /// The 1-based line where the chain breaks.
    pub fn line(&self) -> usize {
        match self {
            ChainError::Malformed { line, .. }
            | ChainError::HashMismatch { line }
            | ChainError::SealMismatch { line }
            | ChainError::ModeMismatch { line, .. }
            | ChainError::Epoch { line, .. }
            | ChainError::BrokenLink { line }
            | ChainError::Sequence { line, .. }
            | ChainError::TornTail { line }
            | ChainError::ManifestMismatch { line, .. }
            | ChainError::CheckpointMismatch { line, .. }
            | ChainError::Truncated { line, .. } => *line,
        }
    }

    /// A short stable name of the kind of break (`hash_mismatch`, `truncated`, ...).
    pub fn kind(&self) -> &'static str {
        match self {
            ChainError::Malformed { .. } => "malformed",
            ChainError::HashMismatch { .. } => "hash_mismatch",
            ChainError::SealMismatch { .. } => "seal_mismatch",
            ChainError::ModeMismatch { .. } => "mode_mismatch",
            ChainError::Epoch { .. } => "epoch",
            ChainError::BrokenLink { .. } => "broken_link",
            ChainError::Sequence { .. } => "sequence",
            ChainError::TornTail { .. } => "torn_tail",
            ChainError::ManifestMismatch { .. } => "manifest_mismatch",
            ChainError::CheckpointMismatch { .. } => "checkpoint_mismatch",
            ChainError::Truncated { .. } => "truncated",
        }
    }
}
