//! Events: a live view of a run. A slow subscriber loses events; the run never waits for it.
//! The audit log, not this stream, is the record.

use crate::audit::AuditStatus;
use crate::run::RunStatus;
use agents_core::Risk;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use tokio::sync::mpsc;

/// Events buffered per subscriber before further events are dropped for it.
pub const SUBSCRIBER_BUFFER: usize = 256;

/// What a run reports while it works.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Event {
    /// The run's state changed (`started`, `thinking`, `waiting_for_confirmation`, ...).
    Status {
        /// The run.
        run_id: String,
        /// The state.
        status: RunPhase,
    },
    /// A fragment of the model's text.
    Token {
        /// The run.
        run_id: String,
        /// The text.
        text: String,
    },
    /// The model asked for a tool.
    ToolCall {
        /// The run.
        run_id: String,
        /// The call.
        call_id: String,
        /// The tool name as the model wrote it.
        tool: String,
        /// Redacted arguments (when they parsed).
        args: Option<Value>,
    },
    /// An action waits for a person's decision.
    ConfirmRequired {
        /// The run.
        run_id: String,
        /// The call to decide on.
        call_id: String,
        /// The tool.
        tool: String,
        /// What the person reads.
        title: String,
        /// Redacted arguments.
        args: Value,
        /// Declared risk.
        risk: Risk,
        /// Why a person is asked beyond the tool's tier: for a tool that reaches the outside
        /// world, which argument was copied from which tool result; for an action, the warning
        /// that values came from content the user did not write
        /// ([`Provenance::warning`](crate::provenance::Provenance::warning)). Absent when
        /// nothing is flagged.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        why: Option<String>,
        /// Where each argument value came from (the user, a tool result and which call, a
        /// document, the model alone). Absent for a call the check did not assess.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        origins: Option<crate::provenance::Provenance>,
    },
    /// A call finished (executed, failed, rejected, skipped, substituted).
    ToolResult {
        /// The run.
        run_id: String,
        /// The call.
        call_id: String,
        /// The tool.
        tool: String,
        /// The audit status of the call's final record (`executed`, `failed`, `rejected`,
        /// `skipped`, `substituted`).
        status: AuditStatus,
        /// The result shown in the timeline (redacted), when it ran.
        result: Option<Value>,
    },
    /// A call was refused before anything ran.
    ToolDenied {
        /// The run.
        run_id: String,
        /// The call.
        call_id: String,
        /// The tool name as the model wrote it.
        tool: String,
        /// Why.
        reason: String,
    },
    /// A handoff tool's call became a record for a human queue.
    Handoff {
        /// The run.
        run_id: String,
        /// The record.
        record: HandoffRecord,
    },
    /// The model's answer.
    Message {
        /// The run.
        run_id: String,
        /// The text.
        text: String,
    },
    /// The run ended.
    Done {
        /// The run.
        run_id: String,
        /// How it ended (`completed`, `failed`, `cancelled`, `awaiting_confirmation`, ...).
        status: RunStatus,
    },
    /// Something went wrong.
    Error {
        /// The run.
        run_id: String,
        /// What.
        message: String,
    },
    /// An error, typed by where it happened: a tool call that failed (`tool` names it), or the
    /// run's own failure (the model provider, the budget, the final answer, the audit log, the
    /// state store). A live view only: the evidence is in the audit log already (a tool's
    /// `failed` record; the run's `notice` and `run_finished` records).
    ErrorOccurred {
        /// The run.
        run_id: String,
        /// Where it happened.
        kind: ErrorKind,
        /// The tool, for [`ErrorKind::Tool`].
        #[serde(default, skip_serializing_if = "Option::is_none")]
        tool: Option<String>,
        /// What went wrong (a call's secret values masked).
        message: String,
    },
    /// A model call's cost carried the month's spend across a fraction of a cap (see
    /// [`RuntimeBuilder::budget_thresholds`](crate::RuntimeBuilder::budget_thresholds)):
    /// emitted once per crossing, by the run whose call crossed it, and recorded (a `notice`
    /// whose result is this event's `scope`, `fraction`, `spent_usd` and `cap_usd`).
    BudgetThreshold {
        /// The run.
        run_id: String,
        /// Whose cap: the user's or the organisation's.
        scope: BudgetScope,
        /// The fraction of the cap crossed (`0.8`: 80 %).
        fraction: f64,
        /// The month's spend against the cap after the call, in USD.
        spent_usd: f64,
        /// The cap, in USD.
        cap_usd: f64,
    },
    /// The skill the run works within was chosen: only the tools it offers are offered.
    SkillChosen {
        /// The run.
        run_id: String,
        /// The skill's name.
        skill: String,
        /// Who chose it: the application or the model.
        by: agents_core::skill::SkillChooser,
    },
    /// Passages of the agent's knowledge were given to the model for this turn (as data):
    /// which ones, never their text.
    KnowledgeLoaded {
        /// The run.
        run_id: String,
        /// The agent's sources, as its manifest names them.
        sources: Vec<agents_core::knowledge::KnowledgeEntry>,
        /// Each passage given: its chunk id, source, path, byte and line ranges and SHA-256s
        /// ([`Retrieval::evidence`](crate::knowledge::Retrieval::evidence)).
        passages: Value,
    },
    /// The person approved a proposal once, and the application's policy asks a second
    /// confirmation of it (see [`crate::untrusted`]): nothing ran; it waits for an approval that
    /// acknowledges the warning.
    AcknowledgementRequired {
        /// The run.
        run_id: String,
        /// The call waiting for the second confirmation.
        call_id: String,
        /// What the person must acknowledge: which argument value came from which content the
        /// user did not write.
        warning: String,
    },
    /// An event of one node's run in a composite's run tree, as the tree's handle receives it:
    /// the tree's run, the node's path and its run, and the node run's own event (whose
    /// `run_id` is the node's run). A confirmation a node waits for arrives as a
    /// `confirm_required` inside it, with the call id to decide it by.
    Node {
        /// The tree's run (its root run id).
        run_id: String,
        /// The node's path (`kyc-pipeline/kyc-reviewer`).
        node: String,
        /// The node's run.
        node_run_id: String,
        /// The node run's event.
        event: Box<Event>,
    },
}

/// Where an [`Event::ErrorOccurred`] happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ErrorKind {
    /// A tool call failed (its `failed` record says why).
    Tool,
    /// The model provider failed (after its retries).
    Provider,
    /// The budget could not be checked, so no paid call was made.
    Budget,
    /// The model's final answer does not fit the agent's output type.
    Output,
    /// The audit log refused a record the run needed.
    Audit,
    /// The state store failed.
    State,
    /// The run could not start.
    Start,
    /// The model's choice of a skill was refused, so nothing ran.
    SkillChoice,
    /// A node of a composite's run tree failed.
    Node,
}

/// Whose cap an [`Event::BudgetThreshold`] is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum BudgetScope {
    /// The user's own monthly cap.
    User,
    /// The organisation's monthly cap.
    Organisation,
}

impl BudgetScope {
    /// The snake_case name, as the JSON form carries it.
    pub fn as_str(self) -> &'static str {
        match self {
            BudgetScope::User => "user",
            BudgetScope::Organisation => "organisation",
        }
    }
}

/// Where a running run is (the `status` of an [`Event::Status`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum RunPhase {
    /// The run began (its first record is durable).
    Started,
    /// A model call is being made.
    Thinking,
    /// An action waits for a person's decision.
    WaitingForConfirmation,
}

impl RunPhase {
    /// The snake_case name, as the JSON form carries it.
    pub fn as_str(self) -> &'static str {
        match self {
            RunPhase::Started => "started",
            RunPhase::Thinking => "thinking",
            RunPhase::WaitingForConfirmation => "waiting_for_confirmation",
        }
    }
}

impl std::fmt::Display for RunPhase {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What a human queue receives for a handoff call. Nothing ran.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HandoffRecord {
    /// The call.
    pub call_id: String,
    /// The tool.
    pub tool: String,
    /// The tool's description.
    pub description: String,
    /// Redacted arguments.
    pub args: Value,
    /// Who asked.
    pub user_id: String,
    /// Their organisation.
    pub org_id: String,
    /// The session.
    pub session_id: String,
    /// When (RFC 3339).
    pub created_at: String,
    /// The agent the run was handed to, for a handoff tool that names one
    /// (`#[tool(handoff = Target)]`); absent for a call that only files this record.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
}

/// A publish/subscribe bus with a bounded buffer per subscriber and non-blocking publish.
#[derive(Debug, Default)]
pub struct EventBus {
    subscribers: Mutex<Vec<Subscriber>>,
    /// How many subscribers the list holds, kept beside it so that asking whether anyone
    /// listens (every tool call asks) takes no lock.
    listed: AtomicUsize,
}

/// One subscriber's sending side.
#[derive(Debug)]
enum Subscriber {
    /// A subscriber's channel, as [`EventBus::subscribe`] gives it.
    Channel(mpsc::Sender<Event>),
    /// A run's own first subscriber until it asks for a channel ([`Feed`]).
    Feed(futures_channel::mpsc::Sender<Event>),
}

impl Subscriber {
    /// Sends `event` unless the subscriber has no room; `false` once it went away.
    fn offer(&mut self, event: &Event) -> bool {
        match self {
            Subscriber::Channel(s) => !matches!(s.try_send(event.clone()), Err(mpsc::error::TrySendError::Closed(_))),
            Subscriber::Feed(s) => !s.try_send(event.clone()).is_err_and(|e| e.is_disconnected()),
        }
    }

    fn is_closed(&self) -> bool {
        match self {
            Subscriber::Channel(s) => s.is_closed(),
            Subscriber::Feed(s) => s.is_closed(),
        }
    }
}

/// A run's first subscriber, the one its handle holds from the start
/// ([`RunHandle::events`](crate::RunHandle::events)).
///
/// Until someone asks for it as a channel, it is a queue that allocates per event held and
/// holds about half a kilobyte when empty: a tokio channel allocates its first block of 32
/// events (8 KB) when it is made, which every run waiting for a person would hold for its
/// whole wait. Asked for as a channel, the events queued so far move into one, in order, and
/// the bus sends to it from then on: the subscriber loses nothing it would have received.
#[derive(Debug)]
pub(crate) struct Feed {
    queue: futures_channel::mpsc::Receiver<Event>,
    /// The channel that took the queue's place, once asked for.
    channel: Option<mpsc::Receiver<Event>>,
}

// A run's handle stays unwind safe, as with a tokio channel: the queue's operations run no
// code of the caller's (an event's drop cannot panic), so a panic elsewhere cannot leave it
// half updated, and a receiver kept across `catch_unwind` sees it whole.
impl std::panic::UnwindSafe for Feed {}
impl std::panic::RefUnwindSafe for Feed {}

impl Feed {
    /// The next event, as [`mpsc::Receiver::poll_recv`].
    pub(crate) fn poll_recv(&mut self, cx: &mut std::task::Context<'_>) -> std::task::Poll<Option<Event>> {
        use futures_core::Stream;
        match &mut self.channel {
            Some(channel) => channel.poll_recv(cx),
            None => std::pin::Pin::new(&mut self.queue).poll_next(cx),
        }
    }

    /// An event already received, if any.
    pub(crate) fn try_recv(&mut self) -> Option<Event> {
        match &mut self.channel {
            Some(channel) => channel.try_recv().ok(),
            None => self.queue.try_recv().ok(),
        }
    }

    /// This subscriber as a channel of `bus`, made at the first call.
    pub(crate) fn channel(&mut self, bus: &EventBus) -> &mut mpsc::Receiver<Event> {
        let queue = &mut self.queue;
        self.channel.get_or_insert_with(|| bus.move_to_channel(queue))
    }
}

impl EventBus {
    /// A bus without subscribers.
    pub fn new() -> Self {
        Self::default()
    }

    /// A new subscriber receiving events published from now on.
    pub fn subscribe(&self) -> mpsc::Receiver<Event> {
        let (tx, rx) = mpsc::channel(SUBSCRIBER_BUFFER);
        self.add(Subscriber::Channel(tx));
        rx
    }

    /// A run's first subscriber (see [`Feed`]), receiving events published from now on.
    pub(crate) fn subscribe_feed(&self) -> Feed {
        // The queue's sender has a place of its own beside the buffer; one fewer keeps the
        // bound a channel has.
        let (tx, rx) = futures_channel::mpsc::channel(SUBSCRIBER_BUFFER - 1);
        self.add(Subscriber::Feed(tx));
        Feed { queue: rx, channel: None }
    }

    /// A channel in place of `queue`'s subscriber, holding what it had queued, in order (the
    /// queue's sender leaves the list, so the queue receives nothing more).
    fn move_to_channel(&self, queue: &mut futures_channel::mpsc::Receiver<Event>) -> mpsc::Receiver<Event> {
        let (tx, rx) = mpsc::channel(SUBSCRIBER_BUFFER);
        // Under the list's lock no event is published meanwhile: the queued ones go first.
        let mut subs = self.lock();
        while let Ok(event) = queue.try_recv() {
            let _ = tx.try_send(event);
        }
        if let Some(s) = subs.iter_mut().find(|s| matches!(s, Subscriber::Feed(f) if f.is_connected_to(queue))) {
            *s = Subscriber::Channel(tx);
        }
        rx
    }

    fn add(&self, subscriber: Subscriber) {
        let mut subs = self.lock();
        subs.push(subscriber);
        self.listed.store(subs.len(), Ordering::Release);
    }

    /// Publishes to every subscriber that has room; drops the event for the others and
    /// forgets subscribers that went away. Never waits.
    pub fn publish(&self, event: Event) {
        let mut subs = self.lock();
        subs.retain_mut(|s| s.offer(&event));
        self.listed.store(subs.len(), Ordering::Release);
    }

    /// Whether anyone subscribes (a publisher may skip building an event nobody receives).
    pub fn has_subscribers(&self) -> bool {
        self.listed.load(Ordering::Acquire) > 0
    }

    /// Live subscribers, for diagnostics (a run whose events nobody receives looks stuck).
    pub fn subscriber_count(&self) -> usize {
        let mut subs = self.lock();
        subs.retain(|s| !s.is_closed());
        self.listed.store(subs.len(), Ordering::Release);
        subs.len()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Subscriber>> {
        self.subscribers.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(i: usize) -> Event {
        Event::Token { run_id: "r".into(), text: i.to_string() }
    }

    /// Publishes 50 events more than a subscriber holds.
    fn flood(bus: &EventBus) {
        for i in 0..(SUBSCRIBER_BUFFER + 50) {
            bus.publish(ev(i));
        }
    }

    #[test]
    fn events_keep_the_json_form_clients_read() {
        let cases = [
            (
                Event::Status { run_id: "r".into(), status: RunPhase::WaitingForConfirmation },
                r#"{"type":"status","run_id":"r","status":"waiting_for_confirmation"}"#,
            ),
            (
                Event::Status { run_id: "r".into(), status: RunPhase::Started },
                r#"{"type":"status","run_id":"r","status":"started"}"#,
            ),
            (
                Event::Status { run_id: "r".into(), status: RunPhase::Thinking },
                r#"{"type":"status","run_id":"r","status":"thinking"}"#,
            ),
            (
                Event::Done { run_id: "r".into(), status: RunStatus::AwaitingConfirmation },
                r#"{"type":"done","run_id":"r","status":"awaiting_confirmation"}"#,
            ),
            (
                Event::Done { run_id: "r".into(), status: RunStatus::IterationLimit },
                r#"{"type":"done","run_id":"r","status":"iteration_limit"}"#,
            ),
            (
                Event::ToolResult {
                    run_id: "r".into(),
                    call_id: "c".into(),
                    tool: "t".into(),
                    status: AuditStatus::Substituted,
                    result: None,
                },
                r#"{"type":"tool_result","run_id":"r","call_id":"c","tool":"t","status":"substituted","result":null}"#,
            ),
            (
                Event::ConfirmRequired {
                    run_id: "r".into(),
                    call_id: "c".into(),
                    tool: "t".into(),
                    title: "T".into(),
                    args: serde_json::json!({}),
                    risk: Risk::Critical,
                    why: None,
                    origins: None,
                },
                r#"{"type":"confirm_required","run_id":"r","call_id":"c","tool":"t","title":"T","args":{},"risk":"critical"}"#,
            ),
        ];
        for (event, json) in cases {
            assert_eq!(serde_json::to_string(&event).unwrap(), json);
            assert_eq!(serde_json::from_str::<Event>(json).unwrap(), event, "{json}");
        }
        // Every status a run ends with is written as its `as_str` name (the audit record's reason).
        for s in [
            RunStatus::Completed,
            RunStatus::AwaitingConfirmation,
            RunStatus::IterationLimit,
            RunStatus::BudgetExhausted,
            RunStatus::Cancelled,
            RunStatus::Failed,
        ] {
            assert_eq!(serde_json::to_value(s).unwrap(), serde_json::json!(s.as_str()));
        }
        for p in [RunPhase::Started, RunPhase::Thinking, RunPhase::WaitingForConfirmation] {
            assert_eq!(serde_json::to_value(p).unwrap(), serde_json::json!(p.as_str()));
        }
    }

    #[test]
    fn slow_subscriber_loses_events_and_publish_never_blocks() {
        let bus = EventBus::new();
        let mut slow = bus.subscribe();
        flood(&bus);
        let mut got = 0;
        while slow.try_recv().is_ok() {
            got += 1;
        }
        assert_eq!(got, SUBSCRIBER_BUFFER);
    }

    #[test]
    fn subscriber_count_forgets_dropped_receivers() {
        let bus = EventBus::new();
        let a = bus.subscribe();
        let _b = bus.subscribe();
        assert_eq!(bus.subscriber_count(), 2);
        drop(a);
        assert_eq!(bus.subscriber_count(), 1);
        bus.publish(ev(1));
        assert_eq!(bus.subscriber_count(), 1);
    }

    #[test]
    fn whether_anyone_listens_follows_subscribing_and_leaving() {
        let bus = EventBus::new();
        assert!(!bus.has_subscribers());
        let a = bus.subscribe();
        let b = bus.subscribe();
        assert!(bus.has_subscribers());
        drop(a);
        bus.publish(ev(1));
        assert!(bus.has_subscribers(), "one subscriber is left");
        drop(b);
        // A receiver that went away is noticed by the next publish (or count).
        bus.publish(ev(2));
        assert!(!bus.has_subscribers());
        let c = bus.subscribe();
        assert!(bus.has_subscribers());
        drop(c);
        assert_eq!(bus.subscriber_count(), 0);
        assert!(!bus.has_subscribers());
    }

    /// The texts of the token events `rx` holds now.
    fn texts(rx: &mut mpsc::Receiver<Event>) -> Vec<String> {
        std::iter::from_fn(|| rx.try_recv().ok())
            .map(|e| match e {
                Event::Token { text, .. } => text,
                other => panic!("a token event, not {other:?}"),
            })
            .collect()
    }

    #[test]
    fn a_runs_feed_holds_what_a_channel_holds_and_drops_the_rest() {
        let bus = EventBus::new();
        let mut feed = bus.subscribe_feed();
        flood(&bus);
        let got = std::iter::from_fn(|| feed.try_recv()).count();
        assert_eq!(got, SUBSCRIBER_BUFFER);
        // Asked for as a channel once full, it holds nothing lost and no more than a channel.
        let mut full = bus.subscribe_feed();
        flood(&bus);
        let expected: Vec<String> = (0..SUBSCRIBER_BUFFER).map(|i| i.to_string()).collect();
        assert_eq!(texts(full.channel(&bus)), expected);
    }

    #[test]
    fn a_feed_asked_for_as_a_channel_keeps_every_event_in_order() {
        let bus = EventBus::new();
        let mut feed = bus.subscribe_feed();
        let mut other = bus.subscribe();
        bus.publish(ev(1));
        bus.publish(ev(2));
        // Received from the queue before the channel is asked for: not received twice.
        assert!(matches!(feed.try_recv(), Some(Event::Token { text, .. }) if text == "1"));
        let channel = feed.channel(&bus);
        bus.publish(ev(3));
        assert_eq!(texts(channel), ["2", "3"]);
        // The channel took the queue's place in the list: one subscriber each, as before.
        assert_eq!(bus.subscriber_count(), 2);
        bus.publish(ev(4));
        assert_eq!(texts(feed.channel(&bus)), ["4"], "the same channel, asked for again");
        assert_eq!(feed.try_recv(), None, "read through the channel");
        assert_eq!(texts(&mut other), ["1", "2", "3", "4"]);
    }

    #[test]
    fn a_dropped_feed_is_forgotten_and_a_bus_gone_ends_it() {
        let bus = EventBus::new();
        let feed = bus.subscribe_feed();
        assert!(bus.has_subscribers());
        drop(feed);
        bus.publish(ev(1));
        assert!(!bus.has_subscribers());

        let bus = EventBus::new();
        let mut feed = bus.subscribe_feed();
        bus.publish(ev(1));
        drop(bus);
        let waker = futures::task::noop_waker();
        let mut cx = std::task::Context::from_waker(&waker);
        assert!(matches!(feed.poll_recv(&mut cx), std::task::Poll::Ready(Some(Event::Token { .. }))));
        assert_eq!(feed.poll_recv(&mut cx), std::task::Poll::Ready(None), "no sender is left");
    }
}
