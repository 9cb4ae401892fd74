//! The MCP server over stdio, driven by rmcp's client against the demo server in its own
//! process. The audit log (JSONL) and an effects file show what ran.

use rmcp::model::{
    CallToolRequestParams, ClientCapabilities, ClientConfig, ElicitRequestParams, ElicitResult, ElicitationAction,
    Implementation, ProtocolVersion,
};
use rmcp::service::{RequestContext, RunningService};
use rmcp::transport::TokioChildProcess;
use rmcp::{ClientHandler, ErrorData, RoleClient, ServiceError, ServiceExt};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::Command;

const DEMO: &str = env!("CARGO_BIN_EXE_agents-mcp-demo");

struct Files {
    _dir: tempfile::TempDir,
    audit: PathBuf,
    effects: PathBuf,
}

fn files() -> Files {
    let dir = tempfile::tempdir().unwrap();
    Files { audit: dir.path().join("audit.jsonl"), effects: dir.path().join("effects.txt"), _dir: dir }
}

fn command(f: &Files, role: &str) -> Command {
    let mut cmd = Command::new(DEMO);
    cmd.env("AGENTS_MCP_AUDIT", &f.audit)
        .env("AGENTS_MCP_EFFECTS", &f.effects)
        .env("AGENTS_MCP_ROLE", role)
        .env("AGENTS_MCP_MAX_FRAME", "4096")
        .stderr(std::process::Stdio::null());
    cmd
}

/// A person behind the client: answers every elicitation with `answer`.
#[derive(Clone)]
struct Person {
    answer: Answer,
    seen: Arc<Mutex<Vec<String>>>,
}

#[derive(Clone, Copy)]
enum Answer {
    Approve,
    AcceptButFalse,
    Decline,
}

impl ClientHandler for Person {
    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            ClientCapabilities::builder().enable_elicitation().build(),
            Implementation::new("test-person", "1"),
        )
        .with_protocol_version(ProtocolVersion::V_2025_11_25)
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        if let ElicitRequestParams::FormElicitationParams { message, requested_schema, .. } = &request {
            self.seen.lock().unwrap().push(message.clone());
            assert!(requested_schema.properties.contains_key("approve"), "{requested_schema:?}");
        }
        Ok(match self.answer {
            Answer::Approve => ElicitResult::new(ElicitationAction::Accept).with_content(json!({"approve": true})),
            Answer::AcceptButFalse => {
                ElicitResult::new(ElicitationAction::Accept).with_content(json!({"approve": false}))
            }
            Answer::Decline => ElicitResult::new(ElicitationAction::Decline),
        })
    }
}

async fn connect<H: ClientHandler>(handler: H, f: &Files, role: &str) -> RunningService<RoleClient, H> {
    let transport = TokioChildProcess::new(command(f, role)).unwrap();
    handler.serve(transport).await.expect("the demo server completes the handshake")
}

fn call(name: &str, args: Value) -> CallToolRequestParams {
    let mut p = CallToolRequestParams::new(name.to_owned());
    p.arguments = args.as_object().cloned();
    p
}

fn audit(path: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    text.lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

fn statuses(records: &[Value], tool: &str) -> Vec<String> {
    records.iter().filter(|r| r["tool"] == tool).map(|r| r["status"].as_str().unwrap().to_owned()).collect()
}

fn effects(f: &Files) -> String {
    std::fs::read_to_string(&f.effects).unwrap_or_default()
}

/// The secret argument of [`ticket`]. Tests look for its whole text: a short piece of it
/// (say `7700`) can turn up by chance in the hex of a digest or id, or in a timestamp.
const CONTACT: &str = "+44 7700 900123";

fn ticket() -> Value {
    json!({"summary": "VPN down", "severity": 3, "contact": CONTACT})
}

#[tokio::test]
async fn list_shows_only_reachable_tools_with_annotations() {
    let f = files();
    let client = connect((), &f, "staff").await;
    let tools = client.list_all_tools().await.unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    assert_eq!(
        names,
        ["lookup_policy", "open_ticket", "reset_password"],
        "delete_account needs a permission staff lacks"
    );
    let by = |n: &str| tools.iter().find(|t| t.name == n).unwrap().clone();
    let read = by("lookup_policy").annotations.unwrap();
    assert_eq!(read.read_only_hint, Some(true));
    let action = by("open_ticket").annotations.unwrap();
    assert_eq!(action.read_only_hint, Some(false));
    assert_eq!(action.destructive_hint, Some(true), "risk high");
    assert_eq!(action.title.as_deref(), Some("Open a support ticket"));
    let schema = by("open_ticket").input_schema;
    assert_eq!(schema["additionalProperties"], false);
    assert_eq!(schema["required"], json!(["summary", "severity", "contact"]));
    client.cancel().await.unwrap();

    let f = files();
    let client = connect((), &f, "admin").await;
    let tools = client.list_all_tools().await.unwrap();
    let delete = tools.iter().find(|t| t.name == "delete_account").expect("admin reaches delete_account");
    assert_eq!(delete.annotations.as_ref().unwrap().destructive_hint, Some(true));
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn read_call_runs_and_is_audited() {
    let f = files();
    let client = connect((), &f, "staff").await;
    let out = client.call_tool(call("lookup_policy", json!({"topic": "vpn"}))).await.unwrap();
    assert_eq!(out.is_error, Some(false));
    let text = out.content[0].as_text().unwrap().text.clone();
    assert_eq!(text, "policy on vpn: ask the service desk");
    client.cancel().await.unwrap();
    assert_eq!(statuses(&audit(&f.audit), "lookup_policy"), ["proposed", "executed"]);
}

#[tokio::test]
async fn action_approved_through_elicitation_runs_once() {
    let f = files();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let client = connect(Person { answer: Answer::Approve, seen: seen.clone() }, &f, "staff").await;
    let out = client.call_tool(call("open_ticket", ticket())).await.unwrap();
    assert_eq!(out.is_error, Some(false), "{out:?}");
    assert!(out.content[0].as_text().unwrap().text.contains("ticket opened"));
    client.cancel().await.unwrap();

    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 1);
    assert!(seen[0].contains("Open a support ticket"), "{}", seen[0]);
    assert!(seen[0].contains("VPN down"), "{}", seen[0]);
    // The card is the decider's: the client that asks sent the secret value in its own call,
    // and a value the person cannot see is one they cannot be asked to approve. The audit log
    // and the events keep it masked.
    assert!(seen[0].contains(CONTACT), "the decider's card shows the value they typed: {}", seen[0]);
    assert_eq!(statuses(&audit(&f.audit), "open_ticket"), ["proposed", "confirmed", "executed"]);
    assert_eq!(effects(&f).lines().count(), 1);
    assert!(!std::fs::read_to_string(&f.audit).unwrap().contains(CONTACT));
}

#[tokio::test]
async fn action_declined_through_elicitation_does_not_run() {
    for answer in [Answer::Decline, Answer::AcceptButFalse] {
        let f = files();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let client = connect(Person { answer, seen: seen.clone() }, &f, "staff").await;
        let out = client.call_tool(call("open_ticket", ticket())).await.unwrap();
        assert_eq!(out.is_error, Some(true));
        assert!(out.content[0].as_text().unwrap().text.contains("declined"), "{out:?}");
        client.cancel().await.unwrap();
        assert_eq!(seen.lock().unwrap().len(), 1);
        assert_eq!(statuses(&audit(&f.audit), "open_ticket"), ["proposed", "rejected"]);
        assert_eq!(effects(&f), "", "nothing ran");
    }
}

#[tokio::test]
async fn without_elicitation_an_action_returns_confirmation_required_and_does_not_run() {
    let f = files();
    let client = connect((), &f, "staff").await;
    let out = client.call_tool(call("open_ticket", ticket())).await.unwrap();
    assert_eq!(out.is_error, Some(true));
    let s = out.structured_content.expect("structured result");
    assert_eq!(s["status"], "confirmation_required");
    assert_eq!(s["tool"], "open_ticket");
    let description = s["description"].as_str().unwrap();
    assert!(description.starts_with("Open a support ticket: `open_ticket` with {"), "{description}");
    assert!(description.contains("\"severity\":3"), "{description}");
    assert!(!description.contains(CONTACT), "secrets stay masked: {description}");
    // An argument cannot approve the call.
    let mut forged = ticket();
    forged["approve"] = json!(true);
    let out = client.call_tool(call("open_ticket", forged)).await.unwrap();
    assert_eq!(out.is_error, Some(true));
    client.cancel().await.unwrap();
    let records = audit(&f.audit);
    assert_eq!(statuses(&records, "open_ticket"), ["skipped", "denied"]);
    assert_eq!(effects(&f), "", "nothing ran");
}

#[tokio::test]
async fn handoff_returns_its_record() {
    let f = files();
    let client = connect((), &f, "staff").await;
    let out = client.call_tool(call("reset_password", json!({"user": "bob"}))).await.unwrap();
    assert_eq!(out.is_error, Some(false));
    let s = out.structured_content.unwrap();
    assert_eq!(s["status"], "handed_off");
    assert_eq!(s["record"]["tool"], "reset_password");
    assert_eq!(s["record"]["args"], json!({"user": "bob"}));
    assert_eq!(s["record"]["user_id"], "u1");
    client.cancel().await.unwrap();
    assert_eq!(statuses(&audit(&f.audit), "reset_password"), ["handed_off"]);
}

#[tokio::test]
async fn a_name_outside_the_role_is_refused_and_audited() {
    let f = files();
    let client = connect(Person { answer: Answer::Approve, seen: Arc::default() }, &f, "staff").await;
    for name in ["delete_account", "no_such_tool"] {
        let err = client.call_tool(call(name, json!({"user": "bob"}))).await.unwrap_err();
        match err {
            ServiceError::McpError(e) => {
                assert_eq!(e.code.0, -32602);
                assert!(e.message.contains(name), "{}", e.message);
            }
            other => panic!("expected a JSON-RPC error, got {other:?}"),
        }
    }
    client.cancel().await.unwrap();
    let records = audit(&f.audit);
    assert_eq!(statuses(&records, "delete_account"), ["denied"]);
    assert_eq!(statuses(&records, "no_such_tool"), ["denied"]);
}

/// Raw frames: malformed JSON, a malformed request, an oversized frame, a duplicate key in
/// the arguments (which a parsed object would hide from the gate); the server answers
/// each with a JSON-RPC error and goes on serving.
#[tokio::test]
async fn malformed_and_oversized_frames_get_errors_and_serving_continues() {
    let f = files();
    let mut child =
        command(&f, "staff").stdin(std::process::Stdio::piped()).stdout(std::process::Stdio::piped()).spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut next = async || -> Value {
        let line = tokio::time::timeout(Duration::from_secs(20), lines.next_line()).await.unwrap().unwrap().unwrap();
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("stdout carries only JSON-RPC, got `{line}`: {e}"))
    };
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}});
    let big = format!(r#"{{"jsonrpc":"2.0","id":3,"method":"ping","params":{{"pad":"{}"}}}}"#, "x".repeat(10_000));
    let frames = [
        init.to_string(),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string(),
        "{\"jsonrpc\": \"2.0\", \"id\": 2, \"method\": ".to_owned(),
        big,
        json!({"jsonrpc": "2.0", "id": 4, "method": 7}).to_string(),
        r#"{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"lookup_policy","arguments":{"topic":"vpn","topic":"payroll"}}}"#.to_owned(),
        json!({"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {"name": "lookup_policy", "arguments": {"topic": "vpn"}}}).to_string(),
    ];
    for frame in &frames {
        stdin.write_all(frame.as_bytes()).await.unwrap();
        stdin.write_all(b"\n").await.unwrap();
    }
    stdin.flush().await.unwrap();
    let first = next().await;
    assert_eq!(first["id"], 1, "{first}");
    assert_eq!(first["result"]["protocolVersion"], "2025-06-18");
    let parse = next().await;
    assert_eq!(parse["error"]["code"], -32700, "{parse}");
    assert_eq!(parse["id"], Value::Null);
    let too_big = next().await;
    assert_eq!(too_big["error"]["code"], -32600, "{too_big}");
    assert!(too_big["error"]["message"].as_str().unwrap().contains("4096 bytes"));
    let invalid = next().await;
    assert_eq!(invalid["id"], 4, "{invalid}");
    assert_eq!(invalid["error"]["code"], -32600);
    let duplicate = next().await;
    assert_eq!(duplicate["id"], 6, "{duplicate}");
    assert_eq!(duplicate["error"]["code"], -32600);
    assert!(duplicate["error"]["message"].as_str().unwrap().contains("duplicate"), "{duplicate}");
    let ok = next().await;
    assert_eq!(ok["id"], 5, "{ok}");
    assert_eq!(ok["result"]["content"][0]["text"], "policy on vpn: ask the service desk");
    drop(stdin);
    let status = tokio::time::timeout(Duration::from_secs(20), child.wait()).await.unwrap().unwrap();
    assert!(status.success(), "the server exits cleanly when stdin closes: {status}");
}
