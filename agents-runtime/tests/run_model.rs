//! A model-based test of the proposal's life through the runtime's real channels
//! (conversational runs, dialog runs, a direct session): random schedules of proposals,
//! duplicated, concurrent and late decisions (also from the same user under another role),
//! stops, iteration limits, confirmation timeouts, audit-sink refusals, tool panics and ends
//! of the session. After each schedule every proposal has exactly one final record offered to
//! the log, the tool ran at most once per proposal, and only in the turn whose approval was
//! recorded, before that turn ended.
//!
//! `AGENTS_MODEL_CASES` sets the number of schedules (300 by default; the full proof runs
//! 10^4: `AGENTS_MODEL_CASES=10000 cargo test -p agents-runtime --test run_model`).

use agents_runtime::audit::{Appended, AuditRecord, AuditSink, AuditStatus, MemorySink};
use agents_runtime::provider::{
    ChatMessage, ChatRequest, ChatResponse, Provider, ProviderError, TokenSink, ToolCallRequest, Usage,
};
use agents_runtime::run::{ConfirmAnswer, ConfirmRequest, Confirmer, DirectSession, Undecided};
use agents_runtime::{
    BoxFuture, ConfirmMode, Limits, Principal, RoleMap, Runtime, ToolContext, Verdict, agent, permissions, tool,
};
use proptest::prelude::*;
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

permissions! {
    pub mod perms { leave.read, leave.write }
}

/// What each schedule's session saw: the sink, whether the tool panics, executions.
#[derive(Default)]
struct World {
    sink: Option<Arc<FlakySink>>,
    panics: bool,
    /// (call id, run id, whether that run had already finished, per the log).
    executions: Vec<(String, String, bool)>,
}

fn worlds() -> &'static Mutex<HashMap<String, World>> {
    static W: OnceLock<Mutex<HashMap<String, World>>> = OnceLock::new();
    W.get_or_init(Default::default)
}

/// Submits a leave request; panics when the schedule says so.
///
/// # Arguments
///
/// * `days` - the number of working days of leave asked for
#[tool(permission = perms::leave::write, mutating, title = "Submit leave")]
async fn submit(cx: &ToolContext<'_>, days: u32) -> Result<String, String> {
    let panics = {
        let mut w = worlds().lock().unwrap();
        let w = w.entry(cx.session_id().to_owned()).or_default();
        let finished = w.sink.as_ref().is_some_and(|s| {
            s.offered().iter().any(|(r, ok)| *ok && r.status == AuditStatus::RunFinished && *r.run_id == *cx.run_id())
        });
        w.executions.push((cx.call_id().to_owned(), cx.run_id().to_owned(), finished));
        w.panics
    };
    assert!(!panics, "the tool panicked as the schedule asked");
    Ok(format!("{days} days"))
}

/// Looks the balance up (the model dawdles with it, reaching the iteration limit sooner).
#[tool(permission = perms::leave::read)]
async fn look() -> Result<String, String> {
    Ok("12 days left".into())
}

agent! {
    /// Helpdesk assistant.
    pub struct Desk;
    tools: [submit, look],
}

/// Stores what it does not refuse; remembers every record offered, and whether it took it.
#[derive(Default)]
struct FlakySink {
    inner: MemorySink,
    refuse: Mutex<Option<AuditStatus>>,
    offered: Mutex<Vec<(AuditRecord, bool)>>,
}

impl FlakySink {
    fn offered(&self) -> Vec<(AuditRecord, bool)> {
        self.offered.lock().unwrap().clone()
    }
}

impl AuditSink for FlakySink {
    fn append(&self, record: AuditRecord) -> Appended<'_> {
        let refused = *self.refuse.lock().unwrap() == Some(record.status);
        self.offered.lock().unwrap().push((record.clone(), !refused));
        if refused {
            return Appended::ready(Err(agents_runtime::audit::AuditError::Refused("schedule".into())));
        }
        self.inner.append(record)
    }
}

/// Proposes on "propose", calls the action again when told the user confirmed, may look the
/// balance up first; otherwise answers. Call ids are unique.
struct Model {
    dawdle: bool,
    next: AtomicU64,
}

impl Provider for Model {
    fn name(&self) -> &str {
        "model"
    }
    fn model(&self) -> &str {
        "model"
    }
    fn is_paid(&self) -> bool {
        false
    }
    fn chat<'a>(
        &'a self,
        request: &'a ChatRequest,
        _: &'a dyn TokenSink,
    ) -> BoxFuture<'a, Result<ChatResponse, ProviderError>> {
        Box::pin(async move {
            // This turn's messages: those after the last user message.
            let start = request.messages.iter().rposition(|m| matches!(m, ChatMessage::User { .. })).unwrap_or(0);
            let turn = &request.messages[start..];
            let asked = match &request.messages[start] {
                ChatMessage::User { content } => content.as_str(),
                _ => "",
            };
            let called = |name: &str| turn.iter().any(|m| matches!(m, ChatMessage::Tool { name: n, .. } if n == name));
            let wants = asked == "propose" || request.system.contains("confirmed");
            let call = |name: &str, args: &str| ChatResponse {
                content: String::new(),
                tool_calls: vec![ToolCallRequest {
                    id: format!("call-{}", self.next.fetch_add(1, Ordering::Relaxed)),
                    name: name.into(),
                    arguments: args.into(),
                }],
                usage: Usage::default(),
            };
            Ok(if request.tools.is_empty() || !wants || called("submit") {
                ChatResponse { content: "ok".into(), tool_calls: Vec::new(), usage: Usage::default() }
            } else if self.dawdle && !called("look") {
                call("look", "{}")
            } else {
                call("submit", r#"{"days": 3}"#)
            })
        })
    }
}

/// A direct session's confirmer that leaves every decision to `decide` or the timeout.
struct Silent;

impl Confirmer for Silent {
    fn confirm(&self, _: ConfirmRequest) -> BoxFuture<'static, ConfirmAnswer> {
        Box::pin(async { ConfirmAnswer::NoAnswer })
    }
}

#[derive(Debug, Clone, Copy)]
enum Channel {
    Conversational,
    Dialog,
    Direct,
}

#[derive(Debug, Clone)]
enum Op {
    /// A message (conversational) or a request that proposes (dialog, direct).
    Say(&'static str),
    /// A decision on the `nth` proposal so far (dialog and direct; possibly late or repeated),
    /// by the user or by the same user under another role.
    Decide { nth: usize, approve: bool, other_role: bool },
    /// Stops the `nth` live run (or the direct session).
    Stop(usize),
    /// Lets the clock run this many seconds (confirmation timeout: 30 s).
    Advance(u64),
    /// Lets the spawned tasks run.
    Yield,
    /// The log refuses records of this status from now on (none: takes all).
    Refuse(Option<AuditStatus>),
    /// The tool panics from now on, or not.
    Panic(bool),
    /// Ends the session.
    End,
}

fn op() -> impl Strategy<Value = Op> {
    let statuses = prop_oneof![
        Just(None),
        Just(Some(AuditStatus::Proposed)),
        Just(Some(AuditStatus::Confirmed)),
        Just(Some(AuditStatus::Executed)),
        Just(Some(AuditStatus::Skipped)),
        Just(Some(AuditStatus::Rejected)),
    ];
    prop_oneof![
        4 => prop_oneof![Just("propose"), Just("yes"), Just("yes"), Just("no"), Just("hmm")].prop_map(Op::Say),
        4 => (0..3usize, prop::bool::weighted(0.7), prop::bool::weighted(0.2))
            .prop_map(|(nth, approve, other_role)| Op::Decide { nth, approve, other_role }),
        1 => (0..4usize).prop_map(Op::Stop),
        2 => prop_oneof![Just(1u64), Just(31)].prop_map(Op::Advance),
        4 => Just(Op::Yield),
        1 => statuses.prop_map(Op::Refuse),
        1 => any::<bool>().prop_map(Op::Panic),
        1 => Just(Op::End),
    ]
}

fn channel() -> impl Strategy<Value = Channel> {
    prop_oneof![Just(Channel::Conversational), Just(Channel::Dialog), Just(Channel::Direct)]
}

fn cases() -> u32 {
    std::env::var("AGENTS_MODEL_CASES").ok().and_then(|n| n.parse().ok()).unwrap_or(300)
}

fn me() -> Principal {
    Principal::new("emp-1", "acme", "employee")
}

/// Runs one schedule; returns the records offered to the log and the executions.
async fn run_schedule(session: &str, channel: Channel, dawdle: bool, ops: &[Op]) -> World {
    let sink = Arc::new(FlakySink::default());
    worlds().lock().unwrap().insert(session.to_owned(), World { sink: Some(sink.clone()), ..World::default() });
    let limits = Limits { max_iterations: 3, confirm_timeout_secs: 30, max_concurrent_runs: 8, ..Limits::DEFAULT };
    let mode = match channel {
        Channel::Conversational => ConfirmMode::Conversational,
        _ => ConfirmMode::Dialog,
    };
    let rt = Runtime::builder(sink.clone(), Arc::new(Model { dawdle, next: AtomicU64::new(0) }))
        .roles(
            RoleMap::new().role("employee", ["leave.read", "leave.write"]).role("lead", ["leave.read", "leave.write"]),
        )
        .confirm_mode(mode)
        .limits(limits)
        .build();
    let direct: Option<Arc<DirectSession<Desk>>> = match channel {
        Channel::Direct => rt.direct::<Desk>(me(), session, Some(Arc::new(Silent))).await.ok().map(Arc::new),
        _ => None,
    };
    let mut runs = Vec::new();
    let mut calls: Vec<tokio::task::JoinHandle<()>> = Vec::new();
    let direct_ids = AtomicU64::new(0);
    for op in ops {
        match op {
            Op::Say(text) => match (&direct, channel) {
                (Some(s), _) => {
                    if *text == "propose" {
                        let s = s.clone();
                        let id = format!("direct-{}", direct_ids.fetch_add(1, Ordering::Relaxed));
                        calls.push(tokio::spawn(async move {
                            let _ = s.call(&id, "submit", r#"{"days": 3}"#).await;
                        }));
                    }
                }
                (None, Channel::Direct) => {}
                (None, _) => {
                    if let Ok(run) = rt.start::<Desk>(me(), session, (*text).to_owned()) {
                        runs.push(run);
                    }
                }
            },
            Op::Decide { nth, approve, other_role } => {
                let proposed: Vec<String> = sink
                    .offered()
                    .iter()
                    .filter(|(r, ok)| *ok && r.status == AuditStatus::Proposed && r.tool.as_deref() == Some("submit"))
                    .filter_map(|(r, _)| r.call_id.as_deref().map(str::to_owned))
                    .collect();
                if let Some(id) = proposed.get(*nth) {
                    let who = if *other_role { Principal::new(me().user_id, me().org_id, "lead") } else { me() };
                    let verdict = if *approve { Verdict::Approve } else { Verdict::Reject };
                    let _ = rt.decide(id, &who, verdict);
                }
            }
            Op::Stop(nth) => match &direct {
                Some(s) => s.stop(Undecided::Stopped),
                None => {
                    if let Some(run) = runs.get(*nth) {
                        run.stop();
                    }
                }
            },
            Op::Advance(secs) => tokio::time::sleep(Duration::from_secs(*secs)).await,
            Op::Yield => {
                for _ in 0..3 {
                    tokio::task::yield_now().await;
                }
            }
            Op::Refuse(status) => *sink.refuse.lock().unwrap() = *status,
            Op::Panic(on) => worlds().lock().unwrap().get_mut(session).unwrap().panics = *on,
            Op::End => {
                let _ = rt.end_session(&me(), session);
            }
        }
    }
    // Everything ends: the log takes all, runs are stopped, the clock passes every timeout,
    // the session ends and the runtime writes what it owes.
    *sink.refuse.lock().unwrap() = None;
    for run in &runs {
        run.stop();
    }
    if let Some(s) = &direct {
        s.stop(Undecided::Stopped);
    }
    tokio::time::sleep(Duration::from_secs(120)).await;
    for run in runs {
        let _ = run.wait().await;
    }
    for call in calls {
        let _ = call.await;
    }
    drop(direct);
    let _ = rt.end_session(&me(), session);
    rt.records_settled().await;
    let mut w = worlds().lock().unwrap().remove(session).unwrap();
    w.sink = Some(sink);
    w
}

/// The final statuses of a proposal.
fn is_final(s: AuditStatus) -> bool {
    matches!(s, AuditStatus::Executed | AuditStatus::Failed | AuditStatus::Rejected | AuditStatus::Skipped)
}

static SCHEDULE: AtomicU64 = AtomicU64::new(0);
/// Over all schedules: proposals, executions, and final records by status (shown at the end,
/// so a run of the test says what its schedules exercised).
static SEEN: Mutex<Option<HashMap<String, usize>>> = Mutex::new(None);

fn count(what: impl Into<String>, n: usize) {
    *SEEN.lock().unwrap().get_or_insert_with(HashMap::new).entry(what.into()).or_default() += n;
}
static QUIET: AtomicBool = AtomicBool::new(false);

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn every_proposal_ends_once_and_runs_at_most_once_in_its_own_turn(
        channel in channel(),
        dawdle in any::<bool>(),
        ops in proptest::collection::vec(op(), 1..24),
    ) {
        if !QUIET.swap(true, Ordering::Relaxed) {
            // The tool's panics are part of the schedules.
            let hook = std::panic::take_hook();
            std::panic::set_hook(Box::new(move |info| {
                if !info.to_string().contains("the schedule asked") {
                    hook(info);
                }
            }));
        }
        let session = format!("model-{}", SCHEDULE.fetch_add(1, Ordering::Relaxed));
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().start_paused(true).build().unwrap();
        let world = rt.block_on(run_schedule(&session, channel, dawdle, &ops));
        let offered = world.sink.as_ref().unwrap().offered();
        // The action's proposals (a read call is audited `proposed` too, and checked alike).
        let proposals: HashSet<String> = offered
            .iter()
            .filter(|(r, ok)| *ok && r.status == AuditStatus::Proposed)
            .filter_map(|(r, _)| r.call_id.as_deref().map(str::to_owned))
            .collect();
        for id in &proposals {
            let mine: Vec<&(AuditRecord, bool)> = offered.iter().filter(|(r, _)| r.call_id.as_deref() == Some(id.as_str())).collect();
            let finals: Vec<(AuditStatus, bool)> = mine.iter().filter(|(r, _)| is_final(r.status)).map(|(r, ok)| (r.status, *ok)).collect();
            // A final record the log refused decided nothing (the proposal stays where it was and
            // ends later), except at the very end, where the proposal ends failing closed. So:
            // at least one final record was offered, the log took at most one, and nothing was
            // offered after the one it took.
            let history = || mine.iter().map(|(r, ok)| (r.status, r.reason.clone(), *ok)).collect::<Vec<_>>();
            let taken: Vec<usize> = finals.iter().enumerate().filter(|(_, (_, ok))| *ok).map(|(i, _)| i).collect();
            prop_assert!(!finals.is_empty(), "proposal {} never ended: {:?}", id, history());
            prop_assert!(taken.len() <= 1, "proposal {} ended twice: {:?}", id, history());
            if let Some(&i) = taken.first() {
                prop_assert_eq!(i, finals.len() - 1, "proposal {} changed after it ended: {:?}", id, history());
            }
        }
        // Which proposal each execution carried out: in dialog mode and direct sessions the
        // call is the proposal; in conversational mode the model calls again after the
        // approval, and the proposal is the one approved in that turn.
        let confirmed_in = |run: &str| -> Vec<String> {
            offered
                .iter()
                .filter(|(r, ok)| *ok && r.status == AuditStatus::Confirmed && *r.run_id == *run)
                .filter_map(|(r, _)| r.call_id.as_deref().map(str::to_owned))
                .collect()
        };
        let mut ran: HashMap<String, usize> = HashMap::new();
        for (call, run, finished) in &world.executions {
            prop_assert!(!finished, "{} ran after its turn {} ended", call, run);
            let approved_here = confirmed_in(run);
            let proposal = if proposals.contains(call) { Some(call.clone()) } else { approved_here.first().cloned() };
            let Some(proposal) = proposal else {
                return Err(TestCaseError::fail(format!("{call} ran in turn {run} without a durable proposal")));
            };
            prop_assert!(
                approved_here.contains(&proposal),
                "{} ({}) ran in turn {} without an approval recorded in that turn", call, proposal, run
            );
            *ran.entry(proposal).or_default() += 1;
        }
        let actions = offered.iter().filter(|(r, ok)| *ok && r.status == AuditStatus::Proposed && r.tool.as_deref() == Some("submit")).count();
        count("proposed actions", actions);
        count("proposed reads", proposals.len() - actions);
        count("executions", world.executions.len());
        for (r, ok) in &offered {
            if *ok && is_final(r.status) && r.call_id.as_deref().is_some_and(|c| proposals.contains(c)) {
                count(format!("final {}: {}", r.status.as_str(), r.reason.as_deref().unwrap_or("").split(':').next().unwrap_or("")), 1);
            }
        }
        if SCHEDULE.load(Ordering::Relaxed) == u64::from(cases()) {
            let mut seen: Vec<(String, usize)> = SEEN.lock().unwrap().clone().unwrap_or_default().into_iter().collect();
            seen.sort();
            eprintln!("{} schedules: {seen:?}", cases());
        }
        for (proposal, n) in ran {
            prop_assert!(n <= 1, "{} ran {} times", proposal, n);
        }
    }
}
