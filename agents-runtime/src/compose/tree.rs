//! The context a run tree's plan runs in: who it acts for, its session, its root run, its
//! stop (a child token per node and per parallel group), its allowance, its event bus and
//! what its nodes' runs did; and how one agent node runs in it.

use crate::audit::{AuditNode, AuditStatus};
use crate::events::EventBus;
use crate::run::{NodeScope, RunError, RunReport, RunStatus, RunUsage, Runtime, TreeAllowance, TreeIds};
use crate::tool::Registry;
use agents_core::Principal;
use std::sync::{Arc, Mutex, PoisonError};
use tokio_util::sync::CancellationToken;

/// Why a node of a run tree ended without an output: the tree ends there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum NodeFailureKind {
    /// The tree was stopped (or a failing sibling cancelled the node's parallel group).
    Stopped,
    /// The budget (the user's, the organisation's or the tree's limit) is used up.
    Budget,
    /// The node's run failed or could not start.
    Failed,
    /// A wrap's step refused the value.
    Refused,
    /// A hook (a router, a stop condition, a join, a step) or a node's task panicked.
    Panicked,
}

/// How a node of a run tree failed: its path and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeFailure {
    /// The node's path (`kyc-pipeline/kyc-reviewer`).
    pub path: String,
    /// What kind of failure.
    pub kind: NodeFailureKind,
    /// What happened.
    pub message: String,
}

impl NodeFailure {
    pub(crate) fn new(path: impl Into<String>, kind: NodeFailureKind, message: impl Into<String>) -> Self {
        NodeFailure { path: path.into(), kind, message: message.into() }
    }

    /// How the tree ends when this node failed.
    pub(crate) fn status(&self) -> RunStatus {
        match self.kind {
            NodeFailureKind::Stopped => RunStatus::Cancelled,
            NodeFailureKind::Budget => RunStatus::BudgetExhausted,
            _ => RunStatus::Failed,
        }
    }
}

impl std::fmt::Display for NodeFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "node `{}`: {}", self.path, self.message)
    }
}

/// What every node of one tree shares.
pub(crate) struct Shared {
    pub(crate) runtime: Runtime,
    pub(crate) principal: Principal,
    pub(crate) session_id: String,
    /// The root run's id.
    pub(crate) run_id: String,
    pub(crate) ids: TreeIds,
    pub(crate) bus: Arc<EventBus>,
    pub(crate) allowance: Arc<TreeAllowance>,
    /// What the nodes' runs did: their calls, usage and iterations; the last one's text.
    pub(crate) report: Mutex<RunReport>,
}

/// A place in a run tree: the generated plan of a composite runs in one, and each node's run
/// starts from it. Not built by applications: [`Runtime::start_composite`] makes the root.
#[derive(Clone)]
pub struct Tree {
    pub(crate) shared: Arc<Shared>,
    pub(crate) path: Arc<str>,
    pub(crate) cancel: CancellationToken,
}

impl std::fmt::Debug for Tree {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tree").field("run_id", &self.shared.run_id).field("path", &self.path).finish_non_exhaustive()
    }
}

impl Tree {
    /// The tree's root run id.
    pub fn run_id(&self) -> &str {
        &self.shared.run_id
    }

    /// This place's path (the composite's name, then node ids, joined by `/`).
    pub fn path(&self) -> &str {
        &self.path
    }

    /// The path of node `id` here.
    pub fn node_path(&self, id: &str) -> String {
        format!("{}/{id}", self.path)
    }

    /// The place of a nested composite's nodes: under node `id`, with the same stop.
    pub fn enter(&self, id: &str) -> Tree {
        Tree { shared: self.shared.clone(), path: self.node_path(id).into(), cancel: self.cancel.clone() }
    }

    /// A place with its own stop under this one's (a parallel group: cancelling it stops its
    /// members, and a stop of the tree stops them too).
    pub(crate) fn group(&self) -> Tree {
        Tree { shared: self.shared.clone(), path: self.path.clone(), cancel: self.cancel.child_token() }
    }

    /// Refused when the tree was stopped or its allowance is spent: no node starts then.
    fn may_start(&self, path: &str) -> Result<(), NodeFailure> {
        if self.cancel.is_cancelled() {
            return Err(NodeFailure::new(path, NodeFailureKind::Stopped, "the run tree was stopped before this node"));
        }
        if let Some(why) = self.shared.allowance.refusal() {
            return Err(NodeFailure::new(path, NodeFailureKind::Budget, why));
        }
        Ok(())
    }

    /// Runs agent `A` as node `id`: a run of its own (its own run id, its agent's limits), for
    /// the tree's principal in the tree's session, under the tree's stop; its records carry the
    /// tree's run id and the node's path, its events reach the tree's handle wrapped in
    /// [`Event::Node`](crate::events::Event::Node).
    pub async fn run_agent<A: Registry>(&self, id: &str, input: A::Input) -> Result<A::Output, NodeFailure> {
        let path = self.node_path(id);
        self.may_start(&path)?;
        let shared = &self.shared;
        let scope = NodeScope {
            cancel: self.cancel.child_token(),
            node: AuditNode { parent_run_id: Some(shared.run_id.clone()), path: path.clone() },
            allowance: shared.allowance.clone(),
        };
        let principal = shared.principal.clone();
        let handle = shared.runtime.start_node::<A>(principal, &shared.session_id, input, scope).map_err(|e| {
            NodeFailure::new(&path, NodeFailureKind::Failed, format!("the node's run could not start: {e}"))
        })?;
        // The node's events reach the tree's subscribers before the tree goes on: a reader
        // that stops at the tree's `done` has seen every node's.
        let result = handle.wait_forwarding(&shared.bus, &shared.run_id, &path).await;
        let report = match &result {
            Ok(out) => &out.report,
            Err(e) => e.report(),
        };
        self.keep(report);
        match result {
            Ok(out) => match out.output {
                Some(output) => Ok(output),
                None => Err(NodeFailure::new(
                    &path,
                    NodeFailureKind::Failed,
                    "the node's run waits for the user's next message; a composite's nodes are decided through the decisions API (dialog confirmation)",
                )),
            },
            Err(RunError::Stopped { .. }) => Err(NodeFailure::new(&path, NodeFailureKind::Stopped, "stopped")),
            Err(e @ RunError::BudgetExhausted { .. }) => {
                let text = e.report().text.clone();
                Err(NodeFailure::new(&path, NodeFailureKind::Budget, format!("{e}: {text}")))
            }
            Err(e) => Err(NodeFailure::new(&path, NodeFailureKind::Failed, e.to_string())),
        }
    }

    /// Keeps what a node's run did in the tree's report.
    fn keep(&self, report: &RunReport) {
        let mut tree = self.shared.report.lock().unwrap_or_else(PoisonError::into_inner);
        tree.calls.extend(report.calls.iter().cloned());
        tree.usage.add(report.usage);
        tree.iterations = tree.iterations.saturating_add(report.iterations);
        if !report.text.is_empty() {
            tree.text.clone_from(&report.text);
        }
    }

    /// Writes a `notice` of the tree (a branch's choice, a step's refusal, a contained panic).
    pub(crate) async fn notice(&self, reason: String) {
        let shared = &self.shared;
        shared.runtime.tree_record(&shared.ids, AuditStatus::Notice, Some(reason), None).await;
    }

    /// Writes a `notice` of the tree placed at `path` (a branch's), with `result`.
    pub(crate) async fn notice_at(&self, path: &str, reason: String, result: serde_json::Value) {
        let shared = &self.shared;
        shared.runtime.tree_record_at(&shared.ids, Some(path), AuditStatus::Notice, Some(reason), Some(result)).await;
    }

    /// Counts what one of the tree's own model calls spent in the tree's report (its
    /// allowance counted it when it was made).
    pub(crate) fn spent(&self, usage: RunUsage) {
        self.shared.report.lock().unwrap_or_else(PoisonError::into_inner).usage.add(usage);
    }
}
