//! What the gate takes of a run ([`Run`]): its [`Recorder`], the runtime's settings and
//! services, and the narrow parts of one run a call needs (who it acts for, its stop, its
//! availability snapshot, the secrets and provenance it keeps, the approval its turn holds, the
//! call context a tool runs with). A run's context (`context::RunCtx`) implements it; the gate
//! knows no more of a run than this.

use super::call::ToolFacts;
use super::decision::Undecided;
use super::recorder::Recorder;
use super::secrets::CallSecrets;
use super::shared::{Services, Settings};
use crate::provenance::Provenance;
use crate::token::ConfirmationToken;
use crate::tool::{CallContext, NestedInvoker, RegisteredTool, Registry};
use agents_core::{Principal, SharedStr, ToolSpec};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

/// A run as the gate sees it. Every method borrows from the run: nothing is allocated or
/// cloned per call to reach it.
pub(in crate::run) trait Run: Send + Sync + Sized + 'static {
    /// The agent the run is of.
    type Agent: Registry;

    /// How the run writes its records and events.
    fn recorder(&self) -> &Recorder;

    /// What the runtime's builder fixed.
    fn settings(&self) -> &Settings;

    /// What the runtime records, asks, keeps and calls through.
    fn services(&self) -> &Services;

    /// Whom the run acts for.
    fn principal(&self) -> &Principal;

    /// The run's stop.
    fn cancel(&self) -> &CancellationToken;

    /// Why the run was stopped, when someone said.
    fn stop_reason(&self) -> Option<Undecided>;

    /// The position of `name` in the agent's tools when it is in the run's availability
    /// snapshot.
    fn available_index(&self, name: &str) -> Option<usize>;

    /// The skill the run works within when it does not offer the tool at `index` (the call
    /// is then denied); `None` when it does, or when the run works within no chosen skill.
    fn outside_skill(&self, index: usize) -> Option<&'static str>;

    /// The facts of the tool at `index` (worked out on its first call in the run).
    fn facts(&self, index: usize, entry: &RegisteredTool<Self::Agent>) -> &ToolFacts;

    /// Remembers a call's secret values for the texts the run derives later.
    fn remember_secrets(&self, secrets: &CallSecrets);

    /// Where the values of `args` came from (a tool that reaches out, or an action).
    fn provenance_of(&self, args: &Value) -> Provenance;

    /// Keeps a tool result for the provenance check.
    fn note_result(&self, call_id: &str, spec: &'static ToolSpec, result: &Value);

    /// The approval a call a person confirms redeems (taken from the turn: used at most once),
    /// and the call id its records carry.
    fn approval(
        &self,
        spec: &'static ToolSpec,
        call_id: &str,
        confirmed: bool,
    ) -> (Option<(ConfirmationToken, String, String)>, SharedStr);

    /// The context a tool of the run runs with.
    fn call_context(&self, spec: &'static ToolSpec, call_id: SharedStr) -> CallContext;

    /// Sets, once, the invoker through which the run's tools call other granted tools.
    fn arm(&self, invoker: NestedInvoker);

    /// A fresh id for a call a tool of the run makes through the gate.
    fn nested_call_id(&self) -> String;

    /// What a call of the granted agent `callee` takes of the run: its principal, session,
    /// stop, allowance and events, and the child's place (`<run's path>/<callee>`).
    fn granted_call(&self, callee: &'static str) -> super::granted::GrantedCall;

    /// Ends the turn with how the agent a handoff tool handed the run to ended (the first
    /// handoff only).
    fn hand_over(&self, end: HandedOver);
}

/// How the agent a run was handed to ended: its final text (the run's answer, parsed into the
/// run's output), or the node's path and why it gave none.
#[derive(Debug, Clone)]
pub(in crate::run) enum HandedOver {
    Answered(String),
    Failed { path: String, message: String },
}
