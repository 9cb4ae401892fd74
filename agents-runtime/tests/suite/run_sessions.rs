//! Sessions: bound to user, organisation and role; replay capped in bytes; idle expiry and
//! an explicit end; idle sessions swept by the runtime's own timer; a cap on the sessions
//! held, the least recently used evicted; memory of many finished sessions bounded.

use agents_runtime::RunResultExt as _;
use agents_runtime::audit::MemorySink;
use agents_runtime::provider::scripted::{reply, tool_call};
use agents_runtime::provider::{ChatMessage, ChatRequest, ChatResponse, ScriptedProvider};
use agents_runtime::run::StartError;
use agents_runtime::store::MemoryStore;
use agents_runtime::{Principal, RoleMap, RunStatus, Runtime, agent, permissions, tool};
use std::sync::Arc;
use std::time::Duration;

permissions! {
    pub mod perms { case.read }
}

/// Reads a case file.
#[tool(permission = perms::case::read)]
async fn read_case(id: u32) -> Result<String, String> {
    Ok(format!("case {id}: confidential-finding-{id}"))
}

agent! {
    /// Case assistant.
    pub struct Cases;
    tools: [read_case],
}

fn roles() -> RoleMap {
    RoleMap::new().role("investigator", ["case.read"]).role("clerk", ["case.read"])
}

fn as_role(role: &str) -> Principal {
    Principal::new("u1", "org1", role)
}

fn runtime(provider: &Arc<ScriptedProvider>) -> agents_runtime::RuntimeBuilder {
    Runtime::builder(Arc::new(MemorySink::new()), provider.clone()).roles(roles())
}

async fn turn(
    rt: &Runtime,
    p: &ScriptedProvider,
    who: Principal,
    session: &str,
    input: &str,
    script: Vec<ChatResponse>,
) {
    for r in script {
        p.push(r);
    }
    let out = rt.start::<Cases>(who, session, input.to_owned()).unwrap().wait().await;
    assert_eq!(out.status(), RunStatus::Completed, "{out:?}");
}

/// Everything the model was sent in a request, as one text.
fn all_text(r: &ChatRequest) -> String {
    let mut t = r.system.clone();
    for m in &r.messages {
        match m {
            ChatMessage::User { content } | ChatMessage::Assistant { content, .. } => t.push_str(content),
            ChatMessage::Tool { content, .. } => t.push_str(content),
        }
    }
    t
}

#[tokio::test]
async fn a_role_change_starts_a_fresh_context() {
    let provider = Arc::new(ScriptedProvider::new(Vec::<ChatResponse>::new()));
    let rt = runtime(&provider).build();
    let script = vec![tool_call("read_case", r#"{"id": 7}"#), reply("Case 7 says confidential-finding-7.")];
    turn(&rt, &provider, as_role("investigator"), "s-role", "read case 7", script).await;
    turn(&rt, &provider, as_role("investigator"), "s-role", "and again?", vec![reply("same")]).await;
    assert!(all_text(&provider.requests()[2]).contains("confidential-finding-7"), "same role: context kept");
    turn(&rt, &provider, as_role("clerk"), "s-role", "what did you find?", vec![reply("nothing yet")]).await;
    let reqs = provider.requests();
    let under_clerk = reqs.last().unwrap();
    assert!(!all_text(under_clerk).contains("confidential-finding-7"), "{under_clerk:?}");
    assert_eq!(under_clerk.messages, vec![ChatMessage::User { content: "what did you find?".into() }]);
    // Another user still cannot use the session at all.
    let other = Principal::new("u2", "org1", "clerk");
    assert!(matches!(rt.start::<Cases>(other, "s-role", "hi".into()), Err(StartError::SessionNotYours(_))));
}

#[tokio::test]
async fn replay_is_capped_in_bytes_as_well_as_messages() {
    let provider = Arc::new(ScriptedProvider::new(Vec::<ChatResponse>::new()));
    let rt = runtime(&provider).history_bytes(1000).build();
    let me = as_role("clerk");
    turn(&rt, &provider, me.clone(), "s-bytes", "first", vec![reply("one")]).await;
    let huge = "x".repeat(50_000);
    turn(&rt, &provider, me.clone(), "s-bytes", &huge, vec![reply("that is long")]).await;
    turn(&rt, &provider, me.clone(), "s-bytes", "third", vec![reply("three")]).await;
    turn(&rt, &provider, me.clone(), "s-bytes", "fourth", vec![reply("four")]).await;
    let reqs = provider.requests();
    let last = reqs.last().unwrap();
    let replayed: usize = last
        .messages
        .iter()
        .map(|m| {
            all_text(&ChatRequest {
                system: String::new(),
                messages: vec![m.clone()],
                tools: vec![],
                response_schema: None,
            })
            .len()
        })
        .sum();
    assert!(replayed <= 1000 + "fourth".len(), "{replayed} bytes sent");
    assert_eq!(
        last.messages,
        vec![
            ChatMessage::User { content: "third".into() },
            ChatMessage::Assistant { content: "three".into(), tool_calls: vec![] },
            ChatMessage::User { content: "fourth".into() },
        ],
        "the huge message and what came before it are left out; the replay starts on a user message"
    );
}

#[tokio::test]
async fn a_session_can_be_ended_by_its_owner_only() {
    let provider = Arc::new(ScriptedProvider::new(Vec::<ChatResponse>::new()));
    let rt = runtime(&provider).build();
    let me = as_role("clerk");
    turn(&rt, &provider, me.clone(), "s-end", "remember 42", vec![reply("ok")]).await;
    assert_eq!(rt.session_count(), 1);
    let stranger = Principal::new("u2", "org1", "clerk");
    assert!(matches!(rt.end_session(&stranger, "s-end"), Err(StartError::SessionNotYours(_))));
    assert_eq!(rt.session_count(), 1, "a refused end changes nothing");
    assert!(rt.end_session(&me, "s-end").unwrap());
    assert_eq!(rt.session_count(), 0);
    assert!(!rt.end_session(&me, "s-end").unwrap());
    turn(&rt, &provider, me, "s-end", "what number?", vec![reply("no idea")]).await;
    assert_eq!(provider.requests().last().unwrap().messages.len(), 1, "the next run starts afresh");
}

#[tokio::test(start_paused = true)]
async fn idle_sessions_expire_and_are_purged() {
    let provider = Arc::new(ScriptedProvider::new(Vec::<ChatResponse>::new()));
    // Purged by hand here: the runtime's own sweep is off.
    let rt = runtime(&provider).session_idle_timeout(Duration::from_secs(600)).sweep_every(None).build();
    let me = as_role("clerk");
    turn(&rt, &provider, me.clone(), "s-idle", "remember 42", vec![reply("ok")]).await;
    turn(&rt, &provider, me.clone(), "s-busy", "remember 7", vec![reply("ok")]).await;
    tokio::time::advance(Duration::from_secs(300)).await;
    turn(&rt, &provider, me.clone(), "s-busy", "still here", vec![reply("yes")]).await;
    assert_eq!(provider.requests().last().unwrap().messages.len(), 3, "within the idle time: context kept");
    tokio::time::advance(Duration::from_secs(301)).await;
    assert_eq!(rt.purge_expired(), 1, "the idle session is purged, the busy one kept");
    assert_eq!(rt.session_count(), 1);
    tokio::time::advance(Duration::from_secs(600)).await;
    turn(&rt, &provider, me, "s-busy", "what number?", vec![reply("no idea")]).await;
    assert_eq!(provider.requests().last().unwrap().messages.len(), 1, "an expired session starts afresh");
}

/// Nobody calls `purge_expired` or `prune_state`: the runtime's own timer (every minute by
/// default) drops the sessions idle for longer than the idle timeout, here and in the store.
#[tokio::test(start_paused = true)]
async fn idle_sessions_are_swept_without_anyone_asking() {
    let provider = Arc::new(ScriptedProvider::new(Vec::<ChatResponse>::new()));
    let store = Arc::new(MemoryStore::new());
    let rt = runtime(&provider).store(store.clone()).session_idle_timeout(Duration::from_secs(600)).build();
    let me = as_role("clerk");
    for i in 0..5 {
        turn(&rt, &provider, me.clone(), &format!("s-sweep-{i}"), "remember 42", vec![reply("ok")]).await;
    }
    assert_eq!((rt.session_count(), store.session_count()), (5, 5));
    tokio::time::sleep(Duration::from_secs(540)).await;
    assert_eq!((rt.session_count(), store.session_count()), (5, 5), "within the idle time: kept");
    tokio::time::sleep(Duration::from_secs(180)).await;
    assert_eq!(rt.session_count(), 0, "swept on the runtime's own timer");
    assert_eq!(store.session_count(), 0, "and dropped from the store");
}

/// At the cap, a new session evicts the least recently used one: it ends (its next turn
/// starts afresh, the store holds it no more); the others keep their context; the count holds.
#[tokio::test(start_paused = true)]
async fn the_session_cap_evicts_the_least_recently_used_session() {
    let provider = Arc::new(ScriptedProvider::new(Vec::<ChatResponse>::new()));
    let store = Arc::new(MemoryStore::new());
    let rt = runtime(&provider).store(store.clone()).max_sessions(3).build();
    let me = as_role("clerk");
    for s in ["cap-1", "cap-2", "cap-3", "cap-1"] {
        turn(&rt, &provider, me.clone(), s, "remember 42", vec![reply("ok")]).await;
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    turn(&rt, &provider, me.clone(), "cap-4", "remember 7", vec![reply("ok")]).await;
    assert_eq!((rt.session_count(), store.session_count()), (3, 3), "the cap holds");
    tokio::time::sleep(Duration::from_secs(1)).await;
    turn(&rt, &provider, me.clone(), "cap-1", "what number?", vec![reply("42")]).await;
    assert_eq!(provider.requests().last().unwrap().messages.len(), 5, "a recently used session keeps its context");
    turn(&rt, &provider, me.clone(), "cap-2", "what number?", vec![reply("no idea")]).await;
    assert_eq!(provider.requests().last().unwrap().messages.len(), 1, "the evicted session starts afresh");
    assert_eq!((rt.session_count(), store.session_count()), (3, 3), "and took the place of the next oldest");
    for _ in 0..50 {
        let n = provider.requests().len();
        turn(&rt, &provider, me.clone(), &format!("cap-x{n}"), "hello", vec![reply("hi")]).await;
    }
    assert_eq!((rt.session_count(), store.session_count()), (3, 3));
}
