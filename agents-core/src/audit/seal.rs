//! Sealing a record: its canonical line with the chain's members spliced in, and its hash
//! (plain SHA-256) or keyed seal (HMAC-SHA-256) over the text without `hash`.

use super::keyed::EpochKey;
use super::members::Members;
use super::record::AuditRecord;
use std::fmt;

impl AuditRecord {
    /// The plain hash this record should carry: SHA-256 of its canonical JSON without `hash`.
    pub fn compute_hash(&self) -> String {
        crate::canonical::digest_hex(&self.members().digest(self.chain(), None))
    }

    /// The keyed seal this record should carry: HMAC-SHA-256 of its canonical JSON without
    /// `hash` under `key` (the key of the record's `epoch`).
    pub fn compute_mac(&self, key: &EpochKey) -> String {
        crate::canonical::digest_hex(&self.members().digest(self.chain(), Some(key)))
    }

    /// Sets `seq`, `prev_hash` and a plain `hash` (and clears `epoch`) so the record follows
    /// `prev` in a plain chain.
    pub fn seal(&mut self, seq: u64, prev_hash: &str) {
        self.seq = seq;
        self.epoch = None;
        prev_hash.clone_into(&mut self.prev_hash);
        self.hash = self.compute_hash();
    }

    /// Sets `seq`, `prev_hash`, `epoch` and a keyed `hash` so the record follows `prev` in a
    /// keyed chain, sealed with `key`.
    pub fn seal_keyed(&mut self, seq: u64, prev_hash: &str, key: &EpochKey) {
        self.seq = seq;
        self.epoch = Some(key.epoch());
        prev_hash.clone_into(&mut self.prev_hash);
        self.hash = self.compute_mac(key);
    }

    /// The canonical JSON line (without the newline).
    pub fn to_line(&self) -> String {
        self.members().write_line(self.chain(), Some(&self.hash)).0
    }

    pub(super) fn chain(&self) -> Chain<'_> {
        Chain { seq: self.seq, prev_hash: &self.prev_hash, epoch: self.epoch }
    }
}

/// The members the chain decides: `seq`, `prev_hash` and `epoch` (absent in a plain chain).
#[derive(Clone, Copy)]
pub(super) struct Chain<'a> {
    seq: u64,
    prev_hash: &'a str,
    epoch: Option<u64>,
}

impl Members {
    /// Writes the record's whole canonical line in one pass over the rendered members, with
    /// `hash` as the `hash` member (none: the text the seal covers); returns it with the byte
    /// range of that member (`,"hash":"…"`, empty without one), which the seal does not cover.
    pub(super) fn write_line(&self, chain: Chain<'_>, hash: Option<&str>) -> (String, std::ops::Range<usize>) {
        let mut line = String::with_capacity(self.text.len() + chain.prev_hash.len() + 64 + 80);
        let [a, b, c] = self.cuts;
        let t = &self.text;
        line.push_str(&t[..a]);
        if let Some(epoch) = chain.epoch {
            line.push_str(",\"epoch\":");
            crate::canonical::write_u64(epoch, &mut line);
        }
        let hash_at = line.len();
        if let Some(hash) = hash {
            line.push_str(",\"hash\":");
            crate::canonical::write_str_to(hash, &mut line);
        }
        let after_hash = line.len();
        line.push_str(&t[a..b]);
        line.push_str(",\"prev_hash\":");
        crate::canonical::write_str_to(chain.prev_hash, &mut line);
        line.push_str(&t[b..c]);
        line.push_str(",\"seq\":");
        // Through the canonical number writer: beyond 2^53 a number is written as a double.
        crate::canonical::write_u64(chain.seq, &mut line);
        line.push_str(&t[c..]);
        line.push('}');
        (line, hash_at..after_hash)
    }

    /// SHA-256 (no key) or HMAC-SHA-256 (`key`) of the record's canonical JSON without `hash`.
    pub(super) fn digest(&self, chain: Chain<'_>, key: Option<&EpochKey>) -> [u8; 32] {
        let (line, hash) = self.write_line(chain, None);
        digest_around(&line, hash, key)
    }

    /// Seals in one pass, in the members' own text: the chain's members are spliced in where
    /// they go (`seq`, then `prev_hash`, then `epoch`, each moving only the text after it), the
    /// digest is fed the text around the place of `hash` (exactly the text the seal covers), and
    /// the `hash` member is spliced in there. Returns the seal and the line.
    fn seal(self, chain: Chain<'_>, key: Option<&EpochKey>) -> ([u8; 32], String) {
        thread_local! {
            static BITS: std::cell::RefCell<String> = const { std::cell::RefCell::new(String::new()) };
        }
        let Members { text: mut line, cuts: [a, b, c] } = self;
        let digest = BITS
            .try_with(|bits| match bits.try_borrow_mut() {
                Ok(mut bits) => splice_chain(&mut line, &mut bits, [a, b, c], chain, key),
                Err(_) => splice_chain(&mut line, &mut String::new(), [a, b, c], chain, key),
            })
            .unwrap_or_else(|_| splice_chain(&mut line, &mut String::new(), [a, b, c], chain, key));
        (digest, line)
    }
}

/// [`Members::seal`] in `line` (the members text, cut at `a`, `b`, `c`), with `bits` as room
/// for each member it splices in; the seal.
fn splice_chain(
    line: &mut String,
    bits: &mut String,
    [a, b, c]: [usize; 3],
    chain: Chain<'_>,
    key: Option<&EpochKey>,
) -> [u8; 32] {
    // The line's own length plus the hash member, so no splice moves it elsewhere.
    line.reserve(chain.prev_hash.len() + 2 * 20 + 90);
    bits.clear();
    bits.push_str(",\"seq\":");
    // Through the canonical number writer: beyond 2^53 a number is written as a double.
    crate::canonical::write_u64(chain.seq, bits);
    line.insert_str(c, bits);
    bits.clear();
    bits.push_str(",\"prev_hash\":");
    crate::canonical::write_str_to(chain.prev_hash, bits);
    line.insert_str(b, bits);
    let mut hash_at = a;
    if let Some(epoch) = chain.epoch {
        bits.clear();
        bits.push_str(",\"epoch\":");
        crate::canonical::write_u64(epoch, bits);
        line.insert_str(a, bits);
        hash_at += bits.len();
    }
    line.push('}');
    // Everything before `prev_hash`: the next record of the same call repeats it.
    let (head, tail) = line.as_bytes().split_at(hash_at);
    let digest = digest_sealed(head, tail, hash_at + (b - a), key);
    bits.clear();
    bits.push_str(",\"hash\":\"");
    crate::canonical::write_digest_hex(&digest, bits);
    bits.push('"');
    line.insert_str(hash_at, bits);
    if bits.capacity() > BITS_KEPT {
        *bits = String::new();
    }
    digest
}

/// The largest buffer (bytes) a thread keeps for the chain members it splices in.
const BITS_KEPT: usize = 4 * 1024;

/// SHA-256 (no key) or HMAC-SHA-256 (`key`) of `before` followed by `after`.
fn digest_parts(before: &[u8], after: &[u8], key: Option<&EpochKey>) -> [u8; 32] {
    match key {
        None => {
            use sha2::Digest;
            sha2::Sha256::new().chain_update(before).chain_update(after).finalize().into()
        }
        Some(key) => {
            use hmac::Mac;
            let mut mac = key.mac().clone();
            mac.update(before);
            mac.update(after);
            mac.finalize().into_bytes().into()
        }
    }
}

/// The most bytes of a record's opening whose hash state is kept for the next record.
const PREFIX_KEPT: usize = 64 * 1024;

thread_local! {
    /// The plain chain's kept state (see [`digest_sealed`]).
    static PLAIN_PREFIX: std::cell::RefCell<Option<(Vec<u8>, sha2::Sha256)>> = const { std::cell::RefCell::new(None) };
}

/// [`digest_parts`] of a record about to be sealed, whose first `stable` bytes the next record
/// of the same call repeats (everything before `prev_hash`: its arguments, ids, tool). The
/// hash state after the whole blocks of those bytes is kept (per thread in the plain chain,
/// with the epoch's key in the keyed one), with the bytes; a record that opens with exactly
/// those bytes resumes from it instead of hashing them again. The digest is the same.
fn digest_sealed(before: &[u8], after: &[u8], stable: usize, key: Option<&EpochKey>) -> [u8; 32] {
    use sha2::digest::FixedOutput;
    let shared = (stable.min(before.len() + after.len()) / 64 * 64).min(PREFIX_KEPT);
    if shared == 0 {
        return digest_parts(before, after, key);
    }
    match key {
        None => {
            let kept = PLAIN_PREFIX.try_with(|kept| {
                let mut kept = kept.try_borrow_mut().ok()?;
                Some(resume(&mut kept, sha2::Sha256::default, before, after, shared).finalize_fixed().into())
            });
            kept.ok().flatten().unwrap_or_else(|| digest_parts(before, after, None))
        }
        Some(key) => match key.prefix() {
            Some(mut kept) => resume(&mut kept, || key.mac().clone(), before, after, shared).finalize_fixed().into(),
            None => digest_parts(before, after, Some(key)),
        },
    }
}

/// A hasher fed `before` then `after`, resumed from `kept` when that holds the state after
/// exactly their first `shared` bytes; otherwise `kept` takes the state after them.
fn resume<H: Clone + sha2::digest::Update>(
    kept: &mut Option<(Vec<u8>, H)>,
    fresh: impl FnOnce() -> H,
    before: &[u8],
    after: &[u8],
    shared: usize,
) -> H {
    let head = &before[..shared.min(before.len())];
    let rest = &after[..shared - head.len()];
    let hit = matches!(&*kept, Some((bytes, _)) if bytes.len() == shared && bytes[..head.len()] == *head && bytes[head.len()..] == *rest);
    let mut h = match kept {
        Some((_, state)) if hit => state.clone(),
        _ => {
            let mut h = fresh();
            h.update(head);
            h.update(rest);
            let mut bytes = kept.take().map(|(bytes, _)| bytes).unwrap_or_default();
            bytes.clear();
            bytes.extend_from_slice(head);
            bytes.extend_from_slice(rest);
            *kept = Some((bytes, h.clone()));
            h
        }
    };
    h.update(&before[head.len()..]);
    h.update(&after[rest.len()..]);
    h
}

/// SHA-256 (no key) or HMAC-SHA-256 (`key`) of `line` without the bytes in `skip`.
pub(super) fn digest_around(line: &str, skip: std::ops::Range<usize>, key: Option<&EpochKey>) -> [u8; 32] {
    digest_parts(&line.as_bytes()[..skip.start], &line.as_bytes()[skip.end..], key)
}

/// A record rendered before it is sealed, so that whoever keeps the chain (often a single
/// writer thread) only splices in `seq` and `prev_hash` and hashes.
///
/// The result is byte for byte what [`AuditRecord::seal`] and [`AuditRecord::to_line`] give.
///
/// ```
/// use agents_core::audit::{PreparedRecord, GENESIS_HASH};
/// # fn record() -> agents_core::audit::AuditRecord {
/// #     serde_json::from_value(serde_json::json!({
/// #         "seq": 0, "ts": "2026-01-01T00:00:00Z", "run_id": "r", "session_id": "s",
/// #         "request_id": "q", "call_id": null, "user_id": "u", "org_id": "o", "role": "x",
/// #         "agent": "a", "tool": null, "tier": null, "status": "notice", "reason": null,
/// #         "title": null, "args": null, "args_hash": null, "result": null,
/// #         "manifest_sha256": "m", "prev_hash": "", "hash": ""})).unwrap()
/// # }
/// let (sealed, line) = PreparedRecord::new(record()).seal(1, GENESIS_HASH);
/// assert_eq!(sealed.hash, sealed.compute_hash());
/// assert_eq!(line, sealed.to_line());
/// ```
pub struct PreparedRecord {
    record: AuditRecord,
    members: Members,
}

impl fmt::Debug for PreparedRecord {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PreparedRecord").field("record", &self.record).finish_non_exhaustive()
    }
}

impl PreparedRecord {
    /// Renders everything but the chain members.
    pub fn new(record: AuditRecord) -> Self {
        let members = record.members();
        PreparedRecord { record, members }
    }

    /// The record as it was given (its `ts` decides its epoch in a keyed chain).
    pub fn record(&self) -> &AuditRecord {
        &self.record
    }

    /// Seals the record after `prev_hash` as number `seq` in a plain chain; returns it with its
    /// line.
    pub fn seal(self, seq: u64, prev_hash: &str) -> (AuditRecord, String) {
        self.seal_with(seq, prev_hash, None)
    }

    /// Seals the record after `prev_hash` as number `seq` with `key` in a keyed chain (`None`:
    /// plain); returns it with its line. The canonical text is rendered once (in
    /// [`PreparedRecord::new`]); sealing feeds it to the hash or MAC and writes the line once.
    pub fn seal_with(self, seq: u64, prev_hash: &str, key: Option<&EpochKey>) -> (AuditRecord, String) {
        let PreparedRecord { mut record, members } = self;
        let epoch = key.map(EpochKey::epoch);
        let (digest, line) = members.seal(Chain { seq, prev_hash, epoch }, key);
        record.seq = seq;
        record.epoch = epoch;
        prev_hash.clone_into(&mut record.prev_hash);
        // Written into the record's own text (a record built again in a spare one has room).
        record.hash.clear();
        crate::canonical::write_digest_hex(&digest, &mut record.hash);
        (record, line)
    }
}
