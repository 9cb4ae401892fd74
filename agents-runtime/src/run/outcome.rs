//! How a run ends, and the handle that waits for it.

use crate::events::{Event, EventBus};
use std::sync::Arc;
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
}

/// How a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
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
    pub(super) fn as_str(self) -> &'static str {
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

/// The end of a run.
#[derive(Debug)]
pub struct RunOutcome<O> {
    /// The run.
    pub run_id: String,
    /// How it ended.
    pub status: RunStatus,
    /// The model's final text.
    pub text: String,
    /// The typed output, when the final answer fit the output type.
    pub output: Option<O>,
    /// What went wrong, when something did.
    pub error: Option<String>,
    /// Money spent by this run (recorded with the budget store as it was spent).
    pub cost_usd: f64,
    /// Provider calls made.
    pub iterations: u32,
}

impl<O> RunOutcome<O> {
    /// A run that has not ended yet, or that ended with `status` before anything happened.
    pub(super) fn empty(run_id: String, status: RunStatus) -> Self {
        RunOutcome { run_id, status, text: String::new(), output: None, error: None, cost_usd: 0.0, iterations: 0 }
    }
}

/// A running agent.
#[derive(Debug)]
pub struct RunHandle<O> {
    pub(super) run_id: String,
    pub(super) events: mpsc::Receiver<Event>,
    pub(super) bus: Arc<EventBus>,
    pub(super) cancel: CancellationToken,
    pub(super) join: tokio::task::JoinHandle<RunOutcome<O>>,
}

impl<O> RunHandle<O> {
    /// The run's id.
    pub fn run_id(&self) -> &str {
        &self.run_id
    }
    /// The events of this run, from its start.
    pub fn events(&mut self) -> &mut mpsc::Receiver<Event> {
        &mut self.events
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
    /// Waits for the end.
    pub async fn wait(self) -> RunOutcome<O> {
        let run_id = self.run_id.clone();
        match self.join.await {
            Ok(o) => o,
            Err(e) => RunOutcome {
                error: Some(format!("the run task failed: {e}")),
                ..RunOutcome::empty(run_id, RunStatus::Failed)
            },
        }
    }
}
