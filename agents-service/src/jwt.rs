//! [`JwtAuthenticator`]: OIDC-style bearer JWTs checked against a configured key set.

use crate::auth::{Authenticator, bearer_token, unauthorized};
use crate::error::ApiError;
use agents_runtime::Principal;
use axum::http::request::Parts;
use futures::future::BoxFuture;
use jsonwebtoken::errors::ErrorKind;
use jsonwebtoken::jwk::{AlgorithmParameters, EllipticCurve, Jwk, JwkSet, KeyAlgorithm};
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde_json::Value;

/// Why a [`JwtConfig`] was refused.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum JwtConfigError {
    /// The key set is not a JWKS document.
    #[error("the key set is not a JWKS document (`{{\"keys\": [...]}}`): {0}")]
    KeySet(String),
    /// A key cannot be used.
    #[error("key {index} of the key set cannot be used: {reason}")]
    Key {
        /// Its position in the set.
        index: usize,
        /// Why.
        reason: String,
    },
    /// The key set holds no usable key.
    #[error("the key set holds no key; add the identity provider's signing keys")]
    Empty,
    /// The issuer or audience is empty.
    #[error("the {0} must not be empty")]
    Missing(&'static str),
}

/// What a [`JwtAuthenticator`] checks, and which claims name the principal.
#[derive(Debug, Clone)]
pub struct JwtConfig {
    /// The `iss` every token must carry (exactly).
    pub issuer: String,
    /// The `aud` every token must carry (the token's audience must include it).
    pub audience: String,
    /// The key set (JWKS JSON) whose keys may sign tokens.
    pub jwks_json: String,
    /// Seconds of clock difference allowed on `exp` and `nbf` (default 30).
    pub leeway_seconds: u64,
    /// The claim holding the user id (default `sub`).
    pub user_claim: String,
    /// The claim holding the organisation id (default `org_id`).
    pub org_claim: String,
    /// The claim holding the role (default `role`).
    pub role_claim: String,
    /// The claim holding a linked subject, if any (default none).
    pub subject_claim: Option<String>,
}

impl JwtConfig {
    /// A configuration with the default claim names and leeway.
    pub fn new(issuer: impl Into<String>, audience: impl Into<String>, jwks_json: impl Into<String>) -> Self {
        JwtConfig {
            issuer: issuer.into(),
            audience: audience.into(),
            jwks_json: jwks_json.into(),
            leeway_seconds: 30,
            user_claim: "sub".into(),
            org_claim: "org_id".into(),
            role_claim: "role".into(),
            subject_claim: None,
        }
    }
}

/// One verification key, with the single algorithm it may verify.
struct Key {
    kid: Option<String>,
    algorithm: Algorithm,
    key: DecodingKey,
}

/// Checks `Authorization: Bearer <JWT>`: the signature by a key of the configured set (chosen
/// by `kid`), with the one asymmetric algorithm that key is for (RS*, PS*, ES256/384, EdDSA);
/// `iss`, `aud`, `exp` (required) and `nbf` (when present). A token whose header names another
/// algorithm than its key's (algorithm confusion, e.g. `HS256` signed with a public key),
/// `alg: none`, or a symmetric key in the set is refused.
///
/// Refusals are 401 with codes `missing_token`, `invalid_token`, `token_expired`,
/// `token_not_yet_valid`, `wrong_issuer`, `wrong_audience`, `bad_signature`, `unknown_key`,
/// `algorithm_not_allowed`, `invalid_principal`.
pub struct JwtAuthenticator {
    config: JwtConfig,
    keys: Vec<Key>,
}

impl std::fmt::Debug for JwtAuthenticator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JwtAuthenticator")
            .field("issuer", &self.config.issuer)
            .field("audience", &self.config.audience)
            .field("keys", &self.keys.len())
            .finish_non_exhaustive()
    }
}

fn algorithm_of(index: usize, jwk: &Jwk) -> Result<Algorithm, JwtConfigError> {
    let refuse = |reason: &str| Err(JwtConfigError::Key { index, reason: reason.to_owned() });
    let by_type = match &jwk.algorithm {
        AlgorithmParameters::RSA(_) => None,
        AlgorithmParameters::EllipticCurve(p) => match p.curve {
            EllipticCurve::P256 => Some(Algorithm::ES256),
            EllipticCurve::P384 => Some(Algorithm::ES384),
            _ => return refuse("only the P-256 and P-384 curves are supported for EC keys"),
        },
        AlgorithmParameters::OctetKeyPair(p) => match p.curve {
            EllipticCurve::Ed25519 => Some(Algorithm::EdDSA),
            _ => return refuse("only Ed25519 is supported for OKP keys"),
        },
        AlgorithmParameters::OctetKey(_) => {
            return refuse("symmetric (`oct`) keys are refused: anyone who can verify could also sign");
        }
        _ => return refuse("unsupported key type"),
    };
    let by_alg = match jwk.common.key_algorithm {
        None => None,
        Some(KeyAlgorithm::RS256) => Some(Algorithm::RS256),
        Some(KeyAlgorithm::RS384) => Some(Algorithm::RS384),
        Some(KeyAlgorithm::RS512) => Some(Algorithm::RS512),
        Some(KeyAlgorithm::PS256) => Some(Algorithm::PS256),
        Some(KeyAlgorithm::PS384) => Some(Algorithm::PS384),
        Some(KeyAlgorithm::PS512) => Some(Algorithm::PS512),
        Some(KeyAlgorithm::ES256) => Some(Algorithm::ES256),
        Some(KeyAlgorithm::ES384) => Some(Algorithm::ES384),
        Some(KeyAlgorithm::EdDSA) => Some(Algorithm::EdDSA),
        Some(_) => return refuse("its `alg` is not a signature algorithm this service accepts"),
    };
    match (by_type, by_alg) {
        (Some(t), Some(a)) if t != a => refuse("its `alg` does not match its key type"),
        (Some(t), _) => Ok(t),
        (None, Some(a @ (Algorithm::RS256 | Algorithm::RS384 | Algorithm::RS512))) => Ok(a),
        (None, Some(a @ (Algorithm::PS256 | Algorithm::PS384 | Algorithm::PS512))) => Ok(a),
        (None, Some(_)) => refuse("its `alg` does not match its key type"),
        // An RSA key without `alg`: RS256, the OIDC default.
        (None, None) => Ok(Algorithm::RS256),
    }
}

impl JwtAuthenticator {
    /// Reads the key set and checks the configuration.
    pub fn new(config: JwtConfig) -> Result<Self, JwtConfigError> {
        if config.issuer.trim().is_empty() {
            return Err(JwtConfigError::Missing("issuer"));
        }
        if config.audience.trim().is_empty() {
            return Err(JwtConfigError::Missing("audience"));
        }
        let set: JwkSet = serde_json::from_str(&config.jwks_json).map_err(|e| JwtConfigError::KeySet(e.to_string()))?;
        let mut keys = Vec::with_capacity(set.keys.len());
        for (index, jwk) in set.keys.iter().enumerate() {
            let algorithm = algorithm_of(index, jwk)?;
            let key = DecodingKey::from_jwk(jwk).map_err(|e| JwtConfigError::Key { index, reason: e.to_string() })?;
            keys.push(Key { kid: jwk.common.key_id.clone(), algorithm, key });
        }
        if keys.is_empty() {
            return Err(JwtConfigError::Empty);
        }
        Ok(JwtAuthenticator { config, keys })
    }

    /// The principal a token names, or why it is refused.
    pub fn check(&self, token: &str) -> Result<Principal, ApiError> {
        let header = jsonwebtoken::decode_header(token).map_err(|e| match e.kind() {
            ErrorKind::InvalidAlgorithmName | ErrorKind::Json(_) => unauthorized(
                "algorithm_not_allowed",
                "the token's header does not name an accepted signature algorithm",
            ),
            _ => unauthorized("invalid_token", "the token is not a JWT (header.payload.signature)"),
        })?;
        let key = match &header.kid {
            Some(kid) => self.keys.iter().find(|k| k.kid.as_deref() == Some(kid)),
            None if self.keys.len() == 1 => self.keys.first(),
            None => None,
        }
        .ok_or_else(|| unauthorized("unknown_key", "the token's `kid` names no key of the configured key set"))?;
        if header.alg != key.algorithm {
            return Err(unauthorized(
                "algorithm_not_allowed",
                format!("the token's algorithm {:?} is not its key's ({:?})", header.alg, key.algorithm),
            ));
        }
        let mut validation = Validation::new(key.algorithm);
        validation.set_issuer(&[self.config.issuer.as_str()]);
        validation.set_audience(&[self.config.audience.as_str()]);
        validation.set_required_spec_claims(&["exp", "iss", "aud"]);
        validation.validate_exp = true;
        validation.validate_nbf = true;
        validation.leeway = self.config.leeway_seconds;
        let data = jsonwebtoken::decode::<Value>(token, &key.key, &validation).map_err(|e| match e.kind() {
            ErrorKind::ExpiredSignature => unauthorized("token_expired", "the token has expired; sign in again"),
            ErrorKind::ImmatureSignature => unauthorized("token_not_yet_valid", "the token is not valid yet (`nbf`)"),
            ErrorKind::InvalidIssuer => unauthorized("wrong_issuer", "the token was issued by another issuer"),
            ErrorKind::InvalidAudience => unauthorized("wrong_audience", "the token is meant for another audience"),
            ErrorKind::InvalidSignature => unauthorized("bad_signature", "the token's signature does not verify"),
            ErrorKind::InvalidAlgorithm => {
                unauthorized("algorithm_not_allowed", "the token's algorithm is not its key's")
            }
            ErrorKind::MissingRequiredClaim(c) => {
                unauthorized("invalid_token", format!("the token has no `{c}` claim"))
            }
            _ => unauthorized("invalid_token", "the token could not be read"),
        })?;
        let claims = data.claims;
        let text = |name: &str| -> Result<String, ApiError> {
            claims
                .get(name)
                .and_then(Value::as_str)
                .map(str::to_owned)
                .ok_or_else(|| unauthorized("invalid_principal", format!("the token has no string claim `{name}`")))
        };
        let mut principal = Principal::try_new(
            text(&self.config.user_claim)?,
            text(&self.config.org_claim)?,
            text(&self.config.role_claim)?,
        )
        .map_err(|e| unauthorized("invalid_principal", e.to_string()))?;
        if let Some(claim) = &self.config.subject_claim
            && let Some(subject) = claims.get(claim).and_then(Value::as_str)
        {
            principal = principal.with_subject(subject);
        }
        Ok(principal)
    }
}

impl Authenticator for JwtAuthenticator {
    fn authenticate<'a>(&'a self, request: &'a Parts) -> BoxFuture<'a, Result<Principal, ApiError>> {
        Box::pin(async move { self.check(bearer_token(request)?) })
    }
}
