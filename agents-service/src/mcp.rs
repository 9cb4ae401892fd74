//! An agent over MCP streamable HTTP in the service's router (see [`McpEndpoint`]): the
//! service's own authentication in front of the MCP front door of `agents-mcp`.

use crate::Authenticator;
use agents_mcp::{FrontDoor, FrontDoorOptions, McpOptions};
use agents_runtime::Runtime;
use agents_runtime::tool::Registry;
use axum::Router;
use axum::body::Body;
use axum::extract::Request;
use axum::response::{IntoResponse, Response};
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// An agent served over MCP streamable HTTP beside the REST routes: the MCP front door
/// ([`agents_mcp::FrontDoor`], the same as the standalone server's), every request acting for
/// the principal the service's [`Authenticator`] names (the same mapping as the REST API).
///
/// In order:
///
/// 1. **Origin**: a request with an `Origin` header not on
///    [`McpEndpoint::allowed_origins`] gets 403 (a request without one passes; `Host` is
///    checked by rmcp against [`McpEndpoint::allowed_hosts`]).
/// 2. **Bearer**: the [`Authenticator`] maps the request to a [`Principal`](agents_runtime::Principal) or refuses it (401,
///    the REST API's JSON refusal). The `Authorization` header is removed: rmcp, the agent and
///    its tools never see the token.
/// 3. **The front door**: a body over [`McpEndpoint::max_body_bytes`] gets 413 (declared or
///    chunked). An MCP session belongs to the principal whose `initialize` opened it: every
///    request naming a session (`Mcp-Session-Id`) from anyone else (POST, including the
///    JSON-RPC response that answers an elicitation; GET, with or without `Last-Event-ID`;
///    DELETE) gets rmcp's own 404 for an unknown session, word for word, changes nothing and
///    is audited as `denied`. A POST body with duplicate keys or integers beyond 2^53 gets the
///    JSON-RPC error stdio answers (`-32600`), before rmcp parses it. Open sessions and event
///    streams per user are capped (429), and the agent is told when a client goes away before
///    its response is complete (a confirmation asked then ends as `disconnected`; once
///    [`Service::shutdown`](crate::Service::shutdown) was called, as `shutdown`).
///
/// Confirmation of action tools is the MCP server's ([`agents_mcp::McpServer`]): a form
/// elicitation on the session of the call, answered once, by the principal that owns the
/// session, for the request id it was sent under.
///
/// Connection limits (connections at once, header read timeout, keep-alive) belong to the
/// server that serves the whole router, not to one route: [`Service::serve`](crate::Service::serve)
/// sets them with the same listener as the standalone server
/// [`serve_http`](agents_mcp::serve_http) (used by `agents serve`). The service's `Host`
/// allowlist ([`ServiceBuilder::allowed_hosts`](crate::ServiceBuilder::allowed_hosts)) is in
/// front of this endpoint too.
///
/// These options say where and how it is mounted ([`ServiceBuilder::mcp`](crate::ServiceBuilder::mcp)).
/// Every default is safe for an endpoint reachable by untrusted clients.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct McpEndpoint {
    /// The path of the endpoint. Default `/mcp`. Must start with `/` and lie outside `/v1/`.
    pub path: String,
    /// Browser origins allowed to call (`scheme://host[:port]`). A request with an `Origin`
    /// header not on this list gets 403; a request without one passes. Default: none.
    pub allowed_origins: Vec<String>,
    /// `Host` values accepted (DNS-rebinding protection), checked by rmcp behind the service's
    /// own allowlist ([`ServiceBuilder::allowed_hosts`](crate::ServiceBuilder::allowed_hosts)),
    /// which every request passes first. Default: the loopback names; add the public host name
    /// of a deployment (here and there).
    pub allowed_hosts: Vec<String>,
    /// The largest request body (bytes); larger ones get 413. Default 1 MiB.
    pub max_body_bytes: usize,
    /// MCP sessions one user (in one organisation) may hold open at once; a further
    /// `initialize` gets 429 and makes no session. Default 32.
    pub max_sessions_per_user: usize,
    /// Event streams (GET, including a resume with `Last-Event-ID`) one user may hold open at
    /// once; more get 429. Default 16.
    pub max_streams_per_user: usize,
    /// An MCP session with no request for this long is closed. Default 5 min.
    pub session_idle_timeout: Duration,
    /// Interval of the keep-alive comments on event streams. Default 15 s.
    pub sse_keep_alive: Duration,
    /// How often the owners of ended sessions and expired confirmation tokens are purged.
    /// Default 30 s.
    pub purge_interval: Duration,
    /// Options of the MCP server (name, instructions, elicitation timeout; the session id is
    /// ignored: every MCP session gets its own).
    pub mcp: McpOptions,
}

impl Default for McpEndpoint {
    fn default() -> Self {
        let door = FrontDoorOptions::default();
        McpEndpoint {
            path: "/mcp".to_owned(),
            allowed_origins: door.allowed_origins,
            allowed_hosts: door.allowed_hosts,
            max_body_bytes: door.max_body_bytes,
            max_sessions_per_user: door.max_sessions_per_principal,
            max_streams_per_user: door.max_streams_per_principal,
            session_idle_timeout: door.session_idle_timeout,
            sse_keep_alive: door.sse_keep_alive,
            purge_interval: door.purge_interval,
            mcp: door.mcp,
        }
    }
}

impl McpEndpoint {
    /// Why these options cannot be served, if they cannot.
    fn check(&self) -> Result<(), String> {
        if !self.path.starts_with('/') || self.path == "/v1" || self.path.starts_with("/v1/") {
            return Err(format!("the MCP path `{}` must start with `/` and lie outside `/v1/`", self.path));
        }
        for (name, n) in [
            ("max_body_bytes", self.max_body_bytes),
            ("max_sessions_per_user", self.max_sessions_per_user),
            ("max_streams_per_user", self.max_streams_per_user),
        ] {
            if n == 0 {
                return Err(format!("McpEndpoint::{name} must be above zero"));
            }
        }
        for (name, d) in [
            ("session_idle_timeout", self.session_idle_timeout),
            ("sse_keep_alive", self.sse_keep_alive),
            ("purge_interval", self.purge_interval),
        ] {
            if d.is_zero() {
                return Err(format!("McpEndpoint::{name} must be above zero"));
            }
        }
        Ok(())
    }

    /// What the front door holds requests to.
    fn door(&self) -> FrontDoorOptions {
        let mut door = FrontDoorOptions::default();
        door.allowed_origins = self.allowed_origins.clone();
        door.allowed_hosts = self.allowed_hosts.clone();
        door.max_body_bytes = self.max_body_bytes;
        door.max_sessions_per_principal = self.max_sessions_per_user;
        door.max_streams_per_principal = self.max_streams_per_user;
        door.session_idle_timeout = self.session_idle_timeout;
        door.sse_keep_alive = self.sse_keep_alive;
        door.purge_interval = self.purge_interval;
        door.mcp = self.mcp.clone();
        door
    }
}

/// The endpoint's one handler: the origin, the service's authentication, then the front door.
async fn endpoint<A: Registry>(door: Arc<FrontDoor<A>>, auth: Arc<dyn Authenticator>, req: Request) -> Response {
    if let Some(refusal) = door.origins().refusal(req.headers()) {
        return refusal.map(Body::new);
    }
    let (parts, body) = req.into_parts();
    let principal = match auth.authenticate(&parts).await {
        Ok(p) => p,
        Err(e) => return e.into_response(),
    };
    if let Err(e) = principal.validate() {
        return crate::auth::unauthorized("invalid_principal", e.to_string()).into_response();
    }
    // The door removes the token: rmcp, the agent and its tools do not see it.
    door.serve(principal, Request::from_parts(parts, body)).await.map(Body::new)
}

/// The router of the MCP endpoint of agent `A`, or why the options cannot be served.
pub(crate) fn router<A: Registry>(
    runtime: Runtime,
    auth: Arc<dyn Authenticator>,
    options: McpEndpoint,
    shutdown: CancellationToken,
) -> Result<Router, String> {
    agents_runtime::agents_core::expose::McpExposure::HttpService.admitted(A::SPEC.expose_mcp)?;
    options.check()?;
    let door = Arc::new(FrontDoor::<A>::new(runtime, options.door(), shutdown).map_err(|e| e.to_string())?);
    let serve = tower::service_fn(move |req: Request| {
        let (door, auth) = (door.clone(), auth.clone());
        async move { Ok::<_, std::convert::Infallible>(endpoint(door, auth, req).await) }
    });
    Ok(Router::new().route_service(&options.path, serve))
}

/// Why an MCP endpoint cannot be mounted.
#[derive(Debug, thiserror::Error)]
#[error("invalid MCP endpoint: {0}")]
pub struct McpEndpointError(String);

impl crate::ServiceBuilder {
    /// Also serves agent `A` over MCP streamable HTTP at [`McpEndpoint::path`], in the same
    /// router as the REST API and for the principals the same [`Authenticator`] names (see
    /// [`McpEndpoint`]). Several agents may be mounted at different paths. Refused unless the
    /// agent's manifest names `http(auth = service)` (`expose: { mcp: [http(auth = service)] }`
    /// in `agent!`).
    pub fn mcp<A: Registry>(mut self, runtime: Runtime, endpoint: McpEndpoint) -> Result<Self, McpEndpointError> {
        if self.mcp.iter().any(|(path, _)| *path == endpoint.path) {
            return Err(McpEndpointError(format!("the path `{}` already serves an MCP endpoint", endpoint.path)));
        }
        let path = endpoint.path.clone();
        let router =
            router::<A>(runtime, self.auth.clone(), endpoint, self.shutdown.clone()).map_err(McpEndpointError)?;
        self.mcp.push((path, router));
        Ok(self)
    }
}
