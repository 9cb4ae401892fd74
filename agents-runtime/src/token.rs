//! Confirmation tokens: minted by the runtime after a person approves, bound to the session,
//! the tool and an HMAC-SHA-256 of the canonical arguments, single use, expiring. Never shown
//! to the model. Change one argument and the token is worthless.

use crate::store::{MemoryStore, Redeemed, Store, TokenGrant, now_or_in_background};
use hmac::{Hmac, Mac};
use serde_json::Value;
use sha2::Sha256;
use std::sync::Arc;
use std::time::Duration;

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
    /// The state store could not keep or find the token; nothing runs without it.
    #[error("the confirmation token store is unavailable: {0}")]
    Unavailable(String),
}

/// Mints and redeems tokens with a server key, keeping what each token is bound to in a
/// [`Store`] (by default a [`MemoryStore`] of this process; a shared store makes a token
/// single-use across every node that shares it).
///
/// The token's MAC never reaches the store: a token is accepted only by a runtime holding the
/// server key, whatever the store holds. Memory of the default store is bounded by the tokens
/// minted within one token lifetime plus ten seconds (minting sweeps expired tokens out when
/// a sweep is due), and a server's timer calls [`TokenStore::purge_expired`] (see
/// [`Runtime::purge_expired`](crate::Runtime::purge_expired)).
pub struct TokenStore {
    /// HMAC-SHA-256 already keyed with the server key (cloned per MAC: the key schedule is
    /// done once).
    keyed: HmacSha256,
    store: Arc<dyn Store>,
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
    /// A store with a server key, holding tokens in this process's memory.
    pub fn new(key: [u8; 32]) -> Self {
        Self::with_store(key, Arc::new(MemoryStore::new()))
    }

    /// A token store with a server key that keeps what tokens are bound to in `store`.
    pub fn with_store(key: [u8; 32], store: Arc<dyn Store>) -> Self {
        TokenStore { keyed: HmacSha256::new_from_slice(&key).expect("HMAC takes any key length"), store }
    }

    /// HMAC-SHA-256 under the server key of `parts`, each length-prefixed (so no two lists of
    /// parts give the same input), as lowercase hex.
    pub(crate) fn mac(&self, parts: &[&str]) -> String {
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

    /// The keyed digest of one argument's value that audit records carry when values are
    /// omitted ([`AuditValues::Omitted`](agents_core::audit::AuditValues::Omitted)):
    /// HMAC-SHA-256 under the server key of `text`, which
    /// [`omit_args`](agents_core::audit::omit_args) gives as `value:` followed by the value's
    /// canonical JSON. An auditor holding the key and a value computes the same digest:
    ///
    /// ```
    /// use agents_runtime::agents_core::audit::omit_args;
    /// use agents_runtime::token::TokenStore;
    /// use serde_json::json;
    ///
    /// let key = TokenStore::new([7; 32]);
    /// let kept = omit_args(&json!({"dob": "1990-04-01"}), |t| key.value_mac(t));
    /// let mine = agents_runtime::agents_core::canonical::digest_hex(&key.value_mac(b"value:\"1990-04-01\""));
    /// assert_eq!(kept["dob"]["hmac_sha256"], mine);
    /// ```
    pub fn value_mac(&self, text: &[u8]) -> [u8; 32] {
        let mut m = self.keyed.clone();
        m.update(text);
        m.finalize().into_bytes().into()
    }

    /// HMAC-SHA-256 of the canonical JSON of `args`.
    pub fn args_mac(&self, args: &Value) -> String {
        self.mac(&["args", &agents_core::canonical::to_string(args)])
    }

    /// Mints a token for one approved call, valid for `ttl` (the agent's `token_ttl_secs`).
    /// Fails ([`TokenError::Unavailable`]) when the store cannot keep it: no token, nothing
    /// may run.
    pub async fn mint(
        &self,
        session: &str,
        tool: &str,
        args_mac: &str,
        ttl: Duration,
    ) -> Result<ConfirmationToken, TokenError> {
        let id = hex::encode(random_bytes::<16>());
        let mac = self.mac(&["token", &id, session, tool, args_mac]);
        let grant = TokenGrant { id, session_id: session.into(), tool: tool.into(), args_mac: args_mac.into() };
        self.store.mint_token(&grant, ttl).await.map_err(|e| TokenError::Unavailable(e.to_string()))?;
        Ok(ConfirmationToken { id: grant.id, mac })
    }

    /// Drops every expired and used token from the store. Returns how many, when the store
    /// answers at once (the in-memory store does); a shared store's purge goes on in the
    /// background and counts 0 here.
    pub fn purge_expired(&self) -> usize {
        let store = self.store.clone();
        now_or_in_background("purge expired tokens", async move { store.prune_tokens().await }).unwrap_or(0) as usize
    }

    /// Revokes every token minted for `session` (the session ended or expired). Returns how
    /// many were held, when the store answers at once (the in-memory store does); a shared
    /// store's revocation goes on in the background and counts 0 here.
    pub fn revoke_session(&self, session: &str) -> usize {
        let (store, session) = (self.store.clone(), session.to_owned());
        now_or_in_background("revoke a session's tokens", async move { store.revoke_session_tokens(&session).await })
            .unwrap_or(0) as usize
    }

    /// Redeems a token for a call. Any presentation uses the token up (one conditional
    /// operation of the store: of concurrent presentations, on any node sharing the store,
    /// one finds it), so a refused token cannot be retried with other arguments.
    pub async fn redeem(
        &self,
        token: &ConfirmationToken,
        session: &str,
        tool: &str,
        args_mac: &str,
    ) -> Result<(), TokenError> {
        let mut raw_id = [0u8; 16];
        hex::decode_to_slice(&token.id, &mut raw_id).map_err(|_| TokenError::Unknown)?;
        let taken = self.store.redeem_token(&token.id).await.map_err(|e| TokenError::Unavailable(e.to_string()))?;
        let Redeemed::Taken { grant, expired } = taken else {
            return Err(TokenError::Unknown);
        };
        let expected = self.mac(&["token", &token.id, &grant.session_id, &grant.tool, &grant.args_mac]);
        if !constant_time_eq(expected.as_bytes(), token.mac.as_bytes()) {
            return Err(TokenError::Tampered);
        }
        if expired {
            return Err(TokenError::Expired);
        }
        if grant.session_id != session {
            return Err(TokenError::WrongSession);
        }
        if grant.tool != tool {
            return Err(TokenError::WrongTool);
        }
        if !constant_time_eq(grant.args_mac.as_bytes(), args_mac.as_bytes()) {
            return Err(TokenError::WrongArguments);
        }
        Ok(())
    }

    #[cfg(test)]
    pub(crate) fn tamper(token: &ConfirmationToken) -> ConfirmationToken {
        let mut t = token.clone();
        t.mac.replace_range(0..1, if t.mac.starts_with('0') { "1" } else { "0" });
        t
    }
}

/// Whether `a` and `b` are equal, in time that does not depend on where they differ.
pub(crate) fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
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

    /// A token store on a memory store the test can look into.
    fn store_with_memory() -> (TokenStore, Arc<MemoryStore>) {
        let memory = Arc::new(MemoryStore::new());
        (TokenStore::with_store([7; 32], memory.clone()), memory)
    }

    #[tokio::test]
    async fn binds_session_tool_and_arguments() {
        let s = store();
        let m3 = s.args_mac(&json!({"days": 3}));
        let m5 = s.args_mac(&json!({"days": 5}));
        let t = s.mint("s1", "submit_leave", &m3, TTL).await.unwrap();
        assert_eq!(s.redeem(&t, "s1", "submit_leave", &m5).await, Err(TokenError::WrongArguments));
        // used up by the refused presentation
        assert_eq!(s.redeem(&t, "s1", "submit_leave", &m3).await, Err(TokenError::Unknown));
        let t = s.mint("s1", "submit_leave", &m3, TTL).await.unwrap();
        assert_eq!(s.redeem(&t, "s2", "submit_leave", &m3).await, Err(TokenError::WrongSession));
        let t = s.mint("s1", "submit_leave", &m3, TTL).await.unwrap();
        assert_eq!(s.redeem(&t, "s1", "open_ticket", &m3).await, Err(TokenError::WrongTool));
        let t = s.mint("s1", "submit_leave", &m3, TTL).await.unwrap();
        assert_eq!(s.redeem(&TokenStore::tamper(&t), "s1", "submit_leave", &m3).await, Err(TokenError::Tampered));
        let t = s.mint("s1", "submit_leave", &m3, TTL).await.unwrap();
        assert_eq!(s.redeem(&t, "s1", "submit_leave", &m3).await, Ok(()));
        assert_eq!(s.redeem(&t, "s1", "submit_leave", &m3).await, Err(TokenError::Unknown));
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
        let t = s.mint("s", "t", &m, TTL).await.unwrap();
        tokio::time::advance(Duration::from_secs(181)).await;
        assert_eq!(s.redeem(&t, "s", "t", &m).await, Err(TokenError::Expired));
        let t = s.mint("s", "t", &m, TTL).await.unwrap();
        tokio::time::advance(Duration::from_secs(179)).await;
        assert_eq!(s.redeem(&t, "s", "t", &m).await, Ok(()));
    }

    #[tokio::test(start_paused = true)]
    async fn expired_tokens_are_purged_and_live_ones_kept() {
        let (s, memory) = store_with_memory();
        let m = s.args_mac(&json!({}));
        let mut short = Vec::new();
        for _ in 0..1000 {
            short.push(s.mint("s", "t", &m, Duration::from_secs(5)).await.unwrap());
        }
        let long = s.mint("s", "t", &m, TTL).await.unwrap();
        assert_eq!(memory.token_count(), 1001);
        assert_eq!(s.purge_expired(), 0, "nothing expired yet");
        tokio::time::advance(Duration::from_secs(6)).await;
        assert_eq!(s.purge_expired(), 1000);
        assert_eq!(memory.token_count(), 1);
        assert_eq!(s.redeem(&short[0], "s", "t", &m).await, Err(TokenError::Unknown), "purged: as good as used");
        assert_eq!(s.redeem(&long, "s", "t", &m).await, Ok(()), "a live token survives the purge");
    }

    #[tokio::test(start_paused = true)]
    async fn minting_sweeps_when_a_sweep_is_due() {
        let (s, memory) = store_with_memory();
        let m = s.args_mac(&json!({}));
        for _ in 0..100 {
            s.mint("s", "t", &m, Duration::from_secs(1)).await.unwrap();
        }
        tokio::time::advance(crate::store::MEMORY_SWEEP_EVERY).await;
        s.mint("s", "t", &m, Duration::from_secs(1)).await.unwrap();
        assert_eq!(memory.token_count(), 1, "the hundred expired tokens went with the next mint");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_thousand_concurrent_redemptions_succeed_once() {
        let s = Arc::new(store());
        let m = s.args_mac(&json!({"x": 1}));
        let t = s.mint("s", "t", &m, TTL).await.unwrap();
        let barrier = Arc::new(tokio::sync::Barrier::new(1000));
        let tasks: Vec<_> = (0..1000)
            .map(|_| {
                let (s, t, m, b) = (s.clone(), t.clone(), m.clone(), barrier.clone());
                tokio::spawn(async move {
                    b.wait().await;
                    s.redeem(&t, "s", "t", &m).await.is_ok()
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
