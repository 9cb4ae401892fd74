//! The streamable HTTP transport: Origin allowlist, bearer tokens, body limit, and the
//! principal each token maps to.

use agents_mcp::{HttpServer, McpHttpOptions, serve_http};
use agents_runtime::audit::MemorySink;
use agents_runtime::provider::ScriptedProvider;
use agents_runtime::{Principal, RoleMap, Runtime, agent, permissions, tool};
use serde_json::{Value, json};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

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
    expose: { mcp: [http(auth = bearer)] },
}

/// The same notes, declared to be served over stdio only, and not at all.
mod elsewhere {
    use super::{read_note, write_note};
    use agents_runtime::agent;

    agent! {
        /// Notes over stdio.
        pub struct NotesOverStdio;
        tools: [read_note, write_note],
        expose: { mcp: [stdio] },
    }

    agent! {
        /// Notes, not served over MCP.
        pub struct NotesUnexposed;
        tools: [read_note, write_note],
    }
}

const LIMIT: usize = 8 * 1024;

#[tokio::test]
async fn an_agent_whose_manifest_does_not_name_the_way_is_not_served() {
    let rt = || Runtime::builder(Arc::new(MemorySink::new()), Arc::new(ScriptedProvider::new([]))).build();
    let opts = || {
        let mut o = McpHttpOptions::default();
        o.bearer_tokens.insert("reader-token".into(), Principal::new("r1", "org1", "reader"));
        o
    };
    let not_served = |e: agents_mcp::McpError| match e {
        agents_mcp::McpError::NotExposed { agent, reason } => (agent, reason),
        other => panic!("expected NotExposed, got {other}"),
    };
    // Over HTTP with bearer tokens: refused before anything listens.
    let (agent, reason) = not_served(serve_http::<elsewhere::NotesOverStdio>(rt(), opts()).await.unwrap_err());
    assert_eq!(agent, "NotesOverStdio");
    assert!(reason.contains("only as stdio, not `http(auth = bearer)`"), "{reason}");
    let (_, reason) = not_served(serve_http::<elsewhere::NotesUnexposed>(rt(), opts()).await.unwrap_err());
    assert!(reason.contains("declares no way") && reason.contains("expose: { mcp: [http(auth = bearer)] }"));
    // Over a byte stream (stdio): refused before a frame is read or written.
    let me = Principal::new("r1", "org1", "reader");
    for served in [
        agents_mcp::serve_io::<Notes, _, _>(
            rt(),
            me.clone(),
            Default::default(),
            tokio::io::empty(),
            tokio::io::sink(),
        )
        .await,
        agents_mcp::serve_io::<elsewhere::NotesUnexposed, _, _>(
            rt(),
            me.clone(),
            Default::default(),
            tokio::io::empty(),
            tokio::io::sink(),
        )
        .await,
    ] {
        let (_, reason) = not_served(served.unwrap_err());
        assert!(reason.contains("not `stdio`"), "{reason}");
    }
}

async fn server() -> (HttpServer, Arc<MemorySink>) {
    let audit = Arc::new(MemorySink::new());
    let rt = Runtime::builder(audit.clone(), Arc::new(ScriptedProvider::new([])))
        .roles(RoleMap::new().role("reader", ["note.read"]).role("writer", ["note.read", "note.write"]))
        .build();
    let mut opts = McpHttpOptions {
        allowed_origins: vec!["http://app.example:3000".into()],
        max_body_bytes: LIMIT,
        ..McpHttpOptions::default()
    };
    opts.bearer_tokens.insert("reader-token".into(), Principal::new("r1", "org1", "reader"));
    opts.bearer_tokens.insert("writer-token".into(), Principal::new("w1", "org1", "writer"));
    let s = serve_http::<Notes>(rt, opts).await.unwrap();
    assert!(s.local_addr().ip().is_loopback(), "binds loopback by default");
    (s, audit)
}

struct Reply {
    status: u16,
    head: String,
    body: String,
}

/// One HTTP/1.1 request on its own connection; reads until the connection closes or a
/// JSON-RPC message with an id arrives (SSE responses may stay open).
async fn send(addr: SocketAddr, headers: &[(&str, &str)], body: &[u8], chunked: bool) -> Reply {
    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
    let mut req = format!("POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nConnection: close\r\n", addr.port());
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    if chunked {
        req.push_str("Transfer-Encoding: chunked\r\n\r\n");
        s.write_all(req.as_bytes()).await.unwrap();
        for part in body.chunks(1024) {
            s.write_all(format!("{:x}\r\n", part.len()).as_bytes()).await.unwrap();
            s.write_all(part).await.unwrap();
            s.write_all(b"\r\n").await.unwrap();
        }
        s.write_all(b"0\r\n\r\n").await.unwrap();
    } else {
        req.push_str(&format!("Content-Length: {}\r\n\r\n", body.len()));
        s.write_all(req.as_bytes()).await.unwrap();
        // The server may answer before reading a body it refuses.
        let _ = s.write_all(body).await;
    }
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    let _ = tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            match s.read(&mut chunk).await {
                Ok(0) | Err(_) => break,
                Ok(n) => buf.extend_from_slice(&chunk[..n]),
            }
            let text = String::from_utf8_lossy(&buf);
            if text.contains("\"id\":") && text.contains("\"jsonrpc\"") && text.trim_end().ends_with('}') {
                break;
            }
        }
    })
    .await;
    let text = String::from_utf8_lossy(&buf).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head.split_whitespace().nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
    Reply { status, head: head.to_ascii_lowercase(), body: body.to_owned() }
}

fn initialize() -> Vec<u8> {
    json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}})
        .to_string()
        .into_bytes()
}

const ACCEPT: (&str, &str) = ("Accept", "application/json, text/event-stream");
const JSON: (&str, &str) = ("Content-Type", "application/json");

/// The JSON-RPC message in a JSON or SSE body.
fn message(body: &str) -> Value {
    body.lines()
        .filter_map(|l| l.strip_prefix("data:").map(str::trim).or(Some(l.trim())))
        .find_map(|l| serde_json::from_str::<Value>(l).ok().filter(|v| v.get("jsonrpc").is_some()))
        .unwrap_or_else(|| panic!("no JSON-RPC message in {body:?}"))
}

#[tokio::test]
async fn origin_not_on_the_allowlist_gets_403() {
    let (s, _) = server().await;
    let r = send(
        s.local_addr(),
        &[ACCEPT, JSON, ("Authorization", "Bearer reader-token"), ("Origin", "http://evil.example")],
        &initialize(),
        false,
    )
    .await;
    assert_eq!(r.status, 403);
    let r = send(
        s.local_addr(),
        &[ACCEPT, JSON, ("Authorization", "Bearer reader-token"), ("Origin", "http://app.example:3000")],
        &initialize(),
        false,
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.head);
    s.shutdown();
}

#[tokio::test]
async fn missing_or_wrong_bearer_token_gets_401() {
    let (s, audit) = server().await;
    for auth in [None, Some("Bearer nope"), Some("Bearer reader-token-x"), Some("Basic cmVhZGVyLXRva2Vu")] {
        let mut h = vec![ACCEPT, JSON];
        if let Some(a) = auth {
            h.push(("Authorization", a));
        }
        let r = send(s.local_addr(), &h, &initialize(), false).await;
        assert_eq!(r.status, 401, "{auth:?}");
        assert!(r.head.contains("www-authenticate: bearer"), "{}", r.head);
    }
    assert!(audit.records().is_empty(), "nothing reached the runtime");
    s.shutdown();
}

#[tokio::test]
async fn oversized_bodies_get_413() {
    let (s, _) = server().await;
    let mut big = initialize();
    big.truncate(big.len() - 1);
    big.extend_from_slice(format!(r#","pad":"{}"}}"#, "x".repeat(LIMIT)).as_bytes());
    let auth = ("Authorization", "Bearer reader-token");
    let r = send(s.local_addr(), &[ACCEPT, JSON, auth], &big, false).await;
    assert_eq!(r.status, 413, "declared length");
    let r = send(s.local_addr(), &[ACCEPT, JSON, auth], &big, true).await;
    assert_eq!(r.status, 413, "chunked, no declared length");
    s.shutdown();
}

/// Each token's principal sees its own tools; the session stays bound to it.
#[tokio::test]
async fn the_token_decides_the_principal_and_its_tools() {
    let (s, audit) = server().await;
    let addr = s.local_addr();
    let mut lists = Vec::new();
    for token in ["reader-token", "writer-token"] {
        let bearer = format!("Bearer {token}");
        let auth = ("Authorization", bearer.as_str());
        let r = send(addr, &[ACCEPT, JSON, auth], &initialize(), false).await;
        assert_eq!(r.status, 200);
        assert_eq!(message(&r.body)["result"]["protocolVersion"], "2025-06-18");
        let sid =
            r.head.lines().find_map(|l| l.strip_prefix("mcp-session-id:")).expect("a session id").trim().to_owned();
        let session = ("Mcp-Session-Id", sid.as_str());
        let version = ("MCP-Protocol-Version", "2025-06-18");
        let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string();
        let r = send(addr, &[ACCEPT, JSON, auth, session, version], note.as_bytes(), false).await;
        assert_eq!(r.status, 202);
        let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}).to_string();
        let r = send(addr, &[ACCEPT, JSON, auth, session, version], list.as_bytes(), false).await;
        assert_eq!(r.status, 200);
        let listed = message(&r.body);
        if token == "writer-token" {
            let write = &listed["result"]["tools"][1];
            assert_eq!(
                write["annotations"],
                json!({"title": "Write a note", "readOnlyHint": false, "destructiveHint": false}),
                "medium risk"
            );
        }
        let names: Vec<String> = listed["result"]["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap().to_owned())
            .collect();
        lists.push(names);
        if token == "reader-token" {
            // Another token on this session is refused as if the session did not exist: a
            // session belongs to one principal (the cross-user suite covers every method).
            let other = ("Authorization", "Bearer writer-token");
            let r = send(addr, &[ACCEPT, JSON, other, session, version], list.as_bytes(), false).await;
            assert_eq!(r.status, 404, "{}", r.head);
        }
    }
    assert_eq!(lists, [vec!["read_note"], vec!["read_note", "write_note"]]);
    let users: Vec<String> = audit
        .records()
        .iter()
        .filter(|r| r.status == agents_runtime::audit::AuditStatus::RunStarted)
        .map(|r| r.user_id.to_string())
        .collect();
    assert_eq!(users, ["r1", "w1"], "one run_started per session, each for its own principal");
    s.shutdown();
    s.wait().await;
}

/// A person behind an rmcp HTTP client: approves every elicitation.
#[derive(Clone)]
struct Approver {
    seen: Arc<std::sync::Mutex<Vec<String>>>,
}

impl rmcp::ClientHandler for Approver {
    fn get_info(&self) -> rmcp::model::ClientConfig {
        rmcp::model::ClientConfig::new(
            rmcp::model::ClientCapabilities::builder().enable_elicitation().build(),
            rmcp::model::Implementation::new("http-person", "1"),
        )
        .with_protocol_version(rmcp::model::ProtocolVersion::V_2025_11_25)
    }

    async fn create_elicitation(
        &self,
        request: rmcp::model::ElicitRequestParams,
        _context: rmcp::service::RequestContext<rmcp::RoleClient>,
    ) -> Result<rmcp::model::ElicitResult, rmcp::ErrorData> {
        if let rmcp::model::ElicitRequestParams::FormElicitationParams { message, .. } = request {
            self.seen.lock().unwrap().push(message);
        }
        Ok(rmcp::model::ElicitResult::new(rmcp::model::ElicitationAction::Accept)
            .with_content(json!({"approve": true})))
    }
}

/// rmcp's streamable HTTP client with a bearer token: list, and an action confirmed through
/// elicitation over the SSE stream, with the same audit records as in-process.
#[tokio::test]
async fn rmcp_http_client_lists_and_confirms_through_elicitation() {
    use rmcp::ServiceExt;
    use rmcp::transport::StreamableHttpClientTransport;
    use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
    let _ = rustls::crypto::ring::default_provider().install_default();
    let (s, audit) = server().await;
    let config = StreamableHttpClientTransportConfig::with_uri(format!("http://{}/mcp", s.local_addr()))
        .auth_header("writer-token");
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let client =
        Approver { seen: seen.clone() }.serve(StreamableHttpClientTransport::from_config(config)).await.unwrap();
    let tools = client.list_all_tools().await.unwrap();
    assert_eq!(tools.iter().map(|t| t.name.as_ref()).collect::<Vec<_>>(), ["read_note", "write_note"]);
    let mut params = rmcp::model::CallToolRequestParams::new("write_note");
    params.arguments = json!({"id": 7, "text": "hello"}).as_object().cloned();
    let out = client.call_tool(params).await.unwrap();
    assert_eq!(out.is_error, Some(false), "{out:?}");
    assert_eq!(out.content[0].as_text().unwrap().text, "7: hello");
    client.cancel().await.unwrap();
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 1);
    assert!(seen[0].contains("Write a note") && seen[0].contains("hello"), "{}", seen[0]);
    let statuses: Vec<String> = audit
        .records()
        .iter()
        .filter(|r| r.tool.as_deref() == Some("write_note"))
        .map(|r| serde_json::to_value(r.status).unwrap().as_str().unwrap().to_owned())
        .collect();
    assert_eq!(statuses, ["proposed", "confirmed", "executed"]);
    assert!(audit.records().iter().all(|r| r.user_id == "w1"));
    s.shutdown();
}
