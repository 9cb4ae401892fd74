//! How a run ends, and the handle that waits for it.

use crate::audit::AuditStatus;
use crate::events::{Event, EventBus};
use crate::provider::ProviderError;
use agents_core::Tier;
use std::pin::Pin;
use std::sync::Arc;
use std::task::Poll;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// Why a run could not start.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum StartError {
    /// The user already has the maximum number of runs.
    #[error("you already have {0} runs in progress; wait for one to finish or stop one, then try again")]
    TooManyRuns(u32),
    /// The session belongs to someone else.
    #[error("the session `{0}` belongs to another user")]
    SessionNotYours(String),
    /// The input could not be given to the model.
    #[error("the input could not be serialized: {0}")]
    Input(String),
    /// The audit log refused the session's first record; nothing may run without it.
    #[error("the audit log is unavailable; fix the audit sink (see the logs) and try again")]
    AuditUnavailable,
    /// The principal's ids are empty or malformed (see `Principal::validate`); nothing runs.
    #[error("the principal was refused: {0}")]
    InvalidPrincipal(#[from] agents_core::PrincipalError),
    /// [`Runtime::start`](super::Runtime::start) was called outside a tokio runtime, where
    /// the run's task cannot be spawned; nothing ran.
    #[error("a run needs a tokio runtime to run on; call `start` from within one")]
    NoAsyncRuntime,
    /// The state store (run slots) could not answer; nothing ran.
    #[error("the state store is unavailable ({0}); try again later")]
    StateUnavailable(String),
    /// The agent's registry does not produce exactly its `MANIFEST`: nothing of it runs.
    #[error(transparent)]
    RegistryMismatch(#[from] crate::tool::RegistryMismatch),
    /// The runtime's provider is not one of the agent's declared models: nothing ran.
    #[error(transparent)]
    ModelNotDeclared(#[from] crate::declared::UndeclaredModel),
    /// The skill the application named is not one the agent declares (a hand-written
    /// `Skill` impl; the enum `agent!` generates names declared skills only): nothing ran.
    #[error(
        "agent `{agent}` declares no skill `{skill}`; name one of its skills (the enum `agent!` generates lists them)"
    )]
    UnknownSkill {
        /// The agent.
        agent: &'static str,
        /// The name given.
        skill: &'static str,
    },
    /// A knowledge source of the agent could not be read, or differs from the manifest's
    /// entry (SHA-256 or size): nothing ran (see [`crate::knowledge`]).
    #[error(
        "the agent's knowledge does not match its manifest, so nothing ran: {0}; restore the reviewed documents, or rebuild the agent so its manifest names the new ones (a change reviewers see)"
    )]
    Knowledge(String),
    /// The runtime keeps more of a call's values in the audit log than the agent's manifest
    /// declares (`audit: { values: ... }`): nothing ran.
    #[error(transparent)]
    AuditValuesNotDeclared(#[from] crate::audit::declared::UndeclaredAuditValues),
    /// The agent declares knowledge sources (`agent! { knowledge: [...] }`), and this build of
    /// `agents-runtime` has no `knowledge` feature to read them: nothing ran.
    #[error(
        "agent `{agent}` declares knowledge sources, but agents-runtime was built without its `knowledge` feature, so nothing ran; enable it (`agents-runtime = {{ version = \"0.1\", features = [\"knowledge\"] }}`; it is on by default)"
    )]
    KnowledgeNotBuilt {
        /// The agent's name.
        agent: &'static str,
    },
    /// The skill the application named through the skill enum takes and returns types of its
    /// own, which only its skill type carries: nothing ran.
    #[error(
        "skill `{skill}` of agent `{agent}` takes and returns types of its own; start it with `Runtime::start_skill::<S>` and the skill's type `agent!` writes (`<Agent><Skill>Skill`), which takes its input type"
    )]
    TypedSkill {
        /// The agent.
        agent: &'static str,
        /// The skill.
        skill: &'static str,
    },
}

/// How a run ended, as its `run_finished` record and its `done` event name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum RunStatus {
    /// The model answered.
    Completed,
    /// A proposal waits for the user's next message (conversational mode).
    AwaitingConfirmation,
    /// The iteration limit was reached.
    IterationLimit,
    /// The budget was used up.
    BudgetExhausted,
    /// The user stopped the run, or a confirmation timed out.
    Cancelled,
    /// The provider or the output parse failed.
    Failed,
}

impl RunStatus {
    /// The snake_case name (what the records, events and JSON carry).
    pub fn as_str(self) -> &'static str {
        match self {
            RunStatus::Completed => "completed",
            RunStatus::AwaitingConfirmation => "awaiting_confirmation",
            RunStatus::IterationLimit => "iteration_limit",
            RunStatus::BudgetExhausted => "budget_exhausted",
            RunStatus::Cancelled => "cancelled",
            RunStatus::Failed => "failed",
        }
    }
}

impl std::fmt::Display for RunStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Where one tool call of a run stands at the run's end: its last status the audit log took.
///
/// The statuses of [`AuditStatus`] that move a call, under the same names: an audit status says
/// what one record shows happened, and some records move no call (a run's start and end, a
/// notice, an interceptor's modified arguments, which the call's next record follows), so a
/// call can never stand at them. The two are kept apart on purpose, so that a match over a
/// call's status has no arm for a state no call can be in; [`CallStatus::of_audit`] goes from
/// one to the other, and names every audit status that moves no call, so a new audit status
/// must be placed on one side or the other.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum CallStatus {
    /// Accepted by the gate; it waits for a person (a conversational proposal waits for the
    /// user's next message).
    Proposed,
    /// A person approved it; it had not run when the run ended.
    Confirmed,
    /// The tool ran and returned.
    Executed,
    /// The tool ran and failed, or a check after approval failed.
    Failed,
    /// A person declined it.
    Rejected,
    /// It ended undecided (timeout, stop, superseded, expired).
    Skipped,
    /// Refused before anything ran.
    Denied,
    /// A handoff: it became a record for a human queue.
    HandedOff,
    /// An interceptor answered in the tool's place.
    Substituted,
}

impl CallStatus {
    /// The call status an audit status of a call's record means (`None` for the statuses of
    /// records that do not end or move a call: run records, notices, modified arguments).
    pub fn of_audit(status: AuditStatus) -> Option<CallStatus> {
        Some(match status {
            AuditStatus::Proposed => CallStatus::Proposed,
            AuditStatus::Confirmed => CallStatus::Confirmed,
            AuditStatus::Executed => CallStatus::Executed,
            AuditStatus::Failed => CallStatus::Failed,
            AuditStatus::Rejected => CallStatus::Rejected,
            AuditStatus::Skipped => CallStatus::Skipped,
            AuditStatus::Denied => CallStatus::Denied,
            AuditStatus::HandedOff => CallStatus::HandedOff,
            AuditStatus::Substituted => CallStatus::Substituted,
            AuditStatus::RunStarted
            | AuditStatus::RunFinished
            | AuditStatus::Modified
            | AuditStatus::Notice
            | AuditStatus::SkillChosen
            | AuditStatus::FirstApproval => {
                return None;
            }
            // A kind of record this runtime does not write moves none of its calls.
            _ => return None,
        })
    }
}

/// One tool call a run made, as its records show it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[non_exhaustive]
pub struct CallSummary {
    /// The call's id in the records and events (for an action, the one the runtime minted).
    pub call_id: String,
    /// The tool, as the model named it.
    pub tool: String,
    /// The tool's tier (absent for a name the agent does not know).
    pub tier: Option<Tier>,
    /// Its last status.
    pub status: CallStatus,
}

/// What a run's model calls used: tokens as the provider reported them, and money.
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[non_exhaustive]
pub struct RunUsage {
    /// Prompt tokens of every model call of the run (the classifier's included).
    pub input_tokens: u64,
    /// Completion tokens.
    pub output_tokens: u64,
    /// Money spent (recorded with the budget store as it was spent), in USD.
    pub cost_usd: f64,
}

impl RunUsage {
    /// Adds what another run used (the runs of one tree's nodes).
    pub(crate) fn add(&mut self, other: RunUsage) {
        self.input_tokens = self.input_tokens.saturating_add(other.input_tokens);
        self.output_tokens = self.output_tokens.saturating_add(other.output_tokens);
        self.cost_usd += other.cost_usd;
    }
}

/// What a run did, whatever its end: kept by [`RunOutput`] and by every [`RunError`], so a
/// failed run still tells which calls ran and what it spent.
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct RunReport {
    /// The run.
    pub run_id: String,
    /// The model's last text (empty when it gave none).
    pub text: String,
    /// The tool calls, in the order the gate first recorded them.
    pub calls: Vec<CallSummary>,
    /// Tokens and money.
    pub usage: RunUsage,
    /// Model calls made.
    pub iterations: u32,
}

/// A run that answered: the model's final answer, or a question waiting for the user.
#[derive(Debug)]
#[non_exhaustive]
pub struct RunOutput<O> {
    /// How it ended: [`RunStatus::Completed`] or [`RunStatus::AwaitingConfirmation`].
    pub status: RunStatus,
    /// The typed output: `Some` when the run completed (the final answer fit the output
    /// type), `None` while a proposal waits for the user's answer.
    pub output: Option<O>,
    /// The run's id, its text, calls, usage and iterations.
    pub report: RunReport,
}

impl<O> RunOutput<O> {
    /// The run's id.
    pub fn run_id(&self) -> &str {
        &self.report.run_id
    }
    /// The model's final text.
    pub fn text(&self) -> &str {
        &self.report.text
    }
    /// The tool calls the run made.
    pub fn calls(&self) -> &[CallSummary] {
        &self.report.calls
    }
    /// Tokens and money.
    pub fn usage(&self) -> RunUsage {
        self.report.usage
    }
}

/// Why a run ended without an answer. Every variant keeps the [`RunReport`] of what the run
/// did before it ended ([`RunError::report`]). The texts quote no secret value of the run's
/// calls (see "Redaction" in [`crate::run`]).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RunError {
    /// The run made as many model calls as its limit allows.
    #[error("the run stopped after {limit} model calls, the limit for one turn")]
    IterationLimit {
        /// The limit.
        limit: u32,
        /// What the run did.
        report: Box<RunReport>,
    },
    /// The budget has no headroom left for another model call.
    #[error("the budget is used up; an administrator can raise the cap")]
    BudgetExhausted {
        /// What the run did.
        report: Box<RunReport>,
    },
    /// The budget store could not be asked, and the runtime fails closed: no paid call was made.
    #[error("the budget could not be checked, so no paid call was made: {message}")]
    BudgetUnavailable {
        /// What the store said.
        message: String,
        /// What the run did.
        report: Box<RunReport>,
    },
    /// The run was stopped ([`RunHandle::stop`], a session's end, a shutdown).
    #[error("the run was stopped")]
    Stopped {
        /// What the run did.
        report: Box<RunReport>,
    },
    /// Nobody decided on a proposed action within the confirmation timeout; the run ended.
    #[error("no decision arrived within the confirmation timeout; the action did not run")]
    ConfirmationTimedOut {
        /// What the run did.
        report: Box<RunReport>,
    },
    /// A model call failed (its texts masked of the run's secret values).
    #[error("{source}")]
    Provider {
        /// The provider's error.
        source: ProviderError,
        /// What the run did.
        report: Box<RunReport>,
    },
    /// The model's final answer does not fit the agent's output type.
    #[error("the model's final answer does not fit `{output_type}`: {message}")]
    Output {
        /// The output type, as the agent declares it.
        output_type: &'static str,
        /// Why it does not fit (masked of the run's secret values).
        message: String,
        /// What the run did; its `text` is the answer.
        report: Box<RunReport>,
    },
    /// The audit log refused the run's first record: nothing ran.
    #[error("the audit log is unavailable; the run did not start")]
    AuditUnavailable {
        /// What the run did.
        report: Box<RunReport>,
    },
    /// The state store failed while a proposed action's final record was being claimed: the
    /// action did not run, and its final record is left to a resumption
    /// ([`Runtime::resume_orphaned`](super::Runtime::resume_orphaned)), which writes it once the
    /// run's slot lapsed, so the log never holds two final records for one proposal.
    #[error("the state store failed while settling a proposed action ({message}); the action did not run")]
    StateUnavailable {
        /// What the store said.
        message: String,
        /// What the run did.
        report: Box<RunReport>,
    },
    /// The run could not bind its session or get its slot when its task began (a shared
    /// store answers there): nothing ran.
    #[error("{source}")]
    NotStarted {
        /// Why.
        source: StartError,
        /// What the run did.
        report: Box<RunReport>,
    },
    /// The run's task ended without an outcome (it panicked or was aborted).
    #[error("the run task failed: {message}")]
    TaskFailed {
        /// What the task runner said.
        message: String,
        /// What is known of the run.
        report: Box<RunReport>,
    },
    /// The agent has skills, the application named none, and the model's answer to the
    /// skill-choice step named none of them (or was not that one call): the run ends there,
    /// having offered no tool and run nothing (it fails closed; see `agents_core::skill`).
    #[error("the model's choice of a skill was refused, so nothing ran: {message}")]
    SkillChoice {
        /// Why the answer was refused.
        message: String,
        /// What the run did.
        report: Box<RunReport>,
    },
    /// A node of a composite's run tree failed (its run failed, a step refused, a hook
    /// panicked): the tree ended there and no later node started (see [`crate::compose`]).
    #[error("node `{path}` failed: {message}")]
    Node {
        /// The node's path (`kyc-pipeline/kyc-reviewer`).
        path: String,
        /// Why.
        message: String,
        /// What the tree's runs did.
        report: Box<RunReport>,
    },
}

/// The report every variant of [`RunError`] carries, by reference or by value as `$error` is.
macro_rules! report_of {
    ($error:expr) => {
        match $error {
            RunError::IterationLimit { report, .. }
            | RunError::BudgetExhausted { report }
            | RunError::BudgetUnavailable { report, .. }
            | RunError::Stopped { report }
            | RunError::ConfirmationTimedOut { report }
            | RunError::Provider { report, .. }
            | RunError::Output { report, .. }
            | RunError::AuditUnavailable { report }
            | RunError::StateUnavailable { report, .. }
            | RunError::NotStarted { report, .. }
            | RunError::TaskFailed { report, .. }
            | RunError::SkillChoice { report, .. }
            | RunError::Node { report, .. } => report,
        }
    };
}

impl RunError {
    /// What the run did before it ended.
    pub fn report(&self) -> &RunReport {
        report_of!(self)
    }

    /// What the run did, taken.
    pub fn into_report(self) -> RunReport {
        *report_of!(self)
    }

    /// The run's id.
    pub fn run_id(&self) -> &str {
        &self.report().run_id
    }

    /// How the run ended, as its `run_finished` record and `done` event say.
    pub fn status(&self) -> RunStatus {
        match self {
            RunError::IterationLimit { .. } => RunStatus::IterationLimit,
            RunError::BudgetExhausted { .. } => RunStatus::BudgetExhausted,
            RunError::Stopped { .. } | RunError::ConfirmationTimedOut { .. } => RunStatus::Cancelled,
            RunError::BudgetUnavailable { .. }
            | RunError::Provider { .. }
            | RunError::Output { .. }
            | RunError::AuditUnavailable { .. }
            | RunError::StateUnavailable { .. }
            | RunError::NotStarted { .. }
            | RunError::TaskFailed { .. }
            | RunError::SkillChoice { .. }
            | RunError::Node { .. } => RunStatus::Failed,
        }
    }
}

/// What a run's result tells whether the run answered or not: its status, its report and its
/// error text, read the same way from both sides of [`RunHandle::wait`]'s `Result`.
///
/// ```
/// # use agents_runtime::{RunError, RunOutput, RunResultExt, RunStatus};
/// fn summary<O>(result: &Result<RunOutput<O>, RunError>) -> String {
///     let calls = result.calls().len();
///     match result.error_text() {
///         None => format!("{} after {calls} calls: {}", result.status(), result.text()),
///         Some(e) => format!("{} after {calls} calls: {e}", result.status()),
///     }
/// }
/// ```
pub trait RunResultExt<O> {
    /// How the run ended.
    fn status(&self) -> RunStatus;
    /// What the run did.
    fn report(&self) -> &RunReport;
    /// The typed output, when the run completed.
    fn output(&self) -> Option<&O>;
    /// The error's text, when the run ended without an answer.
    fn error_text(&self) -> Option<String>;
    /// The model's last text.
    fn text(&self) -> &str {
        &self.report().text
    }
    /// The tool calls the run made.
    fn calls(&self) -> &[CallSummary] {
        &self.report().calls
    }
}

impl<O> RunResultExt<O> for Result<RunOutput<O>, RunError> {
    fn status(&self) -> RunStatus {
        match self {
            Ok(o) => o.status,
            Err(e) => e.status(),
        }
    }
    fn report(&self) -> &RunReport {
        match self {
            Ok(o) => &o.report,
            Err(e) => e.report(),
        }
    }
    fn output(&self) -> Option<&O> {
        self.as_ref().ok().and_then(|o| o.output.as_ref())
    }
    fn error_text(&self) -> Option<String> {
        self.as_ref().err().map(ToString::to_string)
    }
}

/// Why a run without an answer ended, as the run loop notes it (the status alone tells the
/// iteration limit, the budget and a stop apart).
#[derive(Debug)]
pub(super) enum Failure {
    BudgetUnavailable(String),
    Provider(ProviderError),
    Output {
        output_type: &'static str,
        message: String,
    },
    AuditUnavailable,
    StateUnavailable(String),
    NotStarted(StartError),
    SkillChoice(String),
    /// A node of a run tree failed.
    Node {
        path: String,
        message: String,
    },
}

/// A run as its loop builds it, turned into the caller's `Result` at the end.
#[derive(Debug)]
pub(super) struct Ending<O> {
    pub(super) status: RunStatus,
    pub(super) output: Option<O>,
    pub(super) failure: Option<Failure>,
    pub(super) confirmation_timed_out: bool,
    pub(super) limit: u32,
    pub(super) report: RunReport,
}

impl<O> Ending<O> {
    /// A run that has not ended yet, or that ended with `status` before anything happened.
    pub(super) fn empty(run_id: String, status: RunStatus) -> Self {
        Ending {
            status,
            output: None,
            failure: None,
            confirmation_timed_out: false,
            limit: 0,
            report: RunReport { run_id, ..RunReport::default() },
        }
    }

    /// What went wrong, as the `error` event and the service's summary show it.
    pub(super) fn error_text(&self) -> Option<String> {
        self.failure.as_ref().map(|f| match f {
            Failure::BudgetUnavailable(m) => format!("the budget could not be checked, so no paid call was made: {m}"),
            Failure::Provider(e) => e.to_string(),
            Failure::Output { output_type, message } => {
                format!("the model's final answer does not fit `{output_type}`: {message}")
            }
            Failure::AuditUnavailable => "the audit log is unavailable; the run did not start".to_owned(),
            Failure::StateUnavailable(m) => {
                format!("the state store failed while settling a proposed action ({m}); the action did not run")
            }
            Failure::NotStarted(e) => e.to_string(),
            Failure::SkillChoice(m) => format!("the model's choice of a skill was refused, so nothing ran: {m}"),
            Failure::Node { path, message } => format!("node `{path}` failed: {message}"),
        })
    }

    /// The typed `error_occurred` event of the run's failure, when it failed.
    pub(super) fn error_occurred(&self) -> Option<crate::events::Event> {
        use crate::events::ErrorKind;
        let kind = match self.failure.as_ref()? {
            Failure::BudgetUnavailable(_) => ErrorKind::Budget,
            Failure::Provider(_) => ErrorKind::Provider,
            Failure::Output { .. } => ErrorKind::Output,
            Failure::AuditUnavailable => ErrorKind::Audit,
            Failure::StateUnavailable(_) => ErrorKind::State,
            Failure::NotStarted(_) => ErrorKind::Start,
            Failure::SkillChoice(_) => ErrorKind::SkillChoice,
            Failure::Node { .. } => ErrorKind::Node,
        };
        let (run_id, message) = (self.report.run_id.clone(), self.error_text()?);
        Some(crate::events::Event::ErrorOccurred { run_id, kind, tool: None, message })
    }

    /// The caller's result.
    pub(super) fn into_result(self) -> Result<RunOutput<O>, RunError> {
        let report = Box::new(self.report);
        Err(match (self.status, self.failure) {
            (RunStatus::Completed | RunStatus::AwaitingConfirmation, None) => {
                return Ok(RunOutput { status: self.status, output: self.output, report: *report });
            }
            (_, Some(Failure::BudgetUnavailable(message))) => RunError::BudgetUnavailable { message, report },
            (_, Some(Failure::Provider(source))) => RunError::Provider { source, report },
            (_, Some(Failure::Output { output_type, message })) => RunError::Output { output_type, message, report },
            (_, Some(Failure::AuditUnavailable)) => RunError::AuditUnavailable { report },
            (_, Some(Failure::StateUnavailable(message))) => RunError::StateUnavailable { message, report },
            (_, Some(Failure::NotStarted(source))) => RunError::NotStarted { source, report },
            (_, Some(Failure::SkillChoice(message))) => RunError::SkillChoice { message, report },
            (_, Some(Failure::Node { path, message })) => RunError::Node { path, message, report },
            (RunStatus::IterationLimit, None) => RunError::IterationLimit { limit: self.limit, report },
            (RunStatus::BudgetExhausted, None) => RunError::BudgetExhausted { report },
            (_, None) if self.confirmation_timed_out => RunError::ConfirmationTimedOut { report },
            (_, None) => RunError::Stopped { report },
        })
    }
}

/// A running agent.
#[derive(Debug)]
pub struct RunHandle<O> {
    pub(super) run_id: String,
    pub(super) events: crate::events::Feed,
    pub(super) bus: Arc<EventBus>,
    pub(super) cancel: CancellationToken,
    pub(super) join: tokio::task::JoinHandle<Ending<O>>,
}

impl<O> RunHandle<O> {
    /// The run's id.
    pub fn run_id(&self) -> &str {
        &self.run_id
    }
    /// The events of this run, from its start.
    pub fn events(&mut self) -> &mut mpsc::Receiver<Event> {
        self.events.channel(&self.bus)
    }
    /// Another subscriber (from now on).
    pub fn subscribe(&self) -> mpsc::Receiver<Event> {
        self.bus.subscribe()
    }
    /// Live subscribers, for diagnostics.
    pub fn subscriber_count(&self) -> usize {
        self.bus.subscriber_count()
    }
    /// Stops the run: a pending action is recorded as `skipped`; spend so far stays recorded.
    pub fn stop(&self) {
        self.cancel.cancel();
    }
    /// A token that stops the run when cancelled.
    pub fn stopper(&self) -> CancellationToken {
        self.cancel.clone()
    }
    /// Waits for the end: the run's answer (or the question waiting for the user), or why
    /// it ended without one. Either way the calls it made and what it spent are kept.
    pub async fn wait(self) -> Result<RunOutput<O>, RunError> {
        ended_with(self.run_id, self.join.await)
    }
    /// [`RunHandle::wait`], handing each event of the run (from its start, as
    /// [`RunHandle::events`] receives them) to `each` as it comes, and the ones still buffered
    /// at the end before returning. A server that keeps a run's events for its clients moves
    /// them with this, holding nothing more per run than the wait.
    ///
    /// ```ignore
    /// let mut seen = Vec::new();
    /// let outcome = handle.wait_with_events(|e| seen.push(e)).await;
    /// ```
    pub async fn wait_with_events(self, mut each: impl FnMut(Event)) -> Result<RunOutput<O>, RunError> {
        let RunHandle { run_id, mut events, mut join, .. } = self;
        // Events first, as they come; the end once no event is ready.
        let ended = std::future::poll_fn(|cx| {
            while let Poll::Ready(Some(event)) = events.poll_recv(cx) {
                each(event);
            }
            Pin::new(&mut join).poll(cx)
        })
        .await;
        while let Some(event) = events.try_recv() {
            each(event);
        }
        ended_with(run_id, ended)
    }
}

/// A run's result from how its task of run `run_id` ended.
pub(super) fn ended_with<O>(
    run_id: String,
    ended: Result<Ending<O>, tokio::task::JoinError>,
) -> Result<RunOutput<O>, RunError> {
    match ended {
        Ok(ending) => ending.into_result(),
        Err(e) => Err(RunError::TaskFailed {
            message: e.to_string(),
            report: Box::new(RunReport { run_id, ..RunReport::default() }),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A call's status carries the name of the audit status that put the call there.
    #[test]
    fn call_statuses_are_the_audit_statuses_that_move_a_call() {
        use AuditStatus::*;
        let mut calls = 0;
        for audit in AuditStatus::ALL {
            match CallStatus::of_audit(audit) {
                Some(call) => {
                    calls += 1;
                    assert_eq!(serde_json::to_value(call).unwrap(), audit.as_str(), "{audit}");
                }
                None => assert!(
                    matches!(audit, RunStarted | RunFinished | Modified | Notice | SkillChosen | FirstApproval),
                    "{audit}"
                ),
            }
        }
        assert_eq!(calls, 9);
    }
}
