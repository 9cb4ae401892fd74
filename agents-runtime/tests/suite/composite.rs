//! A composite runs as one run tree: one principal, one chain with the tree's run id and each
//! node's path, one `stop` for every node, a spend limit across nodes, nested decisions taken
//! by the same person only, contained panics, and parallel members cancelled by a failure.

use crate::run_common::*;

use agents_runtime::RunResultExt as _;
use agents_runtime::agents_core::compose::{Join, MemberResult, Route, Step, Stop};
use agents_runtime::audit::{AuditRecord, AuditStatus, MemorySink};
use agents_runtime::compose::TreeLimit;
use agents_runtime::events::Event;
use agents_runtime::provider::scripted::{reply, tool_call};
use agents_runtime::provider::{ChatRequest, ChatResponse, Provider, ProviderError, TokenSink, Usage};
use agents_runtime::run::DecisionError;
use agents_runtime::{
    BoxFuture, Principal, RoleMap, RunError, RunStatus, Runtime, ToolContext, Verdict, agent, composite, permissions,
    tool,
};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

permissions! {
    pub mod perms { ledger.read, ledger.write }
}

/// Looks an entry up.
#[tool(permission = perms::ledger::read)]
async fn lookup(id: u64) -> Result<String, String> {
    Ok(format!("entry {id}"))
}

/// Approves an entry.
///
/// # Arguments
///
/// * `id` - the entry
#[tool(permission = perms::ledger::write, mutating, title = "Approve entry")]
async fn approve_entry(cx: &ToolContext<'_>, id: u64) -> Result<String, String> {
    bump(cx.session_id());
    Ok(format!("approved {id}"))
}

/// Marks the agent whose model fails.
#[tool(permission = perms::ledger::read)]
async fn fail_marker() -> Result<String, String> {
    Ok(String::new())
}

agent! {
    /// Reads the ledger.
    pub struct Reader;
    input: String,
    output: String,
    tools: [lookup],
}
agent! {
    /// Approves entries.
    pub struct Approver;
    input: String,
    output: String,
    tools: [approve_entry],
}
agent! {
    /// Answers without tools.
    pub struct Plain;
    input: String,
    output: String,
    tools: [],
}
agent! {
    /// Its model always fails.
    pub struct Failer;
    input: String,
    output: String,
    tools: [fail_marker],
}

/// A router that panics.
pub struct Panics;
impl Route<String> for Panics {
    fn route(_: &String) -> Option<&'static str> {
        panic!("the router broke")
    }
}

/// A step that refuses everything.
pub struct Refuse;
impl Step<String> for Refuse {
    fn step(_: String) -> Result<String, String> {
        Err("not on a Sunday".into())
    }
}

/// Never stops a loop.
pub struct Never;
impl Stop<String> for Never {
    fn stop(_: &String) -> bool {
        false
    }
}

/// Counts the members that answered and failed.
pub struct Tally;
impl Join for Tally {
    type Item = String;
    type Output = String;
    fn join(items: Vec<MemberResult<String>>) -> Result<String, String> {
        let ok = items.iter().filter(|i| i.is_ok()).count();
        Ok(format!("{ok} answered, {} failed", items.len() - ok))
    }
}

/// The first answer.
pub struct First;
impl Join for First {
    type Item = String;
    type Output = String;
    fn join(items: Vec<MemberResult<String>>) -> Result<String, String> {
        items.into_iter().next().unwrap_or_else(|| Err("no member".into()))
    }
}

composite! {
    /// Reads, then approves.
    pub struct ReadThenApprove: String -> String = then(Reader, Approver);
}
composite! {
    /// Approves, then reads.
    pub struct ApproveThenRead: String -> String = then(Approver, Reader);
}
composite! {
    /// Three model answers, then a lookup.
    pub struct Spender: String -> String = then(Plain, Reader, Plain);
}
composite! {
    /// A branch whose router panics.
    pub struct Broken: String -> String = branch(Panics, [Approver], default = Reader);
}
composite! {
    /// A member proposes while another fails.
    pub struct FailFast: String -> String = parallel([Approver, Failer], join = First, on_failure = fail_fast);
}
composite! {
    /// Every member's result goes to the join.
    pub struct Collect: String -> String = parallel([Plain, Failer], join = Tally, on_failure = collect);
}
composite! {
    /// Two readers at once, each answer kept.
    pub struct TwoReaders: String -> String = parallel([Reader, Reader], join = Tally, on_failure = collect);
}
composite! {
    /// A step refuses before the node.
    pub struct Refused: String -> String = wrap(Plain, before = [Refuse]);
}
composite! {
    /// Runs to its bound.
    pub struct Thrice: String -> String = loop(Plain, max = 3, until = Never);
}
composite! {
    /// Nested: the pipeline inside a wrap-free then.
    pub struct Nested: String -> String = then(Plain, ReadThenApprove);
}

/// The model of every node, by the tools its request offers: reads and approves once each,
/// fails for `Failer` (once the approval waits, so a fail-fast has something to cancel), and
/// answers with 100 tokens of usage.
struct Desk {
    sink: Arc<MemorySink>,
}

fn used(mut r: ChatResponse) -> ChatResponse {
    r.usage = Usage { input_tokens: 60, output_tokens: 40, ..Usage::default() };
    r
}

impl Provider for Desk {
    fn name(&self) -> &str {
        "scripted"
    }
    fn model(&self) -> &str {
        "desk"
    }
    fn chat<'a>(
        &'a self,
        request: &'a ChatRequest,
        _: &'a dyn TokenSink,
    ) -> BoxFuture<'a, Result<ChatResponse, ProviderError>> {
        Box::pin(async move {
            let tools = offered(request);
            let answered = !tool_messages(request).is_empty();
            if tools.iter().any(|t| t == "fail_marker") {
                for _ in 0..500 {
                    if !with_status(&self.sink, AuditStatus::Proposed).is_empty() {
                        break;
                    }
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
                return Err(ProviderError::UnknownModel {
                    model: "desk".into(),
                    detail: "this node's model fails".into(),
                });
            }
            Ok(used(match (tools.iter().find(|t| *t == "lookup" || *t == "approve_entry"), answered) {
                (Some(tool), false) => tool_call(tool.as_str(), r#"{"id": 7}"#),
                (Some(_), true) => reply("done"),
                (None, _) => reply("plain"),
            }))
        })
    }
}

fn me() -> Principal {
    Principal::new("u1", "org1", "clerk")
}

fn runtime(limit: Option<TreeLimit>) -> (Runtime, Arc<MemorySink>) {
    let sink = Arc::new(MemorySink::new());
    let provider = Arc::new(Desk { sink: sink.clone() });
    let mut builder = Runtime::builder(sink.clone(), provider).roles(
        RoleMap::new().role("clerk", ["ledger.read", "ledger.write"]).role("other", ["ledger.read", "ledger.write"]),
    );
    if let Some(limit) = limit {
        builder = builder.tree_limit(limit);
    }
    (builder.build(), sink)
}

fn paths(records: &[AuditRecord]) -> Vec<String> {
    let mut paths: Vec<String> = records.iter().filter_map(|r| r.node.as_ref().map(|n| n.path.clone())).collect();
    paths.dedup();
    paths
}

#[tokio::test]
async fn a_composite_is_one_tree_in_one_chain_and_its_nested_action_waits_for_the_same_person() {
    let (rt, sink) = runtime(None);
    let mut handle = rt.start_composite::<ReadThenApprove>(me(), "tree-chain", "go".into()).unwrap();
    let tree_id = handle.run_id().to_owned();
    let (call_id, node) = nested_confirmation(&mut handle).await;
    assert_eq!(node, "read-then-approve/approver");
    // Another user, and the same user under another role, cannot decide it.
    only_the_person_decides(&rt, &call_id, &me(), "tree-chain");
    rt.decide(&call_id, &me(), Verdict::Approve).unwrap();
    let out = handle.wait().await;
    assert_eq!(out.status(), RunStatus::Completed, "{out:?}");
    assert_eq!(out.as_ref().unwrap().output.as_deref(), Some("done"));
    assert_eq!(ran("tree-chain"), 1);

    let records = sink.records();
    // One chain that verifies, every record of the principal, every one placed in the tree.
    assert_eq!(verify_chain(&records), records.len());
    assert!(records.iter().all(|r| r.user_id == "u1" && r.org_id == "org1" && r.role == "clerk"));
    assert!(records.iter().all(|r| r.session_id == "tree-chain"));
    let (first, last) = (&records[0], &records[records.len() - 1]);
    assert_eq!((first.status, first.run_id.as_str()), (AuditStatus::RunStarted, tree_id.as_str()));
    assert_eq!((last.status, last.run_id.as_str()), (AuditStatus::RunFinished, tree_id.as_str()));
    assert_eq!(last.reason.as_deref(), Some("completed"));
    assert_eq!(first.agent, "read-then-approve");
    assert_eq!(first.manifest_sha256, ReadThenApprove::MANIFEST_SHA256);
    for r in &records {
        let node = r.node.as_ref().expect("every record of the tree names its place");
        if r.run_id == tree_id {
            assert_eq!((node.parent_run_id.as_deref(), node.path.as_str()), (None, "read-then-approve"));
        } else {
            assert_eq!(node.parent_run_id.as_deref(), Some(tree_id.as_str()), "{r:?}");
        }
    }
    assert_eq!(
        paths(&records),
        ["read-then-approve", "read-then-approve/reader", "read-then-approve/approver", "read-then-approve"]
    );
    let approve: Vec<AuditStatus> =
        records.iter().filter(|r| r.call_id.as_deref() == Some(call_id.as_str())).map(|r| r.status).collect();
    assert_eq!(approve, [AuditStatus::Proposed, AuditStatus::Confirmed, AuditStatus::Executed]);
    // Each node its own run id.
    let runs: std::collections::BTreeSet<&str> = records.iter().map(|r| r.run_id.as_str()).collect();
    assert_eq!(runs.len(), 3);
}

#[tokio::test]
async fn a_record_outside_a_tree_keeps_its_bytes() {
    let (rt, sink) = runtime(None);
    let out = rt.start::<Plain>(me(), "single", "go".into()).unwrap().wait().await;
    assert_eq!(out.status(), RunStatus::Completed);
    for r in sink.records() {
        assert!(r.node.is_none());
        assert!(!serde_json::to_string(&r).unwrap().contains("\"node\""), "absent, not null");
    }
}

#[tokio::test]
async fn one_stop_ends_every_node_and_no_later_node_starts() {
    let (rt, sink) = runtime(None);
    let mut handle = rt.start_composite::<ApproveThenRead>(me(), "tree-stop", "go".into()).unwrap();
    let (call_id, _) = nested_confirmation(&mut handle).await;
    handle.stop();
    let out = tokio::time::timeout(Duration::from_secs(30), handle.wait()).await.expect("the stop ends the tree");
    assert!(matches!(out, Err(RunError::Stopped { .. })), "{out:?}");
    assert_eq!(out.status(), RunStatus::Cancelled);
    let records = sink.records();
    let approve: Vec<AuditStatus> =
        records.iter().filter(|r| r.call_id.as_deref() == Some(call_id.as_str())).map(|r| r.status).collect();
    assert_eq!(approve, [AuditStatus::Proposed, AuditStatus::Skipped]);
    assert_eq!(ran("tree-stop"), 0);
    assert!(!paths(&records).iter().any(|p| p.ends_with("/reader")), "the later node never started");
    assert_eq!(records.last().unwrap().reason.as_deref(), Some("cancelled"));
    assert_eq!(rt.decide(&call_id, &me(), Verdict::Approve), Err(DecisionError::NotPending(call_id.clone())));
}

#[tokio::test]
async fn the_tree_limit_runs_out_across_nodes() {
    // 150 tokens for the tree; every answer uses 100.
    let (rt, sink) = runtime(Some(TreeLimit::new(None, Some(150))));
    let out = rt.start_composite::<Spender>(me(), "tree-budget", "go".into()).unwrap().wait().await;
    assert!(matches!(out, Err(RunError::BudgetExhausted { .. })), "{out:?}");
    let records = sink.records();
    // The first node spent 100; the reader's first call was under the limit, its second not.
    assert_eq!(out.report().usage.input_tokens + out.report().usage.output_tokens, 200);
    assert!(!paths(&records).iter().any(|p| p.ends_with("/plain-2")), "the last node never started");
    let notice = records
        .iter()
        .find(|r| r.status == AuditStatus::Notice && r.reason.as_deref().is_some_and(|t| t.contains("run tree")));
    assert!(notice.is_some(), "the refusal is recorded");
    assert_eq!(records.last().unwrap().reason.as_deref(), Some("budget_exhausted"));
    // Without the limit the same tree completes.
    let (rt, _) = runtime(None);
    let out = rt.start_composite::<Spender>(me(), "tree-budget-free", "go".into()).unwrap().wait().await;
    assert_eq!(out.status(), RunStatus::Completed, "{out:?}");
}

/// Parallel members reserve in one ledger: a member's call is admitted only while what the
/// whole tree settled (the other member's calls included, before that member ends) is under
/// the limit, so the tree passes its limit by at most the calls in flight at once.
#[tokio::test]
async fn parallel_members_share_one_tree_limit() {
    // 150 tokens for the tree; each reader answers twice with 100 tokens (400 in all when
    // each member saw only its own spend).
    let (rt, sink) = runtime(Some(TreeLimit::new(None, Some(150))));
    let out = rt.start_composite::<TwoReaders>(me(), "tree-parallel-budget", "go".into()).unwrap().wait().await;
    let usage = out.report().usage;
    let tokens = usage.input_tokens + usage.output_tokens;
    assert!(tokens < 150 + 2 * 100, "at most one call per member past the limit: {tokens} tokens");
    let refused = sink.records().iter().any(|r| {
        r.node.is_some()
            && r.status == AuditStatus::Notice
            && r.reason.as_deref().is_some_and(|t| t.contains("run tree"))
    });
    assert!(refused, "a member's call was refused by the tree's limit");
    // Without the limit both members make both calls.
    let (rt, _) = runtime(None);
    let out = rt.start_composite::<TwoReaders>(me(), "tree-parallel-free", "go".into()).unwrap().wait().await;
    let usage = out.report().usage;
    assert_eq!(usage.input_tokens + usage.output_tokens, 400, "{out:?}");

    // A money limit of 1 USD, every call 0.3: a member's second call holds its estimate (its
    // first call's cost) while it is made, so the other member's second call, beside it, does
    // not fit (0.6 + 0.3 held + 0.3) and is refused. Were holds not counted, both would be
    // admitted (0.6 + 0.3 each) and the tree would spend 1.2.
    let sink = Arc::new(MemorySink::new());
    let model = Arc::new(Priced { sink: sink.clone(), second_calls: AtomicUsize::new(0) });
    let rt = Runtime::builder(sink.clone(), model)
        .roles(RoleMap::new().role("clerk", ["ledger.read", "ledger.write"]))
        .tree_limit(TreeLimit::new(Some(1.0), None))
        .build();
    let out = rt.start_composite::<TwoReaders>(me(), "tree-parallel-usd", "go".into()).unwrap().wait().await;
    let cost = out.report().usage.cost_usd;
    assert!((cost - 0.9).abs() < 1e-9, "three calls of 0.3 USD, the fourth refused: {cost} USD, {out:?}");
    assert_eq!(with_status(&sink, AuditStatus::Notice).iter().filter(|r| tree_refusal(r)).count(), 1);
}

fn tree_refusal(r: &AuditRecord) -> bool {
    r.node.is_some() && r.reason.as_deref().is_some_and(|t| t.contains("run tree"))
}

/// Two parallel readers' model, every call 0.3 USD: a reader's second call waits (up to 5 s)
/// until the other reader's second call arrives too or the tree's limit refused it, so each
/// second call is admitted or refused while the other is in flight.
struct Priced {
    sink: Arc<MemorySink>,
    second_calls: AtomicUsize,
}

impl Provider for Priced {
    fn name(&self) -> &str {
        "scripted"
    }
    fn model(&self) -> &str {
        "priced"
    }
    fn chat<'a>(
        &'a self,
        request: &'a ChatRequest,
        _: &'a dyn TokenSink,
    ) -> BoxFuture<'a, Result<ChatResponse, ProviderError>> {
        Box::pin(async move {
            let second = !tool_messages(request).is_empty();
            if second {
                self.second_calls.fetch_add(1, Ordering::SeqCst);
                for _ in 0..500 {
                    let refused = with_status(&self.sink, AuditStatus::Notice).iter().any(tree_refusal);
                    if refused || self.second_calls.load(Ordering::SeqCst) == 2 {
                        break;
                    }
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
            }
            let mut r = if second { reply("done") } else { tool_call("lookup", r#"{"id": 7}"#) };
            r.usage = Usage { input_tokens: 1, output_tokens: 1, cost_usd: 0.3, ..Usage::default() };
            Ok(r)
        })
    }
}

#[tokio::test]
async fn a_panicking_hook_fails_the_tree_with_a_record_and_the_runtime_goes_on() {
    let (rt, sink) = runtime(None);
    let out = rt.start_composite::<Broken>(me(), "tree-panic", "go".into()).unwrap().wait().await;
    match &out {
        Err(RunError::Node { path, message, .. }) => {
            assert_eq!(path, "broken/branch");
            assert!(message.contains("panicked") && message.contains("the router broke"), "{message}");
        }
        other => panic!("{other:?}"),
    }
    let records = sink.records();
    assert!(
        records
            .iter()
            .any(|r| r.status == AuditStatus::Notice && r.reason.as_deref().is_some_and(|t| t.contains("panicked")))
    );
    assert_eq!(records.last().unwrap().reason.as_deref(), Some("failed"));
    assert!(!paths(&records).iter().any(|p| p.contains("/approver") || p.contains("/reader")), "no arm ran");
    let again = rt.start::<Plain>(me(), "after-panic", "go".into()).unwrap().wait().await;
    assert_eq!(again.status(), RunStatus::Completed);
}

#[tokio::test]
async fn fail_fast_cancels_the_siblings_and_their_pending_actions_end_skipped() {
    let (rt, sink) = runtime(None);
    let mut handle = rt.start_composite::<FailFast>(me(), "tree-fast", "go".into()).unwrap();
    let (call_id, node) = nested_confirmation(&mut handle).await;
    assert_eq!(node, "fail-fast/approver");
    let out = tokio::time::timeout(Duration::from_secs(30), handle.wait()).await.expect("the failure ends the tree");
    match &out {
        Err(RunError::Node { path, .. }) => assert_eq!(path, "fail-fast/failer"),
        other => panic!("{other:?}"),
    }
    let statuses: Vec<AuditStatus> =
        sink.records().iter().filter(|r| r.call_id.as_deref() == Some(call_id.as_str())).map(|r| r.status).collect();
    assert_eq!(statuses, [AuditStatus::Proposed, AuditStatus::Skipped]);
    assert_eq!(ran("tree-fast"), 0);
}

#[tokio::test]
async fn collect_hands_every_result_to_the_join() {
    let (rt, _) = runtime(None);
    let out = rt.start_composite::<Collect>(me(), "tree-collect", "go".into()).unwrap().wait().await;
    assert_eq!(
        out.as_ref().map(|o| o.output.clone()).ok().flatten().as_deref(),
        Some("1 answered, 1 failed"),
        "{out:?}"
    );
}

#[tokio::test]
async fn a_refusing_step_ends_the_tree_before_its_node_runs() {
    let (rt, sink) = runtime(None);
    let out = rt.start_composite::<Refused>(me(), "tree-refused", "go".into()).unwrap().wait().await;
    match &out {
        Err(RunError::Node { path, message, .. }) => {
            assert_eq!(path, "refused/wrap");
            assert!(message.contains("not on a Sunday"), "{message}");
        }
        other => panic!("{other:?}"),
    }
    let records = sink.records();
    assert!(records.iter().any(|r| r.reason.as_deref().is_some_and(|t| t.contains("refused: not on a Sunday"))));
    assert!(!paths(&records).iter().any(|p| p.ends_with("/plain")), "the inner node never ran");
}

#[tokio::test]
async fn a_loop_runs_to_its_bound_and_a_nested_composite_runs_under_its_node() {
    let (rt, sink) = runtime(None);
    let out = rt.start_composite::<Thrice>(me(), "tree-loop", "go".into()).unwrap().wait().await;
    assert_eq!(out.status(), RunStatus::Completed, "{out:?}");
    assert_eq!(sink.records().iter().filter(|r| r.status == AuditStatus::RunStarted).count(), 4, "the tree and 3 runs");

    let (rt, sink) = runtime(None);
    let mut handle = rt.start_composite::<Nested>(me(), "tree-nested", "go".into()).unwrap();
    let (call_id, node) = nested_confirmation(&mut handle).await;
    assert_eq!(node, "nested/read-then-approve/approver");
    rt.decide(&call_id, &me(), Verdict::Approve).unwrap();
    assert_eq!(handle.wait().await.status(), RunStatus::Completed);
    assert!(paths(&sink.records()).contains(&"nested/read-then-approve/reader".to_owned()));
}

#[test]
fn a_committed_log_written_before_run_trees_verifies_and_keeps_its_bytes() {
    let path =
        concat!(env!("CARGO_MANIFEST_DIR"), "/../examples/eval/runs/helpdesk-dev/probes/leave-confirmed/audit.jsonl");
    let text = std::fs::read_to_string(path).unwrap();
    let summary = agents_runtime::agents_core::audit::verify_jsonl(&text, None).unwrap();
    assert!(summary.records > 0);
    for line in text.lines() {
        let record: AuditRecord = serde_json::from_str(line).unwrap();
        assert!(record.node.is_none());
        let again = agents_runtime::agents_core::canonical::to_string(&serde_json::to_value(&record).unwrap());
        assert_eq!(again, line, "the same bytes");
    }
}

#[tokio::test]
async fn every_node_s_events_reach_the_tree_s_reader_before_its_done() {
    let (rt, _sink) = runtime(None);
    // Twenty trees: without the wait for each node's forwarded events, the last run's often
    // arrive after the tree's `done`.
    for i in 0..20 {
        let mut handle = rt.start_composite::<Thrice>(me(), &format!("tree-events-{i}"), "go".into()).unwrap();
        let mut nodes_done = 0;
        while let Some(event) = handle.events().recv().await {
            match event {
                Event::Node { event, .. } if matches!(*event, Event::Done { .. }) => nodes_done += 1,
                Event::Done { .. } => break,
                _ => {}
            }
        }
        assert_eq!(nodes_done, 3, "each of the loop's three runs ended before the tree's `done`");
        assert_eq!(handle.wait().await.status(), RunStatus::Completed);
    }
}
