//! What a verified chain holds, and what its verification proves.

use super::record::GENESIS_HASH;

/// How a verified chain's seals were checked: what its verification proves.
///
/// Non-exhaustive: a new way of sealing a chain brings a new way of checking it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum SealCheck {
    /// No record.
    Empty,
    /// A plain chain, every SHA-256 checked: integrity against accidents only.
    Integrity,
    /// A keyed chain verified without its key: links and form only, not the seals.
    KeyedUnchecked {
        /// The last record's epoch.
        last_epoch: u64,
    },
    /// A keyed chain, every seal checked with the key.
    Keyed {
        /// The last record's epoch.
        last_epoch: u64,
    },
}

/// What a verified chain holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChainSummary {
    /// Number of records.
    pub records: usize,
    /// Hash of the last record ([`GENESIS_HASH`] when empty).
    pub last_hash: String,
    /// The last record's epoch (keyed chains).
    pub last_epoch: Option<u64>,
    /// How the seals were checked.
    pub seals: SealCheck,
    /// Signed checkpoints the chain matched, and the sequence number the last of them names.
    pub checkpoints: Option<(usize, u64)>,
    /// The first record's time in seconds since 1970 (keyed chains: epochs count from it).
    pub first_ts: Option<i64>,
}

impl ChainSummary {
    /// The summary of an empty chain.
    pub fn empty() -> Self {
        ChainSummary {
            records: 0,
            last_hash: GENESIS_HASH.to_owned(),
            last_epoch: None,
            seals: SealCheck::Empty,
            checkpoints: None,
            first_ts: None,
        }
    }

    /// The summary of a plain chain of `records` records ending in `last_hash`, no checkpoint.
    pub fn plain(records: usize, last_hash: impl Into<String>) -> Self {
        ChainSummary {
            records,
            last_hash: last_hash.into(),
            last_epoch: None,
            seals: if records == 0 { SealCheck::Empty } else { SealCheck::Integrity },
            checkpoints: None,
            first_ts: None,
        }
    }

    /// The guarantee the verification gave, in words: `integrity only`, `keyed through epoch
    /// 3`, `keyed through epoch 3; matches checkpoint 2 (record 2000)`.
    pub fn guarantee(&self) -> String {
        let mut out = match self.seals {
            SealCheck::Empty => "empty log".to_owned(),
            SealCheck::Integrity => {
                "integrity only (plain SHA-256 chain: detects accidents, not someone who can write the log)".to_owned()
            }
            SealCheck::KeyedUnchecked { last_epoch } => format!(
                "links only (keyed chain through epoch {last_epoch}; no key was given, so the seals were not checked)"
            ),
            SealCheck::Keyed { last_epoch } => format!("keyed through epoch {last_epoch}"),
        };
        match self.checkpoints {
            Some((n, seq)) => out.push_str(&format!("; matches checkpoint {n} (record {seq})")),
            None if self.records > 0 => out.push_str("; no checkpoint (records cut off the end would go unnoticed)"),
            None => {}
        }
        out
    }
}
