//! Helpers shared by the `run_*` integration tests.
#![allow(dead_code, unreachable_pub)]

use agents_runtime::audit::{Appended, AuditError, AuditRecord, AuditSink, AuditStatus, MemorySink};
use agents_runtime::events::Event;
use agents_runtime::provider::{ChatMessage, ChatRequest};
use agents_runtime::run::DecisionError;
use agents_runtime::{Principal, RunHandle, Runtime, Verdict};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

fn counters() -> &'static Mutex<HashMap<String, usize>> {
    static C: OnceLock<Mutex<HashMap<String, usize>>> = OnceLock::new();
    C.get_or_init(|| Mutex::new(HashMap::new()))
}

/// Counts one execution of a tool handler in a session (tests use unique session ids).
pub fn bump(session: &str) {
    *counters().lock().unwrap().entry(session.to_owned()).or_default() += 1;
}

/// How many tool handlers ran in a session.
pub fn ran(session: &str) -> usize {
    counters().lock().unwrap().get(session).copied().unwrap_or(0)
}

fn seen() -> &'static Mutex<HashMap<String, Vec<String>>> {
    static S: OnceLock<Mutex<HashMap<String, Vec<String>>>> = OnceLock::new();
    S.get_or_init(|| Mutex::new(HashMap::new()))
}

/// Records what a handler received in a session.
pub fn saw(session: &str, what: impl Into<String>) {
    seen().lock().unwrap().entry(session.to_owned()).or_default().push(what.into());
}

/// What handlers received in a session, in order.
pub fn seen_in(session: &str) -> Vec<String> {
    seen().lock().unwrap().get(session).cloned().unwrap_or_default()
}

fn sinks() -> &'static Mutex<HashMap<String, Arc<MemorySink>>> {
    static S: OnceLock<Mutex<HashMap<String, Arc<MemorySink>>>> = OnceLock::new();
    S.get_or_init(|| Mutex::new(HashMap::new()))
}

/// Makes a session's audit sink reachable from inside tool handlers.
pub fn register_sink(session: &str, sink: Arc<MemorySink>) {
    sinks().lock().unwrap().insert(session.to_owned(), sink);
}

/// The audit sink registered for a session.
pub fn sink_of(session: &str) -> Option<Arc<MemorySink>> {
    sinks().lock().unwrap().get(session).cloned()
}

/// The statuses in the sink, in chain order.
pub fn statuses(sink: &MemorySink) -> Vec<AuditStatus> {
    sink.records().iter().map(|r| r.status).collect()
}

/// The records with one status.
pub fn with_status(sink: &MemorySink, status: AuditStatus) -> Vec<AuditRecord> {
    sink.records().into_iter().filter(|r| r.status == status).collect()
}

/// The statuses of one call, in chain order.
pub fn call_statuses(sink: &MemorySink, call_id: &str) -> Vec<AuditStatus> {
    sink.records().iter().filter(|r| r.call_id.as_deref() == Some(call_id)).map(|r| r.status).collect()
}

/// The tool messages of a request (what the model was told about each call).
pub fn tool_messages(request: &ChatRequest) -> Vec<(String, String, bool)> {
    request
        .messages
        .iter()
        .filter_map(|m| match m {
            ChatMessage::Tool { name, content, is_error, .. } => Some((name.clone(), content.clone(), *is_error)),
            _ => None,
        })
        .collect()
}

/// The names of the tools offered in a request, sorted.
pub fn offered(request: &ChatRequest) -> Vec<String> {
    let mut v: Vec<String> = request.tools.iter().map(|t| t.name.clone()).collect();
    v.sort();
    v
}

/// Receives events until one matches, failing (not hanging) when the run goes quiet: with the
/// clock paused, an idle runtime advances to the guard timer.
pub async fn until<O>(run: &mut RunHandle<O>, mut pred: impl FnMut(&Event) -> bool) -> Event {
    let wait = async {
        loop {
            match run.events().recv().await {
                Some(e) if pred(&e) => return e,
                Some(_) => {}
                None => panic!("the run's event stream ended before the expected event"),
            }
        }
    };
    tokio::time::timeout(Duration::from_secs(24 * 3600), wait).await.expect("the expected event never came")
}

/// Waits for a `confirm_required` event and returns its call id.
pub async fn confirm_required<O>(run: &mut RunHandle<O>) -> String {
    match until(run, |e| matches!(e, Event::ConfirmRequired { .. })).await {
        Event::ConfirmRequired { call_id, .. } => call_id,
        _ => unreachable!(),
    }
}

/// The call id and node path of the next confirmation a node of a run tree (a composite's
/// node, a granted agent, a handoff target, at any depth) asks for.
pub async fn nested_confirmation<O>(run: &mut RunHandle<O>) -> (String, String) {
    let (call_id, node, _) = nested_card(run).await;
    (call_id, node)
}

/// The call id, node path and arguments (what its card shows) of the next confirmation a
/// node of a run tree asks for, however deep the node: the path is the asking node's own.
pub async fn nested_card<O>(run: &mut RunHandle<O>) -> (String, String, serde_json::Value) {
    fn card(event: &Event) -> Option<(String, String, serde_json::Value)> {
        let Event::Node { node, event, .. } = event else { return None };
        match &**event {
            Event::ConfirmRequired { call_id, args, .. } => Some((call_id.clone(), node.clone(), args.clone())),
            inner => card(inner),
        }
    }
    let asked = until(run, |e| card(e).is_some());
    let event = tokio::time::timeout(Duration::from_secs(30), asked).await.expect("a node asked for a decision");
    card(&event).expect("the event is a node's confirmation")
}

/// Only `person` may decide `call_id`, asked in `session`: another user of their organisation
/// and role, and `person` under the role `other`, are told it is not their run; nothing has
/// run in `session` yet.
pub fn only_the_person_decides(rt: &Runtime, call_id: &str, person: &Principal, session: &str) {
    let stranger = Principal::new("u2", person.org_id.as_str(), person.role.as_str());
    let other_role = Principal::new(person.user_id.as_str(), person.org_id.as_str(), "other");
    assert_ne!(stranger.user_id, person.user_id, "the stranger is another user");
    for other in [stranger, other_role] {
        let refused = rt.decide(call_id, &other, Verdict::Approve);
        assert!(matches!(refused, Err(DecisionError::NotYourRun)), "{other:?}: {refused:?}");
    }
    assert_eq!(ran(session), 0, "nothing ran before the person decided");
}

/// The statuses of `call_id`'s records, in order.
pub fn statuses_of(records: &[AuditRecord], call_id: &str) -> Vec<AuditStatus> {
    records.iter().filter(|r| r.call_id.as_deref() == Some(call_id)).map(|r| r.status).collect()
}

/// Verifies `records` as one JSONL chain (each record's canonical line) and returns how many
/// records the verifier read.
pub fn verify_chain(records: &[AuditRecord]) -> usize {
    let canonical =
        |r: &AuditRecord| agents_runtime::agents_core::canonical::to_string(&serde_json::to_value(r).unwrap());
    let text: String = records.iter().map(|r| format!("{}\n", canonical(r))).collect();
    agents_runtime::agents_core::audit::verify_jsonl(&text, None).unwrap().records
}

/// An audit sink that refuses records with some statuses and stores the rest.
pub struct RefusingSink {
    pub inner: MemorySink,
    pub refuse: Vec<AuditStatus>,
}

impl RefusingSink {
    pub fn new(refuse: impl IntoIterator<Item = AuditStatus>) -> Self {
        RefusingSink { inner: MemorySink::new(), refuse: refuse.into_iter().collect() }
    }
}

impl AuditSink for RefusingSink {
    fn append(&self, record: AuditRecord) -> Appended<'_> {
        if self.refuse.contains(&record.status) {
            let status = record.status;
            return Appended::ready(Err(AuditError::Refused(format!("test sink refuses `{}`", status.as_str()))));
        }
        self.inner.append(record)
    }
}

/// Receives every event up to and including `done`.
pub async fn events_until_done<O>(run: &mut RunHandle<O>) -> Vec<Event> {
    let mut out = Vec::new();
    let wait = async {
        while let Some(e) = run.events().recv().await {
            let done = matches!(e, Event::Done { .. });
            out.push(e);
            if done {
                break;
            }
        }
    };
    tokio::time::timeout(Duration::from_secs(24 * 3600), wait).await.expect("the run never finished");
    out
}
