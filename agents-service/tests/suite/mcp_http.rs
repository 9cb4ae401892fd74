//! The service's MCP endpoint over real loopback HTTP: a tool call through `/mcp` with the
//! REST API's authenticator; another user with his own valid token and Alice's session id
//! (answer her elicitation, open or resume her stream, call tools, end her session) gets the
//! 404 of an unknown session every time, changes nothing and is audited; no token, a foreign
//! `Origin`, an oversized body and duplicate keys are refused before rmcp sees the request.

#[path = "../../../agents-mcp/tests/mcp_common/mod.rs"]
mod mcp_common;

use agents_runtime::audit::{AuditRecord, AuditStatus, MemorySink};
use agents_runtime::provider::ScriptedProvider;
use agents_runtime::{Principal, RoleMap, Runtime, agent, permissions, tool};
use agents_service::axum::http::request::Parts;
use agents_service::{ApiError, Authenticator, McpEndpoint, Service, bearer_token, unauthorized};
use futures::future::BoxFuture;
use mcp_common::{Client, elicitation_id, request, response_to};
use serde_json::json;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

permissions! {
    pub mod perms { note.read, note.write }
}

/// Notes written, as `(user, id, text)`.
static WRITTEN: Mutex<Vec<(String, u32, String)>> = Mutex::new(Vec::new());

/// Reads a note.
#[tool(permission = perms::note::read)]
async fn read_note(id: u32) -> Result<String, String> {
    Ok(format!("note {id}"))
}

/// Writes a note.
///
/// # Arguments
///
/// * `id` - the id
/// * `text` - the text
#[tool(permission = perms::note::write, mutating, title = "Write a note")]
async fn write_note(ctx: &agents_runtime::ToolContext<'_>, id: u32, text: String) -> Result<String, String> {
    WRITTEN.lock().unwrap().push((ctx.principal().user_id.clone(), id, text.clone()));
    Ok(format!("{id}: {text}"))
}

agent! {
    /// Notes.
    pub struct Notes;
    tools: [read_note, write_note],
    expose: { mcp: [http(auth = service)] },
}

/// The same notes, declared to be served over stdio and the standalone HTTP server only.
mod elsewhere {
    use super::{read_note, write_note};
    use agents_runtime::agent;

    agent! {
        /// Notes, not for the service's endpoint.
        pub struct NotesElsewhere;
        tools: [read_note, write_note],
        expose: { mcp: [stdio, http(auth = bearer)] },
    }

    agent! {
        /// Notes, not served over MCP.
        pub struct NotesUnexposed;
        tools: [read_note, write_note],
    }
}

fn writes_of(id: u32) -> Vec<(String, u32, String)> {
    WRITTEN.lock().unwrap().iter().filter(|w| w.1 == id).cloned().collect()
}

/// Bearer tokens of an identity provider, as the REST API and the MCP endpoint both see them.
struct Tokens;

impl Authenticator for Tokens {
    fn authenticate<'a>(&'a self, request: &'a Parts) -> BoxFuture<'a, Result<Principal, ApiError>> {
        Box::pin(async move {
            match bearer_token(request)? {
                "alice-token" => Ok(Principal::new("alice", "org1", "writer")),
                "bob-token" => Ok(Principal::new("bob", "org1", "writer")),
                _ => Err(unauthorized("invalid_token", "unknown token")),
            }
        })
    }
}

const LIMIT: usize = 16 * 1024;

async fn serve() -> (SocketAddr, Arc<MemorySink>) {
    serve_with(|_| {}).await
}

async fn serve_with(adjust: impl FnOnce(&mut McpEndpoint)) -> (SocketAddr, Arc<MemorySink>) {
    let audit = Arc::new(MemorySink::new());
    let rt = Runtime::builder(audit.clone(), Arc::new(ScriptedProvider::new([])))
        .roles(RoleMap::new().role("writer", ["note.read", "note.write"]))
        .build();
    let mut endpoint = McpEndpoint::default();
    endpoint.allowed_origins = vec!["https://app.example".into()];
    endpoint.max_body_bytes = LIMIT;
    adjust(&mut endpoint);
    let service = Service::builder(Arc::new(Tokens), audit.clone(), audit.clone())
        .agent::<Notes>(rt.clone())
        .mcp::<Notes>(rt, endpoint)
        .unwrap()
        .build();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let router = service.router();
    tokio::spawn(async move { agents_service::axum::serve(listener, router).await.unwrap() });
    (addr, audit)
}

fn statuses(records: &[AuditRecord], tool: &str) -> Vec<&'static str> {
    records.iter().filter(|r| r.tool.as_deref() == Some(tool)).map(|r| r.status.as_str()).collect()
}

#[tokio::test]
async fn a_tool_call_through_the_mcp_endpoint_acts_for_the_token_s_principal() {
    let (addr, audit) = serve().await;
    let mut alice = Client::new(addr, "alice-token");
    alice.initialize(false).await;
    let mut list = alice.post(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})).await;
    assert_eq!(list.status, 200);
    let list = response_to(&mut list, 1).await;
    let names: Vec<&str> =
        list["result"]["tools"].as_array().unwrap().iter().filter_map(|t| t["name"].as_str()).collect();
    assert_eq!(names, ["read_note", "write_note"], "{list}");
    let mut call = alice.call(2, "read_note", json!({"id": 7})).await;
    assert_eq!(call.status, 200);
    let result = response_to(&mut call, 2).await;
    assert_eq!(result["result"]["isError"], false, "{result}");
    assert_eq!(result["result"]["content"][0]["text"], "note 7", "{result}");
    let records = audit.records();
    assert_eq!(statuses(&records, "read_note").last(), Some(&"executed"));
    assert!(records.iter().filter(|r| r.tool.is_some()).all(|r| r.user_id == "alice"));
    // The same token, the same principal, on the REST routes of the same router.
    let r = raw(addr, "GET /v1/runs HTTP/1.1", &[("Authorization", "Bearer alice-token")], b"").await;
    assert!(r.starts_with("HTTP/1.1 200"), "{r}");
}

#[tokio::test]
async fn bob_cannot_answer_resume_end_or_use_alices_session() {
    let (addr, audit) = serve().await;
    let mut alice = Client::new(addr, "alice-token");
    alice.initialize(true).await;
    let mut bob_own = Client::new(addr, "bob-token");
    bob_own.initialize(true).await;
    let alice_session = alice.session.clone().unwrap();

    // Alice's action waits for her answer; the question arrives on her call's stream.
    let mut call = alice.call(10, "write_note", json!({"id": 1, "text": "alice's"})).await;
    assert_eq!(call.status, 200);
    assert!(call.is_event_stream());
    let question = elicitation_id(&mut call).await;
    let mut alice_stream = alice.get_stream(None).await;
    assert_eq!(alice_stream.status, 200, "Alice's own stream opens");
    let event_id = alice_stream.next_event(Duration::from_millis(300)).await.and_then(|(id, _)| id);
    drop(alice_stream);
    let resume_id = event_id.unwrap_or_else(|| "0".to_owned());

    let bob = Client::new(addr, "bob-token").on_session_of(&alice);
    let unknown = Client { session: Some("no-such-session".into()), ..Client::new(addr, "bob-token") };
    let not_found = unknown.post(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})).await;
    assert_eq!(not_found.status, 404);
    let not_found_body = not_found.text().await;
    assert_eq!(not_found_body, "Not Found: Session not found");

    let attempts = [
        ("answer her elicitation", bob.answer(&question, true).await),
        ("open her stream", bob.get_stream(None).await),
        ("resume her stream", bob.get_stream(Some(&resume_id)).await),
        ("resume her stream from its start", bob.get_stream(Some("0")).await),
        ("call a tool on her session", bob.call(11, "write_note", json!({"id": 1, "text": "bob's"})).await),
        ("list tools on her session", bob.post(&json!({"jsonrpc": "2.0", "id": 12, "method": "tools/list"})).await),
        ("end her session", bob.delete().await),
    ];
    let attempted = attempts.len();
    for (what, r) in attempts {
        assert_eq!(r.status, 404, "{what}");
        assert_eq!(r.text().await, not_found_body, "{what}: the refusal does not confirm the session exists");
    }
    // Bob's answer to her question id on his own session reaches nothing.
    let r = bob_own.answer(&question, true).await;
    assert!(r.status == 202 || r.status == 200, "{}", r.status);

    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(writes_of(1).is_empty(), "nothing ran on Bob's attempts");
    let records = audit.records();
    assert_eq!(statuses(&records, "write_note"), ["proposed"], "Alice's action still waits");
    let refused: Vec<&AuditRecord> =
        records.iter().filter(|r| r.status == AuditStatus::Denied && r.session_id.as_str() == alice_session).collect();
    assert_eq!(refused.len(), attempted, "every attempt is audited");
    assert!(refused.iter().all(|r| r.user_id == "bob" && r.reason.as_deref().unwrap().contains("did not open")));

    // Her session is still hers: an answer under another request id approves nothing…
    let r = alice
        .post(&json!({"jsonrpc": "2.0", "id": 987654, "result": {"action": "accept", "content": {"approve": true}}}))
        .await;
    assert!(r.status == 202 || r.status == 200, "{}", r.status);
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(writes_of(1).is_empty(), "an answer for another request id approves nothing");
    // …her own answer runs the action exactly once…
    let r = alice.answer(&question, true).await;
    assert_eq!(r.status, 202);
    let result = response_to(&mut call, 10).await;
    assert_eq!(result["result"]["isError"], false, "{result}");
    assert_eq!(writes_of(1), [("alice".to_owned(), 1, "alice's".to_owned())]);
    // …and a second answer to the same question is not a second approval.
    let r = alice.answer(&question, true).await;
    assert!(r.status == 202 || r.status == 200, "{}", r.status);
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(writes_of(1).len(), 1, "executed exactly once");
    let list = alice.post(&json!({"jsonrpc": "2.0", "id": 13, "method": "tools/list"})).await;
    assert_eq!(list.status, 200, "her session still serves her");
    let records = audit.records();
    assert_eq!(statuses(&records, "write_note"), ["proposed", "confirmed", "executed"]);
    assert!(records.iter().filter(|r| r.tool.as_deref() == Some("write_note")).all(|r| r.user_id == "alice"));
    // Her own DELETE ends it; then it is unknown, even to her.
    let r = alice.delete().await;
    assert!(r.status == 200 || r.status == 202 || r.status == 204, "{}", r.status);
    let list = alice.post(&json!({"jsonrpc": "2.0", "id": 14, "method": "tools/list"})).await;
    assert_eq!(list.status, 404);
}

#[tokio::test]
async fn without_a_token_every_method_gets_401_and_nothing_is_recorded() {
    let (addr, audit) = serve().await;
    let mut alice = Client::new(addr, "alice-token");
    alice.initialize(true).await;
    let session = alice.session.clone().unwrap();
    let before = audit.records().len();
    for method in ["POST", "GET", "DELETE"] {
        let r = request(
            addr,
            method,
            &[("Accept", "application/json, text/event-stream"), ("Mcp-Session-Id", &session)],
            if method == "POST" { br#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"# } else { b"" },
        )
        .await;
        assert_eq!(r.status, 401, "{method}");
        assert!(r.header("www-authenticate").is_some_and(|v| v.starts_with("Bearer")), "{method}");
        assert!(r.text().await.contains("missing_token"), "{method}: the REST API's refusal");
    }
    // Another scheme, an unknown token: refused the same way; the scheme's case does not matter.
    for bearer in ["Basic YWxpY2U=", "Bearer nope"] {
        let c = Client { bearer: bearer.into(), ..alice.clone() };
        assert_eq!(c.post(&json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})).await.status, 401, "{bearer}");
    }
    assert_eq!(audit.records().len(), before, "nothing reached the runtime");
    let c = Client { bearer: "bEaReR alice-token".into(), ..alice.clone() };
    assert_eq!(c.post(&json!({"jsonrpc": "2.0", "id": 3, "method": "tools/list"})).await.status, 200);
}

#[tokio::test]
async fn a_request_from_a_foreign_origin_is_refused() {
    let (addr, audit) = serve().await;
    let alice = Client::new(addr, "alice-token");
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": mcp_common::PROTOCOL, "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}});
    let with_origin = |origin: &'static str| {
        let alice = alice.clone();
        let init = init.to_string();
        async move {
            request(
                addr,
                "POST",
                &[
                    ("Accept", "application/json, text/event-stream"),
                    ("Content-Type", "application/json"),
                    ("Authorization", alice.bearer.as_str()),
                    ("Origin", origin),
                ],
                init.as_bytes(),
            )
            .await
        }
    };
    let r = with_origin("https://evil.example").await;
    assert_eq!(r.status, 403);
    assert!(r.header("mcp-session-id").is_none(), "no session was made");
    assert!(audit.records().is_empty());
    let r = with_origin("https://APP.example/").await;
    assert_eq!(r.status, 200, "an allowed origin, in any case, with a trailing slash");
}

/// Sends one request line, headers and body on a new connection; the whole response.
async fn raw(addr: SocketAddr, line: &str, headers: &[(&str, &str)], body: &[u8]) -> String {
    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
    let mut head = format!("{line}\r\nHost: 127.0.0.1:{}\r\nConnection: close\r\n", addr.port());
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    s.write_all(head.as_bytes()).await.unwrap();
    let _ = s.write_all(body).await;
    let mut out = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(10), s.read_to_end(&mut out)).await;
    String::from_utf8_lossy(&out).into_owned()
}

#[tokio::test]
async fn an_oversized_body_gets_413_declared_or_chunked() {
    let (addr, audit) = serve().await;
    let mut alice = Client::new(addr, "alice-token");
    alice.initialize(false).await;
    // A tools/call a few times the limit (well within rmcp's own limit).
    let big = json!({"jsonrpc": "2.0", "id": 5, "method": "tools/call",
        "params": {"name": "write_note", "arguments": {"id": 2, "text": "x".repeat(4 * LIMIT)}}});
    let r = alice.post(&big).await;
    assert_eq!(r.status, 413, "declared length");
    let body = big.to_string();
    let chunked = format!("{:x}\r\n{body}\r\n0\r\n\r\n", body.len());
    let session = alice.session.clone().unwrap();
    let r = raw(
        addr,
        "POST /mcp HTTP/1.1",
        &[
            ("Accept", "application/json, text/event-stream"),
            ("Content-Type", "application/json"),
            ("Authorization", "Bearer alice-token"),
            ("MCP-Protocol-Version", mcp_common::PROTOCOL),
            ("Mcp-Session-Id", &session),
            ("Transfer-Encoding", "chunked"),
        ],
        chunked.as_bytes(),
    )
    .await;
    assert!(r.starts_with("HTTP/1.1 413"), "chunked, no declared length: {r}");
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(writes_of(2).is_empty());
    assert!(statuses(&audit.records(), "write_note").is_empty(), "nothing reached the runtime");
}

#[tokio::test]
async fn duplicate_keys_get_the_json_rpc_error_stdio_answers() {
    let (addr, audit) = serve().await;
    let mut alice = Client::new(addr, "alice-token");
    alice.initialize(false).await;
    let body =
        br#"{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"read_note","arguments":{"id":1,"id":2}}}"#;
    let r = alice.post_raw(body).await;
    assert_eq!(r.status, 400);
    let v: serde_json::Value = serde_json::from_str(&r.text().await).unwrap();
    assert_eq!(v["error"]["code"], -32600, "{v}");
    assert_eq!(v["id"], 6, "{v}");
    assert!(v["error"]["message"].as_str().unwrap().contains("duplicate"), "{v}");
    assert!(statuses(&audit.records(), "read_note").is_empty(), "nothing reached the runtime");
}

#[tokio::test]
async fn sessions_and_event_streams_are_capped_per_user() {
    let (addr, _audit) = serve_with(|e| {
        e.max_sessions_per_user = 2;
        e.max_streams_per_user = 1;
        e.sse_keep_alive = Duration::from_millis(50);
    })
    .await;
    let mut first = Client::new(addr, "alice-token");
    first.initialize(false).await;
    let mut second = Client::new(addr, "alice-token");
    second.initialize(false).await;
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": mcp_common::PROTOCOL, "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}});
    let r = Client::new(addr, "alice-token").post(&init).await;
    assert_eq!(r.status, 429, "a third session of the same user");
    assert!(r.header("mcp-session-id").is_none(), "no session was made");
    let mut bob = Client::new(addr, "bob-token");
    bob.initialize(false).await;
    // Ending one of hers frees its place.
    let r = second.delete().await;
    assert!(r.status == 200 || r.status == 202 || r.status == 204, "{}", r.status);
    Client::new(addr, "alice-token").initialize(false).await;

    let held = first.get_stream(None).await;
    assert_eq!(held.status, 200);
    assert_eq!(first.get_stream(None).await.status, 429, "a second stream of the same user");
    assert_eq!(bob.get_stream(None).await.status, 200, "another user's stream is his own count");
    // A stream given up gives its place back (once the server notices the closed connection).
    drop(held);
    let mut reopened = false;
    for _ in 0..200 {
        let r = first.get_stream(None).await;
        if r.status == 200 {
            reopened = true;
            break;
        }
        assert_eq!(r.status, 429);
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert!(reopened, "the closed stream's place came back");
}

#[test]
fn an_endpoint_that_cannot_be_served_is_refused_when_mounted() {
    let audit = Arc::new(MemorySink::new());
    let rt = Runtime::builder(audit.clone(), Arc::new(ScriptedProvider::new([]))).build();
    let builder = || Service::builder(Arc::new(Tokens), audit.clone(), audit.clone());
    let with = |f: fn(&mut McpEndpoint)| {
        let mut e = McpEndpoint::default();
        f(&mut e);
        e
    };
    for (what, endpoint) in [
        ("under /v1/", with(|e| e.path = "/v1/mcp".into())),
        ("no leading slash", with(|e| e.path = "mcp".into())),
        ("no body allowed", with(|e| e.max_body_bytes = 0)),
        ("no stream allowed", with(|e| e.max_streams_per_user = 0)),
    ] {
        let err = builder().mcp::<Notes>(rt.clone(), endpoint).unwrap_err();
        assert!(err.to_string().starts_with("invalid MCP endpoint"), "{what}: {err}");
    }
    let twice = builder()
        .mcp::<Notes>(rt.clone(), McpEndpoint::default())
        .unwrap()
        .mcp::<Notes>(rt.clone(), McpEndpoint::default());
    assert!(twice.unwrap_err().to_string().contains("already serves"));
    // An agent whose manifest does not name the service's endpoint is not mounted.
    let err = builder().mcp::<elsewhere::NotesElsewhere>(rt.clone(), McpEndpoint::default()).unwrap_err();
    assert!(
        err.to_string().contains("served over MCP only as stdio, http(auth = bearer), not `http(auth = service)`"),
        "{err}"
    );
    let err = builder().mcp::<elsewhere::NotesUnexposed>(rt, McpEndpoint::default()).unwrap_err();
    assert!(err.to_string().contains("declares no way to be served over MCP"), "{err}");
    assert!(err.to_string().contains("expose: { mcp: [http(auth = service)] }"), "{err}");
}

#[tokio::test]
async fn a_session_closed_for_idleness_is_purged_and_frees_its_place() {
    let (addr, _audit) = serve_with(|e| {
        e.max_sessions_per_user = 1;
        e.session_idle_timeout = Duration::from_millis(200);
        e.purge_interval = Duration::from_millis(50);
    })
    .await;
    let mut first = Client::new(addr, "alice-token");
    first.initialize(false).await;
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": mcp_common::PROTOCOL, "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}});
    assert_eq!(Client::new(addr, "alice-token").post(&init).await.status, 429, "her one place is taken");
    // Once rmcp closes the idle session, the purge forgets its owner and the place is free.
    let mut opened = false;
    for _ in 0..200 {
        let r = Client::new(addr, "alice-token").post(&init).await;
        if r.status == 200 {
            opened = true;
            break;
        }
        assert_eq!(r.status, 429);
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert!(opened, "the idle session was purged");
    let r = first.post(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})).await;
    assert_eq!(r.status, 404, "the closed session is unknown");
}

/// A service shutting down ends the confirmation pending on its MCP endpoint as `skipped`
/// with reason `shutdown`, never `disconnected`, also when the shutdown then closes the
/// client's connection; nothing runs.
#[tokio::test]
async fn a_confirmation_pending_at_shutdown_is_recorded_as_shutdown() {
    let audit = Arc::new(MemorySink::new());
    let rt = Runtime::builder(audit.clone(), Arc::new(ScriptedProvider::new([])))
        .roles(RoleMap::new().role("writer", ["note.read", "note.write"]))
        .build();
    let service = Service::builder(Arc::new(Tokens), audit.clone(), audit.clone())
        .agent::<Notes>(rt.clone())
        .mcp::<Notes>(rt, McpEndpoint::default())
        .unwrap()
        .build();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (signal, signalled) = tokio::sync::oneshot::channel::<()>();
    let stopping = service.clone();
    let server = tokio::spawn(
        agents_service::axum::serve(listener, service.router())
            .with_graceful_shutdown(async move {
                let _ = signalled.await;
                stopping.shutdown();
            })
            .into_future(),
    );
    let mut alice = Client::new(addr, "alice-token");
    alice.initialize(true).await;
    let mut call = alice.call(20, "write_note", json!({"id": 20, "text": "at shutdown"})).await;
    assert_eq!(call.status, 200);
    let _question = elicitation_id(&mut call).await;

    signal.send(()).unwrap();
    let ended = |records: &[AuditRecord]| {
        records.iter().find(|r| r.tool.as_deref() == Some("write_note") && r.status != AuditStatus::Proposed).cloned()
    };
    let mut found = None;
    for _ in 0..200 {
        found = ended(&audit.records());
        if found.is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    // The shutdown closes the connection: the client is gone too.
    drop(call);
    for _ in 0..200 {
        if found.is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
        found = ended(&audit.records());
    }
    let record = found.expect("the pending confirmation got a final record");
    assert_eq!(record.status, AuditStatus::Skipped);
    let reason = record.reason.as_deref().unwrap_or_default();
    assert!(reason.starts_with("shutdown:"), "recorded as the shutdown, not a disconnect: {reason}");
    assert!(writes_of(20).is_empty(), "nothing ran");
    assert_eq!(statuses(&audit.records(), "write_note"), ["proposed", "skipped"], "exactly one final record");
    drop(alice);
    server.abort();
}
