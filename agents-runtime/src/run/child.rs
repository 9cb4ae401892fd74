//! A run started as one node of a composite's run tree (see [`crate::compose`]): the same
//! start and drive as any run ([`Runtime::start`]), under the tree's stop, with the node's
//! place in every record it writes, and within what is left of the tree's spend limit
//! (`limit`). The tree's own records and its handle are made here too, from the parts every
//! run has.

use super::granted::{GrantedAgent, GrantedCall};
use super::limit::{NodeScope, TreeLimit};
use super::outcome::{Ending, Failure, RunError, RunHandle, RunOutput, RunReport, RunStatus, StartError, ended_with};
use super::record::{RecordFields, RecordIds};
use super::runtime::Runtime;
use crate::audit::{AuditNode, AuditResult, AuditStatus};
use crate::events::EventBus;
use crate::tool::Registry;
use agents_core::Principal;
use serde_json::Value;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::Poll;
use tokio_util::sync::CancellationToken;

/// How a run tree ended, as the compose room reports it.
pub(crate) struct TreeEnd<O> {
    pub(crate) status: RunStatus,
    pub(crate) output: Option<O>,
    pub(crate) report: RunReport,
    /// The node that failed and why, when the tree failed.
    pub(crate) failure: Option<(String, String)>,
}

/// The ids of a run tree's own records: its root run, the composite's name and hash.
pub(crate) struct TreeIds(RecordIds);

impl Runtime {
    /// Starts a run of `A` as a node of a run tree (see [`NodeScope`]); otherwise exactly
    /// [`Runtime::start`].
    pub(crate) fn start_node<A: Registry>(
        &self,
        principal: Principal,
        session_id: &str,
        input: A::Input,
        scope: NodeScope,
    ) -> Result<RunHandle<A::Output>, StartError> {
        self.start_in_tree::<A>(principal, session_id, input, None, Some(scope))
    }

    /// The runtime's limit on a whole run tree's spend.
    pub(crate) fn tree_limit(&self) -> Option<TreeLimit> {
        self.inner.settings.tree_limit
    }

    /// The ids of a tree's own records.
    pub(crate) fn tree_ids(
        &self,
        run_id: &str,
        session_id: &str,
        principal: &Principal,
        composite: (&str, &str),
    ) -> TreeIds {
        let request_id = uuid::Uuid::new_v4().to_string();
        let mut ids = RecordIds::from_parts(run_id, session_id, &request_id, principal, composite.0, composite.1);
        ids.node = Some(AuditNode { parent_run_id: None, path: composite.0.to_owned() });
        TreeIds(ids)
    }

    /// Writes one of the tree's own records; `false` when the log refused it.
    pub(crate) async fn tree_record(
        &self,
        ids: &TreeIds,
        status: AuditStatus,
        reason: Option<String>,
        result: Option<serde_json::Value>,
    ) -> bool {
        self.tree_record_at(ids, None, status, reason, result).await
    }

    /// Writes one of the tree's own records placed at `path` (a branch's path; the
    /// composite's name when `None`), under the tree's run id; `false` when the log refused it.
    pub(crate) async fn tree_record_at(
        &self,
        ids: &TreeIds,
        path: Option<&str>,
        status: AuditStatus,
        reason: Option<String>,
        result: Option<serde_json::Value>,
    ) -> bool {
        let mut f = RecordFields::new(status);
        f.reason = reason;
        f.result = result.map(AuditResult::Value);
        crate::telemetry::audited(status, None, None);
        let mut record = ids.0.record(f);
        if let Some(path) = path {
            record.node = Some(AuditNode { parent_run_id: None, path: path.to_owned() });
        }
        match self.inner.services.audit.append(record).await {
            Ok(_) => true,
            Err(e) => {
                tracing::error!(error = %e, "a run tree's record could not be written");
                false
            }
        }
    }

    /// The handle of a run tree whose task is `task`.
    pub(crate) fn tree_handle<O: Send + 'static>(
        run_id: String,
        bus: Arc<EventBus>,
        cancel: CancellationToken,
        task: impl std::future::Future<Output = TreeEnd<O>> + Send + 'static,
    ) -> RunHandle<O> {
        let events = bus.subscribe_feed();
        let join = tokio::spawn(async move {
            let end = task.await;
            let mut ending = Ending::empty(end.report.run_id.clone(), end.status);
            ending.output = end.output;
            ending.report = end.report;
            ending.failure = end.failure.map(|(path, message)| Failure::Node { path, message });
            ending
        });
        RunHandle { run_id, events, bus, cancel, join }
    }
}

impl<O> RunHandle<O> {
    /// Waits for the end of a node's run while passing its events to a tree's (or a calling
    /// run's) subscribers on `bus`, each wrapped in [`Event::Node`](crate::Event::Node) with
    /// the node's path and run and the tree's `run_id`, up to the node's `done`. Read in the
    /// waiting task itself (no task per node): every event the node published before it ended
    /// is on `bus` when this returns, so a reader that stops at the tree's `done` has seen them.
    pub(crate) async fn wait_forwarding(
        self,
        bus: &EventBus,
        run_id: &str,
        node: &str,
    ) -> Result<RunOutput<O>, RunError> {
        let RunHandle { run_id: node_run_id, mut events, mut join, .. } = self;
        let mut open = true;
        // Passes one event on; `false` after the node's `done`, its last event.
        let forward = |event: crate::events::Event| {
            let last = matches!(event, crate::events::Event::Done { .. });
            let (run_id, node, node_run_id) = (run_id.to_owned(), node.to_owned(), node_run_id.clone());
            bus.publish(crate::events::Event::Node { run_id, node, node_run_id, event: Box::new(event) });
            !last
        };
        let ended = std::future::poll_fn(|cx| {
            while open {
                match events.poll_recv(cx) {
                    Poll::Ready(Some(event)) => open = forward(event),
                    Poll::Ready(None) => open = false,
                    Poll::Pending => break,
                }
            }
            Pin::new(&mut join).poll(cx)
        })
        .await;
        // What the node published before its task ended is in the channel now.
        while open {
            match events.try_recv() {
                Some(event) => open = forward(event),
                None => open = false,
            }
        }
        ended_with(node_run_id, ended)
    }
}

/// The registry entry of agent `S` granted to another: what `agent!` writes per granted agent
/// (through `__private`).
pub fn granted_agent<S: Registry>() -> GrantedAgent
where
    S::Input: serde::de::DeserializeOwned,
{
    GrantedAgent {
        name: S::SPEC.name,
        sha256: S::MANIFEST_SHA256,
        description: S::SPEC.description,
        capabilities: S::CAPABILITIES,
        verify: verify_granted::<S>,
        schema: granted_schema::<S::Input>,
        run: run_granted::<S>,
    }
}

/// `S`'s registry check, as the agents that grant `S` or hand off to it run it before theirs
/// is accepted.
fn verify_granted<S: Registry>() -> Result<(), String> {
    crate::tool::verified_registry::<S>().map_err(|e| e.to_string())
}

/// Runs `S` as a child node of the calling run (see [`super::granted`]): its input parsed from
/// the call's arguments, its final answer as JSON (a JSON text as its value, other text as a
/// string); its calls were reserved in and settled to the tree's ledger as they were made.
fn run_granted<S: Registry>(call: GrantedCall, args: Value) -> crate::BoxFuture<'static, Result<Value, String>>
where
    S::Input: serde::de::DeserializeOwned,
{
    Box::pin(async move {
        let name = S::SPEC.name;
        let input = args.get("input").cloned().unwrap_or(Value::Null);
        let input: S::Input = serde_json::from_value(input)
            .map_err(|e| format!("invalid input for the agent `{name}`: {e}; nothing ran"))?;
        let GrantedCall { inner, principal, session_id, scope, bus, run_id } = call;
        let node = scope.node.path.clone();
        let runtime = Runtime { inner };
        let handle = runtime
            .start_node::<S>(principal, &session_id, input, scope)
            .map_err(|e| format!("the agent `{name}` could not start: {e}"))?;
        // The callee's events reach the caller's subscribers before its result does.
        let result = handle.wait_forwarding(&bus, &run_id, &node).await;
        match result {
            Ok(out) if out.output.is_some() => {
                let text = out.report.text;
                Ok(serde_json::from_str(&text).unwrap_or(Value::String(text)))
            }
            Ok(_) => Err(format!(
                "the agent `{name}` waits for the user's next message; an agent run as a tool is decided through the decisions API (dialog confirmation)"
            )),
            Err(e) => Err(format!("the agent `{name}` ended without an answer: {e}")),
        }
    })
}

/// The arguments a granted agent is called with: `{"input": <its input>}` (a tool's arguments
/// are an object, whatever the agent's input type), the input's definitions kept at the root
/// where its references point.
fn granted_schema<I: schemars::JsonSchema>() -> Value {
    let mut input = agents_core::reviewed::schema_of::<I>();
    let defs = input.as_object_mut().and_then(|o| {
        o.remove("$schema");
        o.remove("$defs")
    });
    let mut schema = serde_json::json!({
        "type": "object",
        "properties": { "input": input },
        "required": ["input"],
        "additionalProperties": false,
    });
    if let (Some(defs), Some(o)) = (defs, schema.as_object_mut()) {
        o.insert("$defs".into(), defs);
    }
    schema
}
