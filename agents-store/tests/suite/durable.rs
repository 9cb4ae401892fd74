//! Proposals and decisions through the state store: a proposal made through one runtime
//! ("node") is listed and approved through another and runs exactly once; provider-reused
//! call ids never cross; a run whose process was killed while it waited is completed on the
//! decision by a resumption, exactly once; an approved row edited in the store does not run;
//! the audit chain verifies after all of it. On the in-memory store (two runtimes in one
//! process), SQLite (a second process, killed) and a real PostgreSQL (a second process,
//! killed).

use crate::common;
use agents_runtime::RunResultExt as _;
use agents_runtime::events::Event;
use agents_runtime::provider::scripted::reply;
use agents_runtime::provider::{ChatResponse, ScriptedProvider, ToolCallRequest};
use agents_runtime::run::DecisionError;
use agents_runtime::store::{MemoryStore, Store, StoreAuditSink};
use agents_runtime::{Principal, RunHandle, RunStatus, Runtime, Verdict};
use agents_store::postgres::TempCluster;
use agents_store::testing::leave::{Hr, SERVER_KEY, employee, executions, roles};
use agents_store::{PostgresStore, SqliteStore};
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

/// A model answer that calls `submit_leave` under the provider's own id `id`.
fn call_with_id(id: &str, days: u32) -> ChatResponse {
    ChatResponse {
        content: String::new(),
        tool_calls: vec![ToolCallRequest {
            id: id.into(),
            name: "submit_leave".into(),
            arguments: format!(r#"{{"days": {days}}}"#),
        }],
        usage: Default::default(),
    }
}

fn node(store: Arc<dyn Store>, script: Vec<ChatResponse>) -> Runtime {
    Runtime::builder(Arc::new(StoreAuditSink::new(store.clone(), "audit")), Arc::new(ScriptedProvider::new(script)))
        .roles(roles())
        .server_key(SERVER_KEY)
        .store(store)
        .decision_poll(Duration::from_millis(20))
        .build()
}

/// A unique session id (the execution log is per session, in the temp dir).
fn session(prefix: &str) -> String {
    format!("{prefix}-{}", uuid::Uuid::new_v4().simple())
}

/// The call waiting for a decision.
async fn confirm_required<O>(run: &mut RunHandle<O>) -> String {
    while let Some(e) = run.events().recv().await {
        match e {
            Event::ConfirmRequired { call_id, .. } => return call_id,
            Event::Done { status, .. } => panic!("the run ended ({status}) before asking"),
            _ => {}
        }
    }
    panic!("the run's events ended before it asked")
}

/// The proposal made through node A is listed on node B, decided there only by its own
/// principal and only once, and runs exactly once, on A (whose run is alive: B's resumption
/// leaves it alone).
async fn approved_through_another_node_runs_once(a: Arc<dyn Store>, b: Arc<dyn Store>, prefix: &str) {
    let s = session(prefix);
    let node_a = node(a, vec![call_with_id("call_1", 3), reply("done")]);
    let node_b = node(b.clone(), vec![]);
    let mut run = node_a.start::<Hr>(employee(), &s, "three days off".into()).unwrap();
    let call_id = confirm_required(&mut run).await;
    assert_ne!(call_id, "call_1", "decisions are keyed by the runtime's id, not the provider's");

    let listed = node_b.pending_decisions(&employee()).await.unwrap();
    let p = listed.iter().find(|p| p.call_id == call_id).expect("listed on the other node");
    assert_eq!((p.tool.as_str(), p.title.as_str(), p.agent.as_str()), ("submit_leave", "Submit leave", "Hr"));
    assert_eq!(p.arguments, serde_json::json!({"days": 3}));
    assert_eq!(p.session_id.as_deref(), Some(s.as_str()));
    assert!(!p.proposed_at.is_empty() && !p.risk.is_empty());
    let other_role = Principal::new("ann", "org-hr", "manager");
    assert!(node_b.pending_decisions(&other_role).await.unwrap().iter().all(|p| p.call_id != call_id));
    let stranger = Principal::new("bob", "org-hr", "employee");
    assert!(node_b.pending_decisions(&stranger).await.unwrap().is_empty());

    // Refused from another user, or from the same user under another role; nothing changes.
    for intruder in [&stranger, &other_role] {
        assert_eq!(
            node_b.decide_async(&call_id, intruder, Verdict::Approve, None).await,
            Err(DecisionError::NotYourRun)
        );
    }
    assert_eq!(executions(&s), 0);
    node_b.decide_async(&call_id, &employee(), Verdict::Approve, None).await.unwrap();
    // The run that proposed it is alive (its slot renewed): a resumption leaves it to it.
    assert!(node_b.resume_orphaned::<Hr>().await.unwrap().is_empty(), "a live run's call is not taken over");
    assert!(matches!(
        node_b.decide_async(&call_id, &employee(), Verdict::Reject, None).await,
        Err(DecisionError::NotPending(_))
    ));
    let outcome = run.wait().await;
    assert_eq!(outcome.status(), RunStatus::Completed, "{:?}", outcome.error_text());
    assert_eq!(executions(&s), 1, "executed exactly once");
    assert!(node_b.resume_orphaned::<Hr>().await.unwrap().is_empty());
    assert!(node_b.pending_decisions(&employee()).await.unwrap().iter().all(|p| p.call_id != call_id));
    b.verify_audit("audit").await.expect("the chain verifies");
}

/// Two runs whose provider uses the id `call_1` for both proposals: each is decided on its
/// own; approving one never runs (or ends) the other.
async fn reused_provider_ids_do_not_cross(store: Arc<dyn Store>, prefix: &str) {
    let (s1, s2) = (session(&format!("{prefix}-one")), session(&format!("{prefix}-two")));
    let rt = node(store, vec![call_with_id("call_1", 1), call_with_id("call_1", 2), reply("ok"), reply("ok")]);
    let mut one = rt.start::<Hr>(employee(), &s1, "one day".into()).unwrap();
    let first = confirm_required(&mut one).await;
    let mut two = rt.start::<Hr>(employee(), &s2, "two days".into()).unwrap();
    let second = confirm_required(&mut two).await;
    assert_ne!(first, second, "each proposal has its own id");
    assert_eq!(
        rt.pending_decisions(&employee())
            .await
            .unwrap()
            .iter()
            .filter(|p| [&first, &second].contains(&&p.call_id))
            .count(),
        2
    );
    rt.decide_async(&second, &employee(), Verdict::Reject, Some("not now")).await.unwrap();
    assert_eq!(two.wait().await.status(), RunStatus::Completed);
    rt.decide_async(&first, &employee(), Verdict::Approve, None).await.unwrap();
    assert_eq!(one.wait().await.status(), RunStatus::Completed);
    assert_eq!((executions(&s1), executions(&s2)), (1, 0), "only the approved proposal ran");
}

/// A second process running the agent on `spec`'s store, stopped at its proposal.
struct ProposingNode {
    child: Child,
    lines: tokio::io::Lines<BufReader<tokio::process::ChildStdout>>,
}

impl ProposingNode {
    async fn start(spec: &str, session: &str, lease_ms: u64) -> (Self, String) {
        Self::run(spec, "propose", session, lease_ms).await
    }

    /// Runs the run tree `LeaveDesk`, stopped at its second node's proposal: the call id and
    /// the tree's run id.
    async fn start_tree(spec: &str, session: &str, lease_ms: u64) -> (Self, String, String) {
        let (node, waiting) = Self::run(spec, "propose-tree", session, lease_ms).await;
        let (call_id, tree) = waiting.split_once(' ').expect("`waiting CALL_ID TREE_RUN_ID`");
        (node, call_id.to_owned(), tree.to_owned())
    }

    async fn run(spec: &str, command: &str, session: &str, lease_ms: u64) -> (Self, String) {
        let mut child = Command::new(env!("CARGO_BIN_EXE_agents-store-node"))
            .args([spec, command, session, &lease_ms.to_string()])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("start agents-store-node");
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let first = lines.next_line().await.unwrap().expect("the node stopped early; see its stderr above");
        let call_id =
            first.strip_prefix("waiting ").unwrap_or_else(|| panic!("expected `waiting CALL_ID`, read {first:?}"));
        (ProposingNode { child, lines }, call_id.to_owned())
    }
}

/// The process that proposed an action is killed (`kill -9`) while it waits; the decision
/// made through another node completes it: the approved call runs exactly once, through a
/// resumption that waits for the dead run's slot to lapse, whatever number of nodes resume.
async fn a_killed_proposer_is_completed_once(spec: &str, b: Arc<dyn Store>, c: Arc<dyn Store>, prefix: &str) {
    let s = session(prefix);
    let lease_ms = 3000;
    let (mut proposer, call_id) = ProposingNode::start(spec, &s, lease_ms).await;
    let node_b = node(b.clone(), vec![]);
    let node_c = node(c, vec![]);
    assert!(node_b.pending_decisions(&employee()).await.unwrap().iter().any(|p| p.call_id == call_id));
    proposer.child.kill().await.expect("kill -9 the proposing node");
    node_b.decide_async(&call_id, &employee(), Verdict::Approve, None).await.unwrap();
    // Its slot's lease has not run out yet: the run might still be alive, so nobody takes over.
    assert!(node_b.resume_orphaned::<Hr>().await.unwrap().is_empty(), "taken over before the lease lapsed");
    let resumed = common::resume_until_settled(&node_b, &node_c, Duration::from_millis(lease_ms * 5)).await;
    assert_eq!(resumed.len(), 1, "one node resumed it: {resumed:?}");
    assert_eq!(resumed[0].call_id, call_id);
    assert_eq!(resumed[0].status, agents_runtime::audit::AuditStatus::Executed, "{resumed:?}");
    assert!(node_b.resume_orphaned::<Hr>().await.unwrap().is_empty());
    assert!(node_c.resume_orphaned::<Hr>().await.unwrap().is_empty());
    assert_eq!(executions(&s), 1, "executed exactly once");
    assert!(matches!(
        node_c.decide_async(&call_id, &employee(), Verdict::Approve, None).await,
        Err(DecisionError::NotPending(_))
    ));
    b.verify_audit("audit").await.expect("the chain verifies after the kill");
    let _ = proposer.lines.next_line().await;
}

/// The audit records of `call_id` in stream `audit` of `spec`'s store (a PostgreSQL CONNINFO,
/// or `sqlite:PATH`), in chain order.
async fn records_of(spec: &str, call_id: &str) -> Vec<agents_runtime::audit::AuditRecord> {
    all_records(spec).await.into_iter().filter(|r| r.call_id.as_deref() == Some(call_id)).collect()
}

/// Every audit record in stream `audit` of `spec`'s store, in chain order.
async fn all_records(spec: &str) -> Vec<agents_runtime::audit::AuditRecord> {
    let lines: Vec<String> = if let Some(path) = spec.strip_prefix("sqlite:") {
        let conn = rusqlite::Connection::open(path).unwrap();
        let mut stmt = conn.prepare("SELECT line FROM agents_audit WHERE stream = 'audit' ORDER BY seq").unwrap();
        stmt.query_map([], |r| r.get(0)).unwrap().collect::<Result<_, _>>().unwrap()
    } else {
        let (client, connection) = tokio_postgres::connect(spec, tokio_postgres::NoTls).await.unwrap();
        tokio::spawn(connection);
        let rows =
            client.query("SELECT line FROM agents_audit WHERE stream = 'audit' ORDER BY seq", &[]).await.unwrap();
        rows.iter().map(|r| r.get(0)).collect()
    };
    lines.iter().map(|l| serde_json::from_str::<agents_runtime::audit::AuditRecord>(l).unwrap()).collect()
}

/// A run tree's process is killed (`kill -9`) while its second node's action waits; the person
/// decides through another node (`verdict`), and two nodes resume at once: the call gets
/// exactly one final record (executed once, or rejected), every record of the call carries
/// the node's place, the tree's root run is closed once, a second decision is refused, and the
/// chain verifies.
async fn a_killed_tree_is_settled_once(
    spec: &str,
    b: Arc<dyn Store>,
    c: Arc<dyn Store>,
    prefix: &str,
    verdict: Verdict,
) {
    use agents_runtime::audit::AuditStatus;
    let s = session(prefix);
    let lease_ms = 3000;
    let (mut proposer, call_id, tree) = ProposingNode::start_tree(spec, &s, lease_ms).await;
    let node_b = node(b.clone(), vec![]);
    let node_c = node(c, vec![]);
    proposer.child.kill().await.expect("kill -9 the tree's process");
    let listed = node_b.pending_decisions(&employee()).await.unwrap();
    assert!(listed.iter().any(|p| p.call_id == call_id), "the nested proposal is listed on another node");
    node_b.decide_async(&call_id, &employee(), verdict, Some("not this week")).await.unwrap();
    let settled = common::resume_until_settled(&node_b, &node_c, Duration::from_millis(lease_ms * 5)).await;
    assert_eq!(settled.len(), 1, "one node settled it: {settled:?}");
    for _ in 0..3 {
        assert!(node_b.resume_orphaned::<Hr>().await.unwrap().is_empty());
        assert!(node_c.resume_orphaned::<Hr>().await.unwrap().is_empty());
    }
    assert!(matches!(
        node_c.decide_async(&call_id, &employee(), Verdict::Approve, None).await,
        Err(DecisionError::NotPending(_))
    ));
    let records = records_of(spec, &call_id).await;
    let statuses: Vec<AuditStatus> = records.iter().map(|r| r.status).collect();
    let expected: &[AuditStatus] = if verdict == Verdict::Approve {
        &[AuditStatus::Proposed, AuditStatus::Confirmed, AuditStatus::Executed]
    } else {
        &[AuditStatus::Proposed, AuditStatus::Rejected]
    };
    assert_eq!(statuses, expected, "exactly one final record");
    assert_eq!(executions(&s), usize::from(verdict == Verdict::Approve), "executed once, or never");
    for r in &records {
        let place = r.node.as_ref().unwrap_or_else(|| panic!("{:?} has no place", r.status));
        assert_eq!((place.parent_run_id.as_deref(), place.path.as_str()), (Some(tree.as_str()), "leave-desk/hr"));
    }
    let root: Vec<_> = all_records(spec).await.into_iter().filter(|r| *r.run_id == *tree).collect();
    let root_statuses: Vec<AuditStatus> = root.iter().map(|r| r.status).collect();
    assert_eq!(root_statuses, [AuditStatus::RunStarted, AuditStatus::RunFinished], "the tree closed once");
    let closed = &root[1];
    assert_eq!(closed.reason.as_deref(), Some("failed"));
    assert_eq!(closed.node.as_ref().map(|n| (n.parent_run_id.clone(), n.path.as_str())), Some((None, "leave-desk")));
    assert_eq!((&*closed.agent, &*closed.manifest_sha256), (&*root[0].agent, &*root[0].manifest_sha256));
    assert_eq!((&*closed.user_id, &*closed.session_id), ("ann", s.as_str()));
    b.verify_audit("audit").await.expect("the chain verifies after the kill");
    let _ = proposer.lines.next_line().await;
}

/// Someone with write access to the state store (not to the server key) moves an approved
/// node's proposal to another place in its tree (`leave-desk/admin`) before it is resumed: its
/// place no longer verifies, so no record names the forged place, the approval runs nothing
/// (its seal covers the place), and its one final record says so. A waiting proposal so edited
/// cannot be approved at all.
async fn a_forged_place_is_not_recorded(path: &std::path::Path, b: Arc<dyn Store>, prefix: &str) {
    use agents_runtime::audit::AuditStatus;
    let spec = format!("sqlite:{}", path.display());
    let move_it = |call_id: &str| {
        let sql = "UPDATE agents_proposals SET detail = json_set(detail, '$.node.path', 'leave-desk/admin') \
                   WHERE call_id = ?1";
        assert_eq!(rusqlite::Connection::open(path).unwrap().execute(sql, [call_id]).unwrap(), 1, "the row was edited");
    };
    let node_b = node(b.clone(), vec![]);
    let s = session(prefix);
    let (mut proposer, call_id, _) = ProposingNode::start_tree(&spec, &s, 3000).await;
    proposer.child.kill().await.expect("kill -9 the tree's process");
    node_b.decide_async(&call_id, &employee(), Verdict::Approve, None).await.unwrap();
    move_it(&call_id);
    let settled = common::resume_until_settled(&node_b, &node_b, Duration::from_millis(15_000)).await;
    assert_eq!(
        (settled[0].call_id.as_str(), settled[0].status),
        (call_id.as_str(), AuditStatus::Failed),
        "{settled:?}"
    );
    let records = records_of(&spec, &call_id).await;
    let statuses: Vec<AuditStatus> = records.iter().map(|r| r.status).collect();
    assert_eq!(statuses, [AuditStatus::Proposed, AuditStatus::Failed], "one final record, nothing confirmed");
    assert!(records[1].reason.as_deref().unwrap_or_default().contains("does not verify under the server key"));
    assert!(records[1].node.is_none(), "a place that does not verify is not recorded: {:?}", records[1]);
    assert_eq!(records[0].node.as_ref().map(|n| n.path.as_str()), Some("leave-desk/hr"), "as the run recorded it");
    assert_eq!(executions(&s), 0, "nothing ran");
    let _ = proposer.lines.next_line().await;

    let s = session(&format!("{prefix}-waiting"));
    let (mut proposer, call_id, _) = ProposingNode::start_tree(&spec, &s, 3000).await;
    proposer.child.kill().await.expect("kill -9 the tree's process");
    move_it(&call_id);
    assert!(matches!(
        node_b.decide_async(&call_id, &employee(), Verdict::Approve, None).await,
        Err(DecisionError::Unverified(_))
    ));
    assert_eq!(executions(&s), 0);
    b.verify_audit("audit").await.expect("the chain verifies");
    let _ = proposer.lines.next_line().await;
}

/// The process that proposed an action is killed (`kill -9`) while it waits, and the person
/// rejects the action through another node, with a reason: once the dead run's slot lapsed, a
/// resumption (of several nodes at once) writes exactly one final record, `rejected` with the
/// reason, and nothing runs. The chain verifies.
async fn a_killed_proposers_rejection_is_recorded_once(spec: &str, b: Arc<dyn Store>, c: Arc<dyn Store>, prefix: &str) {
    use agents_runtime::audit::AuditStatus;
    let s = session(prefix);
    let lease_ms = 3000;
    let (mut proposer, call_id) = ProposingNode::start(spec, &s, lease_ms).await;
    let node_b = node(b.clone(), vec![]);
    let node_c = node(c, vec![]);
    proposer.child.kill().await.expect("kill -9 the proposing node");
    node_b.decide_async(&call_id, &employee(), Verdict::Reject, Some("wrong week")).await.unwrap();
    assert!(node_b.resume_orphaned::<Hr>().await.unwrap().is_empty(), "settled before the lease lapsed");
    let settled = common::resume_until_settled(&node_b, &node_c, Duration::from_millis(lease_ms * 5)).await;
    assert_eq!(settled.len(), 1, "one node settled it: {settled:?}");
    assert_eq!((settled[0].call_id.as_str(), settled[0].status), (call_id.as_str(), AuditStatus::Rejected));
    assert!(settled[0].recorded);
    for _ in 0..3 {
        assert!(node_b.resume_orphaned::<Hr>().await.unwrap().is_empty());
        assert!(node_c.resume_orphaned::<Hr>().await.unwrap().is_empty());
    }
    let records = records_of(spec, &call_id).await;
    let statuses: Vec<AuditStatus> = records.iter().map(|r| r.status).collect();
    assert_eq!(statuses, [AuditStatus::Proposed, AuditStatus::Rejected], "exactly one final record");
    assert_eq!(records[1].reason.as_deref(), Some("the user declined: wrong week"));
    assert_eq!((&*records[1].run_id, &*records[1].session_id), (&*records[0].run_id, &*records[0].session_id));
    assert_eq!(executions(&s), 0, "nothing ran");
    b.verify_audit("audit").await.expect("the chain verifies after the kill");
    let _ = proposer.lines.next_line().await;
}

/// Someone with write access to the state store (not to the server key) edits the arguments
/// of an approved proposal whose run is gone, from 3 days to 30, before a resumption carries
/// it out: the stored arguments no longer match the approved ones under the server key, so
/// the call does not run and its one final record says so.
async fn a_forged_approved_row_does_not_run(path: &std::path::Path, b: Arc<dyn Store>, prefix: &str) {
    use agents_runtime::audit::AuditStatus;
    let spec = format!("sqlite:{}", path.display());
    let s = session(prefix);
    let lease_ms = 3000;
    let (mut proposer, call_id) = ProposingNode::start(&spec, &s, lease_ms).await;
    let node_b = node(b.clone(), vec![]);
    proposer.child.kill().await.expect("kill -9 the proposing node");
    node_b.decide_async(&call_id, &employee(), Verdict::Approve, None).await.unwrap();
    let forged = rusqlite::Connection::open(path)
        .unwrap()
        .execute(
            "UPDATE agents_proposals SET detail = json_set(detail, '$.arguments.days', 30) WHERE call_id = ?1",
            [&call_id],
        )
        .unwrap();
    assert_eq!(forged, 1, "the approved row was edited");
    let resumed = common::resume_until_settled(&node_b, &node_b, Duration::from_millis(lease_ms * 5)).await;
    assert_eq!(resumed.len(), 1, "{resumed:?}");
    assert_eq!((resumed[0].call_id.as_str(), resumed[0].status), (call_id.as_str(), AuditStatus::Failed));
    let records = records_of(&spec, &call_id).await;
    let statuses: Vec<AuditStatus> = records.iter().map(|r| r.status).collect();
    assert_eq!(statuses, [AuditStatus::Proposed, AuditStatus::Failed], "one final record, nothing confirmed");
    let reason = records[1].reason.as_deref().unwrap_or_default();
    assert!(reason.contains("do not match the approved ones"), "{reason}");
    assert_eq!(executions(&s), 0, "the forged call did not run");
    assert!(node_b.resume_orphaned::<Hr>().await.unwrap().is_empty(), "settled once");
    b.verify_audit("audit").await.expect("the chain verifies");
    let _ = proposer.lines.next_line().await;
}

/// Someone who can write the state database (plain SQL) and does not hold the server key.
enum Insider {
    /// A SQLite file.
    Sqlite(std::path::PathBuf),
    /// A PostgreSQL CONNINFO.
    Postgres(String),
}

impl Insider {
    /// The store as `agents-store-node` names it.
    fn spec(&self) -> String {
        match self {
            Insider::Sqlite(path) => format!("sqlite:{}", path.display()),
            Insider::Postgres(url) => url.clone(),
        }
    }

    /// Runs one statement (`sqlite` or `postgres`, whichever this database speaks) with text
    /// parameters; how many rows it changed.
    async fn edit(&self, sqlite: &str, postgres: &str, params: &[&str]) -> u64 {
        match self {
            Insider::Sqlite(path) => {
                let conn = rusqlite::Connection::open(path).unwrap();
                conn.execute(sqlite, rusqlite::params_from_iter(params)).unwrap() as u64
            }
            Insider::Postgres(url) => {
                let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls).await.unwrap();
                tokio::spawn(connection);
                let params: Vec<&(dyn tokio_postgres::types::ToSql + Sync)> =
                    params.iter().map(|p| p as &(dyn tokio_postgres::types::ToSql + Sync)).collect();
                client.execute(postgres, &params).await.unwrap()
            }
        }
    }

    /// The seal a row holds now (what the insider reads and may write back later).
    async fn seal_of(&self, store: &dyn Store, call_id: &str) -> String {
        store.proposal(call_id).await.unwrap().expect("the row exists").proposal.seal
    }
}

/// `n` proposing processes, each in its own session, killed (`kill -9`) while they wait: their
/// sessions and call ids. At most three at once (a user's run cap).
async fn killed_proposers(spec: &str, prefix: &str, names: &[&str]) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for name in names {
        let s = session(&format!("{prefix}-{name}"));
        let (mut proposer, call_id) = ProposingNode::start(spec, &s, 3000).await;
        proposer.child.kill().await.expect("kill -9 the proposing node");
        out.push((s, call_id));
    }
    out
}

/// Resumes through `node_b` until every one of `calls` was settled; what was done to each.
async fn settle_all(node_b: &Runtime, calls: &[&str]) -> Vec<agents_runtime::run::ResumedCall> {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    let mut done: Vec<agents_runtime::run::ResumedCall> = Vec::new();
    while !calls.iter().all(|c| done.iter().any(|d| d.call_id == *c)) {
        assert!(tokio::time::Instant::now() < deadline, "not all of {calls:?} were settled: {done:?}");
        done.extend(node_b.resume_orphaned::<Hr>().await.unwrap());
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    done
}

/// Each edit an insider can make with plain SQL on an approved (or undecided) row whose run is
/// gone, to make an action run: the verdict set to approved; another row's arguments, their
/// MAC and its seal copied in (a rejected proposal's); the tool, the user or the session
/// changed; and, once the call ran, its claim columns cleared and its approval's seal written
/// back. In each case nothing runs (or runs again), the call has exactly one final record
/// (`failed`, saying why, for the forged rows), and the chain verifies.
async fn insider_edits_run_nothing(db: Insider, b: Arc<dyn Store>, prefix: &str) {
    use agents_runtime::audit::AuditStatus;
    let spec = db.spec();
    // A rejected proposal of 30 days: the arguments, MAC and seal the insider copies.
    let donor_session = session(&format!("{prefix}-donor"));
    let node_b = node(b.clone(), vec![call_with_id("call_1", 30), reply("done")]);
    let mut donor = node_b.start::<Hr>(employee(), &donor_session, "thirty days".into()).unwrap();
    let donor_id = confirm_required(&mut donor).await;
    node_b.decide_async(&donor_id, &employee(), Verdict::Reject, None).await.unwrap();
    assert_eq!(donor.wait().await.status(), RunStatus::Completed);

    let forged_reason = "does not verify under the server key";
    let expect_forged = |done: &[agents_runtime::run::ResumedCall], call_id: &str| {
        let d = done.iter().find(|d| d.call_id == call_id).unwrap();
        assert_eq!(d.status, AuditStatus::Failed, "{d:?}");
        assert!(d.reason.as_deref().unwrap_or_default().contains(forged_reason), "{d:?}");
    };
    let one_failed_record = |records: Vec<agents_runtime::audit::AuditRecord>| {
        let statuses: Vec<AuditStatus> = records.iter().map(|r| r.status).collect();
        assert_eq!(statuses, [AuditStatus::Proposed, AuditStatus::Failed], "one final record, nothing confirmed");
        assert!(records[1].reason.as_deref().unwrap_or_default().contains(forged_reason), "{:?}", records[1]);
    };

    // Undecided, its verdict set to approved; approved, another row's arguments, MAC and seal
    // copied in; approved, its tool changed to another tool of the agent with the same
    // arguments.
    let group = killed_proposers(&spec, prefix, &["flipped", "copied", "tool"]).await;
    let [(flipped_s, flipped), (copied_s, copied), (tool_s, tool)] = &group[..] else { unreachable!() };
    for call_id in [copied, tool] {
        node_b.decide_async(call_id, &employee(), Verdict::Approve, None).await.unwrap();
    }
    let set_verdict = "UPDATE agents_proposals SET verdict = 'approved' WHERE call_id = ";
    assert_eq!(db.edit(&format!("{set_verdict}?1"), &format!("{set_verdict}$1"), &[flipped]).await, 1);
    let copy_sqlite = "UPDATE agents_proposals SET args = d.args, args_mac = d.args_mac, seal = d.seal, \
                       detail = json_set(agents_proposals.detail, '$.arguments', json(json_extract(d.detail, '$.arguments'))) \
                       FROM (SELECT args, args_mac, seal, detail FROM agents_proposals WHERE call_id = ?2) AS d \
                       WHERE call_id = ?1";
    let copy_postgres = "UPDATE agents_proposals t SET args = d.args, args_mac = d.args_mac, seal = d.seal, \
                         detail = jsonb_set(t.detail, '{arguments}', d.detail -> 'arguments') \
                         FROM agents_proposals d WHERE t.call_id = $1 AND d.call_id = $2";
    assert_eq!(db.edit(copy_sqlite, copy_postgres, &[copied, &donor_id]).await, 1);
    let copied_row = b.proposal(copied).await.unwrap().unwrap().proposal;
    assert_eq!(copied_row.detail["arguments"], serde_json::json!({"days": 30}), "the donor's arguments are in");
    let set_tool = "UPDATE agents_proposals SET tool = 'withdraw_leave' WHERE call_id = ";
    assert_eq!(db.edit(&format!("{set_tool}?1"), &format!("{set_tool}$1"), &[tool]).await, 1);
    let done = settle_all(&node_b, &[flipped, copied, tool]).await;
    for call_id in [flipped, copied, tool] {
        expect_forged(&done, call_id);
        one_failed_record(records_of(&spec, call_id).await);
    }
    for s in [flipped_s, copied_s, tool_s, &donor_session] {
        assert_eq!(executions(s), 0, "nothing ran in {s}");
    }

    // Approved, its user changed; approved, its session changed; approved and carried out,
    // then its claim cleared and its approval's seal (read before the claim) written back.
    let group = killed_proposers(&spec, prefix, &["user", "session", "replayed"]).await;
    let [(user_s, user), (session_s, moved), (replayed_s, replayed)] = &group[..] else { unreachable!() };
    for call_id in [user, moved, replayed] {
        node_b.decide_async(call_id, &employee(), Verdict::Approve, None).await.unwrap();
    }
    let approval_seal = db.seal_of(&*b, replayed).await;
    let set_user = "UPDATE agents_proposals SET user_id = 'bob' WHERE call_id = ";
    assert_eq!(db.edit(&format!("{set_user}?1"), &format!("{set_user}$1"), &[user]).await, 1);
    let elsewhere = session(&format!("{prefix}-elsewhere"));
    let set_session = "UPDATE agents_proposals SET session_id = ";
    let (sqlite, postgres) =
        (format!("{set_session}?2 WHERE call_id = ?1"), format!("{set_session}$2 WHERE call_id = $1"));
    assert_eq!(db.edit(&sqlite, &postgres, &[moved, &elsewhere]).await, 1);
    let done = settle_all(&node_b, &[user, moved, replayed]).await;
    for call_id in [user, moved] {
        expect_forged(&done, call_id);
        one_failed_record(records_of(&spec, call_id).await);
    }
    let ran = done.iter().find(|d| d.call_id == *replayed).unwrap();
    assert_eq!(ran.status, AuditStatus::Executed, "the untouched approval ran: {ran:?}");
    assert_eq!(executions(replayed_s), 1);
    for s in [user_s, session_s, &elsewhere] {
        assert_eq!(executions(s), 0, "nothing ran in {s}");
    }

    let clear_sqlite = "UPDATE agents_proposals SET claimed_by = NULL, held_by = NULL, over_at = NULL, \
                        recorded_at = NULL, seal = ?2 WHERE call_id = ?1";
    let clear_postgres = "UPDATE agents_proposals SET claimed_by = NULL, claimed_at = NULL, held_by = NULL, \
                          held_at = NULL, recorded_at = NULL, seal = $2 WHERE call_id = $1";
    assert_eq!(db.edit(clear_sqlite, clear_postgres, &[replayed, &approval_seal]).await, 1);
    let again = settle_all(&node_b, &[replayed]).await;
    let refused = again.iter().find(|d| d.call_id == *replayed).unwrap();
    assert_eq!(refused.status, AuditStatus::Failed, "{refused:?}");
    assert!(refused.reason.as_deref().unwrap_or_default().contains("final record is in the audit log already"));
    assert_eq!(executions(replayed_s), 1, "it did not run a second time");
    let statuses: Vec<AuditStatus> = records_of(&spec, replayed).await.iter().map(|r| r.status).collect();
    assert_eq!(statuses, [AuditStatus::Proposed, AuditStatus::Confirmed, AuditStatus::Executed], "one final record");
    assert!(node_b.resume_orphaned::<Hr>().await.unwrap().is_empty(), "each settled once");

    // Its claim cleared again, this time with the seal left as the claim wrote it (an insider who
    // did not keep the approval's seal): the row does not verify, but the log is asked first, so
    // the call gets no second final record (a `failed` one would say it ended twice).
    let clear_only_sqlite = "UPDATE agents_proposals SET claimed_by = NULL, held_by = NULL, over_at = NULL, \
                             recorded_at = NULL WHERE call_id = ?1";
    let clear_only_postgres = "UPDATE agents_proposals SET claimed_by = NULL, claimed_at = NULL, held_by = NULL, \
                               held_at = NULL, recorded_at = NULL WHERE call_id = $1";
    assert_eq!(db.edit(clear_only_sqlite, clear_only_postgres, &[replayed]).await, 1);
    settle_all(&node_b, &[replayed]).await;
    assert_eq!(executions(replayed_s), 1, "it did not run a second time");
    let statuses: Vec<AuditStatus> = records_of(&spec, replayed).await.iter().map(|r| r.status).collect();
    assert_eq!(statuses, [AuditStatus::Proposed, AuditStatus::Confirmed, AuditStatus::Executed], "one final record");
    b.verify_audit("audit").await.expect("the chain verifies");
}

/// The proposing process lives and waits for its decision; an insider sets its row's verdict
/// to approved with plain SQL. The waiting run reads the approval back, finds it unsealed, and
/// runs nothing: its one final record is `failed`, saying why, and no resumption runs it later.
async fn a_waiting_run_refuses_a_forged_approval(db: Insider, b: Arc<dyn Store>, prefix: &str) {
    use agents_runtime::audit::AuditStatus;
    let spec = db.spec();
    let s = session(prefix);
    let (mut proposer, call_id) = ProposingNode::start(&spec, &s, 3000).await;
    let set_verdict = "UPDATE agents_proposals SET verdict = 'approved' WHERE call_id = ";
    assert_eq!(db.edit(&format!("{set_verdict}?1"), &format!("{set_verdict}$1"), &[&call_id]).await, 1);
    let last = proposer.lines.next_line().await.unwrap().expect("the node reports its run's end");
    assert!(last.starts_with("finished"), "{last}");
    assert_eq!(executions(&s), 0, "the forged approval ran nothing");
    let records = records_of(&spec, &call_id).await;
    let statuses: Vec<AuditStatus> = records.iter().map(|r| r.status).collect();
    assert_eq!(statuses, [AuditStatus::Proposed, AuditStatus::Failed], "one final record, nothing confirmed");
    let reason = records[1].reason.as_deref().unwrap_or_default();
    assert!(reason.contains("does not verify under the server key"), "{reason}");
    let node_b = node(b.clone(), vec![]);
    tokio::time::sleep(Duration::from_millis(3500)).await;
    assert!(node_b.resume_orphaned::<Hr>().await.unwrap().is_empty(), "nothing is left to resume");
    assert_eq!(executions(&s), 0);
    b.verify_audit("audit").await.expect("the chain verifies");
}

/// The proposing process lives: the decision made through this process reaches it through
/// the store, and it runs the call itself, once.
async fn a_live_proposer_runs_the_call_decided_elsewhere(spec: &str, b: Arc<dyn Store>, prefix: &str) {
    let s = session(prefix);
    let (mut proposer, call_id) = ProposingNode::start(spec, &s, 3000).await;
    let node_b = node(b, vec![]);
    node_b.decide_async(&call_id, &employee(), Verdict::Approve, None).await.unwrap();
    let last = proposer.lines.next_line().await.unwrap().expect("the node reports its run's end");
    assert_eq!(last, "finished Completed");
    assert_eq!(executions(&s), 1);
    assert!(node_b.resume_orphaned::<Hr>().await.unwrap().is_empty());
}

/// A proposal whose wait timed out is withdrawn from the store: no longer listed, a late
/// approval is refused, and no resumption runs it, even once the run's slot is gone.
async fn a_timed_out_proposal_is_withdrawn(store: Arc<dyn Store>, prefix: &str) {
    let s = session(prefix);
    let limits = agents_runtime::Limits { confirm_timeout_secs: 1, ..agents_runtime::Limits::default() };
    let rt = Runtime::builder(
        Arc::new(StoreAuditSink::new(store.clone(), "audit")),
        Arc::new(ScriptedProvider::new(vec![call_with_id("call_1", 4), reply("done")])),
    )
    .roles(roles())
    .server_key(SERVER_KEY)
    .store(store.clone())
    .limits(limits)
    .build();
    let mut run = rt.start::<Hr>(employee(), &s, "four days".into()).unwrap();
    let call_id = confirm_required(&mut run).await;
    assert_eq!(run.wait().await.status(), RunStatus::Cancelled, "the confirmation timed out");
    assert!(rt.pending_decisions(&employee()).await.unwrap().iter().all(|p| p.call_id != call_id));
    assert!(matches!(
        rt.decide_async(&call_id, &employee(), Verdict::Approve, None).await,
        Err(DecisionError::NotPending(_))
    ));
    assert!(rt.resume_orphaned::<Hr>().await.unwrap().is_empty());
    assert_eq!(executions(&s), 0);
}

/// A subscriber that reads no event at all: the confirm request is still listed, and decided
/// through the list; a [`Confirmer`](agents_runtime::run::Confirmer) plugged into model runs is
/// asked too, and whichever decision the store records first holds.
async fn missed_events_and_a_confirmer_in_model_runs(store: Arc<dyn Store>, prefix: &str) {
    use agents_runtime::run::{ConfirmAnswer, ConfirmRequest, Confirmer};
    let s = session(prefix);
    let rt = node(store.clone(), vec![call_with_id("call_1", 5), reply("done")]);
    let run = rt.start::<Hr>(employee(), &s, "five days".into()).unwrap();
    let listed = loop {
        let mine: Vec<_> = rt
            .pending_decisions(&employee())
            .await
            .unwrap()
            .into_iter()
            .filter(|p| p.session_id.as_deref() == Some(s.as_str()))
            .collect();
        if !mine.is_empty() {
            break mine;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    rt.decide(&listed[0].call_id, &employee(), Verdict::Approve).unwrap();
    assert_eq!(run.wait().await.status(), RunStatus::Completed);
    assert_eq!(executions(&s), 1);

    /// Approves what it is asked, and remembers the request.
    struct Approves(std::sync::Mutex<Vec<ConfirmRequest>>);
    impl Confirmer for Approves {
        fn confirm(&self, request: ConfirmRequest) -> agents_runtime::BoxFuture<'static, ConfirmAnswer> {
            self.0.lock().unwrap().push(request);
            Box::pin(async { ConfirmAnswer::Decided(Verdict::Approve) })
        }
    }
    let s2 = session(prefix);
    let asked = Arc::new(Approves(Default::default()));
    let rt = Runtime::builder(
        Arc::new(StoreAuditSink::new(store.clone(), "audit")),
        Arc::new(ScriptedProvider::new(vec![call_with_id("call_1", 6), reply("done")])),
    )
    .roles(roles())
    .store(store)
    .confirmer(asked.clone())
    .build();
    let run = rt.start::<Hr>(employee(), &s2, "six days".into()).unwrap();
    assert_eq!(run.wait().await.status(), RunStatus::Completed);
    assert_eq!(executions(&s2), 1);
    let requests = asked.0.lock().unwrap().clone();
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0].caller_call_id, "call_1");
    assert_ne!(requests[0].call_id, "call_1");
    assert!(matches!(
        rt.decide_async(&requests[0].call_id, &employee(), Verdict::Reject, None).await,
        Err(DecisionError::NotPending(_))
    ));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn memory_two_runtimes_one_store() {
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    approved_through_another_node_runs_once(store.clone(), store.clone(), "mem").await;
    reused_provider_ids_do_not_cross(store.clone(), "mem").await;
    a_timed_out_proposal_is_withdrawn(store.clone(), "mem").await;
    missed_events_and_a_confirmer_in_model_runs(store.clone(), "mem").await;
    store.verify_audit("audit").await.expect("the chain verifies");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_nodes_and_a_killed_process() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state.db");
    let open = || -> Arc<dyn Store> { Arc::new(SqliteStore::open(&path).unwrap()) };
    approved_through_another_node_runs_once(open(), open(), "sqlite").await;
    reused_provider_ids_do_not_cross(open(), "sqlite").await;
    a_timed_out_proposal_is_withdrawn(open(), "sqlite").await;
    let spec = format!("sqlite:{}", path.display());
    a_live_proposer_runs_the_call_decided_elsewhere(&spec, open(), "sqlite-live").await;
    a_killed_proposer_is_completed_once(&spec, open(), open(), "sqlite-killed").await;
    a_killed_proposers_rejection_is_recorded_once(&spec, open(), open(), "sqlite-rejected").await;
    a_forged_approved_row_does_not_run(&path, open(), "sqlite-forged").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_a_killed_run_tree() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state.db");
    let open = || -> Arc<dyn Store> { Arc::new(SqliteStore::open(&path).unwrap()) };
    let spec = format!("sqlite:{}", path.display());
    a_killed_tree_is_settled_once(&spec, open(), open(), "sqlite-tree", Verdict::Approve).await;
    a_killed_tree_is_settled_once(&spec, open(), open(), "sqlite-tree-rejected", Verdict::Reject).await;
    a_forged_place_is_not_recorded(&path, open(), "sqlite-tree-forged").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_a_killed_run_tree() {
    let cluster = TempCluster::start().unwrap_or_else(|e| panic!("{e}"));
    let url = cluster.create_database("tree").await.unwrap_or_else(|e| panic!("{e}"));
    let connect = || async { Arc::new(PostgresStore::connect(&url, 8).await.unwrap()) as Arc<dyn Store> };
    a_killed_tree_is_settled_once(&url, connect().await, connect().await, "pg-tree", Verdict::Approve).await;
    a_killed_tree_is_settled_once(&url, connect().await, connect().await, "pg-tree-rejected", Verdict::Reject).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_insider_edits_run_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state.db");
    let store: Arc<dyn Store> = Arc::new(SqliteStore::open(&path).unwrap());
    insider_edits_run_nothing(Insider::Sqlite(path.clone()), store.clone(), "sqlite-insider").await;
    a_waiting_run_refuses_a_forged_approval(Insider::Sqlite(path), store, "sqlite-waiting").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_insider_edits_run_nothing() {
    let cluster = TempCluster::start().unwrap_or_else(|e| panic!("{e}"));
    let url = cluster.create_database("insider").await.unwrap_or_else(|e| panic!("{e}"));
    let store: Arc<dyn Store> = Arc::new(PostgresStore::connect(&url, 8).await.unwrap());
    insider_edits_run_nothing(Insider::Postgres(url.clone()), store.clone(), "pg-insider").await;
    a_waiting_run_refuses_a_forged_approval(Insider::Postgres(url), store, "pg-waiting").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_nodes_and_a_killed_process() {
    let cluster = TempCluster::start().unwrap_or_else(|e| panic!("{e}"));
    let url = cluster.create_database("durable").await.unwrap_or_else(|e| panic!("{e}"));
    let connect = || async { Arc::new(PostgresStore::connect(&url, 8).await.unwrap()) as Arc<dyn Store> };
    approved_through_another_node_runs_once(connect().await, connect().await, "pg").await;
    reused_provider_ids_do_not_cross(connect().await, "pg").await;
    a_live_proposer_runs_the_call_decided_elsewhere(&url, connect().await, "pg-live").await;
    a_killed_proposer_is_completed_once(&url, connect().await, connect().await, "pg-killed").await;
    a_killed_proposers_rejection_is_recorded_once(&url, connect().await, connect().await, "pg-rejected").await;
}
