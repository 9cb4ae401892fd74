//! Outcomes that say what happened: a confirmation that ends by a disconnect, a timeout, a
//! dismissal or a shutdown is recorded as such, never as a person's refusal; every `proposed`
//! record gets exactly one final record, on every path; MCP sessions write their start and end
//! records like runs.

use crate::mcp_common;

use agents_mcp::{HttpServer, McpHttpOptions, serve_http};
use agents_runtime::audit::{AuditRecord, AuditStatus, MemorySink};
use agents_runtime::provider::ScriptedProvider;
use agents_runtime::run::{ConfirmAnswer, ConfirmRequest, Confirmer, Undecided};
use agents_runtime::{Principal, RoleMap, Runtime, agent, permissions, tool};
use mcp_common::{Client, elicitation_id, response_to};
use serde_json::json;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

permissions! {
    pub mod perms { note.read, note.write }
}

/// Notes written, by id.
static WRITTEN: Mutex<BTreeMap<u32, usize>> = Mutex::new(BTreeMap::new());

/// Reads a note.
#[tool(permission = perms::note::read)]
async fn read_note(id: u32) -> Result<String, String> {
    if id == 999 {
        // Long enough for the caller to give up.
        tokio::time::sleep(Duration::from_secs(30)).await;
    }
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
    *WRITTEN.lock().unwrap().entry(id).or_default() += 1;
    Ok(format!("{id}: {text}"))
}

agent! {
    /// Notes.
    pub struct Notes;
    tools: [read_note, write_note],
    expose: { mcp: [http(auth = bearer)] },
}

fn written(id: u32) -> usize {
    WRITTEN.lock().unwrap().get(&id).copied().unwrap_or(0)
}

fn runtime(audit: &Arc<MemorySink>) -> Runtime {
    Runtime::builder(audit.clone(), Arc::new(ScriptedProvider::new([])))
        .roles(RoleMap::new().role("writer", ["note.read", "note.write"]))
        .build()
}

async fn server(audit: &Arc<MemorySink>, elicitation_timeout: Duration) -> HttpServer {
    let mut opts = McpHttpOptions::default();
    opts.mcp.elicitation_timeout = elicitation_timeout;
    for i in 0..200 {
        opts.bearer_tokens.insert(format!("token-{i}"), Principal::new(format!("user-{i}"), "org1", "writer"));
    }
    serve_http::<Notes>(runtime(audit), opts).await.unwrap()
}

const FINAL: [AuditStatus; 5] =
    [AuditStatus::Executed, AuditStatus::Failed, AuditStatus::Rejected, AuditStatus::Skipped, AuditStatus::Denied];

/// Every proposed call's final records, by call id.
fn finals(records: &[AuditRecord]) -> BTreeMap<String, Vec<&AuditRecord>> {
    let mut by_call: BTreeMap<String, Vec<&AuditRecord>> = BTreeMap::new();
    for r in records.iter().filter(|r| r.status == AuditStatus::Proposed) {
        by_call.entry(r.call_id.as_deref().unwrap().to_owned()).or_default();
    }
    for r in records.iter().filter(|r| FINAL.contains(&r.status)) {
        if let Some(v) = r.call_id.as_deref().and_then(|c| by_call.get_mut(c)) {
            v.push(r);
        }
    }
    by_call
}

/// The one final record of the single call of `user`, once it is there.
async fn final_of(audit: &MemorySink, user: &str) -> AuditRecord {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        let records = audit.records();
        let mine: Vec<AuditRecord> = records.iter().filter(|r| r.user_id == user).cloned().collect();
        let f = finals(&mine);
        if let Some((_, v)) = f.iter().next()
            && !v.is_empty()
        {
            assert_eq!(v.len(), 1, "exactly one final record: {v:?}");
            return v[0].clone();
        }
        assert!(tokio::time::Instant::now() < deadline, "no final record for {user}: {mine:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn reason_of(r: &AuditRecord) -> Option<Undecided> {
    Undecided::of_reason(r.reason.as_deref().unwrap_or(""))
}

#[tokio::test]
async fn a_client_that_disconnects_while_asked_is_recorded_as_disconnected_not_declined() {
    let audit = Arc::new(MemorySink::new());
    let s = server(&audit, Duration::from_secs(60)).await;
    let mut c = Client::new(s.local_addr(), "token-1");
    c.initialize(true).await;
    let mut call = c.call(1, "write_note", json!({"id": 101, "text": "x"})).await;
    elicitation_id(&mut call).await;
    drop(call);
    let last = final_of(&audit, "user-1").await;
    assert_eq!(last.status, AuditStatus::Skipped, "{last:?}");
    assert_eq!(reason_of(&last), Some(Undecided::Disconnected), "{last:?}");
    assert_eq!(written(101), 0);
    s.shutdown();
    s.wait().await;
}

#[tokio::test]
async fn an_unanswered_question_is_recorded_as_timeout() {
    let audit = Arc::new(MemorySink::new());
    let s = server(&audit, Duration::from_millis(300)).await;
    let mut c = Client::new(s.local_addr(), "token-2");
    c.initialize(true).await;
    let mut call = c.call(1, "write_note", json!({"id": 102, "text": "x"})).await;
    elicitation_id(&mut call).await;
    let answer = response_to(&mut call, 1).await;
    assert_eq!(answer["result"]["isError"], true, "{answer}");
    let last = final_of(&audit, "user-2").await;
    assert_eq!((last.status, reason_of(&last)), (AuditStatus::Skipped, Some(Undecided::TimedOut)), "{last:?}");
    assert_eq!(written(102), 0);
    s.shutdown();
    s.wait().await;
}

#[tokio::test]
async fn dismissing_is_not_declining_and_declining_is() {
    let audit = Arc::new(MemorySink::new());
    let s = server(&audit, Duration::from_secs(60)).await;
    for (user, action, status, reason) in [
        ("3", "cancel", AuditStatus::Skipped, Some(Undecided::Dismissed)),
        ("4", "decline", AuditStatus::Rejected, None),
    ] {
        let mut c = Client::new(s.local_addr(), &format!("token-{user}"));
        c.initialize(true).await;
        let mut call = c.call(1, "write_note", json!({"id": 103, "text": "x"})).await;
        let q = elicitation_id(&mut call).await;
        let r = c.post(&json!({"jsonrpc": "2.0", "id": q, "result": {"action": action}})).await;
        assert_eq!(r.status, 202);
        response_to(&mut call, 1).await;
        let last = final_of(&audit, &format!("user-{user}")).await;
        assert_eq!((last.status, reason_of(&last)), (status, reason), "{action}: {last:?}");
        if status == AuditStatus::Rejected {
            assert_eq!(last.reason.as_deref(), Some("the user declined"));
        }
    }
    assert_eq!(written(103), 0);
    s.shutdown();
    s.wait().await;
}

#[tokio::test]
async fn a_shutdown_while_asked_is_recorded_as_shutdown_and_ends_the_session() {
    let audit = Arc::new(MemorySink::new());
    let s = server(&audit, Duration::from_secs(60)).await;
    let mut c = Client::new(s.local_addr(), "token-5");
    c.initialize(true).await;
    let session = c.session.clone().unwrap();
    let mut call = c.call(1, "write_note", json!({"id": 104, "text": "x"})).await;
    elicitation_id(&mut call).await;
    s.shutdown();
    tokio::time::timeout(Duration::from_secs(10), s.wait()).await.expect("the server stops");
    let records = audit.records();
    let last = final_of(&audit, "user-5").await;
    assert_eq!((last.status, reason_of(&last)), (AuditStatus::Skipped, Some(Undecided::Shutdown)), "{last:?}");
    let of_session: Vec<&AuditRecord> = records.iter().filter(|r| r.session_id.as_str() == session).collect();
    assert_eq!(of_session.first().unwrap().status, AuditStatus::RunStarted);
    let end = of_session.last().unwrap();
    assert_eq!((end.status, end.reason.as_deref()), (AuditStatus::RunFinished, Some("shutdown")), "{of_session:?}");
    assert_eq!(written(104), 0);
    drop(call);
}

/// 200 sessions at once; each client approves, declines, disconnects or just waits, and the
/// server shuts down while some still wait. Every `proposed` gets exactly one final record,
/// with the status and reason of what happened to it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_hundred_sessions_with_disconnects_and_a_shutdown_in_the_middle() {
    use rand::{Rng, SeedableRng};
    let audit = Arc::new(MemorySink::new());
    let s = server(&audit, Duration::from_secs(120)).await;
    let addr = s.local_addr();
    let seed: u64 = rand::thread_rng().r#gen();
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    #[derive(Clone, Copy, Debug, PartialEq)]
    enum Fate {
        Approve,
        Decline,
        Disconnect,
        Wait,
    }
    let fates: Vec<Fate> =
        (0..200).map(|_| [Fate::Approve, Fate::Decline, Fate::Disconnect, Fate::Wait][rng.gen_range(0..4)]).collect();
    let asked = Arc::new(AtomicUsize::new(0));
    let (done_tx, mut done_rx) = tokio::sync::mpsc::channel::<()>(200);
    let mut held = Vec::new();
    let mut tasks = Vec::new();
    for (i, fate) in fates.iter().copied().enumerate() {
        let (asked, done_tx) = (asked.clone(), done_tx.clone());
        tasks.push(tokio::spawn(async move {
            let mut c = Client::new(addr, &format!("token-{i}"));
            c.initialize(true).await;
            let mut call = c.call(1, "write_note", json!({"id": 1000 + i, "text": "x"})).await;
            let q = elicitation_id(&mut call).await;
            asked.fetch_add(1, Ordering::SeqCst);
            match fate {
                Fate::Approve | Fate::Decline => {
                    assert_eq!(c.answer(&q, fate == Fate::Approve).await.status, 202);
                    response_to(&mut call, 1).await;
                    let _ = done_tx.send(()).await;
                    None
                }
                Fate::Disconnect => {
                    drop(call);
                    let _ = done_tx.send(()).await;
                    None
                }
                Fate::Wait => {
                    let _ = done_tx.send(()).await;
                    Some(call)
                }
            }
        }));
    }
    drop(done_tx);
    for _ in 0..200 {
        tokio::time::timeout(Duration::from_secs(60), done_rx.recv()).await.expect("every client got its question");
    }
    for t in tasks {
        held.push(t.await.unwrap());
    }
    assert_eq!(asked.load(Ordering::SeqCst), 200);
    // Disconnects are seen before the shutdown, so their reason is theirs.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    let expected_before = fates.iter().filter(|f| **f != Fate::Wait).count();
    loop {
        let closed = finals(&audit.records()).values().filter(|v| !v.is_empty()).count();
        if closed >= expected_before {
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "seed {seed}: only {closed} of {expected_before} calls ended");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    s.shutdown();
    tokio::time::timeout(Duration::from_secs(30), s.wait()).await.expect("the server stops");
    drop(held);

    let records = audit.records();
    let by_call = finals(&records);
    assert_eq!(by_call.len(), 200, "seed {seed}: one proposal per session");
    let mut seen = BTreeMap::new();
    for (i, fate) in fates.iter().enumerate() {
        let user = format!("user-{i}");
        let proposed = records.iter().find(|r| r.user_id == user && r.status == AuditStatus::Proposed).unwrap();
        let ends = &by_call[proposed.call_id.as_deref().unwrap()];
        assert_eq!(ends.len(), 1, "seed {seed}: {user} ({fate:?}) needs exactly one final record: {ends:?}");
        let end = ends[0];
        let expected = match fate {
            Fate::Approve => (AuditStatus::Executed, None),
            Fate::Decline => (AuditStatus::Rejected, None),
            Fate::Disconnect => (AuditStatus::Skipped, Some(Undecided::Disconnected)),
            Fate::Wait => (AuditStatus::Skipped, Some(Undecided::Shutdown)),
        };
        assert_eq!((end.status, reason_of(end)), expected, "seed {seed}: {user} ({fate:?}): {end:?}");
        assert_eq!(written(1000 + i as u32), usize::from(fate == &Fate::Approve), "seed {seed}: {user}");
        // And the session's own start and end.
        let session: Vec<&AuditRecord> = records.iter().filter(|r| r.session_id == proposed.session_id).collect();
        assert_eq!(session.iter().filter(|r| r.status == AuditStatus::RunStarted).count(), 1);
        assert_eq!(session.iter().filter(|r| r.status == AuditStatus::RunFinished).count(), 1, "seed {seed}: {user}");
        *seen.entry(format!("{fate:?}")).or_insert(0) += 1;
    }
    eprintln!("seed {seed}: fates {seen:?}");
}

/// A person asked through a direct session's confirmer that never answers.
struct NeverAnswers;

impl Confirmer for NeverAnswers {
    fn confirm(&self, _request: ConfirmRequest) -> agents_runtime::BoxFuture<'static, ConfirmAnswer> {
        Box::pin(std::future::pending())
    }
}

/// A call whose caller goes away (its future dropped) still gets its one final record.
#[tokio::test]
async fn a_dropped_call_still_gets_its_final_record() {
    let audit = Arc::new(MemorySink::new());
    let rt = runtime(&audit);
    let me = Principal::new("dropper", "org1", "writer");
    let session = rt.direct::<Notes>(me, "dropped-calls", Some(Arc::new(NeverAnswers))).await.unwrap();
    // Waiting for a person…
    let waiting = session.call("c-action", "write_note", r#"{"id": 105, "text": "x"}"#);
    assert!(tokio::time::timeout(Duration::from_millis(100), waiting).await.is_err());
    // …and a read tool still running.
    let running = session.call("c-read", "read_note", r#"{"id": 999}"#);
    assert!(tokio::time::timeout(Duration::from_millis(100), running).await.is_err());
    rt.records_settled().await;
    let records = audit.records();
    let by_call = finals(&records);
    // An action's records carry the id the runtime minted for it, not the caller's.
    let minted = records
        .iter()
        .find(|r| r.status == AuditStatus::Proposed && r.tool.as_deref() == Some("write_note"))
        .and_then(|r| r.call_id.as_deref())
        .expect("the action was proposed");
    assert_ne!(minted, "c-action");
    let action = &by_call[minted];
    assert_eq!(action.len(), 1, "{action:?}");
    assert_eq!((action[0].status, reason_of(action[0])), (AuditStatus::Skipped, Some(Undecided::Abandoned)));
    let read = &by_call["c-read"];
    assert_eq!(read.len(), 1, "{read:?}");
    assert_eq!(
        (read[0].status, reason_of(read[0])),
        (AuditStatus::Failed, Some(Undecided::Abandoned)),
        "a tool that was running has an unknown outcome"
    );
    // A stopped session says so, on the waiting call and on its end record.
    session.stop(Undecided::Shutdown);
    let out = session.call("c-after", "write_note", r#"{"id": 105, "text": "x"}"#).await;
    assert!(out.is_error);
    drop(session);
    rt.records_settled().await;
    let records = audit.records();
    let after_id = records
        .iter()
        .rev()
        .find(|r| r.status == AuditStatus::Proposed && r.tool.as_deref() == Some("write_note"))
        .and_then(|r| r.call_id.as_deref())
        .expect("the later action was proposed");
    let after = &finals(&records)[after_id];
    assert_eq!((after[0].status, reason_of(after[0])), (AuditStatus::Skipped, Some(Undecided::Shutdown)));
    let end = records.last().unwrap();
    assert_eq!((end.status, end.reason.as_deref()), (AuditStatus::RunFinished, Some("shutdown")));
    assert_eq!(written(105), 0);
}
