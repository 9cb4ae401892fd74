//! Limits of the MCP HTTP server against hostile clients: a thousand connections that send
//! their headers one byte a second do not stop a legitimate client and are cut off at the
//! header timeout; event streams and sessions per principal are capped; duplicate JSON keys are refused
//! with the error stdio gives; the bearer scheme is matched in any case; ended sessions are
//! purged on a timer.

mod mcp_common;

use agents_mcp::{HttpLimits, HttpServer, McpHttpOptions, McpOptions, serve_http, serve_io};
use agents_runtime::audit::{AuditStatus, MemorySink};
use agents_runtime::provider::ScriptedProvider;
use agents_runtime::{Principal, RoleMap, Runtime, agent, permissions, tool};
use mcp_common::{Client, request};
use serde_json::{Value, json};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};

permissions! {
    pub mod perms { note.read, note.write }
}

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
async fn write_note(id: u32, text: String) -> Result<String, String> {
    Ok(format!("{id}: {text}"))
}

agent! {
    /// Notes.
    pub struct Notes;
    tools: [read_note, write_note],
    expose: { mcp: [stdio, http(auth = bearer)] },
}

fn runtime(audit: &Arc<MemorySink>) -> Runtime {
    Runtime::builder(audit.clone(), Arc::new(ScriptedProvider::new([])))
        .roles(RoleMap::new().role("writer", ["note.read", "note.write"]))
        .build()
}

async fn server(audit: &Arc<MemorySink>, limits: HttpLimits) -> HttpServer {
    let mut opts = McpHttpOptions { limits, ..McpHttpOptions::default() };
    opts.bearer_tokens.insert("alice-token".into(), Principal::new("alice", "org1", "writer"));
    opts.bearer_tokens.insert("bob-token".into(), Principal::new("bob", "org1", "writer"));
    serve_http::<Notes>(runtime(audit), opts).await.unwrap()
}

/// Two thousand sockets (both ends) and the test's own: the soft limit goes up to the hard
/// one, and the test fails loudly if even that is too low.
fn enough_descriptors(needed: u64) {
    use rustix::process::{Resource, getrlimit, setrlimit};
    let mut limit = getrlimit(Resource::Nofile);
    if limit.current.is_some_and(|c| c < needed) {
        limit.current = limit.maximum;
        setrlimit(Resource::Nofile, limit).expect("raising the soft descriptor limit to the hard one");
    }
    let now = getrlimit(Resource::Nofile).current;
    assert!(
        now.is_none_or(|c| c >= needed),
        "this test needs {needed} file descriptors; the hard limit allows {now:?} (raise it with `ulimit -Hn`)"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_slow_header_senders_do_not_stop_a_legitimate_client() {
    const SLOW: usize = 1000;
    enough_descriptors(2 * SLOW as u64 + 256);
    let audit = Arc::new(MemorySink::new());
    let header_timeout = Duration::from_secs(3);
    let s = server(&audit, HttpLimits { header_read_timeout: header_timeout, ..HttpLimits::default() }).await;
    let addr = s.local_addr();
    let cut_off = Arc::new(AtomicUsize::new(0));
    let started = tokio::time::Instant::now();
    let window = header_timeout + Duration::from_secs(3);
    let mut slow = Vec::new();
    for _ in 0..SLOW {
        let cut_off = cut_off.clone();
        slow.push(tokio::spawn(async move {
            let mut stream = tokio::net::TcpStream::connect(addr).await.expect("connect");
            let head = format!(
                "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nAuthorization: Bearer alice-token\r\nX-Pad: {}\r\n",
                addr.port(),
                "a".repeat(64)
            );
            let mut buf = [0u8; 256];
            // One byte a second, never the end of the headers, until the server hangs up or
            // the window ends.
            for byte in head.bytes().cycle() {
                if started.elapsed() > window {
                    return;
                }
                if stream.write_all(&[byte]).await.is_err() {
                    cut_off.fetch_add(1, Ordering::SeqCst);
                    return;
                }
                // Read 0 (closed), an answer (408 or similar) or an error: cut off.
                if tokio::time::timeout(Duration::from_secs(1), stream.read(&mut buf)).await.is_ok() {
                    cut_off.fetch_add(1, Ordering::SeqCst);
                    return;
                }
            }
        }));
    }
    // Let them all connect and start trickling.
    tokio::time::sleep(Duration::from_millis(500)).await;

    // A legitimate client, one request per connection, while they hold their connections.
    let mut alice = Client::new(addr, "alice-token");
    alice.initialize(false).await;
    let mut latencies = Vec::new();
    let mut i = 0u64;
    while started.elapsed() < header_timeout - Duration::from_millis(500) || latencies.len() < 100 {
        i += 1;
        let t = std::time::Instant::now();
        let mut r = alice.post(&json!({"jsonrpc": "2.0", "id": i, "method": "tools/list"})).await;
        assert_eq!(r.status, 200, "request {i} of the legitimate client");
        let (_, m) = r.message().await.expect("an answer");
        assert!(m["result"]["tools"].is_array(), "{m}");
        latencies.push(t.elapsed());
        if latencies.len() >= 1000 {
            break;
        }
    }
    latencies.sort();
    let p = |q: f64| latencies[((latencies.len() as f64 * q).ceil() as usize).clamp(1, latencies.len()) - 1];
    eprintln!(
        "legitimate client beside {SLOW} slow header senders: {} requests, p50 {:?}, p99 {:?}, max {:?}",
        latencies.len(),
        p(0.50),
        p(0.99),
        latencies.last().unwrap()
    );
    for t in slow {
        t.await.unwrap();
    }
    let cut = cut_off.load(Ordering::SeqCst);
    eprintln!("{cut} of {SLOW} slow connections were cut off by the header timeout ({header_timeout:?})");
    assert_eq!(cut, SLOW, "every slow sender is cut off once its header time is up");
    s.shutdown();
    s.wait().await;
}

#[tokio::test]
async fn event_streams_per_principal_are_capped() {
    let audit = Arc::new(MemorySink::new());
    let s = server(&audit, HttpLimits { max_sse_streams_per_principal: 2, ..HttpLimits::default() }).await;
    let addr = s.local_addr();
    let mut sessions = Vec::new();
    for _ in 0..3 {
        let mut c = Client::new(addr, "alice-token");
        c.initialize(false).await;
        sessions.push(c);
    }
    let first = sessions[0].get_stream(None).await;
    let second = sessions[1].get_stream(None).await;
    assert_eq!((first.status, second.status), (200, 200));
    let third = sessions[2].get_stream(None).await;
    assert_eq!(third.status, 429, "a third stream of the same principal");
    // Another principal has slots of its own.
    let mut bob = Client::new(addr, "bob-token");
    bob.initialize(false).await;
    assert_eq!(bob.get_stream(None).await.status, 200);
    // A closed stream gives its slot back.
    drop(first);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        let again = sessions[2].get_stream(None).await;
        if again.status == 200 {
            break;
        }
        assert_eq!(again.status, 429);
        assert!(tokio::time::Instant::now() < deadline, "the closed stream's slot never came back");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    s.shutdown();
    s.wait().await;
}

#[tokio::test]
async fn sessions_per_principal_are_capped() {
    let audit = Arc::new(MemorySink::new());
    let s = server(&audit, HttpLimits { max_sessions_per_principal: 2, ..HttpLimits::default() }).await;
    let addr = s.local_addr();
    let mut alice = Vec::new();
    for _ in 0..2 {
        let mut c = Client::new(addr, "alice-token");
        c.initialize(false).await;
        alice.push(c);
    }
    assert_eq!(s.session_count(), 2);
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": mcp_common::PROTOCOL, "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}});
    let third = Client::new(addr, "alice-token").post(&init).await;
    assert_eq!(third.status, 429, "a third session of the same principal");
    assert!(third.header("mcp-session-id").is_none(), "no session was made");
    let text = third.text().await;
    assert!(text.contains("already has 2 open MCP sessions"), "{text}");
    assert_eq!(s.session_count(), 2, "the refused request made no session");
    // Another principal has sessions of its own.
    let mut bob = Client::new(addr, "bob-token");
    bob.initialize(false).await;
    // Ending a session gives its slot back.
    assert_eq!(alice[0].delete().await.status, 202);
    let mut again = Client::new(addr, "alice-token");
    again.initialize(false).await;
    assert_eq!(again.call(1, "read_note", json!({"id": 1})).await.status, 200, "the new session works");
    s.shutdown();
    s.wait().await;
}

/// The same frame, with a duplicate key, over stdio and over HTTP: the same JSON-RPC error.
#[tokio::test]
async fn duplicate_keys_get_the_stdio_error_over_http_and_nothing_runs() {
    let frame =
        r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"read_note","arguments":{"id":1,"id":2}}}"#;
    // stdio
    let audit = Arc::new(MemorySink::new());
    let (client, server_side) = tokio::io::duplex(64 * 1024);
    let (server_read, server_write) = tokio::io::split(server_side);
    let rt = runtime(&audit);
    let me = Principal::new("alice", "org1", "writer");
    let serving = tokio::spawn(serve_io::<Notes, _, _>(rt, me, McpOptions::default(), server_read, server_write));
    let (client_read, mut client_write) = tokio::io::split(client);
    client_write.write_all(format!("{frame}\n").as_bytes()).await.unwrap();
    let mut line = String::new();
    BufReader::new(client_read).read_line(&mut line).await.unwrap();
    let over_stdio: Value = serde_json::from_str(&line).unwrap();
    drop(client_write);
    serving.abort();
    // HTTP
    let http_audit = Arc::new(MemorySink::new());
    let s = server(&http_audit, HttpLimits::default()).await;
    let mut alice = Client::new(s.local_addr(), "alice-token");
    alice.initialize(false).await;
    let mut r = alice.post_raw(frame.as_bytes()).await;
    assert_eq!(r.status, 400);
    let (_, over_http) = r.message().await.expect("a JSON-RPC error");
    assert_eq!(over_http, over_stdio, "the same error on both transports");
    assert_eq!(over_http["id"], 7);
    assert_eq!(over_http["error"]["code"], -32600);
    assert!(over_http["error"]["message"].as_str().unwrap().contains("duplicate"), "{over_http}");
    assert!(
        http_audit.records().iter().all(|r| r.tool.is_none()),
        "refused before the gate: no call record, nothing ran"
    );
    // Also in a notification or a response (where rmcp's parse would keep the last key).
    let r = alice.post_raw(br#"{"jsonrpc":"2.0","id":3,"id":4,"result":{}}"#).await;
    assert_eq!(r.status, 400);
    s.shutdown();
    s.wait().await;
}

#[tokio::test]
async fn the_bearer_scheme_is_matched_in_any_case() {
    let audit = Arc::new(MemorySink::new());
    let s = server(&audit, HttpLimits::default()).await;
    for scheme in ["Bearer", "bearer", "BEARER", "bEaReR"] {
        let auth = format!("{scheme} alice-token");
        let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}});
        let r = request(
            s.local_addr(),
            "POST",
            &[
                ("Accept", "application/json, text/event-stream"),
                ("Content-Type", "application/json"),
                ("Authorization", &auth),
            ],
            init.to_string().as_bytes(),
        )
        .await;
        assert_eq!(r.status, 200, "{scheme}");
    }
    s.shutdown();
    s.wait().await;
}

#[tokio::test]
async fn idle_sessions_end_and_are_purged_with_their_end_record() {
    let audit = Arc::new(MemorySink::new());
    let limits = HttpLimits {
        session_idle_timeout: Duration::from_millis(500),
        purge_interval: Duration::from_millis(100),
        ..HttpLimits::default()
    };
    let s = server(&audit, limits).await;
    let mut alice = Client::new(s.local_addr(), "alice-token");
    alice.initialize(false).await;
    let list = alice.post(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})).await;
    assert_eq!(list.status, 200);
    drop(list);
    let session = alice.session.clone().unwrap();
    assert_eq!(s.session_count(), 1);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while s.session_count() > 0 {
        assert!(tokio::time::Instant::now() < deadline, "the idle session was never purged");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let ended = audit.records().iter().any(|r| {
        r.session_id.as_str() == session
            && r.status == AuditStatus::RunFinished
            && r.reason.as_deref() == Some("closed")
    });
    assert!(ended, "the ended session wrote its run_finished record");
    let r = alice.post(&json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})).await;
    assert_eq!(r.status, 404, "a purged session is unknown");
    s.shutdown();
    s.wait().await;
}
