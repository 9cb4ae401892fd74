//! An agent over MCP streamable HTTP in the service's router (see [`McpEndpoint`]).

use crate::Authenticator;
use crate::error::ApiError;
use agents_runtime::mcp::{ClientGone, ClientGoneBody, INVALID_REQUEST, McpOptions, McpServer, strict_refusal};
use agents_runtime::tool::Registry;
use agents_runtime::{Principal, Runtime};
use axum::Router;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::Request as HttpRequest;
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use futures::future::BoxFuture;
use rmcp::transport::streamable_http_server::session::SessionManager;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;
use tokio_util::sync::CancellationToken;
use tower_http::limit::RequestBodyLimitLayer;

/// The MCP session header.
const SESSION_HEADER: &str = "mcp-session-id";

/// What rmcp answers for a session it does not know; a request on another principal's
/// session gets exactly this, so a refusal does not confirm that the session exists.
const SESSION_NOT_FOUND: &str = "Not Found: Session not found";

/// The body limit rmcp applies on its own (it sits behind the body-limit layer).
const RMCP_BODY_LIMIT: usize = 4 * 1024 * 1024;

/// An agent served over MCP streamable HTTP beside the REST routes: rmcp's own
/// [`StreamableHttpService`] behind tower layers, every request acting for the principal the
/// service's [`Authenticator`] names (the same mapping as the REST API).
///
/// The layers, outermost first:
///
/// 1. **Origin**: a request with an `Origin` header not on
///    [`McpEndpoint::allowed_origins`] gets 403 (a request without one passes; `Host` is
///    checked by rmcp against [`McpEndpoint::allowed_hosts`]).
/// 2. **Bearer**: the [`Authenticator`] maps the request to a [`Principal`] or refuses it (401,
///    the REST API's JSON refusal). The `Authorization` header is removed: rmcp, the agent and
///    its tools never see the token.
/// 3. **Body limit**: tower-http's [`RequestBodyLimitLayer`]; a larger body gets 413.
/// 4. **Session binding**: an MCP session belongs to the principal whose `initialize` opened
///    it. Every request naming a session (`Mcp-Session-Id`) from anyone else (POST, including
///    the JSON-RPC response that answers an elicitation; GET, with or without
///    `Last-Event-ID`; DELETE) gets rmcp's own 404 for an unknown session, word for word,
///    changes nothing and is audited as `denied`. It also caps open sessions and event streams
///    per principal (429), and tells the agent when a client goes away before its response is
///    complete (a confirmation asked then ends as `disconnected`; once
///    [`Service::shutdown`](crate::Service::shutdown) was called, as `shutdown`).
/// 5. **Strict JSON**: a POST body with duplicate keys or integers beyond 2^53 gets the
///    JSON-RPC error stdio answers (`-32600`), before rmcp parses it.
///
/// Confirmation of action tools is the runtime's MCP server's: a form elicitation on the
/// session of the call, answered once, by the principal that owns the session, for the request
/// id it was sent under (see [`agents_runtime::mcp`]).
///
/// Connection limits (connections at once, header read timeout, keep-alive) belong to the
/// server that serves the whole router, not to one route: [`Service::serve`](crate::Service::serve)
/// sets them with the same listener as the standalone server
/// [`serve_http`](agents_runtime::mcp::serve_http) (used by `agents serve`). The service's `Host`
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
        McpEndpoint {
            path: "/mcp".to_owned(),
            allowed_origins: Vec::new(),
            allowed_hosts: vec!["localhost".into(), "127.0.0.1".into(), "::1".into()],
            max_body_bytes: agents_runtime::mcp::DEFAULT_MAX_BODY_BYTES,
            max_sessions_per_user: 32,
            max_streams_per_user: 16,
            session_idle_timeout: Duration::from_secs(300),
            sse_keep_alive: Duration::from_secs(15),
            purge_interval: Duration::from_secs(30),
            mcp: McpOptions::default(),
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
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The key limits are counted by: the user in their organisation.
fn limit_key(principal: &Principal) -> (String, String) {
    (principal.org_id.clone(), principal.user_id.clone())
}

/// Which principal opened each MCP session, the event streams each user holds, and the
/// sessions each user is opening right now.
#[derive(Debug, Default)]
struct Owners {
    owners: Mutex<HashMap<String, Principal>>,
    streams: Mutex<HashMap<(String, String), usize>>,
    opening: Mutex<HashMap<(String, String), usize>>,
}

impl Owners {
    fn owned_by(&self, session: &str, principal: &Principal) -> bool {
        lock(&self.owners).get(session).is_some_and(|owner| owner == principal)
    }

    /// A slot for one more session of `principal`, if its open sessions and those it is
    /// opening are fewer than `max` (counted under one lock, so concurrent `initialize`
    /// requests cannot pass the cap together).
    fn begin_session(self: &Arc<Self>, principal: &Principal, max: usize) -> Option<Slot> {
        let key = limit_key(principal);
        let mut opening = lock(&self.opening);
        let open = lock(&self.owners).values().filter(|p| limit_key(p) == key).count();
        let n = opening.entry(key.clone()).or_insert(0);
        if open + *n >= max {
            if *n == 0 {
                opening.remove(&key);
            }
            return None;
        }
        *n += 1;
        Some(Slot { owners: self.clone(), key, streams: false })
    }

    /// One event-stream slot of `principal`, if one is free.
    fn open_stream(self: &Arc<Self>, principal: &Principal, max: usize) -> Option<Slot> {
        let key = limit_key(principal);
        let mut streams = lock(&self.streams);
        let n = streams.entry(key.clone()).or_insert(0);
        if *n >= max {
            return None;
        }
        *n += 1;
        Some(Slot { owners: self.clone(), key, streams: true })
    }
}

/// A session being opened or an open event stream, counted against its user until dropped.
struct Slot {
    owners: Arc<Owners>,
    key: (String, String),
    streams: bool,
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut counts = lock(if self.streams { &self.owners.streams } else { &self.owners.opening });
        if let Some(n) = counts.get_mut(&self.key) {
            *n -= 1;
            if *n == 0 {
                counts.remove(&self.key);
            }
        }
    }
}

/// Audits a request refused on a session the caller did not open.
type AuditRefusal = fn(Runtime, Principal, String, String) -> BoxFuture<'static, ()>;

fn audit_refusal<A: Registry>(
    runtime: Runtime,
    who: Principal,
    session: String,
    reason: String,
) -> BoxFuture<'static, ()> {
    Box::pin(async move {
        if let Err(e) = runtime.audit_refusal::<A>(&who, &session, reason).await {
            tracing::error!(error = %e, "the refusal could not be audited");
        }
    })
}

/// What the session-binding layer shares.
#[derive(Clone)]
struct Binding {
    owners: Arc<Owners>,
    runtime: Runtime,
    audit: AuditRefusal,
    manager: Arc<LocalSessionManager>,
    max_sessions: usize,
    max_streams: usize,
    purge_interval: Duration,
    purging: Arc<AtomicBool>,
}

/// The allowed origins, normalized.
#[derive(Clone)]
struct Origins(Arc<Vec<String>>);

fn normalize_origin(o: &str) -> String {
    o.trim().trim_end_matches('/').to_ascii_lowercase()
}

fn plain(status: StatusCode, text: &'static str) -> Response {
    let mut r = (status, text).into_response();
    r.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("text/plain; charset=utf-8"));
    r
}

/// Layer 1: the `Origin` allowlist.
async fn check_origin(State(allowed): State<Origins>, req: Request, next: Next) -> Response {
    if let Some(origin) = req.headers().get(header::ORIGIN) {
        let origin = origin.to_str().map(normalize_origin).unwrap_or_default();
        if !allowed.0.contains(&origin) {
            tracing::warn!(%origin, "MCP request from an origin not on the allowlist refused");
            return plain(StatusCode::FORBIDDEN, "forbidden: this Origin is not allowed");
        }
    }
    next.run(req).await
}

/// Layer 2: the principal of the request, through the service's authenticator.
async fn authenticate(State(auth): State<Arc<dyn Authenticator>>, req: Request, next: Next) -> Response {
    let (mut parts, body) = req.into_parts();
    let principal = match auth.authenticate(&parts).await {
        Ok(p) => p,
        Err(e) => return e.into_response(),
    };
    if let Err(e) = principal.validate() {
        return crate::auth::unauthorized("invalid_principal", e.to_string()).into_response();
    }
    // Never forwarded: rmcp, the agent and its tools do not see the token.
    parts.headers.remove(header::AUTHORIZATION);
    parts.extensions.insert(principal);
    next.run(Request::from_parts(parts, body)).await
}

fn session_not_found() -> Response {
    (StatusCode::NOT_FOUND, SESSION_NOT_FOUND).into_response()
}

/// Layer 4: sessions bound to the principal that opened them; session and stream caps; the
/// client-gone signal.
async fn bind_session(State(b): State<Binding>, mut req: Request, next: Next) -> Response {
    b.start_purging();
    let Some(principal) = req.extensions().get::<Principal>().cloned() else {
        // Only reachable if the layers were assembled without authentication.
        return ApiError::new(StatusCode::UNAUTHORIZED, "missing_token", "no principal for this request")
            .into_response();
    };
    let method = req.method().clone();
    let session = req.headers().get(SESSION_HEADER).map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned());
    if let Some(session) = &session
        && !b.owners.owned_by(session, &principal)
    {
        // Someone else's session, or none: the same answer either way, and nothing changes.
        tracing::warn!(user = %principal.user_id, %method, "request on an MCP session the caller does not own refused");
        let reason =
            format!("{method} request on MCP session `{session}`, which this principal did not open; refused with 404");
        (b.audit)(b.runtime.clone(), principal, session.clone(), reason).await;
        return session_not_found();
    }
    // Checked before the request runs, so a refused stream changes nothing. A POST's stream
    // ends with its call and is not limited here.
    let stream = if method == Method::GET {
        match b.owners.open_stream(&principal, b.max_streams) {
            Some(slot) => Some(slot),
            None => {
                return plain(
                    StatusCode::TOO_MANY_REQUESTS,
                    "too many requests: close one of your open event streams first",
                );
            }
        }
    } else {
        None
    };
    // A POST without a session asks for a new one (`initialize`): checked before rmcp makes
    // it, so a refused request makes no session.
    let _opening = if method == Method::POST && session.is_none() {
        match b.owners.begin_session(&principal, b.max_sessions) {
            Some(slot) => Some(slot),
            None => {
                tracing::warn!(user = %principal.user_id, max = b.max_sessions, "MCP session refused: too many open sessions");
                return plain(
                    StatusCode::TOO_MANY_REQUESTS,
                    "too many requests: you already hold the most MCP sessions allowed; end one (DELETE with its \
                     Mcp-Session-Id) or wait for an idle one to close",
                );
            }
        }
    } else {
        None
    };
    let gone = CancellationToken::new();
    req.extensions_mut().insert(ClientGone(gone.clone()));
    let response = next.run(req).await;
    if response.status().is_success() {
        match (&session, response.headers().get(SESSION_HEADER).and_then(|v| v.to_str().ok())) {
            // A new session: it belongs to whoever opened it.
            (None, Some(created)) => {
                lock(&b.owners.owners).insert(created.to_owned(), principal);
            }
            (Some(ended), _) if method == Method::DELETE => {
                lock(&b.owners.owners).remove(ended);
            }
            _ => {}
        }
    }
    let stream = if is_event_stream(&response) { stream } else { None };
    response.map(|inner| Body::new(ClientGoneBody::new(inner, gone, stream)))
}

impl Binding {
    /// Starts the purge on the first request (a router may be built outside a tokio runtime).
    /// It ends when the endpoint is dropped.
    fn start_purging(&self) {
        if self.purging.swap(true, Ordering::AcqRel) {
            return;
        }
        let owners = Arc::downgrade(&self.owners);
        let manager = Arc::downgrade(&self.manager);
        let runtime = self.runtime.clone();
        tokio::spawn(purge(owners, manager, runtime, self.purge_interval));
    }
}

/// Every `every`: forgets the owners of sessions rmcp has closed (idle, deleted, failed) and
/// drops expired confirmation tokens.
async fn purge(owners: Weak<Owners>, manager: Weak<LocalSessionManager>, runtime: Runtime, every: Duration) {
    let mut tick = tokio::time::interval(every);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    tick.tick().await;
    loop {
        tick.tick().await;
        let (Some(owners), Some(manager)) = (owners.upgrade(), manager.upgrade()) else { return };
        let known: Vec<String> = lock(&owners.owners).keys().cloned().collect();
        let mut ended = Vec::new();
        for id in known {
            if !manager.has_session(&id.as_str().into()).await.unwrap_or(false) {
                ended.push(id);
            }
        }
        if !ended.is_empty() {
            let mut map = lock(&owners.owners);
            for id in &ended {
                map.remove(id);
            }
            let keep = map.len() * 2;
            map.shrink_to(keep);
        }
        let tokens = runtime.purge_expired();
        tracing::debug!(sessions = ended.len(), tokens, "purged ended MCP sessions and expired tokens");
    }
}

fn is_event_stream(r: &Response) -> bool {
    r.headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.trim_start().to_ascii_lowercase().starts_with("text/event-stream"))
}

/// Whether the body could not be read because it is over the body limit.
fn over_limit(e: &axum::Error) -> bool {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(s) = source {
        if s.is::<http_body_util::LengthLimitError>() {
            return true;
        }
        source = s.source();
    }
    false
}

/// Layer 5: a POST body is read (within the body limit of layer 3) and refused when it breaks
/// the strict JSON rules, with the JSON-RPC error stdio answers.
async fn strict_json(req: Request, next: Next) -> Response {
    if req.method() != Method::POST {
        return next.run(req).await;
    }
    let (parts, body) = req.into_parts();
    // The body-limit layer bounds what this reads.
    let bytes = match axum::body::to_bytes(body, usize::MAX).await {
        Ok(b) => b,
        Err(e) if over_limit(&e) => {
            return plain(StatusCode::PAYLOAD_TOO_LARGE, "payload too large: the request body exceeds the limit");
        }
        Err(_) => return plain(StatusCode::BAD_REQUEST, "bad request: the body could not be read"),
    };
    if let Some((id, message)) = strict_refusal(&bytes) {
        tracing::debug!(%message, "MCP request body refused by the strict parse");
        let body =
            serde_json::json!({"jsonrpc": "2.0", "id": id, "error": {"code": INVALID_REQUEST, "message": message}});
        return (StatusCode::BAD_REQUEST, axum::Json(body)).into_response();
    }
    next.run(Request::from_parts(parts, Body::from(bytes))).await
}

/// The router of the MCP endpoint of agent `A`, or why the options cannot be served.
pub(crate) fn router<A: Registry>(
    runtime: Runtime,
    auth: Arc<dyn Authenticator>,
    options: McpEndpoint,
    shutdown: CancellationToken,
) -> Result<Router, String> {
    options.check()?;
    let config = StreamableHttpServerConfig::default()
        .with_allowed_hosts(options.allowed_hosts.clone())
        .with_max_request_body_bytes(options.max_body_bytes.max(RMCP_BODY_LIMIT))
        .with_sse_keep_alive(Some(options.sse_keep_alive));
    let mut manager = LocalSessionManager::default();
    manager.session_config.keep_alive = Some(options.session_idle_timeout);
    let manager = Arc::new(manager);
    let mut mcp_options = options.mcp.clone();
    mcp_options.session_id = None;
    let rt = runtime.clone();
    let service: StreamableHttpService<McpServer<A>, LocalSessionManager> = StreamableHttpService::new(
        move || Ok(McpServer::<A>::new(rt.clone(), None, mcp_options.clone()).shutdown_on(shutdown.clone())),
        manager.clone(),
        config,
    );
    let binding = Binding {
        owners: Arc::new(Owners::default()),
        runtime,
        audit: audit_refusal::<A>,
        manager,
        max_sessions: options.max_sessions_per_user,
        max_streams: options.max_streams_per_user,
        purge_interval: options.purge_interval,
        purging: Arc::new(AtomicBool::new(false)),
    };
    let origins = Origins(Arc::new(options.allowed_origins.iter().map(|o| normalize_origin(o)).collect()));
    // `ServiceBuilder` applies the first layer outermost.
    let layered = tower::ServiceBuilder::new()
        .layer(middleware::from_fn_with_state(origins, check_origin))
        .layer(middleware::from_fn_with_state(auth, authenticate))
        .map_response(|r: Response<tower_http::limit::ResponseBody<Body>>| r.into_response())
        .layer(RequestBodyLimitLayer::new(options.max_body_bytes))
        .map_request(|r: HttpRequest<tower_http::body::Limited<Body>>| r.map(Body::new))
        .layer(middleware::from_fn_with_state(binding, bind_session))
        .layer(middleware::from_fn(strict_json))
        .service(service);
    Ok(Router::new().route_service(&options.path, layered))
}

/// Why an MCP endpoint cannot be mounted.
#[derive(Debug, thiserror::Error)]
#[error("invalid MCP endpoint: {0}")]
pub struct McpEndpointError(String);

impl crate::ServiceBuilder {
    /// Also serves agent `A` over MCP streamable HTTP at [`McpEndpoint::path`], in the same
    /// router as the REST API and for the principals the same [`Authenticator`] names (see
    /// [`McpEndpoint`]). Several agents may be mounted at different paths.
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
