//! The JWT authenticator over real loopback HTTP: what it accepts, and every way a token is
//! refused (401 with a stable code), including `alg: none` and algorithm confusion.

use crate::common;

use agents_service::{JwtAuthenticator, JwtConfig, JwtConfigError, ServiceLimits};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use common::*;
use ed25519_dalek::{Signer, SigningKey};
use hmac::Mac;
use serde_json::{Value, json};
use std::sync::Arc;

const ISS: &str = "https://id.example.test";
const AUD: &str = "agents-service";

fn key() -> SigningKey {
    SigningKey::from_bytes(&[7u8; 32])
}

fn jwks(k: &SigningKey) -> String {
    let x = B64.encode(k.verifying_key().as_bytes());
    json!({"keys": [{"kty": "OKP", "crv": "Ed25519", "x": x, "kid": "k1", "alg": "EdDSA", "use": "sig"}]}).to_string()
}

fn now() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs() as i64
}

fn claims() -> Value {
    json!({"iss": ISS, "aud": AUD, "sub": "alice", "org_id": "acme", "role": "employee", "exp": now() + 600, "iat": now()})
}

fn signed(header: Value, claims: &Value, k: &SigningKey) -> String {
    let input = format!("{}.{}", B64.encode(header.to_string()), B64.encode(claims.to_string()));
    let sig = k.sign(input.as_bytes());
    format!("{input}.{}", B64.encode(sig.to_bytes()))
}

fn token(claims: &Value) -> String {
    signed(json!({"alg": "EdDSA", "typ": "JWT", "kid": "k1"}), claims, &key())
}

fn with(f: impl FnOnce(&mut Value)) -> String {
    let mut c = claims();
    f(&mut c);
    token(&c)
}

async fn service() -> Served {
    let auth = JwtAuthenticator::new(JwtConfig::new(ISS, AUD, jwks(&key()))).unwrap();
    serve_with(Arc::new(auth), ServiceLimits::default(), None).await
}

async fn with_auth(s: &Served, value: &str) -> Reply {
    call(s.base, "GET", "/v1/runs", &[("Authorization".into(), value.to_owned())], None).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_valid_token_names_the_principal_and_the_scheme_is_case_insensitive() {
    let s = service().await;
    for scheme in ["Bearer", "bearer", "BEARER"] {
        let r = with_auth(&s, &format!("{scheme} {}", token(&claims()))).await;
        assert_eq!(r.status, 200, "{scheme}: {}", r.body);
    }
    // The run acts for the token's principal.
    let body = json!({"agent": AGENT, "input": "lookup it", "session_id": "jwt-1"}).to_string();
    let auth = ("Authorization".to_owned(), format!("Bearer {}", token(&claims())));
    let r = call(s.base, "POST", "/v1/runs", std::slice::from_ref(&auth), Some(&body)).await;
    assert_eq!(r.status, 201, "{}", r.body);
    let run = r.json()["run_id"].as_str().unwrap().to_owned();
    let status = call(s.base, "GET", &format!("/v1/runs/{run}"), std::slice::from_ref(&auth), None).await;
    assert_eq!(status.status, 200);
    // Someone else's token does not see it.
    let bob = ("Authorization".to_owned(), format!("Bearer {}", with(|c| c["sub"] = json!("bob"))));
    let other = call(s.base, "GET", &format!("/v1/runs/{run}"), &[bob], None).await;
    assert_eq!((other.status, other.code().as_str()), (404, "not_found"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_bad_token_is_refused_with_its_code() {
    let s = service().await;
    let other_key = SigningKey::from_bytes(&[9u8; 32]);
    let public = key().verifying_key().to_bytes();
    let unsigned = format!(
        "{}.{}.",
        B64.encode(json!({"alg": "none", "typ": "JWT"}).to_string()),
        B64.encode(claims().to_string())
    );
    let confused = {
        let input = format!(
            "{}.{}",
            B64.encode(json!({"alg": "HS256", "typ": "JWT", "kid": "k1"}).to_string()),
            B64.encode(claims().to_string())
        );
        let mut mac = hmac::Hmac::<sha2::Sha256>::new_from_slice(&public).unwrap();
        mac.update(input.as_bytes());
        format!("{input}.{}", B64.encode(mac.finalize().into_bytes()))
    };
    let cases: Vec<(&str, String, &str)> = vec![
        ("expired", with(|c| c["exp"] = json!(now() - 3600)), "token_expired"),
        ("not yet valid", with(|c| c["nbf"] = json!(now() + 3600)), "token_not_yet_valid"),
        ("wrong audience", with(|c| c["aud"] = json!("someone-else")), "wrong_audience"),
        ("wrong issuer", with(|c| c["iss"] = json!("https://evil.example.test")), "wrong_issuer"),
        ("no expiry", with(|c| drop(c.as_object_mut().unwrap().remove("exp"))), "invalid_token"),
        ("no organisation", with(|c| drop(c.as_object_mut().unwrap().remove("org_id"))), "invalid_principal"),
        ("control character in the user", with(|c| c["sub"] = json!("al\nice")), "invalid_principal"),
        ("signed by another key", signed(json!({"alg": "EdDSA", "kid": "k1"}), &claims(), &other_key), "bad_signature"),
        (
            "tampered claims",
            {
                let t = token(&claims());
                let parts: Vec<&str> = t.split('.').collect();
                let mut c = claims();
                c["role"] = json!("auditor");
                format!("{}.{}.{}", parts[0], B64.encode(c.to_string()), parts[2])
            },
            "bad_signature",
        ),
        ("alg none", unsigned, "algorithm_not_allowed"),
        ("HS256 keyed with the public key", confused, "algorithm_not_allowed"),
        ("unknown kid", signed(json!({"alg": "EdDSA", "kid": "k2"}), &claims(), &key()), "unknown_key"),
        ("not a JWT", "abc".to_owned(), "invalid_token"),
    ];
    for (what, t, code) in cases {
        let r = with_auth(&s, &format!("Bearer {t}")).await;
        assert_eq!((r.status, r.code().as_str()), (401, code), "{what}: {}", r.body);
        assert!(r.headers.get("www-authenticate").is_some_and(|v| v.starts_with("Bearer")), "{what}");
    }
    for (what, header, code) in
        [("no token", "Bearer ", "missing_token"), ("basic scheme", "Basic YWxpY2U6eA==", "missing_token")]
    {
        let r = with_auth(&s, header).await;
        assert_eq!((r.status, r.code().as_str()), (401, code), "{what}: {}", r.body);
    }
    let r = call(s.base, "GET", "/v1/runs", &[], None).await;
    assert_eq!((r.status, r.code().as_str()), (401, "missing_token"));
    // Two Authorization headers: refused, not one of them picked.
    let good = format!("Bearer {}", token(&claims()));
    let r = call(
        s.base,
        "GET",
        "/v1/runs",
        &[("Authorization".into(), good.clone()), ("Authorization".into(), good)],
        None,
    )
    .await;
    assert_eq!((r.status, r.code().as_str()), (401, "invalid_token"));
    assert!(s.audit.records().is_empty(), "nothing ran for a refused token");
}

#[test]
fn key_sets_that_would_allow_forgery_are_refused() {
    let oct = json!({"keys": [{"kty": "oct", "k": B64.encode(b"secret"), "kid": "h"}]}).to_string();
    assert!(matches!(JwtAuthenticator::new(JwtConfig::new(ISS, AUD, oct)), Err(JwtConfigError::Key { .. })));
    let empty = json!({"keys": []}).to_string();
    assert!(matches!(JwtAuthenticator::new(JwtConfig::new(ISS, AUD, empty)), Err(JwtConfigError::Empty)));
    let x = B64.encode(key().verifying_key().as_bytes());
    let mismatched = json!({"keys": [{"kty": "OKP", "crv": "Ed25519", "x": x, "alg": "RS256"}]}).to_string();
    assert!(matches!(JwtAuthenticator::new(JwtConfig::new(ISS, AUD, mismatched)), Err(JwtConfigError::Key { .. })));
    assert!(matches!(JwtAuthenticator::new(JwtConfig::new(ISS, AUD, "not json")), Err(JwtConfigError::KeySet(_))));
    assert!(matches!(
        JwtAuthenticator::new(JwtConfig::new("", AUD, jwks(&key()))),
        Err(JwtConfigError::Missing("issuer"))
    ));
    assert!(matches!(
        JwtAuthenticator::new(JwtConfig::new(ISS, " ", jwks(&key()))),
        Err(JwtConfigError::Missing("audience"))
    ));
}
