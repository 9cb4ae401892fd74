//! The runs this service started: who each acts for, how to stop it, and its journal of
//! events (numbered per run) that event streams read and resume from.

use agents_runtime::events::Event;
use agents_runtime::run::{ResumedCall, RunError, RunHandle, RunOutput, RunResultExt, StartError};
use agents_runtime::store::StoreError;
use agents_runtime::tool::Registry;
use agents_runtime::{Principal, Runtime};
use serde::Serialize;
use serde_json::Value;
use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

/// The guard's lock, also after a panic elsewhere (every update is a single step).
pub(crate) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// One event of a run's journal: its number in the run (from 1), its type and its JSON.
#[derive(Debug, Clone)]
pub(crate) struct Numbered {
    pub(crate) id: u64,
    pub(crate) kind: &'static str,
    pub(crate) data: Arc<str>,
}

/// A run's events, the latest ones kept within a count and a byte bound.
#[derive(Debug, Default)]
pub(crate) struct Journal {
    events: VecDeque<Numbered>,
    bytes: usize,
    last_id: u64,
    /// Calls waiting for a decision (their `confirm_required` event), each with the path of
    /// the node that asks when the run is a composite's run tree. A list: a run waits on a
    /// few at most, and a map's table would be most of a waiting run's journal.
    pub(crate) waiting: Vec<(String, Option<String>)>,
}

impl Journal {
    /// The id of the oldest event still held (`last_id + 1` when none is).
    pub(crate) fn first_held(&self) -> u64 {
        self.events.front().map_or(self.last_id + 1, |e| e.id)
    }

    pub(crate) fn last_id(&self) -> u64 {
        self.last_id
    }

    /// Events after `cursor`, at most `max`.
    pub(crate) fn after(&self, cursor: u64, max: usize) -> Vec<Numbered> {
        let start = self.events.partition_point(|e| e.id <= cursor);
        self.events.range(start..).take(max).cloned().collect()
    }

    fn push(&mut self, kind: &'static str, data: String, limits: (usize, usize)) {
        self.last_id += 1;
        self.bytes += data.len();
        self.events.push_back(Numbered { id: self.last_id, kind, data: data.into() });
        let (max_events, max_bytes) = limits;
        while self.events.len() > max_events || (self.bytes > max_bytes && self.events.len() > 1) {
            if let Some(old) = self.events.pop_front() {
                self.bytes -= old.data.len();
            }
        }
    }
}

/// The SSE event type of `event`: its JSON `type` for the kinds clients know, `node` for a
/// run tree node's event (the node's own event inside, with its path), `event` otherwise.
fn event_kind(event: &Event) -> &'static str {
    match event {
        Event::Status { .. } => "status",
        Event::Token { .. } => "token",
        Event::ToolCall { .. } => "tool_call",
        Event::ConfirmRequired { .. } => "confirm_required",
        Event::ToolResult { .. } => "tool_result",
        Event::ToolDenied { .. } => "tool_denied",
        Event::Handoff { .. } => "handoff",
        Event::Message { .. } => "message",
        Event::Done { .. } => "done",
        Event::Error { .. } => "error",
        Event::ErrorOccurred { .. } => "error_occurred",
        Event::BudgetThreshold { .. } => "budget_threshold",
        Event::SkillChosen { .. } => "skill_chosen",
        Event::KnowledgeLoaded { .. } => "knowledge_loaded",
        Event::Node { .. } => "node",
        _ => "event",
    }
}

/// How a run stands, as the API reports it.
#[derive(Debug, Clone, Serialize)]
pub struct RunSummary {
    /// The run.
    pub run_id: String,
    /// The agent's name.
    pub agent: String,
    /// The session, as the caller named it.
    pub session_id: String,
    /// `running`, or how it ended (`completed`, `failed`, `cancelled`, ...).
    pub status: String,
    /// The model's final text, once it ended.
    pub text: Option<String>,
    /// What went wrong, when something did.
    pub error: Option<String>,
    /// The id of the last event of the run so far.
    pub last_event_id: u64,
    /// The calls the run waits on for a person's decision (`GET /v1/decisions` shows them;
    /// `POST /v1/decisions/{call_id}` decides), sorted; empty when it waits for none. A run
    /// that waits is still `running`.
    pub waiting_for: Vec<String>,
}

/// One run started through the service.
pub(crate) struct RunEntry {
    pub(crate) run_id: String,
    pub(crate) agent: &'static str,
    pub(crate) manifest_sha256: &'static str,
    pub(crate) session_id: String,
    pub(crate) owner: Principal,
    pub(crate) stop: CancellationToken,
    pub(crate) journal: Mutex<Journal>,
    /// The last event id, and whether the run ended; streams wait on it.
    pub(crate) progress: watch::Sender<(u64, bool)>,
    /// Boxed: an entry holds it only once its run ended, and a waiting run holds its entry.
    pub(crate) ended: Mutex<Option<Box<(Instant, RunSummary)>>>,
    limits: (usize, usize),
}

impl RunEntry {
    /// Whether `p` is the principal this run acts for (user and organisation).
    pub(crate) fn owned_by(&self, p: &Principal) -> bool {
        self.owner.user_id == p.user_id && self.owner.org_id == p.org_id
    }

    pub(crate) fn summary(&self) -> RunSummary {
        if let Some((_, s)) = lock(&self.ended).as_deref() {
            return s.clone();
        }
        let (last_event_id, mut waiting_for) = {
            let journal = lock(&self.journal);
            (journal.last_id(), journal.waiting.iter().map(|(call_id, _)| call_id.clone()).collect::<Vec<_>>())
        };
        waiting_for.sort();
        RunSummary {
            run_id: self.run_id.clone(),
            agent: self.agent.to_owned(),
            session_id: self.session_id.clone(),
            status: "running".into(),
            text: None,
            error: None,
            last_event_id,
            waiting_for,
        }
    }

    fn record(&self, event: &Event) {
        // Written once, straight to its text (its members in the order the event declares them).
        let Ok(data) = serde_json::to_string(event) else { return };
        // A node of a run tree: the node's own event, with its path.
        let (inner, node) = match event {
            Event::Node { node, event, .. } => (event.as_ref(), Some(node)),
            other => (other, None),
        };
        let last = {
            let mut journal = lock(&self.journal);
            match inner {
                Event::ConfirmRequired { call_id, .. } => {
                    journal.waiting.retain(|(waiting, _)| waiting != call_id);
                    if journal.waiting.capacity() == 0 {
                        journal.waiting.reserve_exact(1);
                    }
                    journal.waiting.push((call_id.clone(), node.cloned()));
                }
                Event::ToolResult { call_id, .. } | Event::ToolDenied { call_id, .. } => {
                    journal.waiting.retain(|(waiting, _)| waiting != call_id);
                }
                _ => {}
            }
            journal.push(event_kind(event), data, self.limits);
            journal.last_id()
        };
        self.progress.send_replace((last, false));
    }

    fn finish<O>(&self, outcome: Result<RunOutput<O>, RunError>) {
        let last = {
            let mut journal = lock(&self.journal);
            journal.waiting.clear();
            journal.last_id()
        };
        let summary = RunSummary {
            run_id: self.run_id.clone(),
            agent: self.agent.to_owned(),
            session_id: self.session_id.clone(),
            status: outcome.status().as_str().to_owned(),
            text: Some(outcome.text().to_owned()),
            // As before typed errors: a run that ended by a limit or a stop has no error text.
            error: outcome.error_text().filter(|_| outcome.status() == agents_runtime::RunStatus::Failed),
            last_event_id: last,
            waiting_for: Vec::new(),
        };
        *lock(&self.ended) = Some(Box::new((Instant::now(), summary)));
        self.progress.send_replace((last, true));
    }
}

/// Starts runs of one agent type with one runtime.
pub(crate) trait AgentKind: Send + Sync {
    fn name(&self) -> &'static str;
    fn manifest_sha256(&self) -> &'static str;
    /// The agent's manifest: the canonical JSON its registry was compiled with.
    fn manifest(&self) -> &'static str;
    /// Whether it is a composite (its manifest is a graph manifest).
    fn is_composite(&self) -> bool {
        false
    }
    fn runtime(&self) -> &Runtime;
    /// Settles the agent's proposals whose run is gone ([`Runtime::resume_orphaned`]).
    fn resume_orphaned(&self) -> agents_runtime::BoxFuture<'_, Result<Vec<ResumedCall>, StoreError>>;
    /// Starts a run in the stored session `session_id` (the caller's `client_session_id`,
    /// scoped to them; see [`crate::sessions`]); the entry's pump task feeds its journal until
    /// it ends.
    fn start(
        &self,
        principal: Principal,
        session_id: &str,
        client_session_id: &str,
        input: Value,
        limits: (usize, usize),
    ) -> Result<Arc<RunEntry>, StartRefusal>;
}

/// Why a run did not start.
pub(crate) enum StartRefusal {
    Input(String),
    Start(StartError),
}

pub(crate) struct Kind<A> {
    pub(crate) runtime: Runtime,
    pub(crate) _agent: std::marker::PhantomData<fn() -> A>,
}

impl<A> AgentKind for Kind<A>
where
    A: Registry,
    A::Input: serde::de::DeserializeOwned,
{
    fn resume_orphaned(&self) -> agents_runtime::BoxFuture<'_, Result<Vec<ResumedCall>, StoreError>> {
        Box::pin(self.runtime.resume_orphaned::<A>())
    }

    fn name(&self) -> &'static str {
        A::SPEC.name
    }

    fn manifest_sha256(&self) -> &'static str {
        A::MANIFEST_SHA256
    }

    fn manifest(&self) -> &'static str {
        A::MANIFEST
    }

    fn runtime(&self) -> &Runtime {
        &self.runtime
    }

    fn start(
        &self,
        principal: Principal,
        session_id: &str,
        client_session_id: &str,
        input: Value,
        limits: (usize, usize),
    ) -> Result<Arc<RunEntry>, StartRefusal> {
        let input: A::Input = parse_input(input, A::SPEC.name)?;
        let handle = self.runtime.start::<A>(principal.clone(), session_id, input).map_err(StartRefusal::Start)?;
        let served = Served { name: A::SPEC.name, manifest_sha256: A::MANIFEST_SHA256, owner: principal };
        Ok(launch(handle, served, client_session_id, limits))
    }
}

/// The input a client sent, as the type the agent or composite `name` takes.
pub(crate) fn parse_input<T: serde::de::DeserializeOwned>(input: Value, name: &str) -> Result<T, StartRefusal> {
    serde_json::from_value(input)
        .map_err(|e| StartRefusal::Input(format!("the input does not fit agent `{name}`: {e}")))
}

/// What a started run is served as: the agent's (or composite's) name and manifest hash, and
/// the principal it acts for.
pub(crate) struct Served {
    pub(crate) name: &'static str,
    pub(crate) manifest_sha256: &'static str,
    pub(crate) owner: Principal,
}

/// The entry of a run just started (an agent's run or a composite's run tree: one handle
/// either way), and its pump: a task that moves the handle's events into the entry's journal
/// until the run ends.
pub(crate) fn launch<O: Send + 'static>(
    handle: RunHandle<O>,
    served: Served,
    client_session_id: &str,
    limits: (usize, usize),
) -> Arc<RunEntry> {
    let entry = Arc::new(RunEntry {
        run_id: handle.run_id().to_owned(),
        agent: served.name,
        manifest_sha256: served.manifest_sha256,
        session_id: client_session_id.to_owned(),
        owner: served.owner,
        stop: handle.stopper(),
        journal: Mutex::new(Journal::default()),
        progress: watch::channel((0, false)).0,
        ended: Mutex::new(None),
        limits,
    });
    let pump = entry.clone();
    // The pump only moves events into the journal (no I/O, no waiting on readers), so the
    // run's bus never fills on its account and a slow reader never slows the run. The
    // receiver subscribed at start: every event from the first.
    tokio::spawn(async move {
        let outcome = handle.wait_with_events(|event| pump.record(&event)).await;
        pump.finish(outcome);
    });
    entry
}

/// The runs of this service, live and recently ended.
pub(crate) struct Runs {
    runs: Mutex<HashMap<String, Arc<RunEntry>>>,
    /// When ended runs past their retention were last forgotten.
    swept: Mutex<Instant>,
    retain: Duration,
    max_retained: usize,
}

/// The retention sweep runs at most once per this share of the retention (an ended run is
/// forgotten between `retain` and `retain * (1 + 1/SWEEP_SHARE)` after it ended), not at every
/// start: each sweep visits every run held.
const SWEEP_SHARE: u32 = 16;

impl Runs {
    pub(crate) fn new(retain: Duration, max_retained: usize) -> Self {
        Runs { runs: Mutex::new(HashMap::new()), swept: Mutex::new(Instant::now()), retain, max_retained }
    }

    /// Whether the retention sweep is due at `now` (and, if so, marks it done).
    fn sweep_due(&self, now: Instant) -> bool {
        let mut swept = lock(&self.swept);
        let due = now.duration_since(*swept) >= self.retain / SWEEP_SHARE;
        if due {
            *swept = now;
        }
        due
    }

    pub(crate) fn insert(&self, entry: Arc<RunEntry>) {
        self.insert_at(entry, Instant::now());
    }

    fn insert_at(&self, entry: Arc<RunEntry>, now: Instant) {
        let mut runs = lock(&self.runs);
        // Forget ended runs past their retention, and the oldest ended ones beyond the cap.
        if self.sweep_due(now) {
            runs.retain(|_, e| lock(&e.ended).as_deref().is_none_or(|(at, _)| now.duration_since(*at) < self.retain));
        }
        if runs.len() >= self.max_retained {
            let mut ended: Vec<(Instant, String)> =
                runs.iter().filter_map(|(id, e)| lock(&e.ended).as_deref().map(|(at, _)| (*at, id.clone()))).collect();
            ended.sort();
            for (_, id) in ended.into_iter().take(runs.len() + 1 - self.max_retained) {
                runs.remove(&id);
            }
        }
        runs.insert(entry.run_id.clone(), entry);
    }

    pub(crate) fn get(&self, run_id: &str) -> Option<Arc<RunEntry>> {
        lock(&self.runs).get(run_id).cloned()
    }

    /// The runs of `p` (user and organisation).
    pub(crate) fn of(&self, p: &Principal) -> Vec<Arc<RunEntry>> {
        lock(&self.runs).values().filter(|e| e.owned_by(p)).cloned().collect()
    }

    /// The run that asked for a decision on `call_id`, if this service holds it.
    pub(crate) fn waiting_on(&self, call_id: &str) -> Option<Arc<RunEntry>> {
        lock(&self.runs)
            .values()
            .find(|e| lock(&e.journal).waiting.iter().any(|(waiting, _)| waiting == call_id))
            .cloned()
    }

    /// The path of the run tree node that asked for a decision on `call_id`, if this service
    /// holds its tree.
    pub(crate) fn node_asking(&self, call_id: &str) -> Option<String> {
        lock(&self.runs).values().find_map(|e| {
            lock(&e.journal).waiting.iter().find(|(waiting, _)| waiting == call_id).and_then(|(_, node)| node.clone())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(run_id: &str, ended_at: Option<Instant>) -> Arc<RunEntry> {
        let summary = |at| {
            let s = RunSummary {
                run_id: run_id.into(),
                agent: "A".into(),
                session_id: "s".into(),
                status: "completed".into(),
                text: None,
                error: None,
                last_event_id: 0,
                waiting_for: Vec::new(),
            };
            (at, s)
        };
        Arc::new(RunEntry {
            run_id: run_id.into(),
            agent: "A",
            manifest_sha256: "m",
            session_id: "s".into(),
            owner: Principal::new("u", "o", "r"),
            stop: CancellationToken::new(),
            journal: Mutex::new(Journal::default()),
            progress: watch::channel((0, false)).0,
            ended: Mutex::new(ended_at.map(summary).map(Box::new)),
            limits: (8, 1 << 10),
        })
    }

    #[test]
    fn ended_runs_are_forgotten_after_their_retention_within_a_sixteenth_more() {
        let retain = Duration::from_secs(160);
        let runs = Runs::new(retain, 100);
        let t0 = *lock(&runs.swept);
        let at = |secs| t0 + Duration::from_secs(secs);
        runs.insert_at(entry("ended", Some(t0)), t0);
        runs.insert_at(entry("live", None), at(159));
        assert!(runs.get("ended").is_some(), "forgotten before its retention");
        // Past its retention, but swept 6 s ago (less than a sixteenth of 160 s): still held.
        runs.insert_at(entry("b", None), at(165));
        assert!(runs.get("ended").is_some(), "the sweep ran again within a sixteenth of the retention");
        // A sixteenth after the last sweep: forgotten; the live runs stay.
        runs.insert_at(entry("c", None), at(169));
        assert!(runs.get("ended").is_none(), "an ended run outlived its retention by more than a sixteenth");
        for id in ["live", "b", "c"] {
            assert!(runs.get(id).is_some(), "{id} is live and was forgotten");
        }
    }

    #[test]
    fn the_cap_holds_at_every_start_between_sweeps() {
        let runs = Runs::new(Duration::from_secs(900), 3);
        let t0 = *lock(&runs.swept);
        for i in 0..5 {
            runs.insert_at(entry(&format!("ended-{i}"), Some(t0 + Duration::from_millis(i))), t0);
        }
        assert_eq!(lock(&runs.runs).len(), 3);
        assert!(runs.get("ended-0").is_none() && runs.get("ended-4").is_some(), "the oldest ended go first");
    }
}
