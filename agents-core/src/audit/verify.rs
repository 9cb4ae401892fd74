//! Verifying a chain: record by record, in constant memory.

use super::checkpoint::Checkpoint;
use super::error::ChainError;
use super::keyed::{self, ChainKey, EpochKey, EpochPolicy, MAX_EPOCH_GAP, TIMESTAMP_GRACE, unix_seconds};
use super::record::{AuditRecord, GENESIS_HASH};
use super::seal::digest_around;
use super::summary::{ChainSummary, SealCheck};

/// Checks a chain record by record, in order, holding only the previous record's hash and the
/// current epoch's key: a log of any length verifies in constant memory.
///
/// Every record must be exactly its canonical JSON line (for text logs), match its seal, link to
/// the previous record and carry the next sequence number. With a [`ChainKey`], every record
/// must be keyed and its HMAC must verify under its epoch's key; without one, a plain chain's
/// SHA-256 seals are checked, and a keyed chain's links only. Optionally every record names one
/// manifest, and signed checkpoints (already checked with [`Checkpoint::verify`]) must name
/// records of this chain.
///
/// ```
/// use agents_core::audit::{ChainVerifier, SealCheck};
/// let mut v = ChainVerifier::new();
/// assert_eq!(v.finish().unwrap().seals, SealCheck::Empty);
/// ```
#[derive(Debug)]
pub struct ChainVerifier {
    prev: String,
    count: u64,
    manifest: Option<String>,
    keys: Option<keyed::EpochKeys>,
    policy: EpochPolicy,
    /// Seconds since 1970 of the first record's `ts` (keyed chains).
    first_ts: Option<i64>,
    /// Whether the chain's records are keyed (set by the first record).
    keyed: Option<bool>,
    last_epoch: Option<u64>,
    /// Checkpoints by sequence number: (1-based number, hash).
    checkpoints: std::collections::BTreeMap<u64, (usize, String)>,
    matched: Option<(usize, u64)>,
}

impl Default for ChainVerifier {
    fn default() -> Self {
        Self::new()
    }
}

impl ChainVerifier {
    /// A verifier of a chain from its first record.
    pub fn new() -> Self {
        ChainVerifier {
            prev: GENESIS_HASH.to_owned(),
            count: 0,
            manifest: None,
            keys: None,
            policy: EpochPolicy::default(),
            first_ts: None,
            keyed: None,
            last_epoch: None,
            checkpoints: Default::default(),
            matched: None,
        }
    }

    /// Requires every record to name this manifest hash.
    pub fn manifest(mut self, manifest_sha256: impl Into<String>) -> Self {
        self.manifest = Some(manifest_sha256.into());
        self
    }

    /// Checks every seal with the chain's key (and requires a keyed chain).
    pub fn key(mut self, key: &ChainKey) -> Self {
        self.keys = Some(keyed::EpochKeys::new(key));
        self
    }

    /// The writer's epoch policy (default: [`EpochPolicy::default`]): every keyed record's
    /// epoch must be the one its sequence number and time give.
    pub fn epochs(mut self, policy: EpochPolicy) -> Self {
        self.policy = policy;
        self
    }

    /// Requires the chain to match these checkpoints (whose signatures the caller checked).
    /// Several checkpoints naming one record must agree; the later one wins otherwise.
    pub fn checkpoints(mut self, checkpoints: impl IntoIterator<Item = Checkpoint>) -> Self {
        for c in checkpoints {
            self.checkpoints.insert(c.seq, (0, c.hash));
        }
        for (i, (_, (n, _))) in self.checkpoints.iter_mut().enumerate() {
            *n = i + 1;
        }
        self
    }

    /// Records verified so far.
    pub fn records(&self) -> u64 {
        self.count
    }

    /// Verifies one line of a JSONL log (without its newline) as line `line`, and returns its
    /// record.
    pub fn line(&mut self, text: &str, line: usize) -> Result<AuditRecord, ChainError> {
        let record: AuditRecord =
            serde_json::from_str(text).map_err(|e| ChainError::Malformed { line, detail: e.to_string() })?;
        let key = self.check_mode(&record, line)?;
        // The record's canonical line, written once: its seal is checked over it, then it must
        // be the given text.
        let (canonical, hash) = record.members().write_line(record.chain(), Some(&record.hash));
        // A keyed record's seal needs the key; without it only its form and links are checked.
        if (key.is_some() || record.epoch.is_none())
            && crate::canonical::digest_hex(&digest_around(&canonical, hash, key.as_ref())) != record.hash
        {
            return Err(self.seal_error(line));
        }
        // The seal covers the parsed record, so a line re-encoded without changing its meaning
        // (`1E+21` for `1e+21`, an escaped letter) would still match it: require the exact bytes.
        if canonical != text {
            return Err(ChainError::Malformed {
                line,
                detail: "the line is not the record's canonical JSON (it was re-encoded after it was written)"
                    .to_owned(),
            });
        }
        self.link(&record, line)?;
        Ok(record)
    }

    /// Verifies one record read from a store that keeps fields, not lines (a database row), as
    /// the `line`-th record.
    pub fn record(&mut self, record: &AuditRecord, line: usize) -> Result<(), ChainError> {
        let key = self.check_mode(record, line)?;
        if (key.is_some() || record.epoch.is_none())
            && crate::canonical::digest_hex(&record.members().digest(record.chain(), key.as_ref())) != record.hash
        {
            return Err(self.seal_error(line));
        }
        self.link(record, line)
    }

    /// After the last record: the summary, or where a checkpoint names a record the chain does
    /// not reach.
    pub fn finish(&self) -> Result<ChainSummary, ChainError> {
        if let Some((&seq, (number, _))) = self.checkpoints.range(self.count + 1..).next() {
            return Err(ChainError::Truncated {
                line: self.count as usize + 1,
                records: self.count,
                seq,
                number: *number,
            });
        }
        let seals = match (self.keyed, self.last_epoch) {
            (None, _) => SealCheck::Empty,
            (Some(false), _) => SealCheck::Integrity,
            (Some(true), epoch) if self.keys.is_some() => SealCheck::Keyed { last_epoch: epoch.unwrap_or(0) },
            (Some(true), epoch) => SealCheck::KeyedUnchecked { last_epoch: epoch.unwrap_or(0) },
        };
        Ok(ChainSummary {
            records: self.count as usize,
            last_hash: self.prev.clone(),
            last_epoch: self.last_epoch,
            seals,
            checkpoints: self.matched,
            first_ts: self.first_ts,
        })
    }

    fn seal_error(&self, line: usize) -> ChainError {
        if self.keys.is_some() { ChainError::SealMismatch { line } } else { ChainError::HashMismatch { line } }
    }

    /// Checks the record's mode and epoch; the key to check its seal with (`None`: the plain
    /// hash, or a keyed record without a key, whose links only are checked).
    fn check_mode(&mut self, record: &AuditRecord, line: usize) -> Result<Option<EpochKey>, ChainError> {
        let keyed = record.epoch.is_some();
        let expected_keyed = self.keys.is_some() || self.keyed == Some(true);
        if (self.keyed.is_some() || self.keys.is_some()) && keyed != expected_keyed {
            let (found, expected) = if keyed {
                ("a keyed record", "the chain's records are plain")
            } else if self.keys.is_some() {
                ("a plain record", "a key was given, so every record must be keyed")
            } else {
                ("a plain record", "the chain's records are keyed")
            };
            return Err(ChainError::ModeMismatch { line, found, expected });
        }
        let Some(epoch) = record.epoch else {
            return Ok(None);
        };
        let ts = unix_seconds(&record.ts).ok_or_else(|| ChainError::Malformed {
            line,
            detail: format!("`ts` {:?} is not an RFC 3339 time, so the record's epoch cannot be checked", record.ts),
        })?;
        let first_ts = *self.first_ts.get_or_insert(ts);
        let expected = self.policy.epoch_of(record.seq, ts, first_ts);
        let previous = self.last_epoch.unwrap_or(0);
        // Concurrent producers stamp records before they queue: one may reach the writer just
        // after the clock's step, one epoch behind the previous record.
        let behind = TIMESTAMP_GRACE.as_secs() / self.policy.seconds.max(1) + 1;
        // Without the key the seals are not checked, and neither is which epoch sealed a record
        // (that needs the writer's policy); the order of epochs still is.
        let misplaced = self.keys.is_some() && epoch != expected;
        if misplaced || epoch.saturating_add(behind) < previous || epoch - previous.min(epoch) > MAX_EPOCH_GAP {
            return Err(ChainError::Epoch { line, found: epoch, expected, previous });
        }
        Ok(self.keys.as_mut().map(|keys| keys.at(epoch, epoch.saturating_sub(behind))))
    }

    /// Checks links, sequence, manifest and checkpoints, then moves the chain's head on.
    fn link(&mut self, record: &AuditRecord, line: usize) -> Result<(), ChainError> {
        if record.prev_hash != self.prev {
            return Err(ChainError::BrokenLink { line });
        }
        let expected = self.count + 1;
        if record.seq != expected {
            return Err(ChainError::Sequence { line, found: record.seq, expected });
        }
        if let Some(m) = &self.manifest
            && record.manifest_sha256 != m.as_str()
        {
            return Err(ChainError::ManifestMismatch {
                line,
                found: record.manifest_sha256.to_string(),
                expected: m.clone(),
            });
        }
        if let Some((number, hash)) = self.checkpoints.get(&record.seq) {
            if *hash != record.hash {
                return Err(ChainError::CheckpointMismatch {
                    line,
                    seq: record.seq,
                    number: *number,
                    hash: hash.clone(),
                });
            }
            self.matched = Some((*number, record.seq));
        }
        self.keyed = Some(record.epoch.is_some());
        self.last_epoch = record.epoch.or(self.last_epoch);
        record.hash.clone_into(&mut self.prev);
        self.count = expected;
        Ok(())
    }
}

/// Verifies a JSONL audit log held in memory with a [`ChainVerifier`] (no key, no
/// checkpoints): every line parses, is exactly the record's canonical JSON, matches its seal,
/// links to the previous one and has the next sequence number; optionally every record names
/// `manifest_sha256`. Reports the first bad line; an unterminated last line is
/// [`ChainError::TornTail`].
pub fn verify_jsonl(text: &str, manifest_sha256: Option<&str>) -> Result<ChainSummary, ChainError> {
    let mut verifier = ChainVerifier::new();
    if let Some(m) = manifest_sha256 {
        verifier = verifier.manifest(m);
    }
    let ends_with_newline = text.is_empty() || text.ends_with('\n');
    let mut lines = text.split_terminator('\n').enumerate().peekable();
    while let Some((i, line)) = lines.next() {
        let lineno = i + 1;
        if lines.peek().is_none() && !ends_with_newline {
            return Err(ChainError::TornTail { line: lineno });
        }
        verifier.line(line, lineno)?;
    }
    verifier.finish()
}
