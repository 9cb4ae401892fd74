//! Signed checkpoints of a chain's head.
//!
//! A chain proves nothing about records that were cut off its end: the shorter log is itself a
//! valid chain. A [`Checkpoint`] states "record `seq` of this chain has hash `hash`", signed
//! with the writer's Ed25519 key. Published somewhere the log's other writers cannot rewrite
//! (a file on another volume, another host's log, a database), it lets a verifier that holds the
//! public key detect a log cut below the checkpoint, or a chain rewritten up to it.
//!
//! One checkpoint is one line of canonical JSON:
//!
//! ```text
//! {"epoch":3,"format":"agents.audit-checkpoint","hash":"…","key":"<public key hex>","seq":3000,"signature":"…","ts":"…","version":1}
//! ```
//!
//! The signature covers that text without its `signature` member.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::fmt;

/// The `format` member of a checkpoint.
pub const CHECKPOINT_FORMAT: &str = "agents.audit-checkpoint";

/// A signed statement of a chain's head.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Checkpoint {
    /// Always [`CHECKPOINT_FORMAT`].
    pub format: String,
    /// Always 1.
    pub version: u32,
    /// The sequence number of the record this checkpoint names (the chain's length then).
    pub seq: u64,
    /// That record's `hash`.
    pub hash: String,
    /// That record's `epoch` (keyed chains).
    pub epoch: Option<u64>,
    /// When the checkpoint was made (RFC 3339 UTC).
    pub ts: String,
    /// The signer's Ed25519 public key, lowercase hex.
    pub key: String,
    /// Ed25519 signature of the canonical JSON without this member, lowercase hex.
    pub signature: String,
}

/// Why a checkpoint does not hold.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CheckpointError {
    /// The line is not a checkpoint.
    #[error("not an audit checkpoint: {0}")]
    Malformed(String),
    /// Signed by another key than the one the verifier trusts.
    #[error("signed by key {found}, not by the trusted key {expected}")]
    OtherKey {
        /// The key the checkpoint names.
        found: String,
        /// The key the verifier holds.
        expected: String,
    },
    /// The signature does not verify: the checkpoint was edited or forged.
    #[error("the signature does not verify (edited or forged)")]
    BadSignature,
}

impl Checkpoint {
    /// Signs a checkpoint of the record `seq` with hash `hash`.
    pub fn sign(seq: u64, hash: &str, epoch: Option<u64>, ts: &str, key: &CheckpointSigningKey) -> Self {
        use ed25519_dalek::Signer;
        let mut c = Checkpoint {
            format: CHECKPOINT_FORMAT.to_owned(),
            version: 1,
            seq,
            hash: hash.to_owned(),
            epoch,
            ts: ts.to_owned(),
            key: hex::encode(key.0.verifying_key().as_bytes()),
            signature: String::new(),
        };
        c.signature = hex::encode(key.0.sign(c.statement().as_bytes()).to_bytes());
        c
    }

    /// The signed text: the canonical JSON without `signature`.
    pub fn statement(&self) -> String {
        crate::canonical::to_string(&json!({
            "epoch": self.epoch,
            "format": self.format,
            "hash": self.hash,
            "key": self.key,
            "seq": self.seq,
            "ts": self.ts,
            "version": self.version,
        }))
    }

    /// The line to publish (canonical JSON, no newline).
    pub fn to_line(&self) -> String {
        let mut v = serde_json::to_value(self).expect("a checkpoint serializes");
        v["signature"] = Value::String(self.signature.clone());
        crate::canonical::to_string(&v)
    }

    /// Parses one published line.
    pub fn parse(line: &str) -> Result<Self, CheckpointError> {
        let c: Checkpoint = serde_json::from_str(line).map_err(|e| CheckpointError::Malformed(e.to_string()))?;
        if c.format != CHECKPOINT_FORMAT || c.version != 1 {
            return Err(CheckpointError::Malformed(format!(
                "format `{}` version {}, expected `{CHECKPOINT_FORMAT}` version 1",
                c.format, c.version
            )));
        }
        Ok(c)
    }

    /// Checks the signature against the key the verifier trusts.
    pub fn verify(&self, trusted: &CheckpointVerifyingKey) -> Result<(), CheckpointError> {
        let expected = trusted.to_hex();
        if self.key != expected {
            return Err(CheckpointError::OtherKey { found: self.key.clone(), expected });
        }
        let mut sig = [0u8; 64];
        hex::decode_to_slice(&self.signature, &mut sig).map_err(|_| CheckpointError::BadSignature)?;
        let sig = ed25519_dalek::Signature::from_bytes(&sig);
        trusted.0.verify_strict(self.statement().as_bytes(), &sig).map_err(|_| CheckpointError::BadSignature)
    }
}

/// The writer's Ed25519 key for checkpoints. Memory is overwritten when it is dropped; `Debug`
/// shows only the public key.
pub struct CheckpointSigningKey(ed25519_dalek::SigningKey);

impl CheckpointSigningKey {
    /// The key from its 32-byte secret.
    pub fn from_bytes(secret: [u8; 32]) -> Self {
        CheckpointSigningKey(ed25519_dalek::SigningKey::from_bytes(&secret))
    }

    /// A new random key from the operating system's generator.
    pub fn generate() -> Result<Self, super::keyed::KeyError> {
        let mut secret = zeroize::Zeroizing::new([0u8; 32]);
        getrandom::fill(secret.as_mut()).map_err(|e| super::keyed::KeyError::Random(e.to_string()))?;
        Ok(Self::from_bytes(*secret))
    }

    /// Reads the secret as 64 hex digits (surrounding whitespace allowed).
    pub fn from_hex(text: &str) -> Result<Self, super::keyed::KeyError> {
        let mut secret = zeroize::Zeroizing::new([0u8; 32]);
        let text = text.trim();
        if text.len() != 64 || hex::decode_to_slice(text, secret.as_mut()).is_err() {
            return Err(super::keyed::KeyError::NotAKey);
        }
        Ok(Self::from_bytes(*secret))
    }

    /// The secret as 64 hex digits, to store it for the writer.
    pub fn to_hex(&self) -> zeroize::Zeroizing<String> {
        zeroize::Zeroizing::new(hex::encode(self.0.to_bytes()))
    }

    /// The public key verifiers trust.
    pub fn verifying_key(&self) -> CheckpointVerifyingKey {
        CheckpointVerifyingKey(self.0.verifying_key())
    }
}

impl fmt::Debug for CheckpointSigningKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "CheckpointSigningKey(public {})", self.verifying_key().to_hex())
    }
}

/// The Ed25519 public key a verifier trusts for checkpoints.
#[derive(Clone, PartialEq, Eq)]
pub struct CheckpointVerifyingKey(ed25519_dalek::VerifyingKey);

impl CheckpointVerifyingKey {
    /// Reads 64 hex digits (surrounding whitespace allowed).
    pub fn from_hex(text: &str) -> Result<Self, super::keyed::KeyError> {
        let mut bytes = [0u8; 32];
        let text = text.trim();
        if text.len() != 64 || hex::decode_to_slice(text, &mut bytes).is_err() {
            return Err(super::keyed::KeyError::NotAKey);
        }
        ed25519_dalek::VerifyingKey::from_bytes(&bytes)
            .map(CheckpointVerifyingKey)
            .map_err(|_| super::keyed::KeyError::NotAKey)
    }

    /// The 64 lowercase hex digits.
    pub fn to_hex(&self) -> String {
        hex::encode(self.0.as_bytes())
    }
}

impl fmt::Debug for CheckpointVerifyingKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "CheckpointVerifyingKey({})", self.to_hex())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_checkpoint_verifies_until_any_member_changes() {
        let key = CheckpointSigningKey::from_bytes([9; 32]);
        let c = Checkpoint::sign(12, &"ab".repeat(32), Some(2), "2026-01-01T00:00:00Z", &key);
        let parsed = Checkpoint::parse(&c.to_line()).unwrap();
        assert_eq!(parsed, c);
        parsed.verify(&key.verifying_key()).unwrap();
        let mut edited = c.clone();
        edited.seq = 11;
        assert_eq!(edited.verify(&key.verifying_key()), Err(CheckpointError::BadSignature));
        let other = CheckpointSigningKey::from_bytes([8; 32]);
        assert!(matches!(c.verify(&other.verifying_key()), Err(CheckpointError::OtherKey { .. })));
        // Signed by the other key and naming it: still not the trusted key.
        let forged = Checkpoint::sign(12, &c.hash, Some(2), &c.ts, &other);
        assert!(matches!(forged.verify(&key.verifying_key()), Err(CheckpointError::OtherKey { .. })));
    }
}
