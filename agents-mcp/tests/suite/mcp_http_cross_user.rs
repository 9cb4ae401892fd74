//! Another user of the same MCP HTTP server: Bob, with his own valid token and Alice's
//! session id, tries to answer her elicitation, read or resume her event stream, end her
//! session and call tools on it. Every attempt gets the 404 of an unknown session, changes
//! nothing and is audited; Alice's action runs only on her own answer, once.

use crate::mcp_common;

use agents_mcp::{HttpServer, McpHttpOptions, serve_http};
use agents_runtime::audit::{AuditRecord, AuditStatus, MemorySink};
use agents_runtime::provider::ScriptedProvider;
use agents_runtime::{Principal, RoleMap, Runtime, agent, permissions, tool};
use mcp_common::{Client, elicitation_id, request, response_to};
use serde_json::json;
use std::sync::{Arc, Mutex};
use std::time::Duration;

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
    expose: { mcp: [http(auth = bearer)] },
}

fn writes_of(id: u32) -> Vec<(String, u32, String)> {
    WRITTEN.lock().unwrap().iter().filter(|w| w.1 == id).cloned().collect()
}

async fn server() -> (HttpServer, Arc<MemorySink>) {
    let audit = Arc::new(MemorySink::new());
    let rt = Runtime::builder(audit.clone(), Arc::new(ScriptedProvider::new([])))
        .roles(RoleMap::new().role("writer", ["note.read", "note.write"]))
        .build();
    let mut opts = McpHttpOptions::default();
    opts.bearer_tokens.insert("alice-token".into(), Principal::new("alice", "org1", "writer"));
    opts.bearer_tokens.insert("bob-token".into(), Principal::new("bob", "org1", "writer"));
    (serve_http::<Notes>(rt, opts).await.unwrap(), audit)
}

fn statuses(records: &[AuditRecord], tool: &str) -> Vec<&'static str> {
    records.iter().filter(|r| r.tool.as_deref() == Some(tool)).map(|r| r.status.as_str()).collect()
}

#[tokio::test]
async fn bob_cannot_answer_resume_end_or_use_alices_session() {
    let (s, audit) = server().await;
    let addr = s.local_addr();
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
    // An event id of Alice's stream, as a resume would name it.
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

    // Every attempt: the answer of an unknown session, word for word.
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

    // Her session is still hers and works: an answer under another id is not hers to give…
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
    s.shutdown();
    s.wait().await;
}

#[tokio::test]
async fn without_a_token_every_method_gets_401_and_nothing_is_recorded() {
    let (s, audit) = server().await;
    let addr = s.local_addr();
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
    }
    assert_eq!(audit.records().len(), before, "nothing reached the runtime");
    let list = alice.post(&json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})).await;
    assert_eq!(list.status, 200);
    s.shutdown();
    s.wait().await;
}

#[tokio::test]
async fn alice_ending_her_own_session_is_recorded_and_the_session_is_gone() {
    let (s, audit) = server().await;
    let addr = s.local_addr();
    let mut alice = Client::new(addr, "alice-token");
    alice.initialize(true).await;
    let list = alice.post(&json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})).await;
    assert_eq!(list.status, 200);
    let session = alice.session.clone().unwrap();
    assert_eq!(s.session_count(), 1);
    let r = alice.delete().await;
    assert!(r.status == 200 || r.status == 202 || r.status == 204, "{}", r.status);
    assert_eq!(s.session_count(), 0, "the owner record goes with the session");
    let list = alice.post(&json!({"jsonrpc": "2.0", "id": 3, "method": "tools/list"})).await;
    assert_eq!(list.status, 404, "an ended session is unknown, even to its owner");
    // The session's start and end records, like a run's.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    loop {
        // (Her request after the end was refused and audited like anyone's.)
        let of_session: Vec<AuditStatus> = audit
            .records()
            .iter()
            .filter(|r| r.session_id.as_str() == session && r.status != AuditStatus::Denied)
            .map(|r| r.status)
            .collect();
        if of_session.contains(&AuditStatus::RunFinished) {
            assert_eq!(of_session.first(), Some(&AuditStatus::RunStarted));
            assert_eq!(of_session.last(), Some(&AuditStatus::RunFinished));
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "no run_finished for the ended session: {of_session:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    s.shutdown();
    s.wait().await;
}
