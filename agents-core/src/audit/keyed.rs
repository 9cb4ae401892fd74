//! Keyed, forward-secure sealing of an audit chain.
//!
//! In the keyed mode a record's `hash` is not a plain SHA-256 but an HMAC-SHA-256 of the same
//! canonical text under the key of the record's `epoch`. The key of epoch 0 is the
//! [`ChainKey`], which the verifier keeps (or derives again from a passphrase). The writer keeps
//! only an [`EpochKey`]: the key of its current epoch. Every epoch (a number of records or of
//! seconds, see [`EpochPolicy`]) the writer replaces it by a one-way step,
//! `key(e + 1) = SHA-256("agents.audit-chain-key.step" || key(e))`, and overwrites the old one.
//! This is the construction of systemd journal's Forward Secure Sealing with a hash chain in
//! place of its seekable generator.
//!
//! What that proves, and against whom:
//!
//! - Against someone who can write the log but never held a key: no edit, insertion, deletion,
//!   reordering, re-sealing with the plain hash or record taken from another chain verifies.
//!   Cutting records off the end is invisible to the chain itself; signed checkpoints published
//!   elsewhere ([`super::checkpoint`]) reveal it.
//! - Against someone who takes the writer's key at epoch `k` (by reading its memory or key
//!   file): they can seal new records from epoch `k` on, but not forge, edit or re-seal any
//!   record of an epoch before `k`, because the keys of earlier epochs cannot be computed from
//!   later ones. Records of epoch `k` itself that were sealed before the theft are not protected:
//!   a shorter epoch narrows that window.
//! - Against someone who holds the [`ChainKey`] (or its passphrase): nothing. Keep it away from
//!   the writer's machine.

use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256};
use std::fmt;
use zeroize::{Zeroize, Zeroizing};

/// HMAC-SHA-256.
pub(crate) type HmacSha256 = Hmac<Sha256>;

/// Domain of the one-way step from one epoch's key to the next.
const STEP_DOMAIN: &[u8] = b"agents.audit-chain-key.step";

/// Salt of [`ChainKey::from_passphrase`].
pub const PASSPHRASE_SALT: &[u8] = b"agents.audit-chain-key.v1";

/// PBKDF2-HMAC-SHA-256 rounds of [`ChainKey::from_passphrase`] (the 2023 OWASP figure).
pub const PASSPHRASE_ROUNDS: u32 = 600_000;

/// The most epochs a verifier steps forward between two consecutive records. A writer steps at
/// most once per [`EpochPolicy::seconds`] (at least one second), so a legitimate gap this large
/// means half a year without a record at one-second epochs; a larger one is refused rather than
/// hashed through, so a hostile file cannot make a verifier spin.
pub const MAX_EPOCH_GAP: u64 = 1 << 24;

/// The key of epoch 0 of a keyed chain: what a verifier holds. Whoever holds it can seal any
/// record of the chain, so it never stays on the writer's machine beyond setting the writer up.
///
/// Its text form is 64 lowercase hex digits ([`ChainKey::to_hex`], [`ChainKey::from_hex`]).
/// `Debug` does not show it; memory is overwritten when it is dropped.
#[derive(Clone)]
pub struct ChainKey(Zeroizing<[u8; 32]>);

impl ChainKey {
    /// The key from its 32 bytes.
    pub fn from_bytes(bytes: [u8; 32]) -> Self {
        ChainKey(Zeroizing::new(bytes))
    }

    /// A new random key from the operating system's generator.
    pub fn generate() -> Result<Self, KeyError> {
        let mut bytes = Zeroizing::new([0u8; 32]);
        getrandom::fill(bytes.as_mut()).map_err(|e| KeyError::Random(e.to_string()))?;
        Ok(ChainKey(bytes))
    }

    /// Reads 64 hex digits (surrounding whitespace allowed, as in a key file with a newline).
    pub fn from_hex(text: &str) -> Result<Self, KeyError> {
        let text = text.trim();
        let mut bytes = Zeroizing::new([0u8; 32]);
        if text.len() != 64 || hex::decode_to_slice(text, bytes.as_mut()).is_err() {
            return Err(KeyError::NotAKey);
        }
        Ok(ChainKey(bytes))
    }

    /// Derives the key from a passphrase: PBKDF2-HMAC-SHA-256 with [`PASSPHRASE_ROUNDS`] rounds
    /// and the fixed salt [`PASSPHRASE_SALT`]. The salt is the same everywhere, so a passphrase
    /// must be long, random and used for one log only (six or more random words); a generated
    /// key ([`ChainKey::generate`]) is stronger.
    pub fn from_passphrase(passphrase: &str) -> Result<Self, KeyError> {
        if passphrase.trim().chars().count() < 16 {
            return Err(KeyError::WeakPassphrase);
        }
        let mut bytes = Zeroizing::new([0u8; 32]);
        pbkdf2::pbkdf2::<HmacSha256>(passphrase.as_bytes(), PASSPHRASE_SALT, PASSPHRASE_ROUNDS, bytes.as_mut())
            .expect("HMAC takes keys of any length");
        Ok(ChainKey(bytes))
    }

    /// The 64 lowercase hex digits, to store the key where the verifier keeps it.
    pub fn to_hex(&self) -> Zeroizing<String> {
        Zeroizing::new(hex::encode(self.0.as_ref()))
    }

    /// The key of epoch 0, to start a writer with.
    pub fn epoch_key(&self) -> EpochKey {
        EpochKey::new(0, *self.0)
    }

    /// The key of `epoch`, stepped forward from epoch 0.
    pub fn key_at(&self, epoch: u64) -> EpochKey {
        let mut key = self.epoch_key();
        key.advance_to(epoch);
        key
    }
}

impl fmt::Debug for ChainKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ChainKey(…)")
    }
}

/// Why a key could not be made or read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum KeyError {
    /// The text is not 64 hex digits.
    #[error("not an audit chain key: expected 64 hex digits")]
    NotAKey,
    /// The passphrase is too short to derive a key from.
    #[error("the passphrase is too short: use at least 16 characters (six or more random words)")]
    WeakPassphrase,
    /// The operating system's random generator failed.
    #[error("cannot read random bytes from the operating system: {0}")]
    Random(String),
}

/// The sealing key of one epoch: what a writer holds. [`EpochKey::step`] replaces it by the next
/// epoch's key and overwrites the old one; there is no way back.
pub struct EpochKey {
    epoch: u64,
    key: Zeroizing<[u8; 32]>,
    /// HMAC state keyed with `key` (its inner and outer pads absorbed), cloned per record.
    /// Replaced in place when the key steps, so the old pads are overwritten too.
    mac: HmacSha256,
    /// The HMAC state after the whole blocks of the last sealed record's opening that the next
    /// record of the same call repeats, with those bytes (see `audit::digest_sealed`). Keyed
    /// with this epoch's key: replaced in place when the key steps, like `mac`.
    prefix: std::sync::Mutex<KeptPrefix>,
}

/// A record opening's bytes (whole blocks) and the HMAC state after them.
pub(crate) type KeptPrefix = Option<(Vec<u8>, HmacSha256)>;

impl EpochKey {
    /// The key of `epoch` from its bytes (as a writer's key file holds them).
    pub fn new(epoch: u64, key: [u8; 32]) -> Self {
        let mut key = Zeroizing::new(key);
        let mac = HmacSha256::new_from_slice(key.as_ref()).expect("HMAC takes keys of any length");
        let out = EpochKey { epoch, key: Zeroizing::new(*key), mac, prefix: std::sync::Mutex::new(None) };
        key.zeroize();
        out
    }

    /// The epoch this key seals.
    pub fn epoch(&self) -> u64 {
        self.epoch
    }

    /// The key's bytes, to store the writer's state (overwrite the stored copy at every step).
    pub fn key_bytes(&self) -> &[u8; 32] {
        &self.key
    }

    /// One one-way step: this becomes the key of the next epoch; the old key is overwritten.
    pub fn step(&mut self) {
        let mut h = Sha256::new();
        h.update(STEP_DOMAIN);
        h.update(self.key.as_ref());
        let mut next: [u8; 32] = h.finalize().into();
        self.key.copy_from_slice(&next);
        next.zeroize();
        self.mac = HmacSha256::new_from_slice(self.key.as_ref()).expect("HMAC takes keys of any length");
        // Overwritten in place with a state of the new key (over no bytes, so it matches no
        // record), so the old key's state after a record's opening is not left behind either.
        *self.prefix.get_mut().unwrap_or_else(std::sync::PoisonError::into_inner) =
            Some((Vec::new(), self.mac.clone()));
        self.epoch += 1;
    }

    /// Steps forward to `epoch` (no-op when already there or past it).
    pub fn advance_to(&mut self, epoch: u64) {
        while self.epoch < epoch {
            self.step();
        }
    }

    pub(crate) fn mac(&self) -> &HmacSha256 {
        &self.mac
    }

    /// The state kept after the last sealed record's repeated opening (none while another
    /// thread seals with this key: that record is then hashed from the start).
    pub(crate) fn prefix(&self) -> Option<std::sync::MutexGuard<'_, KeptPrefix>> {
        self.prefix.try_lock().ok()
    }
}

impl fmt::Debug for EpochKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EpochKey").field("epoch", &self.epoch).finish_non_exhaustive()
    }
}

/// Which epoch a record belongs to: a function of its sequence number and timestamp, so that a
/// verifier can tell which key must have sealed it. A record's epoch is
///
/// ```text
/// (seq - 1) / records  +  (ts - ts of record 1) / seconds     (whole numbers, seconds since 1970)
/// ```
///
/// so the key steps every `records` records and every `seconds` seconds. Someone who holds the
/// key of epoch `k` cannot seal a record whose sequence number and time put it in an epoch
/// before `k`; to replace such a record they must give it a later time (and every record after
/// it too), which is cutting the log off and appending records dated after they took the key:
/// a signed checkpoint published before that reveals it.
///
/// The verifier must use the writer's figures (the defaults are the same on both sides).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EpochPolicy {
    /// Records per epoch (at least 1).
    pub records: u64,
    /// Seconds per epoch (at least [`EpochPolicy::MIN_SECONDS`]).
    pub seconds: u64,
}

impl EpochPolicy {
    /// The shortest epoch in seconds: longer than [`TIMESTAMP_GRACE`], so consecutive records
    /// are at most one epoch out of order.
    pub const MIN_SECONDS: u64 = 10;

    /// Epochs of `records` records and `seconds` seconds (at least 1 and
    /// [`EpochPolicy::MIN_SECONDS`]).
    pub fn new(records: u64, seconds: u64) -> Self {
        EpochPolicy { records: records.max(1), seconds: seconds.max(Self::MIN_SECONDS) }
    }

    /// The epoch of record `seq` stamped `ts_seconds`, in a chain whose first record was
    /// stamped `first_ts_seconds`.
    pub fn epoch_of(&self, seq: u64, ts_seconds: i64, first_ts_seconds: i64) -> u64 {
        let by_records = seq.saturating_sub(1) / self.records.max(1);
        let elapsed = u64::try_from(ts_seconds.saturating_sub(first_ts_seconds)).unwrap_or(0);
        by_records.saturating_add(elapsed / self.seconds.max(1))
    }
}

impl Default for EpochPolicy {
    /// 1,000 records or 60 seconds.
    fn default() -> Self {
        EpochPolicy { records: 1000, seconds: 60 }
    }
}

/// How long a writer keeps the key of an epoch after the clock left it, for records stamped
/// just before the step that reach the writer just after it (concurrent producers stamp their
/// records before they queue). A record stamped longer ago than this is refused.
pub const TIMESTAMP_GRACE: std::time::Duration = std::time::Duration::from_secs(2);

/// Seconds since 1970 of an RFC 3339 timestamp (`2026-05-27T14:00:00.123Z`, or with a numeric
/// offset); `None` when it is not one.
pub fn unix_seconds(ts: &str) -> Option<i64> {
    let b = ts.as_bytes();
    let num = |r: std::ops::Range<usize>| -> Option<i64> {
        let part = b.get(r)?;
        part.iter().all(u8::is_ascii_digit).then(|| part.iter().fold(0i64, |n, d| n * 10 + i64::from(d - b'0')))
    };
    if b.len() < 20 || b[4] != b'-' || b[7] != b'-' || !matches!(b[10], b'T' | b't') || b[13] != b':' || b[16] != b':' {
        return None;
    }
    let (y, mo, d, h, mi, s) = (num(0..4)?, num(5..7)?, num(8..10)?, num(11..13)?, num(14..16)?, num(17..19)?);
    if !(1..=12).contains(&mo) || !(1..=31).contains(&d) || h > 23 || mi > 59 || s > 60 {
        return None;
    }
    let mut i = 19;
    if b.get(i) == Some(&b'.') {
        i += 1;
        let start = i;
        while b.get(i).is_some_and(u8::is_ascii_digit) {
            i += 1;
        }
        if i == start {
            return None;
        }
    }
    let offset = match b.get(i..)? {
        [b'Z' | b'z'] => 0,
        [sign @ (b'+' | b'-'), ..] if b.len() == i + 6 && b[i + 3] == b':' => {
            let minutes = num(i + 1..i + 3)? * 60 + num(i + 4..i + 6)?;
            if *sign == b'+' { minutes * 60 } else { -minutes * 60 }
        }
        _ => return None,
    };
    // Days from the civil date (Howard Hinnant's algorithm).
    let y = if mo <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (mo + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    Some(days * 86_400 + h * 3600 + mi * 60 + s - offset)
}

/// A verifier's view of a chain's keys: the key of an epoch at or before the ones it will be
/// asked for next, stepped forward as the records' epochs grow. Holds one key at a time.
#[derive(Debug)]
pub(crate) struct EpochKeys {
    chain: ChainKey,
    base: EpochKey,
}

impl EpochKeys {
    pub(crate) fn new(key: &ChainKey) -> Self {
        EpochKeys { chain: key.clone(), base: key.epoch_key() }
    }

    /// The key of `epoch` (stepped from the held key, or from epoch 0 when `epoch` is behind
    /// it), then keeps the key of `keep_from` (at most `epoch`) for the next records.
    pub(crate) fn at(&mut self, epoch: u64, keep_from: u64) -> EpochKey {
        if epoch < self.base.epoch() {
            self.base = self.chain.epoch_key();
        }
        self.base.advance_to(keep_from.min(epoch));
        let mut key = EpochKey::new(self.base.epoch(), *self.base.key_bytes());
        key.advance_to(epoch);
        key
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_step_is_the_documented_hash_and_moves_the_epoch() {
        let k = ChainKey::from_bytes([7; 32]);
        let mut e = k.epoch_key();
        e.step();
        let want: [u8; 32] = Sha256::new().chain_update(STEP_DOMAIN).chain_update([7u8; 32]).finalize().into();
        assert_eq!((e.epoch(), *e.key_bytes()), (1, want));
        assert_eq!(k.key_at(1).key_bytes(), e.key_bytes());
        assert_ne!(k.key_at(2).key_bytes(), e.key_bytes());
    }

    #[test]
    fn a_verifier_finds_every_epoch_in_any_order() {
        let k = ChainKey::from_bytes([1; 32]);
        let mut keys = EpochKeys::new(&k);
        for (epoch, keep) in [(3, 2), (2, 2), (5, 4), (1, 1), (6, 6)] {
            assert_eq!(keys.at(epoch, keep).key_bytes(), k.key_at(epoch).key_bytes());
        }
    }

    #[test]
    fn timestamps_read_as_seconds_since_1970() {
        assert_eq!(unix_seconds("1970-01-01T00:00:00Z"), Some(0));
        assert_eq!(unix_seconds("2026-05-27T14:00:00.123456Z"), Some(1_779_890_400));
        assert_eq!(unix_seconds("2026-05-27T16:00:00+02:00"), Some(1_779_890_400));
        assert_eq!(unix_seconds("2000-02-29T00:00:01Z"), Some(951_782_401));
        for bad in [
            "",
            "2026-05-27",
            "2026-05-27T14:00:00",
            "2026-13-01T00:00:00Z",
            "2026-05-27T14:00:00.Z",
            "x026-05-27T14:00:00Z",
        ] {
            assert_eq!(unix_seconds(bad), None, "{bad}");
        }
    }

    #[test]
    fn an_epoch_counts_records_and_seconds() {
        let p = EpochPolicy::new(10, 60);
        assert_eq!(p.epoch_of(1, 1000, 1000), 0);
        assert_eq!(p.epoch_of(10, 1059, 1000), 0);
        assert_eq!(p.epoch_of(11, 1059, 1000), 1);
        assert_eq!(p.epoch_of(11, 1060, 1000), 2);
        assert_eq!(p.epoch_of(1, 999, 1000), 0);
        assert_eq!(EpochPolicy::new(0, 1), EpochPolicy { records: 1, seconds: EpochPolicy::MIN_SECONDS });
    }

    #[test]
    fn hex_round_trips_and_debug_hides_the_key() {
        let k = ChainKey::from_bytes([0xab; 32]);
        assert_eq!(ChainKey::from_hex(&format!("{}\n", *k.to_hex())).unwrap().key_at(0).key_bytes(), &[0xab; 32]);
        assert_eq!(ChainKey::from_hex("abc").unwrap_err(), KeyError::NotAKey);
        assert!(!format!("{k:?}{:?}", k.epoch_key()).contains("ab"));
    }
}
