//! What a front door serves: an agent (any `agent!` type), or a composite's whole run tree
//! ([`CompositeTree`]). Each brings its MCP server, its exposure check and the name its
//! refusals are audited under; the checks of the door are the same for both.

use crate::composite::CompositeServer;
use crate::options::{McpError, McpOptions};
use crate::server::McpServer;
use agents_core::expose::McpExposure;
use agents_runtime::audit::AuditError;
use agents_runtime::compose::RunComposite;
use agents_runtime::{BoxFuture, Principal, Registry, Runtime};
use std::marker::PhantomData;
use tokio_util::sync::CancellationToken;
use tokio_util::task::task_tracker::TaskTrackerToken;

mod sealed {
    pub trait Sealed {}
}

/// What a [`FrontDoor`](crate::FrontDoor) (and [`serve_http`](crate::serve_http)) serves:
/// every `agent!` type, and [`CompositeTree<C>`] for a composite `C`. Sealed: the door serves
/// nothing else.
pub trait Served: sealed::Sealed + Send + Sync + 'static {
    /// The MCP server of one session.
    #[doc(hidden)]
    type Server: rmcp::ServerHandler;
    /// The name served (the agent's, or the composite's).
    #[doc(hidden)]
    fn name() -> &'static str;
    /// Refuses to serve in a way a manifest does not name (for a composite: any agent node's).
    #[doc(hidden)]
    fn check_exposed(way: McpExposure) -> Result<(), McpError>;
    /// The server of one MCP session, its principal taken from each request; its pending
    /// questions end as `shutdown` once `shutdown` is cancelled; counted in `live` while it lasts.
    #[doc(hidden)]
    fn server(
        runtime: Runtime,
        mcp: McpOptions,
        shutdown: CancellationToken,
        live: Option<TaskTrackerToken>,
    ) -> Self::Server;
    /// Audits a request the door refused (`denied`), under the name served.
    #[doc(hidden)]
    fn audit_refusal<'a>(
        runtime: &'a Runtime,
        principal: &'a Principal,
        session: &'a str,
        reason: String,
    ) -> BoxFuture<'a, Result<(), AuditError>>;
}

impl<A: Registry> sealed::Sealed for A {}

impl<A: Registry> Served for A {
    type Server = McpServer<A>;

    fn name() -> &'static str {
        A::SPEC.name
    }

    fn check_exposed(way: McpExposure) -> Result<(), McpError> {
        crate::options::check_exposed::<A>(way)
    }

    fn server(
        runtime: Runtime,
        mcp: McpOptions,
        shutdown: CancellationToken,
        live: Option<TaskTrackerToken>,
    ) -> McpServer<A> {
        let server = McpServer::<A>::new(runtime, None, mcp);
        match live {
            Some(live) => server.served_by(shutdown, live),
            None => server.shutdown_on(shutdown),
        }
    }

    fn audit_refusal<'a>(
        runtime: &'a Runtime,
        principal: &'a Principal,
        session: &'a str,
        reason: String,
    ) -> BoxFuture<'a, Result<(), AuditError>> {
        Box::pin(runtime.audit_refusal::<A>(principal, session, reason))
    }
}

/// Composite `C` as a front door serves it: one tool named after the composite that runs the
/// whole tree for the request's principal, each nested action asked of the person through
/// elicitation (see [`serve_composite_io`](crate::serve_composite_io) for the tool, and
/// [`serve_composite_http`](crate::serve_composite_http)).
///
/// ```no_run
/// # fn f<C>(runtime: agents_runtime::Runtime, options: agents_mcp::FrontDoorOptions)
/// # where C: agents_runtime::compose::RunComposite, C::Input: serde::de::DeserializeOwned + schemars::JsonSchema, C::Output: serde::Serialize {
/// // An endpoint behind an application's own authentication: every agent node of `C` names
/// // `http(auth = service)`.
/// let shutdown = tokio_util::sync::CancellationToken::new();
/// let door = agents_mcp::FrontDoor::<agents_mcp::CompositeTree<C>>::new(runtime, options, shutdown);
/// # }
/// ```
pub struct CompositeTree<C>(PhantomData<fn() -> C>);

impl<C> sealed::Sealed for CompositeTree<C> {}

impl<C> Served for CompositeTree<C>
where
    C: RunComposite,
    C::Input: serde::de::DeserializeOwned + schemars::JsonSchema,
    C::Output: serde::Serialize,
{
    type Server = CompositeServer<C>;

    fn name() -> &'static str {
        C::GRAPH.name
    }

    fn check_exposed(way: McpExposure) -> Result<(), McpError> {
        crate::options::check_composite_exposed(&C::GRAPH, way)
    }

    fn server(
        runtime: Runtime,
        mcp: McpOptions,
        shutdown: CancellationToken,
        live: Option<TaskTrackerToken>,
    ) -> CompositeServer<C> {
        CompositeServer::new(runtime, None, mcp, shutdown, live)
    }

    fn audit_refusal<'a>(
        runtime: &'a Runtime,
        principal: &'a Principal,
        session: &'a str,
        reason: String,
    ) -> BoxFuture<'a, Result<(), AuditError>> {
        Box::pin(runtime.audit_composite_refusal::<C>(principal, session, reason))
    }
}
