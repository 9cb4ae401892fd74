//! Conversation sessions through the state store: a session started on one node goes on on
//! another node sharing the store (its history, bound to user, organisation and role); two
//! nodes finishing turns of one session at once both keep their turn; a conversational
//! proposal survives a restart of the service, is listed for its user, and runs exactly once
//! when answered on another node (in the conversation or through the decisions API).
//!
//! On SQLite (two stores on one file are two nodes; reopening the file is a restart) and on a
//! real PostgreSQL (a throwaway cluster; each pool is a node).

use agents_runtime::provider::scripted::{reply, tool_call};
use agents_runtime::provider::{ChatMessage, ChatRequest, ChatResponse, Provider, ProviderError, TokenSink};
use agents_runtime::run::{DecisionError, RunError, StartError};
use agents_runtime::store::{Store, StoreAuditSink};
use agents_runtime::{BoxFuture, ConfirmMode, Principal, RunResultExt as _, RunStatus, Runtime, Verdict};
use agents_store::postgres::TempCluster;
use agents_store::testing::leave::{Hr, SERVER_KEY, employee, executions, roles};
use agents_store::{PostgresStore, SqliteStore};
use std::sync::Arc;

/// Makes the store handle of a new node (or of the node after a restart).
type Nodes<'a> = &'a (dyn Fn() -> BoxFuture<'static, Arc<dyn Store>> + Sync);

fn runtime(store: Arc<dyn Store>, provider: Arc<dyn Provider>) -> Runtime {
    Runtime::builder(Arc::new(StoreAuditSink::new(store.clone(), "audit")), provider)
        .roles(roles().role("manager", Vec::<&str>::new()))
        .server_key(SERVER_KEY)
        .confirm_mode(ConfirmMode::Conversational)
        .store(store)
        .build()
}

fn scripted(script: Vec<ChatResponse>) -> Arc<agents_runtime::provider::ScriptedProvider> {
    Arc::new(agents_runtime::provider::ScriptedProvider::new(script))
}

fn session(prefix: &str) -> String {
    format!("{prefix}-{}", uuid::Uuid::new_v4().simple())
}

/// Every text the model was sent (system prompt and messages).
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

/// One turn on `rt`; its outcome.
async fn turn(
    rt: &Runtime,
    who: Principal,
    s: &str,
    input: &str,
) -> Result<agents_runtime::RunOutput<String>, RunError> {
    rt.start::<Hr>(who, s, input.into()).unwrap().wait().await
}

/// Turn 1 on node A, turn 2 on node B: B's model sees turn 1. A third node, later, sees both.
async fn a_session_goes_on_on_another_node(nodes: Nodes<'_>) {
    let s = session("continue");
    let a = runtime(nodes().await, scripted(vec![reply("Noted: your badge is 4711.")]));
    let out = turn(&a, employee(), &s, "remember that my badge is 4711").await;
    assert_eq!(out.status(), RunStatus::Completed, "{:?}", out.error_text());
    let provider_b = scripted(vec![reply("Your badge is 4711.")]);
    let b = runtime(nodes().await, provider_b.clone());
    let out = turn(&b, employee(), &s, "what is my badge?").await;
    assert_eq!(out.status(), RunStatus::Completed, "{:?}", out.error_text());
    assert_eq!(
        provider_b.requests()[0].messages,
        vec![
            ChatMessage::User { content: "remember that my badge is 4711".into() },
            ChatMessage::Assistant { content: "Noted: your badge is 4711.".into(), tool_calls: vec![] },
            ChatMessage::User { content: "what is my badge?".into() },
        ],
        "node B replays the turn node A ran"
    );
    let provider_c = scripted(vec![reply("ok")]);
    let c = runtime(nodes().await, provider_c.clone());
    turn(&c, employee(), &s, "thanks").await.unwrap();
    assert_eq!(provider_c.requests()[0].messages.len(), 5, "both earlier turns are kept");
}

/// A session read under one role on node A gives nothing to a run under another role on node
/// B (a fresh context), nor back to the first role afterwards; another user cannot use it on
/// any node.
async fn a_role_change_on_another_node_starts_afresh(nodes: Nodes<'_>) {
    let s = session("role");
    let a = runtime(nodes().await, scripted(vec![reply("The finding is confidential-finding-7.")]));
    turn(&a, employee(), &s, "read me the finding").await.unwrap();
    let provider_b = scripted(vec![reply("I know nothing yet.")]);
    let b = runtime(nodes().await, provider_b.clone());
    let manager = Principal::new("ann", "org-hr", "manager");
    turn(&b, manager.clone(), &s, "what did you find?").await.unwrap();
    let seen = &provider_b.requests()[0];
    assert!(!all_text(seen).contains("confidential-finding-7"), "{seen:?}");
    assert_eq!(seen.messages, vec![ChatMessage::User { content: "what did you find?".into() }]);
    // Back under the first role, on node A: the context of the other role is not replayed,
    // and the first one is gone (started afresh).
    let provider_a2 = scripted(vec![reply("fresh")]);
    let a2 = runtime(nodes().await, provider_a2.clone());
    turn(&a2, employee(), &s, "and now?").await.unwrap();
    let seen = &provider_a2.requests()[0];
    assert!(!all_text(seen).contains("confidential-finding-7") && !all_text(seen).contains("I know nothing"));
    assert_eq!(seen.messages, vec![ChatMessage::User { content: "and now?".into() }]);
    // Another user of the organisation: refused on every node before anything runs.
    let bob = Principal::new("bob", "org-hr", "employee");
    for rt in [&a, &b] {
        // Refused by `start` when the store answered at once, otherwise when the run's task
        // began: either way before anything ran.
        let refused = match rt.start::<Hr>(bob.clone(), &s, "hi".into()) {
            Err(e) => e,
            Ok(run) => match run.wait().await {
                Err(RunError::NotStarted { source, .. }) => source,
                other => panic!("another user's run in the session: {other:?}"),
            },
        };
        assert!(matches!(&refused, StartError::SessionNotYours(id) if *id == s), "{refused:?}");
    }
}

/// Answers the first request of each turn only once both nodes are inside their turn (each
/// has read the session), so their turns overlap and both save over the same revision.
struct Overlapping {
    barrier: Arc<tokio::sync::Barrier>,
    answer: String,
}

impl Provider for Overlapping {
    fn name(&self) -> &str {
        "overlapping"
    }
    fn model(&self) -> &str {
        "overlapping"
    }
    fn is_paid(&self) -> bool {
        false
    }
    fn chat<'a>(
        &'a self,
        _: &'a ChatRequest,
        _: &'a dyn TokenSink,
    ) -> BoxFuture<'a, Result<ChatResponse, ProviderError>> {
        Box::pin(async move {
            self.barrier.wait().await;
            Ok(reply(self.answer.clone()))
        })
    }
}

/// Two nodes run a turn of one session at once, both over the same revision: the one that
/// saves second finds the session changed and applies its turn to what is there, so both turns
/// are in the history.
async fn overlapping_turns_on_two_nodes_both_count(nodes: Nodes<'_>) {
    let s = session("overlap");
    let first = runtime(nodes().await, scripted(vec![reply("hello")]));
    turn(&first, employee(), &s, "hello").await.unwrap();
    let barrier = Arc::new(tokio::sync::Barrier::new(2));
    let node = |answer: &str| {
        let provider = Arc::new(Overlapping { barrier: barrier.clone(), answer: answer.into() });
        async move { runtime(nodes().await, provider) }
    };
    let (a, b) = (node("answer from A").await, node("answer from B").await);
    let (x, y) = futures::join!(turn(&a, employee(), &s, "question to A"), turn(&b, employee(), &s, "question to B"));
    x.unwrap();
    y.unwrap();
    let provider = scripted(vec![reply("ok")]);
    let c = runtime(nodes().await, provider.clone());
    turn(&c, employee(), &s, "what did I ask?").await.unwrap();
    let text = all_text(&provider.requests()[0]);
    for said in ["hello", "question to A", "answer from A", "question to B", "answer from B"] {
        assert!(text.contains(said), "`{said}` was lost: {text}");
    }
}

/// Node A proposes a leave request in the conversation and stops (a restart). After it, the
/// proposal is listed for its user on node B, and the user's "yes" on node B carries it out;
/// a late decision through the API on node C and a resumption find nothing left to do: it ran
/// exactly once.
async fn a_conversational_proposal_survives_a_restart_and_runs_once(nodes: Nodes<'_>) {
    let s = session("conv-yes");
    let a =
        runtime(nodes().await, scripted(vec![tool_call("submit_leave", r#"{"days": 3}"#), reply("Submit 3 days?")]));
    let out = turn(&a, employee(), &s, "three days off please").await;
    assert_eq!(out.status(), RunStatus::AwaitingConfirmation, "{:?}", out.error_text());
    drop(a);
    let b = runtime(nodes().await, scripted(vec![tool_call("submit_leave", r#"{"days": 3}"#), reply("Submitted.")]));
    let listed = b.pending_decisions(&employee()).await.unwrap();
    let p = listed.iter().find(|p| p.session_id.as_deref() == Some(s.as_str())).expect("listed after the restart");
    assert_eq!((p.tool.as_str(), &p.arguments), ("submit_leave", &serde_json::json!({"days": 3})));
    let manager = Principal::new("ann", "org-hr", "manager");
    assert!(b.pending_decisions(&manager).await.unwrap().iter().all(|q| q.call_id != p.call_id));
    let out = turn(&b, employee(), &s, "yes").await;
    assert_eq!(out.status(), RunStatus::Completed, "{:?}", out.error_text());
    assert_eq!(executions(&s), 1, "the answer on node B carried it out");
    let c = runtime(nodes().await, scripted(vec![]));
    assert!(matches!(
        c.decide_async(&p.call_id, &employee(), Verdict::Approve, None).await,
        Err(DecisionError::NotPending(_))
    ));
    assert!(c.resume_orphaned::<Hr>().await.unwrap().iter().all(|r| r.call_id != p.call_id));
    assert!(c.pending_decisions(&employee()).await.unwrap().iter().all(|q| q.call_id != p.call_id));
    assert_eq!(executions(&s), 1, "exactly once");
}

/// The same proposal approved through the decisions API on node B after node A stopped: a
/// resumption carries it out, once across nodes; the user's later "yes" in the conversation on
/// node A runs nothing more, and the model is told the action was decided.
async fn a_conversational_proposal_approved_through_the_api_runs_once(nodes: Nodes<'_>) {
    let s = session("conv-api");
    let a =
        runtime(nodes().await, scripted(vec![tool_call("submit_leave", r#"{"days": 2}"#), reply("Submit 2 days?")]));
    turn(&a, employee(), &s, "two days off please").await.unwrap();
    drop(a);
    let b = runtime(nodes().await, scripted(vec![]));
    let c = runtime(nodes().await, scripted(vec![]));
    let listed = b.pending_decisions(&employee()).await.unwrap();
    let p = listed.iter().find(|p| p.session_id.as_deref() == Some(s.as_str())).expect("listed after the restart");
    b.decide_async(&p.call_id, &employee(), Verdict::Approve, None).await.unwrap();
    let (x, y) = futures::join!(b.resume_orphaned::<Hr>(), c.resume_orphaned::<Hr>());
    let carried: usize = [x.unwrap(), y.unwrap()].iter().flatten().filter(|r| r.call_id == p.call_id).count();
    assert_eq!(carried, 1, "one node carried it out");
    assert_eq!(executions(&s), 1);
    let provider = scripted(vec![tool_call("submit_leave", r#"{"days": 2}"#), reply("ok")]);
    let a2 = runtime(nodes().await, provider.clone());
    turn(&a2, employee(), &s, "yes").await.unwrap();
    assert_eq!(executions(&s), 1, "the conversation's late yes ran nothing more");
    assert!(all_text(&provider.requests()[0]).contains("outside this conversation"), "the model is told");
}

async fn every_scenario(nodes: Nodes<'_>) {
    a_session_goes_on_on_another_node(nodes).await;
    a_role_change_on_another_node_starts_afresh(nodes).await;
    overlapping_turns_on_two_nodes_both_count(nodes).await;
    a_conversational_proposal_survives_a_restart_and_runs_once(nodes).await;
    a_conversational_proposal_approved_through_the_api_runs_once(nodes).await;
    nodes().await.verify_audit("audit").await.expect("the audit chain verifies");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_across_nodes_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state.db");
    let nodes = move || -> BoxFuture<'static, Arc<dyn Store>> {
        let path = path.clone();
        Box::pin(async move { Arc::new(SqliteStore::open(&path).unwrap()) as Arc<dyn Store> })
    };
    every_scenario(&nodes).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_across_nodes_on_postgres() {
    let cluster = TempCluster::start().unwrap_or_else(|e| panic!("{e}"));
    let url = cluster.create_database("sessions").await.unwrap_or_else(|e| panic!("{e}"));
    let nodes = move || -> BoxFuture<'static, Arc<dyn Store>> {
        let url = url.clone();
        Box::pin(async move { Arc::new(PostgresStore::connect(&url, 4).await.unwrap()) as Arc<dyn Store> })
    };
    every_scenario(&nodes).await;
}
