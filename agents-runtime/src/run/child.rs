//! A run started as one node of a composite's run tree (see [`crate::compose`]): the same
//! start and drive as any run ([`Runtime::start`]), under the tree's stop, with the node's
//! place in every record it writes, and within what is left of the tree's spend limit
//! (`limit`). The tree's own records and its handle are made here too, from the parts every
//! run has.

use super::limit::{NodeScope, TreeLimit};
use super::outcome::{Ending, Failure, RunHandle, RunReport, RunStatus, StartError};
use super::record::{RecordFields, RecordIds};
use super::runtime::Runtime;
use crate::audit::{AuditNode, AuditResult, AuditStatus};
use crate::events::EventBus;
use crate::tool::Registry;
use agents_core::Principal;
use std::sync::Arc;
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
        let events = bus.subscribe();
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
    /// The run's events from its start, taken (the handle keeps a closed receiver).
    pub(crate) fn take_events(&mut self) -> tokio::sync::mpsc::Receiver<crate::events::Event> {
        std::mem::replace(&mut self.events, tokio::sync::mpsc::channel(1).1)
    }
}
