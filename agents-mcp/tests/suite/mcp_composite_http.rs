//! A composite served over MCP streamable HTTP ([`serve_composite_http`]) on a loopback
//! socket, reached by rmcp's streamable HTTP client with a bearer token: the action a nested
//! node proposes is asked of the token's principal through elicitation and decided by their
//! answer, for them; declined, it is `rejected` and nothing runs; another user's token can
//! neither answer the question nor see it; a client without elicitation is told why nothing
//! ran; a composite with a node not served over HTTP is refused naming it; a foreign `Host`
//! is refused before anything runs.

use crate::mcp_common::{Client, elicitation_id, request};
use crate::order_flow::*;
use crate::run_common::ran;
use agents_mcp::{HttpServer, McpError, McpHttpOptions, serve_composite_http};
use agents_runtime::audit::{AuditRecord, AuditStatus, MemorySink};
use agents_runtime::{Principal, RoleMap, Runtime};
use rmcp::model::{CallToolRequestParams, CallToolResult};
use rmcp::service::RunningService;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{RoleClient, ServiceExt};
use serde_json::json;
use std::sync::Arc;
use std::time::Duration;

fn alice() -> Principal {
    Principal::new("alice", "org1", "buyer")
}

fn bob() -> Principal {
    Principal::new("bob", "org1", "buyer")
}

fn runtime(audit: Arc<MemorySink>) -> Runtime {
    Runtime::builder(audit, Arc::new(model()))
        .roles(RoleMap::new().role("buyer", ["items.read", "items.write"]))
        .build()
}

fn options() -> McpHttpOptions {
    let mut opts = McpHttpOptions::default();
    opts.bearer_tokens.insert("alice-token".into(), alice());
    opts.bearer_tokens.insert("bob-token".into(), bob());
    opts
}

/// The order flow served on a loopback port for Alice and Bob.
async fn server() -> (HttpServer, Runtime, Arc<MemorySink>) {
    let audit = Arc::new(MemorySink::new());
    let rt = runtime(audit.clone());
    let server = serve_composite_http::<OrderFlow>(rt.clone(), options()).await.expect("served");
    (server, rt, audit)
}

/// rmcp's streamable HTTP client with `token`, its person answering `answer`.
async fn connect(s: &HttpServer, token: &str, answer: Answer) -> (RunningService<RoleClient, Person>, Person) {
    let config =
        StreamableHttpClientTransportConfig::with_uri(format!("http://{}/mcp", s.local_addr())).auth_header(token);
    let person = Person::new(answer);
    let client = person.clone().serve(StreamableHttpClientTransport::from_config(config)).await.expect("handshake");
    (client, person)
}

fn order(item: &str) -> CallToolRequestParams {
    let mut p = CallToolRequestParams::new(FLOW.to_owned());
    p.arguments = json!({"input": item}).as_object().cloned();
    p
}

async fn call(client: &RunningService<RoleClient, Person>, item: &str) -> CallToolResult {
    let call = client.call_tool(order(item));
    tokio::time::timeout(Duration::from_secs(30), call).await.expect("the tree ended within 30 s").expect("a result")
}

fn orders(audit: &MemorySink, status: AuditStatus) -> Vec<AuditRecord> {
    audit.records().into_iter().filter(|r| r.status == status && r.tool.as_deref() == Some("submit_item")).collect()
}

fn texts(out: &CallToolResult) -> String {
    out.content.iter().filter_map(|c| c.as_text().map(|t| t.text.clone())).collect::<Vec<_>>().join("\n")
}

#[tokio::test]
async fn a_nested_action_is_decided_through_elicitation_by_the_tokens_principal_and_runs_once() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let (s, _rt, audit) = server().await;
    let (client, person) = connect(&s, "alice-token", Answer::Approve).await;
    let tools = client.list_all_tools().await.unwrap();
    assert_eq!(tools.iter().map(|t| t.name.as_ref()).collect::<Vec<_>>(), [FLOW], "the composite's one tool");
    let item = "a cable (approved over http)";
    let out = call(&client, item).await;
    assert_eq!(out.is_error, Some(false), "{out:?}");
    assert_eq!(out.structured_content, Some(json!({"output": format!("finished: \"{item} ordered\"")})));
    assert_eq!(ran(item), 1, "the approved order ran exactly once");
    let asked = person.asked.lock().unwrap().clone();
    assert_eq!(asked.len(), 1, "{asked:?}");
    assert!(asked[0].contains("Submit an order") && asked[0].contains(item), "{}", asked[0]);
    let confirmed = orders(&audit, AuditStatus::Confirmed);
    assert_eq!(confirmed.len(), 1, "{:?}", audit.records());
    assert_eq!(confirmed[0].user_id.as_ref(), "alice", "decided for the token's principal");
    let executed = orders(&audit, AuditStatus::Executed);
    assert_eq!(executed.len(), 1);
    assert_eq!(executed[0].node.as_ref().map(|n| n.path.clone()), Some(format!("{FLOW}/desk")));
    assert!(audit.records().iter().all(|r| r.user_id.as_ref() == "alice"), "every record is Alice's");
    client.cancel().await.unwrap();
    s.shutdown();
    s.wait().await;
}

#[tokio::test]
async fn a_declined_nested_action_is_rejected_and_nothing_runs() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let (s, _rt, audit) = server().await;
    let (client, person) = connect(&s, "alice-token", Answer::Decline).await;
    let item = "a cable (declined over http)";
    let out = call(&client, item).await;
    assert_eq!(ran(item), 0, "a declined order never runs");
    assert_eq!(person.asked.lock().unwrap().len(), 1);
    assert_eq!(orders(&audit, AuditStatus::Rejected).len(), 1, "{:?}", audit.records());
    assert!(orders(&audit, AuditStatus::Executed).is_empty());
    let output = out.structured_content.expect("the tree's output")["output"].as_str().unwrap().to_owned();
    assert!(output.starts_with("finished: ") && !output.contains("ordered"), "{output}");
    client.cancel().await.unwrap();
    s.shutdown();
}

#[tokio::test]
async fn a_client_without_elicitation_is_told_why_the_nested_action_did_not_run() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let (s, _rt, audit) = server().await;
    let (client, person) = connect(&s, "alice-token", Answer::CannotAsk).await;
    let item = "a cable (no elicitation over http)";
    let out = call(&client, item).await;
    assert_eq!(ran(item), 0, "nothing runs without a person's decision");
    assert!(person.asked.lock().unwrap().is_empty(), "the client was never asked");
    assert_eq!(orders(&audit, AuditStatus::Rejected).len(), 1, "{:?}", audit.records());
    let said = texts(&out);
    assert!(said.contains("1 action(s) of the run tree were rejected"), "{said}");
    assert!(said.contains("cannot ask a person"), "{said}");
    assert!(said.contains("a client that supports elicitation") && said.contains("decisions API"), "{said}");
    client.cancel().await.unwrap();
    s.shutdown();
}

/// Alice's nested action waits for her answer; Bob, with his own valid token, cannot answer
/// her question on her session, does not see it in his own session or among his pending
/// decisions, and cannot decide it through the runtime; Alice's own answer then decides it.
#[tokio::test]
async fn another_users_token_can_neither_decide_nor_see_the_nested_action() {
    let (s, rt, audit) = server().await;
    let addr = s.local_addr();
    let mut alice_raw = Client::new(addr, "alice-token");
    alice_raw.initialize(true).await;
    let item = "a cable (alice's, bob tries)";
    let mut call = alice_raw.call(5, FLOW, json!({"input": item})).await;
    assert_eq!(call.status, 200);
    let question = elicitation_id(&mut call).await;

    // Bob on Alice's session: the same 404 as an unknown session, audited, nothing decided.
    let bob_raw = Client::new(addr, "bob-token").on_session_of(&alice_raw);
    let answered = bob_raw.answer(&question, true).await;
    assert_eq!(answered.status, 404, "{}", answered.status);
    let _ = answered.text().await;
    // Bob in his own session sees only the tool; the runtime lists nothing of Alice's for him.
    let mut bob_own = Client::new(addr, "bob-token");
    bob_own.initialize(true).await;
    assert!(rt.pending_decisions(&bob()).await.unwrap().is_empty(), "Bob sees nothing of Alice's");
    let pending = rt.pending_decisions(&alice()).await.unwrap();
    assert_eq!(pending.len(), 1, "Alice's action still waits");
    let refused = rt.decide_async(&pending[0].call_id, &bob(), agents_runtime::run::Verdict::Approve, None).await;
    assert!(refused.is_err(), "Bob cannot decide Alice's action: {refused:?}");
    assert_eq!(ran(item), 0, "nothing ran on Bob's attempts");
    let denied: Vec<_> = audit.records().into_iter().filter(|r| r.status == AuditStatus::Denied).collect();
    assert!(
        denied.iter().any(|r| r.user_id.as_ref() == "bob" && r.agent.as_ref() == FLOW),
        "Bob's attempt on Alice's session is audited under the composite: {denied:?}"
    );

    // Alice answers her own question: the action runs once, decided by her.
    let mine = alice_raw.answer(&question, true).await;
    assert_eq!(mine.status, 202, "Alice's answer is taken");
    let _ = mine.text().await;
    let done = crate::mcp_common::response_to(&mut call, 5).await;
    assert_eq!(done["result"]["structuredContent"]["output"], json!(format!("finished: \"{item} ordered\"")));
    assert_eq!(ran(item), 1);
    let confirmed = orders(&audit, AuditStatus::Confirmed);
    assert_eq!(confirmed.len(), 1);
    assert_eq!(confirmed[0].user_id.as_ref(), "alice");
    s.shutdown();
}

/// A composite one of whose agent nodes (directly, or in a nested composite) is not served
/// over HTTP is refused before anything listens, naming the node.
#[tokio::test]
async fn a_composite_with_a_node_not_exposed_over_http_refuses_to_serve() {
    let rt = runtime(Arc::new(MemorySink::new()));
    for refused in [
        serve_composite_http::<StdioFlow>(rt.clone(), options()).await.expect_err("refused"),
        serve_composite_http::<OuterStdioFlow>(rt.clone(), options()).await.expect_err("refused"),
    ] {
        assert!(matches!(&refused, McpError::NotExposed { agent, .. } if agent == "StdioDesk"), "{refused}");
        let text = refused.to_string();
        assert!(text.contains("is served over MCP only as stdio") && text.contains("http(auth = bearer)"), "{text}");
    }
}

/// A request whose `Host` is not an allowed one (DNS rebinding) is refused, as for an agent,
/// and starts nothing.
#[tokio::test]
async fn a_foreign_host_is_refused() {
    let (s, _rt, audit) = server().await;
    let addr = s.local_addr();
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": crate::mcp_common::PROTOCOL, "capabilities": {"elicitation": {"form": {}}},
        "clientInfo": {"name": "raw", "version": "1"}}});
    let headers = [
        ("Accept", "application/json, text/event-stream"),
        ("Content-Type", "application/json"),
        ("Authorization", "Bearer alice-token"),
        ("Host", "rebound.example"),
    ];
    let refused = request_with_host(addr, &headers, init.to_string().as_bytes()).await;
    assert_eq!(refused, 403, "a foreign Host is refused");
    assert_eq!(s.session_count(), 0, "no session was made");
    assert!(audit.records().is_empty(), "nothing ran: {:?}", audit.records());
    // The same request with the loopback host is served.
    let served = request(addr, "POST", &headers[..3], init.to_string().as_bytes()).await;
    assert_eq!(served.status, 200);
    s.shutdown();
}

/// A POST whose `Host` header is the one in `headers` (not the loopback address); its status.
async fn request_with_host(addr: std::net::SocketAddr, headers: &[(&str, &str)], body: &[u8]) -> u16 {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let mut head = "POST /mcp HTTP/1.1\r\nConnection: close\r\n".to_owned();
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str(&format!("Content-Length: {}\r\n\r\n", body.len()));
    stream.write_all(head.as_bytes()).await.unwrap();
    let _ = stream.write_all(body).await;
    let mut buf = [0u8; 64];
    let n = tokio::time::timeout(Duration::from_secs(10), stream.read(&mut buf)).await.expect("an answer").unwrap();
    let line = String::from_utf8_lossy(&buf[..n]).into_owned();
    line.split_whitespace().nth(1).and_then(|s| s.parse().ok()).unwrap_or(0)
}
