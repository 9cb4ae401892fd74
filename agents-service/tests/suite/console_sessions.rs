//! The console's sessions over real loopback HTTP: the bounds on them (per person, in total,
//! idle expiry) and the sign-in through the service's authenticator (a JWT signed by the
//! test's key opens a session for its principal; a tampered one opens nothing).

use agents_runtime::Principal;
use agents_runtime::audit::MemorySink;
use agents_service::{
    Authenticator, Console, ConsoleLimits, DevAuthenticator, JwtAuthenticator, JwtConfig, Person, Service,
};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use ed25519_dalek::{Signer, SigningKey};
use serde_json::{Value, json};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

/// Serves a service with no agents (the decisions list answers 200 to any signed-in
/// principal, 401 otherwise) and `console`, whose cookie falls back to `fallback`.
async fn serve(console: Console, fallback: Arc<dyn Authenticator>) -> SocketAddr {
    let audit = Arc::new(MemorySink::new());
    let service = Service::builder(console.authenticator(fallback), audit.clone(), audit).build();
    let app = service.router().merge(console.router(&service));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    base
}

/// One HTTP/1.1 request with `Connection: close`: status, lower-cased head, body (an empty
/// body is none).
async fn http(
    base: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> (u16, String, String) {
    crate::console_browser::http(base, method, path, headers, Some(body).filter(|b| !b.is_empty())).await
}

/// Signs in with `headers` and `body`: the session cookie (`name=value`), or the refusal.
async fn sign_in(base: SocketAddr, headers: &[(&str, &str)], body: &str) -> Result<String, (u16, String)> {
    let mut all = vec![("x-agents-console", "1")];
    all.extend_from_slice(headers);
    let (status, head, body) = http(base, "POST", "/console/login", &all, body).await;
    if status != 200 {
        return Err((status, body));
    }
    let set = head.lines().find(|l| l.starts_with("set-cookie:")).expect("a session cookie");
    Ok(set["set-cookie:".len()..].trim().split(';').next().unwrap().to_owned())
}

async fn person(base: SocketAddr, n: usize) -> Result<String, (u16, String)> {
    sign_in(base, &[], &format!(r#"{{"person": {n}}}"#)).await
}

/// Whether the session of `cookie` is live: the API answers for it.
async fn live(base: SocketAddr, cookie: &str) -> bool {
    let (status, _, body) = http(base, "GET", "/v1/decisions", &[("cookie", cookie)], "").await;
    assert!(status == 200 || status == 401, "{status} {body}");
    status == 200
}

fn people() -> Vec<Person> {
    ["ann", "ben", "cy"]
        .into_iter()
        .map(|u| Person { principal: Principal::new(u, "org-1", "clinician"), label: u.to_owned() })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_are_bounded_per_person_in_total_and_by_idle_time() {
    let mut limits = ConsoleLimits::default();
    limits.max_sessions_per_person = 2;
    limits.max_sessions = 3;
    limits.idle_timeout = Duration::from_secs(3);
    let console = Console::dev_login(people()).limits(limits);
    let base = serve(console, Arc::new(DevAuthenticator::disabled())).await;

    // A third sign-in of the same person ends their least recently used session.
    let a1 = person(base, 0).await.unwrap();
    let a2 = person(base, 0).await.unwrap();
    assert!(live(base, &a1).await, "a fresh session is live");
    let a3 = person(base, 0).await.unwrap();
    assert!(!live(base, &a2).await, "the least recently used session of the person did not end");
    assert!(live(base, &a1).await && live(base, &a3).await);

    // The console's total: another person fills it, a third is refused, nobody is signed out.
    let b1 = person(base, 1).await.unwrap();
    let refused = person(base, 2).await.unwrap_err();
    assert_eq!(refused.0, 503, "{}", refused.1);
    assert!(refused.1.contains("too_many_sessions"), "{}", refused.1);
    for c in [&a1, &a3, &b1] {
        assert!(live(base, c).await, "a sign-in beyond the total ended someone's session");
    }
    // One signs out: there is room again.
    let (status, _, _) =
        http(base, "POST", "/console/logout", &[("cookie", &b1), ("x-agents-console", "1")], "{}").await;
    assert_eq!(status, 200);
    let c1 = person(base, 2).await.unwrap();
    assert!(live(base, &c1).await);

    // A session unused for longer than the idle time ends; one in use does not.
    for _ in 0..4 {
        tokio::time::sleep(Duration::from_secs(1)).await;
        assert!(live(base, &c1).await, "a session in use ended");
    }
    assert!(!live(base, &a1).await, "an idle session is still live");
    assert!(!live(base, &a3).await, "an idle session is still live");
}

#[test]
fn the_defaults_are_bounded() {
    let l = ConsoleLimits::default();
    assert_eq!(l.max_sessions_per_person, 5);
    assert_eq!(l.max_sessions, 10_000);
    assert_eq!(l.idle_timeout, Duration::from_secs(1800));
    assert_eq!(l.session_lifetime, agents_service::console::SESSION_TTL);
}

const ISS: &str = "https://id.example.test";
const AUD: &str = "agents-console";

fn key() -> SigningKey {
    SigningKey::from_bytes(&[9u8; 32])
}

fn token(claims: &Value) -> String {
    let header = json!({"alg": "EdDSA", "typ": "JWT", "kid": "k1"});
    let input = format!("{}.{}", B64.encode(header.to_string()), B64.encode(claims.to_string()));
    format!("{input}.{}", B64.encode(key().sign(input.as_bytes()).to_bytes()))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_token_login_opens_a_session_for_the_principal_the_jwt_authenticator_names() {
    let x = B64.encode(key().verifying_key().as_bytes());
    let jwks = json!({"keys": [{"kty": "OKP", "crv": "Ed25519", "x": x, "kid": "k1", "alg": "EdDSA", "use": "sig"}]});
    let jwt: Arc<dyn Authenticator> =
        Arc::new(JwtAuthenticator::new(JwtConfig::new(ISS, AUD, jwks.to_string())).unwrap());
    let base = serve(Console::token_login(jwt.clone()), jwt).await;
    // The login page asks for a token and offers nobody to pick.
    let (status, _, page) = http(base, "GET", "/console/login", &[], "").await;
    assert_eq!(status, 200);
    assert!(page.contains(r#"data-login="token""#) && !page.contains(r#"name="person""#), "{page}");

    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs();
    let claims = json!({"iss": ISS, "aud": AUD, "sub": "dana", "org_id": "org-7", "role": "clinician",
        "exp": now + 600, "iat": now});
    let good = token(&claims);
    // A tampered token: the claims say someone else, the signature is the original's.
    let parts: Vec<&str> = good.split('.').collect();
    let mut forged = claims.clone();
    forged["role"] = json!("auditor");
    let tampered = format!("{}.{}.{}", parts[0], B64.encode(forged.to_string()), parts[2]);
    for (bad, code) in [(tampered.as_str(), "bad_signature"), ("not-a-token", "invalid_token")] {
        let refused = sign_in(base, &[("authorization", &format!("Bearer {bad}"))], "{}").await.unwrap_err();
        assert_eq!(refused.0, 401, "{}", refused.1);
        assert!(refused.1.contains(code), "{}", refused.1);
    }
    // No token at all, and a development login's body, are refused too.
    let refused = sign_in(base, &[], r#"{"person": 0}"#).await.unwrap_err();
    assert_eq!(refused.0, 401, "{}", refused.1);

    // The signed token opens a session acting for its principal.
    let cookie = sign_in(base, &[("authorization", &format!("Bearer {good}"))], "{}").await.unwrap();
    let (status, _, page) = http(base, "GET", "/console", &[("cookie", &cookie)], "").await;
    assert_eq!(status, 200);
    assert!(page.contains(r#"data-user="dana" data-org="org-7" data-role="clinician""#), "{page}");
    // Without the console's header the same sign-in is refused (a cross-site form).
    let (status, _, body) =
        http(base, "POST", "/console/login", &[("authorization", &format!("Bearer {good}"))], "{}").await;
    assert_eq!(status, 403, "{body}");
}
