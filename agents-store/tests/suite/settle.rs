//! Every stored proposal gets exactly one final record, on the paths where the claim of that
//! record and its writing are split:
//!
//! - a node dies right after the store granted its claim (of a rejection's record, of an
//!   approved call's execution) and before it wrote the record: once the settle lease and the
//!   run's slot ran out, a resumption takes the claim over and writes the one record (an
//!   execution that may have run is recorded `failed`, reason `abandoned: ...`, and never run
//!   again);
//! - a live run whose claim fails with a store error writes no record (the run ends with
//!   `RunError::StateUnavailable`); the proposal stays unsettled, and a resumption writes its
//!   one record;
//! - an approval heard on the waiting node that the store cannot record runs nothing: the
//!   proposal is withdrawn and its one record is `skipped` with the reason;
//! - a proposal a live run settled is marked written: a resumption with a zero lease finds
//!   nothing to take over;
//! - a resumption whose execution of an approved call outlasts the settle lease keeps its
//!   claim (it renews it while the call runs): another node resuming all along takes nothing
//!   over, and the call has one final record; a resumption that dies while the call runs stops
//!   renewing, and its claim is taken over once the lease ran out (`failed`, `abandoned: ...`).
//!
//! The death is simulated in-process by a store wrapper that, once the claim committed in the
//! real store, never answers again (every later call of that node hangs, like a process
//! killed between the two steps). On SQLite and on a real PostgreSQL cluster; the chain
//! verifies after each case.

use crate::common;
use agents_runtime::audit::{AuditRecord, AuditStatus, ChainSummary};
use agents_runtime::events::Event;
use agents_runtime::provider::scripted::{reply, tool_call};
use agents_runtime::provider::{ChatResponse, ScriptedProvider, ToolCallRequest};
use agents_runtime::run::RunError;
use agents_runtime::store::{
    DecideOutcome, ProposalCursor, ProposalPage, ProposalRecord, ProposalState, Redeemed, SessionRecord, SessionSaved,
    SlotId, SlotOwner, Store, StoreAuditSink, StoreError, StoreResult, StoredVerdict, TokenGrant,
};
use agents_runtime::{BoxFuture, RunHandle, Runtime, Verdict};
use agents_store::postgres::TempCluster;
use agents_store::testing::leave::{Hr, LeavePair, SERVER_KEY, employee, executions, roles};
use agents_store::{PostgresStore, SqliteStore};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// What the wrapped store does to the claims of a proposal's final record.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Fault {
    /// The claim commits in the real store, then the node is dead: this call and every later
    /// one never answer.
    DieAfterClaim,
    /// Every claim fails with a store error (nothing changes in the real store).
    FailClaims,
    /// The final record is written, then the node is dead before it marks it written.
    DieBeforeMark,
    /// The proposal is stored, then the node is dead (its run waits for ever, its slot lapses).
    DieAfterProposal,
    /// The node is dead from the first renewal of a claim it holds (while it carries it out).
    DieAtRenewal,
    /// Recording a decision fails with a store error (nothing changes in the real store).
    FailDecide,
    /// The second proposal is stored, then the node is dead (its run tree's two nodes wait
    /// for ever, its slots lapse).
    DieAfterSecondProposal,
    /// A resuming node that may claim only one given call (the others' claims answer `false`)
    /// and, once it claimed it, waits for the other resuming node before it looks for the
    /// tree's other waiting proposals: both look when both settled theirs.
    Split,
}

/// A node's view of the real store, with a fault at the claims.
struct Faulty {
    inner: Arc<dyn Store>,
    fault: Fault,
    dead: AtomicBool,
    proposals: std::sync::atomic::AtomicUsize,
    /// For [`Fault::Split`]: the one call this node may claim, the meeting point of the two
    /// resuming nodes, whether this node claimed its call, and whether it met the other.
    split: Option<(String, Arc<tokio::sync::Barrier>)>,
    claimed: AtomicBool,
    met: AtomicBool,
}

impl Faulty {
    fn new(inner: Arc<dyn Store>, fault: Fault) -> Arc<Self> {
        Arc::new(Faulty {
            inner,
            fault,
            dead: AtomicBool::new(false),
            proposals: Default::default(),
            split: None,
            claimed: AtomicBool::new(false),
            met: AtomicBool::new(false),
        })
    }

    /// A resuming node that claims only `call_id` and meets the other at `barrier` (see
    /// [`Fault::Split`]).
    fn split(inner: Arc<dyn Store>, call_id: &str, barrier: Arc<tokio::sync::Barrier>) -> Arc<Self> {
        let mut node = Arc::into_inner(Faulty::new(inner, Fault::Split)).expect("just made");
        node.split = Some((call_id.to_owned(), barrier));
        Arc::new(node)
    }

    /// `f`'s answer while the node lives; a future that never ends once it died.
    fn live<'a, T: Send + 'a>(&'a self, f: BoxFuture<'a, StoreResult<T>>) -> BoxFuture<'a, StoreResult<T>> {
        if self.dead.load(Ordering::SeqCst) { Box::pin(std::future::pending()) } else { f }
    }

    /// A claim: faulted as configured.
    fn claim<'a>(&'a self, f: BoxFuture<'a, StoreResult<bool>>) -> BoxFuture<'a, StoreResult<bool>> {
        match self.fault {
            Fault::DieBeforeMark
            | Fault::DieAfterProposal
            | Fault::DieAfterSecondProposal
            | Fault::DieAtRenewal
            | Fault::FailDecide
            | Fault::Split => self.live(f),
            Fault::FailClaims => Box::pin(async { Err(StoreError::Unavailable("injected: the claim failed".into())) }),
            Fault::DieAfterClaim => self.live(Box::pin(async move {
                let granted = f.await?;
                if granted {
                    self.dead.store(true, Ordering::SeqCst);
                    std::future::pending::<()>().await;
                }
                Ok(granted)
            })),
        }
    }
}

impl Store for Faulty {
    fn mint_token<'a>(&'a self, grant: &'a TokenGrant, ttl: Duration) -> BoxFuture<'a, StoreResult<()>> {
        self.live(self.inner.mint_token(grant, ttl))
    }
    fn redeem_token<'a>(&'a self, id: &'a str) -> BoxFuture<'a, StoreResult<Redeemed>> {
        self.live(self.inner.redeem_token(id))
    }
    fn revoke_session_tokens<'a>(&'a self, session_id: &'a str) -> BoxFuture<'a, StoreResult<u64>> {
        self.live(self.inner.revoke_session_tokens(session_id))
    }
    fn prune_tokens(&self) -> BoxFuture<'_, StoreResult<u64>> {
        self.live(self.inner.prune_tokens())
    }
    fn acquire_slot<'a>(
        &'a self,
        owner: &'a SlotOwner,
        cap: u32,
        lease: Duration,
    ) -> BoxFuture<'a, StoreResult<Option<SlotId>>> {
        self.live(self.inner.acquire_slot(owner, cap, lease))
    }
    fn renew_slot<'a>(&'a self, slot: &'a SlotId, lease: Duration) -> BoxFuture<'a, StoreResult<bool>> {
        self.live(self.inner.renew_slot(slot, lease))
    }
    fn release_slot<'a>(&'a self, slot: &'a SlotId) -> BoxFuture<'a, StoreResult<()>> {
        self.live(self.inner.release_slot(slot))
    }
    fn slot_held<'a>(&'a self, slot: &'a SlotId) -> BoxFuture<'a, StoreResult<bool>> {
        self.live(self.inner.slot_held(slot))
    }
    fn active_slots<'a>(&'a self, owner: &'a SlotOwner) -> BoxFuture<'a, StoreResult<u32>> {
        self.live(self.inner.active_slots(owner))
    }
    fn claim_tree_close<'a>(&'a self, tree_run_id: &'a str, node: &'a str) -> BoxFuture<'a, StoreResult<bool>> {
        self.live(self.inner.claim_tree_close(tree_run_id, node))
    }
    fn put_proposal<'a>(&'a self, proposal: &'a ProposalRecord) -> BoxFuture<'a, StoreResult<()>> {
        match self.fault {
            Fault::DieAfterProposal => self.live(Box::pin(async move {
                self.inner.put_proposal(proposal).await?;
                self.dead.store(true, Ordering::SeqCst);
                std::future::pending().await
            })),
            Fault::DieAfterSecondProposal => self.live(Box::pin(async move {
                self.inner.put_proposal(proposal).await?;
                if self.proposals.fetch_add(1, Ordering::SeqCst) == 1 {
                    self.dead.store(true, Ordering::SeqCst);
                    std::future::pending::<()>().await;
                }
                Ok(())
            })),
            _ => self.live(self.inner.put_proposal(proposal)),
        }
    }
    fn decide<'a>(
        &'a self,
        call_id: &'a str,
        org_id: &'a str,
        user_id: &'a str,
        verdict: StoredVerdict,
        reason: Option<&'a str>,
        seal: &'a str,
    ) -> BoxFuture<'a, StoreResult<DecideOutcome>> {
        if self.fault == Fault::FailDecide {
            return Box::pin(async { Err(StoreError::Unavailable("injected: the decision failed".into())) });
        }
        self.live(self.inner.decide(call_id, org_id, user_id, verdict, reason, seal))
    }
    fn proposal<'a>(&'a self, call_id: &'a str) -> BoxFuture<'a, StoreResult<Option<ProposalState>>> {
        self.live(self.inner.proposal(call_id))
    }
    fn pending_for<'a>(&'a self, org_id: &'a str, user_id: &'a str) -> BoxFuture<'a, StoreResult<Vec<ProposalRecord>>> {
        self.live(self.inner.pending_for(org_id, user_id))
    }
    fn claim_execution<'a>(
        &'a self,
        call_id: &'a str,
        node: &'a str,
        seal: &'a str,
    ) -> BoxFuture<'a, StoreResult<bool>> {
        if let Some((only, _)) = &self.split {
            if only != call_id {
                return Box::pin(async { Ok(false) });
            }
            self.claimed.store(true, Ordering::SeqCst);
        }
        self.claim(self.inner.claim_execution(call_id, node, seal))
    }
    fn approved_unclaimed(&self, limit: u32) -> BoxFuture<'_, StoreResult<Vec<ProposalState>>> {
        self.live(self.inner.approved_unclaimed(limit))
    }
    fn claim_settlement<'a>(&'a self, call_id: &'a str, node: &'a str) -> BoxFuture<'a, StoreResult<bool>> {
        self.claim(self.inner.claim_settlement(call_id, node))
    }
    fn close_undecided<'a>(
        &'a self,
        call_id: &'a str,
        node: &'a str,
        reason: &'a str,
    ) -> BoxFuture<'a, StoreResult<bool>> {
        self.claim(self.inner.close_undecided(call_id, node, reason))
    }
    fn unsettled(
        &self,
        after: ProposalCursor,
        limit: u32,
        undecided_for: Duration,
    ) -> BoxFuture<'_, StoreResult<ProposalPage>> {
        if let Some((_, barrier)) = &self.split
            && self.claimed.load(Ordering::SeqCst)
            && !self.met.swap(true, Ordering::SeqCst)
        {
            return Box::pin(async move {
                let met = tokio::time::timeout(Duration::from_secs(30), barrier.wait()).await;
                assert!(met.is_ok(), "the other resuming node never settled its call");
                self.inner.unsettled(after, limit, undecided_for).await
            });
        }
        self.live(self.inner.unsettled(after, limit, undecided_for))
    }
    fn mark_recorded<'a>(&'a self, call_id: &'a str) -> BoxFuture<'a, StoreResult<()>> {
        if self.fault == Fault::DieBeforeMark {
            self.dead.store(true, Ordering::SeqCst);
        }
        self.live(self.inner.mark_recorded(call_id))
    }
    fn stale_claims(
        &self,
        after: ProposalCursor,
        limit: u32,
        lease: Duration,
    ) -> BoxFuture<'_, StoreResult<ProposalPage>> {
        self.live(self.inner.stale_claims(after, limit, lease))
    }
    fn take_over<'a>(&'a self, call_id: &'a str, node: &'a str, lease: Duration) -> BoxFuture<'a, StoreResult<bool>> {
        self.live(self.inner.take_over(call_id, node, lease))
    }
    fn renew_claim<'a>(&'a self, call_id: &'a str, node: &'a str) -> BoxFuture<'a, StoreResult<bool>> {
        if self.fault == Fault::DieAtRenewal {
            self.dead.store(true, Ordering::SeqCst);
        }
        self.live(self.inner.renew_claim(call_id, node))
    }
    fn prune_proposals(&self, retention: Duration) -> BoxFuture<'_, StoreResult<u64>> {
        self.live(self.inner.prune_proposals(retention))
    }
    fn save_session<'a>(
        &'a self,
        session: &'a SessionRecord,
        idle: Duration,
    ) -> BoxFuture<'a, StoreResult<SessionSaved>> {
        self.live(self.inner.save_session(session, idle))
    }
    fn load_session<'a>(
        &'a self,
        session_id: &'a str,
        idle: Duration,
    ) -> BoxFuture<'a, StoreResult<Option<SessionRecord>>> {
        self.live(self.inner.load_session(session_id, idle))
    }
    fn delete_session<'a>(&'a self, session_id: &'a str) -> BoxFuture<'a, StoreResult<bool>> {
        self.live(self.inner.delete_session(session_id))
    }
    fn prune_sessions(&self, idle: Duration) -> BoxFuture<'_, StoreResult<u64>> {
        self.live(self.inner.prune_sessions(idle))
    }
    fn append_audit<'a>(
        &'a self,
        stream: &'a str,
        records: Vec<AuditRecord>,
    ) -> BoxFuture<'a, StoreResult<Vec<AuditRecord>>> {
        self.live(self.inner.append_audit(stream, records))
    }
    fn verify_audit<'a>(&'a self, stream: &'a str) -> BoxFuture<'a, StoreResult<ChainSummary>> {
        self.live(self.inner.verify_audit(stream))
    }
    fn audit_lines<'a>(
        &'a self,
        stream: &'a str,
        after_seq: u64,
        limit: u32,
    ) -> BoxFuture<'a, StoreResult<Vec<(u64, String)>>> {
        self.live(self.inner.audit_lines(stream, after_seq, limit))
    }
    fn holds_final<'a>(&'a self, stream: &'a str, call_id: &'a str) -> BoxFuture<'a, StoreResult<Option<bool>>> {
        self.live(self.inner.holds_final(stream, call_id))
    }
}

/// A model answer that calls `submit_leave`.
fn leave(days: u32) -> ChatResponse {
    ChatResponse {
        content: String::new(),
        tool_calls: vec![ToolCallRequest {
            id: "call_1".into(),
            name: "submit_leave".into(),
            arguments: format!(r#"{{"days": {days}}}"#),
        }],
        usage: Default::default(),
    }
}

/// The lease of a run's slot and of a claim, short so the tests wait little.
const LEASE: Duration = Duration::from_millis(300);

/// A node whose state and audit log (stream `audit`) are in `store`.
fn node(store: Arc<dyn Store>, script: Vec<ChatResponse>, settle_lease: Duration) -> Runtime {
    Runtime::builder(Arc::new(StoreAuditSink::new(store.clone(), "audit")), Arc::new(ScriptedProvider::new(script)))
        .roles(roles())
        .server_key(SERVER_KEY)
        .store(store)
        .decision_poll(Duration::from_millis(20))
        .run_slot_lease(LEASE)
        .settle_lease(settle_lease)
        .build()
}

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

/// The records of `call_id` in stream `audit` of `spec`'s database (a PostgreSQL CONNINFO,
/// or `sqlite:PATH`), in chain order.
async fn records_of(spec: &str, call_id: &str) -> Vec<AuditRecord> {
    all_records(spec).await.into_iter().filter(|r| r.call_id.as_deref() == Some(call_id)).collect()
}

/// Every record in stream `audit` of `spec`'s database, in chain order.
async fn all_records(spec: &str) -> Vec<AuditRecord> {
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
    lines.iter().map(|l| serde_json::from_str::<AuditRecord>(l).unwrap()).collect()
}

fn statuses(records: &[AuditRecord]) -> Vec<AuditStatus> {
    records.iter().map(|r| r.status).collect()
}

/// Node A's run hears the person's rejection (made through node B), wins the claim of the
/// rejection's record, and dies before writing it. Once the lease ran out, one of two
/// resuming nodes writes the one `rejected` record, with the person's reason.
async fn dies_after_claiming_a_rejection(spec: &str, store: Arc<dyn Store>, prefix: &str) {
    let s = session(prefix);
    let dying = Faulty::new(store.clone(), Fault::DieAfterClaim);
    let node_a = node(dying.clone(), vec![leave(2), reply("done")], LEASE);
    let (node_b, node_c) = (node(store.clone(), vec![], LEASE), node(store.clone(), vec![], LEASE));
    let mut run = node_a.start::<Hr>(employee(), &s, "two days".into()).unwrap();
    let call_id = confirm_required(&mut run).await;
    node_b.decide_async(&call_id, &employee(), Verdict::Reject, Some("busy week")).await.unwrap();
    // Node A claims the record, then never answers again.
    let deadline = tokio::time::Instant::now() + LEASE * 20;
    while !dying.dead.load(Ordering::SeqCst) {
        assert!(tokio::time::Instant::now() < deadline, "node A never claimed the rejection's record");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let claimed = store.proposal(&call_id).await.unwrap().unwrap();
    assert!(claimed.settled_by.is_some(), "the claim committed");
    assert_eq!(statuses(&records_of(spec, &call_id).await), [AuditStatus::Proposed], "and nothing was written");

    let settled = common::resume_until_settled(&node_b, &node_c, LEASE * 40).await;
    assert_eq!(settled.len(), 1, "one node took the claim over: {settled:?}");
    assert_eq!((settled[0].call_id.as_str(), settled[0].status), (call_id.as_str(), AuditStatus::Rejected));
    assert!(settled[0].recorded);
    tokio::time::sleep(LEASE * 2).await;
    for _ in 0..3 {
        assert!(node_b.resume_orphaned::<Hr>().await.unwrap().is_empty(), "settled once");
        assert!(node_c.resume_orphaned::<Hr>().await.unwrap().is_empty(), "settled once");
    }
    let records = records_of(spec, &call_id).await;
    assert_eq!(statuses(&records), [AuditStatus::Proposed, AuditStatus::Rejected], "exactly one final record");
    assert_eq!(records[1].reason.as_deref(), Some("the user declined: busy week"));
    assert_eq!(&*records[1].run_id, &*records[0].run_id);
    assert_eq!(executions(&s), 0);
    store.verify_audit("audit").await.expect("the chain verifies");
    drop(run);
}

/// Node A's run wins the claim of an approved call's execution and dies before writing
/// anything more. The call is never run again: a resumption writes one `failed` record saying
/// its outcome is unknown (`abandoned: ...`, naming the node).
async fn dies_after_claiming_an_execution(spec: &str, store: Arc<dyn Store>, prefix: &str) {
    let s = session(prefix);
    let dying = Faulty::new(store.clone(), Fault::DieAfterClaim);
    let node_a = node(dying.clone(), vec![leave(3), reply("done")], LEASE);
    let (node_b, node_c) = (node(store.clone(), vec![], LEASE), node(store.clone(), vec![], LEASE));
    let mut run = node_a.start::<Hr>(employee(), &s, "three days".into()).unwrap();
    let call_id = confirm_required(&mut run).await;
    node_b.decide_async(&call_id, &employee(), Verdict::Approve, None).await.unwrap();
    let deadline = tokio::time::Instant::now() + LEASE * 20;
    while !dying.dead.load(Ordering::SeqCst) {
        assert!(tokio::time::Instant::now() < deadline, "node A never claimed the execution");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let settled = common::resume_until_settled(&node_b, &node_c, LEASE * 40).await;
    assert_eq!(settled.len(), 1, "one node took the claim over: {settled:?}");
    assert_eq!((settled[0].call_id.as_str(), settled[0].status), (call_id.as_str(), AuditStatus::Failed));
    tokio::time::sleep(LEASE * 2).await;
    for _ in 0..3 {
        assert!(node_b.resume_orphaned::<Hr>().await.unwrap().is_empty(), "settled once");
        assert!(node_c.resume_orphaned::<Hr>().await.unwrap().is_empty(), "settled once");
    }
    let records = records_of(spec, &call_id).await;
    assert_eq!(statuses(&records), [AuditStatus::Proposed, AuditStatus::Failed], "exactly one final record");
    let reason = records[1].reason.as_deref().unwrap_or_default();
    assert!(reason.starts_with("abandoned:") && reason.contains("claimed its execution"), "{reason}");
    assert_eq!(executions(&s), 0, "never run by the resumption");
    store.verify_audit("audit").await.expect("the chain verifies");
    drop(run);
}

/// Node A's run claims the rejection's record and writes it, then dies before marking it
/// written. Once the lease ran out, a resumption takes the claim over, finds the record in
/// the log and only marks it: still exactly one final record.
async fn dies_between_the_record_and_its_mark(spec: &str, store: Arc<dyn Store>, prefix: &str) {
    let s = session(prefix);
    let dying = Faulty::new(store.clone(), Fault::DieBeforeMark);
    let node_a = node(dying.clone(), vec![leave(6), reply("done")], LEASE);
    let (node_b, node_c) = (node(store.clone(), vec![], LEASE), node(store.clone(), vec![], LEASE));
    let mut run = node_a.start::<Hr>(employee(), &s, "six days".into()).unwrap();
    let call_id = confirm_required(&mut run).await;
    node_b.decide_async(&call_id, &employee(), Verdict::Reject, Some("too long")).await.unwrap();
    let deadline = tokio::time::Instant::now() + LEASE * 20;
    while !dying.dead.load(Ordering::SeqCst) {
        assert!(tokio::time::Instant::now() < deadline, "node A never wrote the rejection's record");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(statuses(&records_of(spec, &call_id).await), [AuditStatus::Proposed, AuditStatus::Rejected]);
    let unmarked = |found: Vec<ProposalState>| found.iter().any(|p| p.proposal.call_id == call_id);
    assert!(
        unmarked(store.stale_claims(ProposalCursor::START, 1000, Duration::ZERO).await.unwrap().proposals),
        "written, not marked"
    );
    let deadline = tokio::time::Instant::now() + LEASE * 40;
    while unmarked(store.stale_claims(ProposalCursor::START, 1000, Duration::ZERO).await.unwrap().proposals) {
        assert!(tokio::time::Instant::now() < deadline, "the lapsed claim was never taken over");
        let (from_b, from_c) = tokio::join!(node_b.resume_orphaned::<Hr>(), node_c.resume_orphaned::<Hr>());
        let done: Vec<_> = from_b.unwrap().into_iter().chain(from_c.unwrap()).collect();
        assert!(done.iter().all(|d| d.call_id != call_id), "its record is not written again: {done:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let records = records_of(spec, &call_id).await;
    assert_eq!(statuses(&records), [AuditStatus::Proposed, AuditStatus::Rejected], "exactly one final record");
    assert_eq!(records[1].reason.as_deref(), Some("the user declined: too long"));
    store.verify_audit("audit").await.expect("the chain verifies");
    drop(run);
}

/// A live run whose claim of the rejection's record fails writes no final record and ends
/// with `StateUnavailable`; the proposal stays unsettled, and a resumption writes its one
/// record.
async fn a_failed_claim_leaves_the_record_to_a_resumption(spec: &str, store: Arc<dyn Store>, prefix: &str) {
    let s = session(prefix);
    let failing = Faulty::new(store.clone(), Fault::FailClaims);
    let node_a = node(failing, vec![leave(4), reply("done")], LEASE);
    let node_b = node(store.clone(), vec![], LEASE);
    let mut run = node_a.start::<Hr>(employee(), &s, "four days".into()).unwrap();
    let call_id = confirm_required(&mut run).await;
    node_b.decide_async(&call_id, &employee(), Verdict::Reject, Some("no")).await.unwrap();
    match run.wait().await {
        Err(RunError::StateUnavailable { message, .. }) => assert!(message.contains("injected"), "{message}"),
        other => panic!("expected StateUnavailable, got {other:?}"),
    }
    assert_eq!(statuses(&records_of(spec, &call_id).await), [AuditStatus::Proposed], "no record without the claim");
    let left = store.proposal(&call_id).await.unwrap().unwrap();
    assert_eq!((left.verdict, left.settled_by), (Some(StoredVerdict::Rejected), None), "still unsettled");

    let settled = common::resume_until_settled(&node_b, &node_b, LEASE * 40).await;
    assert_eq!(settled.len(), 1, "{settled:?}");
    assert_eq!(settled[0].status, AuditStatus::Rejected);
    let records = records_of(spec, &call_id).await;
    assert_eq!(statuses(&records), [AuditStatus::Proposed, AuditStatus::Rejected], "exactly one final record");
    assert_eq!(records[1].reason.as_deref(), Some("the user declined: no"));
    assert_eq!(executions(&s), 0);
    store.verify_audit("audit").await.expect("the chain verifies");
}

/// A person approves on the node whose run waits, and the store cannot record the decision:
/// nothing runs (an approval the store does not hold could be contradicted on another node),
/// the proposal is withdrawn in the store, and its one final record says why; no resumption
/// writes another.
async fn an_approval_the_store_cannot_record_runs_nothing(spec: &str, store: Arc<dyn Store>, prefix: &str) {
    let s = session(prefix);
    let failing = Faulty::new(store.clone(), Fault::FailDecide);
    let node_a = node(failing, vec![leave(5), reply("done")], LEASE);
    let mut run = node_a.start::<Hr>(employee(), &s, "five days".into()).unwrap();
    let call_id = confirm_required(&mut run).await;
    node_a.decide(&call_id, &employee(), Verdict::Approve).unwrap();
    run.wait().await.expect("the run goes on after the refused call");
    let records = records_of(spec, &call_id).await;
    assert_eq!(statuses(&records), [AuditStatus::Proposed, AuditStatus::Skipped], "one final record, nothing ran");
    let reason = records[1].reason.as_deref().unwrap_or_default();
    assert!(reason.contains("could not be recorded in the state store") && reason.contains("injected"), "{reason}");
    assert_eq!(executions(&s), 0);
    let left = store.proposal(&call_id).await.unwrap().unwrap();
    assert!(left.settled_by.is_some(), "withdrawn in the store: {left:?}");
    let node_b = node(store.clone(), vec![], Duration::ZERO);
    for _ in 0..3 {
        assert!(node_b.resume_orphaned::<Hr>().await.unwrap().is_empty(), "nothing left to settle");
        tokio::time::sleep(LEASE).await;
    }
    assert_eq!(statuses(&records_of(spec, &call_id).await).len(), 2, "still one final record");
    store.verify_audit("audit").await.expect("the chain verifies");
}

/// Proposals a live run settled (approved and run, rejected) are marked written: a
/// resumption with a zero settle lease takes nothing over, and each has one final record.
async fn settled_proposals_are_marked(spec: &str, store: Arc<dyn Store>, prefix: &str) {
    let s = session(prefix);
    let node_a = node(store.clone(), vec![leave(1), leave(5), reply("done")], LEASE);
    let eager = node(store.clone(), vec![], Duration::ZERO);
    let mut run = node_a.start::<Hr>(employee(), &s, "one day, then five".into()).unwrap();
    let first = confirm_required(&mut run).await;
    node_a.decide_async(&first, &employee(), Verdict::Approve, None).await.unwrap();
    let second = confirm_required(&mut run).await;
    node_a.decide_async(&second, &employee(), Verdict::Reject, None).await.unwrap();
    run.wait().await.unwrap();
    // The run's slot is released: only the marks keep a resumption away.
    tokio::time::sleep(LEASE * 2).await;
    assert!(eager.resume_orphaned::<Hr>().await.unwrap().is_empty(), "nothing to take over");
    assert_eq!(
        statuses(&records_of(spec, &first).await),
        [AuditStatus::Proposed, AuditStatus::Confirmed, AuditStatus::Executed]
    );
    assert_eq!(statuses(&records_of(spec, &second).await), [AuditStatus::Proposed, AuditStatus::Rejected]);
    assert_eq!(executions(&s), 1);
}

/// The settle lease of the long-execution cases, and how long their action runs (four leases).
const SETTLE: Duration = Duration::from_secs(1);
const SLOW: Duration = Duration::from_secs(4);

/// An agent whose one action runs for [`SLOW`], counting its executions per session.
mod slow {
    use agents_runtime::{ToolContext, agent, permissions, tool};

    permissions! {
        pub mod perms { report.write }
    }

    static EXECUTIONS: crate::common::ExecutionCount = crate::common::ExecutionCount::new();

    /// How often the action started in `session`.
    pub fn executions(session: &str) -> usize {
        EXECUTIONS.of(session)
    }

    /// Files a report; takes its time.
    ///
    /// # Arguments
    ///
    /// * `pages` - how many pages the report has
    #[tool(permission = perms::report::write, mutating, title = "File a report")]
    async fn file_report(cx: &ToolContext<'_>, pages: u32) -> Result<String, String> {
        EXECUTIONS.ran(cx.session_id());
        tokio::time::sleep(super::SLOW).await;
        Ok(format!("{pages} pages filed"))
    }

    agent! {
        /// Files reports.
        pub struct Reports;
        tools: [file_report],
    }
}

/// A node of the long-execution cases: the run's slot lapses after [`LEASE`], a claim after
/// [`SETTLE`].
fn slow_node(store: Arc<dyn Store>, script: Vec<ChatResponse>) -> Runtime {
    Runtime::builder(Arc::new(StoreAuditSink::new(store.clone(), "audit")), Arc::new(ScriptedProvider::new(script)))
        .roles(agents_runtime::RoleMap::new().role("employee", ["report.write"]))
        .server_key(SERVER_KEY)
        .store(store)
        .decision_poll(Duration::from_millis(20))
        .run_slot_lease(LEASE)
        .settle_lease(SETTLE)
        .build()
}

/// Node A proposes filing a report and is gone right after the proposal is stored (its run
/// waits for ever, its slot lapses); the person approves through `decider`. The proposal's
/// call id, and A's run (kept, so nothing of it is dropped while the case runs).
async fn proposed_by_a_gone_node(
    store: &Arc<dyn Store>,
    decider: &Runtime,
    s: &str,
) -> (String, agents_runtime::RunHandle<String>) {
    let dying = Faulty::new(store.clone(), Fault::DieAfterProposal);
    let node_a = slow_node(dying.clone(), vec![tool_call("file_report", r#"{"pages": 3}"#), reply("filed")]);
    let run = node_a.start::<slow::Reports>(employee(), s, "file my report".into()).unwrap();
    let deadline = tokio::time::Instant::now() + LEASE * 20;
    let call_id = loop {
        let listed = decider.pending_decisions(&employee()).await.unwrap();
        if let Some(p) = listed.iter().find(|p| p.session_id.as_deref() == Some(s)) {
            break p.call_id.clone();
        }
        assert!(tokio::time::Instant::now() < deadline, "node A never stored its proposal");
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    // The proposal is visible once its insert commits; node A marks itself dead right after.
    while !dying.dead.load(Ordering::SeqCst) {
        assert!(tokio::time::Instant::now() < deadline, "node A stored its proposal but never died");
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    decider.decide_async(&call_id, &employee(), Verdict::Approve, None).await.unwrap();
    (call_id, run)
}

/// The statuses of `records` that end a call.
fn finals(records: &[AuditRecord]) -> Vec<AuditStatus> {
    use AuditStatus::{Denied, Executed, Failed, Rejected, Skipped};
    statuses(records).into_iter().filter(|s| matches!(s, Executed | Failed | Rejected | Skipped | Denied)).collect()
}

/// Node B's resumption carries out the approved call, which runs four settle leases; node C
/// resumes over and over meanwhile. B renews its claim while the call runs, so C never takes
/// it over: the call runs once and has exactly one final record, B's `executed`.
async fn a_long_execution_keeps_its_claim(spec: &str, store: Arc<dyn Store>, prefix: &str) {
    let s = session(prefix);
    let (node_b, node_c) = (slow_node(store.clone(), vec![]), slow_node(store.clone(), vec![]));
    let (call_id, run) = proposed_by_a_gone_node(&store, &node_c, &s).await;
    let resumer = tokio::spawn(async move {
        loop {
            let done = node_b.resume_orphaned::<slow::Reports>().await.unwrap();
            if !done.is_empty() {
                return done;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    });
    let deadline = tokio::time::Instant::now() + LEASE * 40;
    while slow::executions(&s) == 0 {
        assert!(tokio::time::Instant::now() < deadline, "node B never carried the call out");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    // Node C resumes all along the execution, which outlasts the settle lease four times.
    let mut taken = Vec::new();
    while !resumer.is_finished() {
        taken.extend(node_c.resume_orphaned::<slow::Reports>().await.unwrap());
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(taken.is_empty(), "node C took the live execution over: {taken:?}");
    let carried = resumer.await.unwrap();
    assert_eq!(carried.len(), 1, "{carried:?}");
    assert_eq!((carried[0].call_id.as_str(), carried[0].status), (call_id.as_str(), AuditStatus::Executed));
    tokio::time::sleep(SETTLE * 2).await;
    assert!(node_c.resume_orphaned::<slow::Reports>().await.unwrap().is_empty(), "its record is marked written");
    let records = records_of(spec, &call_id).await;
    assert_eq!(
        statuses(&records),
        [AuditStatus::Proposed, AuditStatus::Confirmed, AuditStatus::Executed],
        "exactly one final record"
    );
    assert_eq!(slow::executions(&s), 1, "executed once");
    store.verify_audit("audit").await.expect("the chain verifies");
    drop(run);
}

/// Node B's resumption carries out the approved call and dies while it runs (from its first
/// renewal of the claim on, it never answers again): its claim lapses after the settle lease
/// like any dead holder's, node C takes it over and writes the one final record (`failed`,
/// `abandoned: ...`), and never runs the call again.
async fn a_dead_resumers_claim_still_lapses(spec: &str, store: Arc<dyn Store>, prefix: &str) {
    let s = session(prefix);
    let dying = Faulty::new(store.clone(), Fault::DieAtRenewal);
    let (node_b, node_c) = (slow_node(dying.clone(), vec![]), slow_node(store.clone(), vec![]));
    let (call_id, run) = proposed_by_a_gone_node(&store, &node_c, &s).await;
    let resumer = tokio::spawn(async move {
        loop {
            if !node_b.resume_orphaned::<slow::Reports>().await.unwrap().is_empty() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    });
    let deadline = tokio::time::Instant::now() + LEASE * 40;
    while !dying.dead.load(Ordering::SeqCst) {
        assert!(tokio::time::Instant::now() < deadline, "node B never carried the call out");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let deadline = tokio::time::Instant::now() + SETTLE * 20;
    let settled = loop {
        let done = node_c.resume_orphaned::<slow::Reports>().await.unwrap();
        if !done.is_empty() {
            break done;
        }
        assert!(tokio::time::Instant::now() < deadline, "the dead resumer's claim never lapsed");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(settled.len(), 1, "{settled:?}");
    assert_eq!((settled[0].call_id.as_str(), settled[0].status), (call_id.as_str(), AuditStatus::Failed));
    // B's call finishes running meanwhile; B is dead and writes nothing more.
    tokio::time::sleep(SLOW).await;
    assert!(node_c.resume_orphaned::<slow::Reports>().await.unwrap().is_empty(), "settled once");
    let records = records_of(spec, &call_id).await;
    assert_eq!(finals(&records), [AuditStatus::Failed], "exactly one final record");
    let reason = records.last().and_then(|r| r.reason.as_deref()).unwrap_or_default();
    assert!(reason.starts_with("abandoned:") && reason.contains("claimed its execution"), "{reason}");
    assert_eq!(slow::executions(&s), 1, "never run again");
    store.verify_audit("audit").await.expect("the chain verifies");
    resumer.abort();
    drop(run);
}

/// Node A runs the tree `LeavePair`, whose two nodes each propose an action, and is gone once
/// both proposals are stored. The person approves both; nodes B and C resume at once, B
/// settling the first call and C the second, and both look for the tree's other waiting
/// proposals only once both settled theirs: both find none, both would close the tree. The
/// store lets one of them: the tree's root run has exactly one `run_finished`.
async fn two_nodes_settling_a_trees_last_proposals_close_it_once(spec: &str, store: Arc<dyn Store>, prefix: &str) {
    let s = session(prefix);
    let dying = Faulty::new(store.clone(), Fault::DieAfterSecondProposal);
    let node_a = node(dying.clone(), vec![leave(2), leave(3), reply("done"), reply("done")], LEASE);
    let decider = node(store.clone(), vec![], LEASE);
    let run = node_a.start_composite::<LeavePair>(employee(), &s, "five days".into()).unwrap();
    let tree = run.run_id().to_owned();
    // A bound on waiting only (a loaded machine is slow to start both members), not on the
    // guarantee.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    let calls: Vec<String> = loop {
        let listed = decider.pending_decisions(&employee()).await.unwrap();
        let ours: Vec<String> =
            listed.iter().filter(|p| p.session_id.as_deref() == Some(s.as_str())).map(|p| p.call_id.clone()).collect();
        if ours.len() == 2 && dying.dead.load(Ordering::SeqCst) {
            break ours;
        }
        assert!(tokio::time::Instant::now() < deadline, "node A never stored both proposals");
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    for call_id in &calls {
        decider.decide_async(call_id, &employee(), Verdict::Approve, None).await.unwrap();
    }
    // The dead tree's slots lapse before anyone resumes.
    tokio::time::sleep(LEASE * 3).await;
    let barrier = Arc::new(tokio::sync::Barrier::new(2));
    let (b, c) =
        (Faulty::split(store.clone(), &calls[0], barrier.clone()), Faulty::split(store.clone(), &calls[1], barrier));
    let (node_b, node_c) = (node(b.clone(), vec![], LEASE), node(c.clone(), vec![], LEASE));
    let (from_b, from_c) = tokio::join!(node_b.resume_orphaned::<Hr>(), node_c.resume_orphaned::<Hr>());
    let (from_b, from_c) = (from_b.unwrap(), from_c.unwrap());
    assert_eq!(from_b.iter().map(|r| &r.call_id).collect::<Vec<_>>(), [&calls[0]], "B settled the first call");
    assert_eq!(from_c.iter().map(|r| &r.call_id).collect::<Vec<_>>(), [&calls[1]], "C settled the second call");
    assert!(b.met.load(Ordering::SeqCst) && c.met.load(Ordering::SeqCst), "both looked once both had settled");
    let root: Vec<AuditStatus> =
        all_records(spec).await.iter().filter(|r| *r.run_id == *tree).map(|r| r.status).collect();
    assert_eq!(root, [AuditStatus::RunStarted, AuditStatus::RunFinished], "the tree is closed exactly once");
    assert_eq!(executions(&s), 2, "each approved call ran once");
    store.verify_audit("audit").await.expect("the chain verifies");
    drop(run);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_every_proposal_gets_one_final_record() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state.db");
    let spec = format!("sqlite:{}", path.display());
    let store: Arc<dyn Store> = Arc::new(SqliteStore::open(&path).unwrap());
    settled_proposals_are_marked(&spec, store.clone(), "sqlite-marked").await;
    dies_after_claiming_a_rejection(&spec, store.clone(), "sqlite-reject").await;
    dies_after_claiming_an_execution(&spec, store.clone(), "sqlite-exec").await;
    dies_between_the_record_and_its_mark(&spec, store.clone(), "sqlite-mark").await;
    a_failed_claim_leaves_the_record_to_a_resumption(&spec, store.clone(), "sqlite-failed").await;
    an_approval_the_store_cannot_record_runs_nothing(&spec, store.clone(), "sqlite-undecidable").await;
    a_long_execution_keeps_its_claim(&spec, store.clone(), "sqlite-long").await;
    a_dead_resumers_claim_still_lapses(&spec, store.clone(), "sqlite-dead-resumer").await;
    two_nodes_settling_a_trees_last_proposals_close_it_once(&spec, store, "sqlite-tree-close").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_every_proposal_gets_one_final_record() {
    let cluster = TempCluster::start().unwrap_or_else(|e| panic!("{e}"));
    let url = cluster.create_database("settle").await.unwrap_or_else(|e| panic!("{e}"));
    let store: Arc<dyn Store> = Arc::new(PostgresStore::connect(&url, 8).await.unwrap());
    settled_proposals_are_marked(&url, store.clone(), "pg-marked").await;
    dies_after_claiming_a_rejection(&url, store.clone(), "pg-reject").await;
    dies_after_claiming_an_execution(&url, store.clone(), "pg-exec").await;
    dies_between_the_record_and_its_mark(&url, store.clone(), "pg-mark").await;
    a_failed_claim_leaves_the_record_to_a_resumption(&url, store.clone(), "pg-failed").await;
    an_approval_the_store_cannot_record_runs_nothing(&url, store.clone(), "pg-undecidable").await;
    a_long_execution_keeps_its_claim(&url, store.clone(), "pg-long").await;
    a_dead_resumers_claim_still_lapses(&url, store.clone(), "pg-dead-resumer").await;
    two_nodes_settling_a_trees_last_proposals_close_it_once(&url, store, "pg-tree-close").await;
}
