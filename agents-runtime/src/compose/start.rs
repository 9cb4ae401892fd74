//! Starting a composite: the tree's root run, its records at its start and end, and the task
//! its plan runs in (a panic there is contained: the tree ends failed, with a record).

use super::flow::panic_text;
use super::node::RunComposite;
use super::tree::{NodeFailure, NodeFailureKind, Shared, Tree};
use crate::audit::AuditStatus;
use crate::events::{Event, EventBus};
use crate::run::{RunHandle, RunReport, RunStatus, Runtime, StartError, TreeAllowance, TreeEnd};
use agents_core::Principal;
use serde_json::json;
use std::sync::{Arc, Mutex, PoisonError};
use tokio_util::sync::CancellationToken;

impl Runtime {
    /// Starts composite `C` for `principal` in `session_id` as one run tree: a root run (its
    /// own run id, `run_started` and `run_finished` records), and a run per agent node, each
    /// for the same principal in the same session, under the tree's stop, with the tree's run
    /// id and the node's path in every record and event. [`RunHandle::stop`] ends every node;
    /// the handle's events are the tree's (`done` at its end) and each node's, wrapped in
    /// [`Event::Node`]. See [`crate::compose`].
    ///
    /// Outside a tokio runtime it returns [`StartError::NoAsyncRuntime`]; an invalid principal
    /// is refused; nothing is recorded then.
    pub fn start_composite<C: RunComposite>(
        &self,
        principal: Principal,
        session_id: &str,
        input: C::Input,
    ) -> Result<RunHandle<C::Output>, StartError> {
        principal.validate()?;
        tokio::runtime::Handle::try_current().map_err(|_| StartError::NoAsyncRuntime)?;
        let run_id = uuid::Uuid::new_v4().to_string();
        let composite = (C::GRAPH.name, C::MANIFEST_SHA256);
        let ids = self.tree_ids(&run_id, session_id, &principal, composite);
        let bus = Arc::new(EventBus::new());
        let cancel = CancellationToken::new();
        let shared = Arc::new(Shared {
            runtime: self.clone(),
            principal,
            session_id: session_id.to_owned(),
            run_id: run_id.clone(),
            ids,
            bus: bus.clone(),
            allowance: Arc::new(TreeAllowance::new(self.tree_limit(), composite)),
            report: Mutex::new(RunReport { run_id: run_id.clone(), ..RunReport::default() }),
        });
        let tree = Tree { shared, path: C::GRAPH.name.into(), cancel: cancel.clone() };
        Ok(Runtime::tree_handle(run_id, bus, cancel, run_tree::<C>(tree, input)))
    }
}

/// The tree's task: its start record, its plan (in a task of its own, so a panic is
/// contained), its end record and `done` event.
async fn run_tree<C: RunComposite>(tree: Tree, input: C::Input) -> TreeEnd<C::Output> {
    let shared = tree.shared.clone();
    let started = json!({"composite": C::GRAPH.name, "entry": C::GRAPH.entry, "nodes": C::GRAPH.nodes.len()});
    let result = if shared.runtime.tree_record(&shared.ids, AuditStatus::RunStarted, None, Some(started)).await {
        let plan = tokio::spawn(C::run(tree.clone(), input));
        match plan.await {
            Ok(result) => result,
            Err(e) => {
                let message = if e.is_panic() { panic_text(&*e.into_panic()) } else { e.to_string() };
                let failure =
                    NodeFailure::new(tree.path(), NodeFailureKind::Panicked, format!("the plan panicked: {message}"));
                tree.notice(format!("{failure}; the run tree ends failed")).await;
                Err(failure)
            }
        }
    } else {
        Err(NodeFailure::new(tree.path(), NodeFailureKind::Failed, "the audit log refused the run tree's first record"))
    };
    let report = std::mem::take(&mut *shared.report.lock().unwrap_or_else(PoisonError::into_inner));
    let (status, output, failure) = match result {
        Ok(output) => (RunStatus::Completed, Some(output), None),
        Err(f) => {
            let status = f.status();
            let failed = (status == RunStatus::Failed).then(|| (f.path.clone(), f.message.clone()));
            if failed.is_some() {
                tree.notice(format!("{f}")).await;
            }
            (status, None, failed)
        }
    };
    let usage = report.usage;
    let ended = json!({"cost_usd": usage.cost_usd, "iterations": report.iterations, "calls": report.calls.len()});
    let reason = Some(status.as_str().to_owned());
    shared.runtime.tree_record(&shared.ids, AuditStatus::RunFinished, reason, Some(ended)).await;
    shared.bus.publish(Event::Done { run_id: shared.run_id.clone(), status });
    TreeEnd { status, output, report: RunReport { run_id: shared.run_id.clone(), ..report }, failure }
}
