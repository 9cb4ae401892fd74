//! Confirmation tokens: minted by the runtime after a person approves, bound to the session,
//! the tool and an HMAC-SHA-256 of the canonical arguments, single use, expiring. Never shown
//! to the model. Change one argument and the token is worthless.

use hmac::{Hmac, Mac};
use serde_json::Value;
use sha2::Sha256;
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;
use tokio::time::Instant;

type HmacSha256 = Hmac<Sha256>;

/// An approval, as the runtime holds it between a decision and the execution.
#[derive(Clone, PartialEq, Eq)]
pub struct ConfirmationToken {
    id: String,
    mac: String,
}

impl std::fmt::Debug for ConfirmationToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ConfirmationToken({}…)", &self.id[..8.min(self.id.len())])
    }
}

impl ConfirmationToken {
    /// The token's id (for audit records; it does not let anyone redeem the token).
    pub fn id(&self) -> &str {
        &self.id
    }
}

/// Why a token was refused. Each refusal is audited.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TokenError {
    /// Never minted, already used, or forged.
    #[error("the confirmation token is unknown or was already used")]
    Unknown,
    /// The token's MAC does not match: tampered.
    #[error("the confirmation token was tampered with")]
    Tampered,
    /// Past its expiry.
    #[error("the confirmation token expired")]
    Expired,
    /// Minted for another session.
    #[error("the confirmation token belongs to another session")]
    WrongSession,
    /// Minted for another tool.
    #[error("the confirmation token was approved for another tool")]
    WrongTool,
    /// Minted for other arguments.
    #[error("the confirmation token was approved for other arguments; the person must approve these")]
    WrongArguments,
}

/// What the store keeps of one token, compactly: boxed text rather than growable strings, and
/// the id as its 16 bytes.
struct Entry {
    session: Box<str>,
    tool: Box<str>,
    args_mac: Box<str>,
    expires: Instant,
}

/// How often minting sweeps expired tokens out, at most.
const SWEEP_EVERY: Duration = Duration::from_secs(10);

/// Mints and redeems tokens with a server key.
///
/// Memory is bounded by the tokens minted within one token lifetime plus [`SWEEP_EVERY`]:
/// minting sweeps expired tokens out when a sweep is due, and a server's timer calls
/// [`TokenStore::purge_expired`] (see [`Runtime::purge_expired`](crate::Runtime::purge_expired)).
pub struct TokenStore {
    /// HMAC-SHA-256 already keyed with the server key (cloned per MAC: the key schedule is
    /// done once).
    keyed: HmacSha256,
    entries: Mutex<Entries>,
}

struct Entries {
    map: HashMap<[u8; 16], Entry>,
    next_sweep: Instant,
}

impl std::fmt::Debug for TokenStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TokenStore").finish_non_exhaustive()
    }
}

/// `N` bytes from the operating system's random source (token ids, the default signing key).
///
/// # Panics
///
/// If the operating system cannot supply random bytes: a token or key must never be predictable,
/// and nothing sensible can run without them.
pub(crate) fn random_bytes<const N: usize>() -> [u8; N] {
    let mut bytes = [0; N];
    if let Err(e) = getrandom::fill(&mut bytes) {
        panic!("the operating system's random source failed ({e}); no token or key can be made without it");
    }
    bytes
}

impl TokenStore {
    /// A store with a server key.
    pub fn new(key: [u8; 32]) -> Self {
        TokenStore {
            keyed: HmacSha256::new_from_slice(&key).expect("HMAC takes any key length"),
            entries: Mutex::new(Entries { map: HashMap::new(), next_sweep: Instant::now() + SWEEP_EVERY }),
        }
    }

    fn mac(&self, parts: &[&str]) -> String {
        let mut m = self.keyed.clone();
        for p in parts {
            m.update(&(p.len() as u64).to_be_bytes());
            m.update(p.as_bytes());
        }
        agents_core::canonical::digest_hex(&m.finalize().into_bytes().into())
    }

    /// The keyed digest of a result's canonical JSON text that audit records carry:
    /// HMAC-SHA-256 under the server key of `result:` followed by the text. Without the key, a
    /// reader of the log cannot confirm a guessed result (a low-entropy answer such as `"yes"`
    /// or a four-digit code) by hashing candidates.
    pub fn result_mac(&self, canonical_json: &[u8]) -> [u8; 32] {
        let mut m = self.keyed.clone();
        m.update(b"result:");
        m.update(canonical_json);
        m.finalize().into_bytes().into()
    }

    /// HMAC-SHA-256 of the canonical JSON of `args`.
    pub fn args_mac(&self, args: &Value) -> String {
        self.mac(&["args", &agents_core::canonical::to_string(args)])
    }

    /// Mints a token for one approved call, valid for `ttl` (the agent's `token_ttl_secs`).
    pub fn mint(&self, session: &str, tool: &str, args_mac: &str, ttl: Duration) -> ConfirmationToken {
        let now = Instant::now();
        let raw_id = random_bytes::<16>();
        let id = hex::encode(raw_id);
        let mac = self.mac(&["token", &id, session, tool, args_mac]);
        let entry = Entry { session: session.into(), tool: tool.into(), args_mac: args_mac.into(), expires: now + ttl };
        let mut entries = self.lock();
        if entries.next_sweep <= now {
            entries.sweep(now);
        }
        entries.map.insert(raw_id, entry);
        ConfirmationToken { id, mac }
    }

    /// Drops every expired token (expired tokens can only be refused anyway) and gives back
    /// the memory they held. Returns how many were dropped.
    pub fn purge_expired(&self) -> usize {
        self.lock().sweep(Instant::now())
    }

    /// Revokes every token minted for `session` (the session ended or expired). Returns how
    /// many were held.
    pub fn revoke_session(&self, session: &str) -> usize {
        let mut entries = self.lock();
        let before = entries.map.len();
        entries.map.retain(|_, e| &*e.session != session);
        before - entries.map.len()
    }

    /// Tokens held (minted, not yet redeemed or purged).
    pub fn len(&self) -> usize {
        self.lock().map.len()
    }

    /// Whether no token is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Redeems a token for a call. Any presentation uses the token up, so a refused token
    /// cannot be retried with other arguments.
    pub fn redeem(
        &self,
        token: &ConfirmationToken,
        session: &str,
        tool: &str,
        args_mac: &str,
    ) -> Result<(), TokenError> {
        let mut raw_id = [0u8; 16];
        hex::decode_to_slice(&token.id, &mut raw_id).map_err(|_| TokenError::Unknown)?;
        let entry = self.lock().map.remove(&raw_id).ok_or(TokenError::Unknown)?;
        let expected = self.mac(&["token", &token.id, &entry.session, &entry.tool, &entry.args_mac]);
        if !constant_time_eq(expected.as_bytes(), token.mac.as_bytes()) {
            return Err(TokenError::Tampered);
        }
        if Instant::now() >= entry.expires {
            return Err(TokenError::Expired);
        }
        if &*entry.session != session {
            return Err(TokenError::WrongSession);
        }
        if &*entry.tool != tool {
            return Err(TokenError::WrongTool);
        }
        if !constant_time_eq(entry.args_mac.as_bytes(), args_mac.as_bytes()) {
            return Err(TokenError::WrongArguments);
        }
        Ok(())
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Entries> {
        self.entries.lock().unwrap_or_else(|e| e.into_inner())
    }

    #[cfg(test)]
    pub(crate) fn tamper(token: &ConfirmationToken) -> ConfirmationToken {
        let mut t = token.clone();
        t.mac.replace_range(0..1, if t.mac.starts_with('0') { "1" } else { "0" });
        t
    }
}

impl Entries {
    fn sweep(&mut self, now: Instant) -> usize {
        let before = self.map.len();
        self.map.retain(|_, e| e.expires > now);
        // A burst that expired leaves its table behind unless it is given back.
        if self.map.capacity() > 64 && self.map.len() < self.map.capacity() / 4 {
            self.map.shrink_to_fit();
        }
        self.next_sweep = now + SWEEP_EVERY;
        before - self.map.len()
    }
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::sync::Arc;

    const TTL: Duration = Duration::from_secs(180);

    fn store() -> TokenStore {
        TokenStore::new([7; 32])
    }

    #[tokio::test]
    async fn binds_session_tool_and_arguments() {
        let s = store();
        let m3 = s.args_mac(&json!({"days": 3}));
        let m5 = s.args_mac(&json!({"days": 5}));
        let t = s.mint("s1", "submit_leave", &m3, TTL);
        assert_eq!(s.redeem(&t, "s1", "submit_leave", &m5), Err(TokenError::WrongArguments));
        // used up by the refused presentation
        assert_eq!(s.redeem(&t, "s1", "submit_leave", &m3), Err(TokenError::Unknown));
        let t = s.mint("s1", "submit_leave", &m3, TTL);
        assert_eq!(s.redeem(&t, "s2", "submit_leave", &m3), Err(TokenError::WrongSession));
        let t = s.mint("s1", "submit_leave", &m3, TTL);
        assert_eq!(s.redeem(&t, "s1", "open_ticket", &m3), Err(TokenError::WrongTool));
        let t = s.mint("s1", "submit_leave", &m3, TTL);
        assert_eq!(s.redeem(&TokenStore::tamper(&t), "s1", "submit_leave", &m3), Err(TokenError::Tampered));
        let t = s.mint("s1", "submit_leave", &m3, TTL);
        assert_eq!(s.redeem(&t, "s1", "submit_leave", &m3), Ok(()));
        assert_eq!(s.redeem(&t, "s1", "submit_leave", &m3), Err(TokenError::Unknown));
    }

    #[test]
    fn canonical_arguments_ignore_key_order() {
        let s = store();
        assert_eq!(s.args_mac(&json!({"a": 1, "b": 2})), s.args_mac(&json!({"b": 2, "a": 1})));
    }

    #[tokio::test(start_paused = true)]
    async fn expires() {
        let s = store();
        let m = s.args_mac(&json!({}));
        let t = s.mint("s", "t", &m, TTL);
        tokio::time::advance(Duration::from_secs(181)).await;
        assert_eq!(s.redeem(&t, "s", "t", &m), Err(TokenError::Expired));
        let t = s.mint("s", "t", &m, TTL);
        tokio::time::advance(Duration::from_secs(179)).await;
        assert_eq!(s.redeem(&t, "s", "t", &m), Ok(()));
    }

    #[tokio::test(start_paused = true)]
    async fn expired_tokens_are_purged_and_live_ones_kept() {
        let s = store();
        let m = s.args_mac(&json!({}));
        let short: Vec<_> = (0..1000).map(|_| s.mint("s", "t", &m, Duration::from_secs(5))).collect();
        let long = s.mint("s", "t", &m, TTL);
        assert_eq!(s.len(), 1001);
        assert_eq!(s.purge_expired(), 0, "nothing expired yet");
        tokio::time::advance(Duration::from_secs(6)).await;
        assert_eq!(s.purge_expired(), 1000);
        assert_eq!(s.len(), 1);
        assert_eq!(s.redeem(&short[0], "s", "t", &m), Err(TokenError::Unknown), "purged: as good as used");
        assert_eq!(s.redeem(&long, "s", "t", &m), Ok(()), "a live token survives the purge");
    }

    #[tokio::test(start_paused = true)]
    async fn minting_sweeps_when_a_sweep_is_due() {
        let s = store();
        let m = s.args_mac(&json!({}));
        for _ in 0..100 {
            s.mint("s", "t", &m, Duration::from_secs(1));
        }
        tokio::time::advance(SWEEP_EVERY).await;
        s.mint("s", "t", &m, Duration::from_secs(1));
        assert_eq!(s.len(), 1, "the hundred expired tokens went with the next mint");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_thousand_concurrent_redemptions_succeed_once() {
        let s = Arc::new(store());
        let m = s.args_mac(&json!({"x": 1}));
        let t = s.mint("s", "t", &m, TTL);
        let barrier = Arc::new(tokio::sync::Barrier::new(1000));
        let tasks: Vec<_> = (0..1000)
            .map(|_| {
                let (s, t, m, b) = (s.clone(), t.clone(), m.clone(), barrier.clone());
                tokio::spawn(async move {
                    b.wait().await;
                    s.redeem(&t, "s", "t", &m).is_ok()
                })
            })
            .collect();
        let mut ok = 0;
        for task in tasks {
            ok += usize::from(task.await.unwrap());
        }
        assert_eq!(ok, 1);
    }
}
