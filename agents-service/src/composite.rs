//! A composite served beside the agents ([`ServiceBuilder::composite`]): listed, started,
//! streamed, stopped and decided through the same routes as an agent's run, as one run tree.

use crate::ServiceBuilder;
use crate::runs::{AgentKind, RunEntry, Served, StartRefusal, launch, parse_input};
use agents_runtime::compose::RunComposite;
use agents_runtime::run::ResumedCall;
use agents_runtime::store::StoreError;
use agents_runtime::{Principal, Runtime};
use serde_json::Value;
use std::marker::PhantomData;
use std::sync::Arc;

/// Starts run trees of one composite type with one runtime.
pub(crate) struct CompositeKind<C> {
    pub(crate) runtime: Runtime,
    pub(crate) _composite: PhantomData<fn() -> C>,
}

impl<C> AgentKind for CompositeKind<C>
where
    C: RunComposite,
    C::Input: serde::de::DeserializeOwned,
{
    fn name(&self) -> &'static str {
        C::GRAPH.name
    }

    fn manifest_sha256(&self) -> &'static str {
        C::MANIFEST_SHA256
    }

    /// The graph manifest.
    fn manifest(&self) -> &'static str {
        C::MANIFEST
    }

    fn is_composite(&self) -> bool {
        true
    }

    fn runtime(&self) -> &Runtime {
        &self.runtime
    }

    /// Every agent node's orphaned proposals, nested composites' included
    /// ([`Runtime::resume_orphaned_composite`]): a node's decision settles, and its tree's root
    /// closes, after the process that ran the tree is gone.
    fn resume_orphaned(&self) -> agents_runtime::BoxFuture<'_, Result<Vec<ResumedCall>, StoreError>> {
        Box::pin(self.runtime.resume_orphaned_composite::<C>())
    }

    fn start(
        &self,
        principal: Principal,
        session_id: &str,
        client_session_id: &str,
        input: Value,
        limits: (usize, usize),
    ) -> Result<Arc<RunEntry>, StartRefusal> {
        let input: C::Input = parse_input(input, C::GRAPH.name)?;
        let handle =
            self.runtime.start_composite::<C>(principal.clone(), session_id, input).map_err(StartRefusal::Start)?;
        let served = Served { name: C::GRAPH.name, manifest_sha256: C::MANIFEST_SHA256, owner: principal };
        Ok(launch(handle, served, client_session_id, limits))
    }
}

impl ServiceBuilder {
    /// Serves composite `C` (under its name, `C::GRAPH.name`) with `runtime`, beside the
    /// agents and through the same routes: `GET /v1/agents` lists it with its graph manifest's
    /// SHA-256 (`"kind": "composite"`), `POST /v1/runs` with `"agent": "<its name>"` starts a
    /// run tree ([`Runtime::start_composite`]) for the caller, its events stream as any run's
    /// (each node's event as a `node` event: the node's path and its own event), `stop` ends
    /// every node, and an action a node proposes is listed by `GET /v1/decisions` for the
    /// same person only (with `node`, the node's path) and decided by `POST
    /// /v1/decisions/{call_id}`, exactly as a single run's. A second agent or composite of the
    /// same name replaces the first.
    ///
    /// ```ignore
    /// let service = Service::builder(auth, audit.clone(), audit)
    ///     .composite::<KycPipeline>(runtime.clone())
    ///     .build();
    /// ```
    pub fn composite<C>(mut self, runtime: Runtime) -> Self
    where
        C: RunComposite,
        C::Input: serde::de::DeserializeOwned,
    {
        let kind = CompositeKind::<C> { runtime, _composite: PhantomData };
        self.agents.insert(C::GRAPH.name, Arc::new(kind));
        self
    }
}
