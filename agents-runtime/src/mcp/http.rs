//! Streamable HTTP: `Origin` allowlist, bearer tokens mapped to principals, sessions bound to
//! the principal that opened them, strict JSON, and connection limits, in front of rmcp's
//! streamable HTTP service.
//!
//! rmcp's service does the protocol; everything a hostile client could use is decided here,
//! before a request reaches it:
//!
//! - every request names its principal through a bearer token (scheme matched without regard
//!   to case, RFC 7235); the token is never forwarded;
//! - a request that names an MCP session (`Mcp-Session-Id`) is forwarded only when it comes from
//!   the principal that opened that session. POST (tool calls, and the JSON-RPC responses that
//!   answer an elicitation), GET (the event stream, with or without `Last-Event-ID`) and
//!   DELETE from anyone else get the same 404 as an unknown session, change nothing, and are
//!   audited as `denied`;
//! - a POST body with duplicate keys or integers beyond 2^53 is refused with the JSON-RPC
//!   error the stdio transport answers (`-32600`), before rmcp parses it (its parse would
//!   keep the last duplicate silently);
//! - limits ([`HttpLimits`]) bound connections, the time to send headers, idle connections,
//!   open event streams and open MCP sessions per principal, and back off when `accept`
//!   fails (descriptors exhausted) instead of spinning (the connection limits are those of
//!   the shared [`listener`](crate::listener));
//! - a timer purges the records of ended sessions and expired confirmation tokens.

use super::server::{ClientGone, ClientGoneBody};
use super::{McpError, McpOptions, McpServer};
use crate::listener::{ConnectionLimits, accept_loop};
use crate::run::Runtime;
use crate::tool::Registry;
use agents_core::Principal;
use bytes::Bytes;
use http::{HeaderValue, Method, Request, Response, StatusCode, header};
use http_body_util::{BodyExt, Full, Limited, combinators::BoxBody};
use hyper::body::Body as HttpBody;
use rmcp::transport::streamable_http_server::session::SessionManager;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use std::collections::HashMap;
use std::convert::Infallible;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

/// The largest request body accepted by default (1 MiB).
pub const DEFAULT_MAX_BODY_BYTES: usize = 1024 * 1024;

/// The MCP session header.
const SESSION_HEADER: &str = "mcp-session-id";

/// Limits of the HTTP server. Every default is safe for a server reachable by untrusted
/// clients; raise them for known load.
#[derive(Debug, Clone)]
pub struct HttpLimits {
    /// Connections served at once; further clients wait in the listen queue until one ends.
    pub max_connections: usize,
    /// Time a client has to send a request's complete headers; slower clients are cut off.
    pub header_read_timeout: Duration,
    /// Time a connection may stay open between requests.
    pub keep_alive_timeout: Duration,
    /// Time a connection with a request in progress may go without a byte either way. Must be
    /// longer than `sse_keep_alive`, which keeps quiet event streams alive.
    pub idle_timeout: Duration,
    /// Interval of the keep-alive comments on event streams.
    pub sse_keep_alive: Duration,
    /// Event streams (GET, including a resume with `Last-Event-ID`) one principal may hold
    /// open at once; more get 429.
    pub max_sse_streams_per_principal: usize,
    /// MCP sessions one principal (user in an organisation) may hold open at once; a further
    /// `initialize` gets 429 with a message saying so, and no session is made. A session
    /// counts until it is deleted (DELETE) or, once closed for idleness, purged (within
    /// `purge_interval`).
    pub max_sessions_per_principal: usize,
    /// An MCP session with no request for this long is closed.
    pub session_idle_timeout: Duration,
    /// First wait after `accept` fails (out of descriptors, ...); doubled on each failure in
    /// a row up to `accept_backoff_max`, reset by a success.
    pub accept_backoff_min: Duration,
    /// Longest wait after `accept` fails.
    pub accept_backoff_max: Duration,
    /// How often ended sessions and expired tokens are purged.
    pub purge_interval: Duration,
}

impl Default for HttpLimits {
    fn default() -> Self {
        let c = ConnectionLimits::default();
        HttpLimits {
            max_connections: c.max_connections,
            header_read_timeout: c.header_read_timeout,
            keep_alive_timeout: c.keep_alive_timeout,
            idle_timeout: c.idle_timeout,
            sse_keep_alive: Duration::from_secs(15),
            max_sse_streams_per_principal: 16,
            max_sessions_per_principal: 32,
            session_idle_timeout: Duration::from_secs(300),
            accept_backoff_min: c.accept_backoff_min,
            accept_backoff_max: c.accept_backoff_max,
            purge_interval: Duration::from_secs(30),
        }
    }
}

impl HttpLimits {
    /// The limits of the listener ([`accept_loop`]).
    fn connections(&self) -> ConnectionLimits {
        ConnectionLimits {
            max_connections: self.max_connections,
            header_read_timeout: self.header_read_timeout,
            keep_alive_timeout: self.keep_alive_timeout,
            idle_timeout: self.idle_timeout,
            accept_backoff_min: self.accept_backoff_min,
            accept_backoff_max: self.accept_backoff_max,
        }
    }

    fn check(&self) -> Result<(), McpError> {
        let zero = |name: &str| Err(McpError::Options(format!("limits.{name} must be above zero")));
        self.connections().check(Some(self.sse_keep_alive)).map_err(|e| McpError::Options(format!("limits.{e}")))?;
        if self.max_sse_streams_per_principal == 0 {
            return zero("max_sse_streams_per_principal");
        }
        if self.max_sessions_per_principal == 0 {
            return zero("max_sessions_per_principal");
        }
        for (name, d) in [
            ("sse_keep_alive", self.sse_keep_alive),
            ("session_idle_timeout", self.session_idle_timeout),
            ("purge_interval", self.purge_interval),
        ] {
            if d.is_zero() {
                return zero(name);
            }
        }
        Ok(())
    }
}

/// Options of the streamable HTTP transport.
#[derive(Clone)]
pub struct McpHttpOptions {
    /// Where to listen. Defaults to `127.0.0.1:0` (loopback, a free port).
    pub bind: SocketAddr,
    /// The path the MCP endpoint answers on (other paths get 404).
    pub path: String,
    /// Browser origins allowed to call (`scheme://host[:port]`). A request with an `Origin`
    /// header not on this list gets 403; a request without one passes this check.
    pub allowed_origins: Vec<String>,
    /// `Host` values accepted (DNS-rebinding protection). Defaults to the loopback names;
    /// add the public host name when binding elsewhere.
    pub allowed_hosts: Vec<String>,
    /// Bearer token → the principal it authenticates. A missing or unknown token gets 401.
    /// Tokens are checked here and removed from the request; they are never forwarded.
    pub bearer_tokens: HashMap<String, Principal>,
    /// Requests with a larger body get 413.
    pub max_body_bytes: usize,
    /// Connection, stream and session limits.
    pub limits: HttpLimits,
    /// Options shared with stdio (the session id is ignored: every MCP session gets its own).
    pub mcp: McpOptions,
}

impl std::fmt::Debug for McpHttpOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpHttpOptions")
            .field("bind", &self.bind)
            .field("path", &self.path)
            .field("allowed_origins", &self.allowed_origins)
            .field("allowed_hosts", &self.allowed_hosts)
            .field("bearer_tokens", &format_args!("<{} tokens>", self.bearer_tokens.len()))
            .field("max_body_bytes", &self.max_body_bytes)
            .field("limits", &self.limits)
            .finish_non_exhaustive()
    }
}

impl Default for McpHttpOptions {
    fn default() -> Self {
        McpHttpOptions {
            bind: SocketAddr::from((Ipv4Addr::LOCALHOST, 0)),
            path: "/mcp".to_owned(),
            allowed_origins: Vec::new(),
            allowed_hosts: vec!["localhost".into(), "127.0.0.1".into(), "::1".into()],
            bearer_tokens: HashMap::new(),
            max_body_bytes: DEFAULT_MAX_BODY_BYTES,
            limits: HttpLimits::default(),
            mcp: McpOptions::default(),
        }
    }
}

/// A running HTTP server. Dropping it does not stop it; call [`HttpServer::shutdown`].
#[derive(Debug)]
pub struct HttpServer {
    addr: SocketAddr,
    cancel: CancellationToken,
    join: JoinHandle<()>,
    sessions: Arc<SessionOwners>,
    runtime: Runtime,
    live: TaskTracker,
}

impl HttpServer {
    /// The address it listens on (with the actual port when bound to port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// Stops accepting connections and ends open MCP sessions: an action waiting for a
    /// person ends as `skipped` with reason `shutdown`.
    pub fn shutdown(&self) {
        self.cancel.cancel();
    }

    /// MCP sessions the server currently knows (opened and not yet purged).
    pub fn session_count(&self) -> usize {
        lock(&self.sessions.owners).len()
    }

    /// Waits until the server stops (after [`HttpServer::shutdown`]): the accept loop, every
    /// MCP session and its calls, and every final audit record they owe.
    pub async fn wait(self) {
        let _ = self.join.await;
        self.live.close();
        self.live.wait().await;
        self.runtime.records_settled().await;
    }
}

type Body = BoxBody<Bytes, Infallible>;

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Which principal opened each MCP session, how many event streams each principal holds, and
/// how many sessions each principal is opening right now.
#[derive(Debug, Default)]
struct SessionOwners {
    owners: Mutex<HashMap<String, Principal>>,
    streams: Mutex<HashMap<(String, String), usize>>,
    opening: Mutex<HashMap<(String, String), usize>>,
}

/// The key limits are counted by: the user in their organisation.
fn limit_key(principal: &Principal) -> (String, String) {
    (principal.org_id.clone(), principal.user_id.clone())
}

impl SessionOwners {
    /// Takes a slot for one more session of `principal` if its open sessions and those it is
    /// opening are fewer than `max`. Counted under one lock, so concurrent `initialize`
    /// requests cannot pass the cap together.
    fn begin_session(self: &Arc<Self>, principal: &Principal, max: usize) -> Option<OpeningSlot> {
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
        Some(OpeningSlot { owners: self.clone(), key })
    }

    fn owned_by(&self, session: &str, principal: &Principal) -> bool {
        lock(&self.owners).get(session).is_some_and(|owner| owner == principal)
    }

    /// Takes one event-stream slot of `principal`, if one is free.
    fn open_stream(self: &Arc<Self>, principal: &Principal, max: usize) -> Option<StreamSlot> {
        let key = limit_key(principal);
        let mut streams = lock(&self.streams);
        let n = streams.entry(key.clone()).or_insert(0);
        if *n >= max {
            return None;
        }
        *n += 1;
        Some(StreamSlot { owners: self.clone(), key })
    }
}

/// A session being opened, counted against its principal until dropped (by then the session,
/// if made, is in `owners`).
struct OpeningSlot {
    owners: Arc<SessionOwners>,
    key: (String, String),
}

impl Drop for OpeningSlot {
    fn drop(&mut self) {
        let mut opening = lock(&self.owners.opening);
        if let Some(n) = opening.get_mut(&self.key) {
            *n -= 1;
            if *n == 0 {
                opening.remove(&self.key);
            }
        }
    }
}

/// One open event stream, counted against its principal until dropped.
struct StreamSlot {
    owners: Arc<SessionOwners>,
    key: (String, String),
}

impl Drop for StreamSlot {
    fn drop(&mut self) {
        let mut streams = lock(&self.owners.streams);
        if let Some(n) = streams.get_mut(&self.key) {
            *n -= 1;
            if *n == 0 {
                streams.remove(&self.key);
            }
        }
    }
}

struct Gate {
    path: String,
    allowed_origins: Vec<String>,
    tokens: Vec<(Vec<u8>, Principal)>,
    max_body_bytes: usize,
}

fn plain(status: StatusCode, text: &str) -> Response<Body> {
    let mut r = Response::new(Full::new(Bytes::from(text.to_owned())).boxed());
    *r.status_mut() = status;
    r.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("text/plain; charset=utf-8"));
    r
}

/// What every request on a session that is not the caller's gets: the answer rmcp gives for a
/// session that does not exist, so a refusal does not confirm that the session exists.
fn session_not_found() -> Response<Body> {
    plain(StatusCode::NOT_FOUND, "Not Found: Session not found")
}

fn json_rpc_error(status: StatusCode, id: serde_json::Value, code: i64, message: String) -> Response<Body> {
    let body = serde_json::json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}});
    let mut r = Response::new(Full::new(Bytes::from(body.to_string())).boxed());
    *r.status_mut() = status;
    r.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    r
}

/// Compares in time independent of where the first difference is.
fn ct_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

fn normalize_origin(o: &str) -> String {
    o.trim().trim_end_matches('/').to_ascii_lowercase()
}

/// The credentials of an `Authorization: Bearer <token>` header; the scheme is matched
/// without regard to case (RFC 7235 §2.1).
fn bearer_token(value: &str) -> Option<&str> {
    let (scheme, rest) = value.trim_start().split_once(' ')?;
    scheme.eq_ignore_ascii_case("bearer").then(|| rest.trim())
}

impl Gate {
    /// The checks before anything else sees a request. `Err` is the response to send.
    fn admit<B>(&self, req: &mut Request<B>) -> Result<Principal, Box<Response<Body>>> {
        if req.uri().path() != self.path {
            return Err(Box::new(plain(StatusCode::NOT_FOUND, "not found: the MCP endpoint is elsewhere")));
        }
        if let Some(origin) = req.headers().get(header::ORIGIN) {
            let origin = origin.to_str().map(normalize_origin).unwrap_or_default();
            if !self.allowed_origins.iter().any(|o| normalize_origin(o) == origin) {
                tracing::warn!(%origin, "request from an origin not on the allowlist refused");
                return Err(Box::new(plain(StatusCode::FORBIDDEN, "forbidden: this Origin is not allowed")));
            }
        }
        let token = req
            .headers()
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(bearer_token)
            .map(|t| t.as_bytes().to_vec());
        // Never forwarded: rmcp, the handler and the tools do not see the token.
        req.headers_mut().remove(header::AUTHORIZATION);
        let principal = token.and_then(|t| {
            let mut found = None;
            for (known, p) in &self.tokens {
                if ct_eq(known, &t) && found.is_none() {
                    found = Some(p.clone());
                }
            }
            found
        });
        let Some(principal) = principal else {
            let mut r = plain(StatusCode::UNAUTHORIZED, "unauthorized: send a valid bearer token");
            r.headers_mut().insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
            return Err(Box::new(r));
        };
        let declared =
            req.headers().get(header::CONTENT_LENGTH).and_then(|v| v.to_str().ok()).and_then(|v| v.parse::<u64>().ok());
        if declared.is_some_and(|n| n > self.max_body_bytes as u64) {
            return Err(Box::new(too_large()));
        }
        req.extensions_mut().insert(principal.clone());
        Ok(principal)
    }
}

fn too_large() -> Response<Body> {
    plain(StatusCode::PAYLOAD_TOO_LARGE, "payload too large: the request body exceeds the server's limit")
}

/// Reads a POST body within the limit and applies the strict JSON rules.
async fn strict_body<B>(body: B, max: usize) -> Result<Bytes, Box<Response<Body>>>
where
    B: HttpBody<Data = Bytes>,
    B::Error: std::error::Error + Send + Sync + 'static,
{
    let bytes = match Limited::new(body, max).collect().await {
        Ok(c) => c.to_bytes(),
        Err(e) if e.is::<http_body_util::LengthLimitError>() => return Err(Box::new(too_large())),
        Err(e) => {
            return Err(Box::new(plain(
                StatusCode::BAD_REQUEST,
                &format!("bad request: the body could not be read: {e}"),
            )));
        }
    };
    if let Some((id, message)) = super::stdio::strict_refusal(&bytes) {
        tracing::debug!(%message, "request body refused by the strict parse");
        return Err(Box::new(json_rpc_error(StatusCode::BAD_REQUEST, id, super::stdio::INVALID_REQUEST, message)));
    }
    Ok(bytes)
}

fn is_event_stream(r: &Response<Body>) -> bool {
    r.headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.trim_start().to_ascii_lowercase().starts_with("text/event-stream"))
}

/// What one request needs from the server.
struct Shared<A: Registry> {
    gate: Gate,
    service: StreamableHttpService<McpServer<A>, LocalSessionManager>,
    owners: Arc<SessionOwners>,
    runtime: Runtime,
    max_streams: usize,
    max_sessions: usize,
}

impl<A: Registry> Shared<A> {
    /// One request (the listener counts it as in progress on its connection until its
    /// response body is dropped).
    async fn handle(&self, req: Request<hyper::body::Incoming>) -> Response<Body> {
        let gone = CancellationToken::new();
        let (response, stream) = self.route(req, &gone).await;
        response.map(|inner| ClientGoneBody::new(inner, gone, stream).boxed())
    }

    async fn route(
        &self,
        mut req: Request<hyper::body::Incoming>,
        gone: &CancellationToken,
    ) -> (Response<Body>, Option<StreamSlot>) {
        let principal = match self.gate.admit(&mut req) {
            Ok(p) => p,
            Err(resp) => return (*resp, None),
        };
        let method = req.method().clone();
        let session = req.headers().get(SESSION_HEADER).and_then(|v| v.to_str().ok()).map(str::to_owned);
        if let Some(session) = &session
            && !self.owners.owned_by(session, &principal)
        {
            // Someone else's session, or none: the same answer either way, and nothing changes.
            tracing::warn!(user = %principal.user_id, %method, "request on an MCP session the caller does not own refused");
            let reason = format!(
                "{method} request on MCP session `{session}`, which this principal did not open; refused with 404"
            );
            if let Err(e) = self.runtime.audit_refusal::<A>(&principal, session, reason).await {
                tracing::error!(error = %e, "the refusal could not be audited");
            }
            return (session_not_found(), None);
        }
        req.extensions_mut().insert(ClientGone(gone.clone()));
        let (parts, body) = req.into_parts();
        let body = if method == Method::POST {
            match strict_body(body, self.gate.max_body_bytes).await {
                Ok(bytes) => Full::new(bytes).boxed(),
                Err(resp) => return (*resp, None),
            }
        } else {
            // GET and DELETE carry no body worth reading.
            Full::new(Bytes::new()).boxed()
        };
        // Checked before the request runs, so a refused stream changes nothing. A POST's stream
        // ends with its call and is not limited here.
        let slot = if method == Method::GET {
            match self.owners.open_stream(&principal, self.max_streams) {
                Some(slot) => Some(slot),
                None => {
                    let text = "too many requests: close one of your open event streams first";
                    return (plain(StatusCode::TOO_MANY_REQUESTS, text), None);
                }
            }
        } else {
            None
        };
        // A POST without a session asks for a new one (`initialize`): checked before rmcp
        // makes it, so a refused request makes no session.
        let _opening = if method == Method::POST && session.is_none() {
            match self.owners.begin_session(&principal, self.max_sessions) {
                Some(slot) => Some(slot),
                None => {
                    tracing::warn!(user = %principal.user_id, max = self.max_sessions, "MCP session refused: too many open sessions");
                    let text = format!(
                        "too many requests: this principal already has {} open MCP sessions, the most allowed; \
                         end one (DELETE with its Mcp-Session-Id) or wait for an idle one to close",
                        self.max_sessions
                    );
                    return (plain(StatusCode::TOO_MANY_REQUESTS, &text), None);
                }
            }
        } else {
            None
        };
        let response = self.service.handle(Request::from_parts(parts, body)).await;
        if response.status().is_success() {
            match (&session, response.headers().get(SESSION_HEADER).and_then(|v| v.to_str().ok())) {
                // A new session: it belongs to whoever opened it.
                (None, Some(created)) => {
                    lock(&self.owners.owners).insert(created.to_owned(), principal.clone());
                }
                (Some(ended), _) if method == Method::DELETE => {
                    lock(&self.owners.owners).remove(ended);
                }
                _ => {}
            }
        }
        let stream = if is_event_stream(&response) { slot } else { None };
        (response, stream)
    }
}

/// Serves agent `A` over streamable HTTP. Returns once listening; the server runs on the
/// current tokio runtime until [`HttpServer::shutdown`].
pub async fn serve_http<A: Registry>(runtime: Runtime, options: McpHttpOptions) -> Result<HttpServer, McpError> {
    if options.bearer_tokens.is_empty() {
        return Err(McpError::Options(
            "no bearer tokens configured: every request would get 401; map at least one token to a principal".into(),
        ));
    }
    if options.bearer_tokens.keys().any(|t| t.trim().is_empty() || t.trim() != t || t.contains(char::is_whitespace)) {
        return Err(McpError::Options(
            "a bearer token is empty or contains whitespace; use non-empty tokens without spaces".into(),
        ));
    }
    if options.max_body_bytes == 0 {
        return Err(McpError::Options("max_body_bytes must be at least 1".into()));
    }
    options.limits.check()?;
    let limits = options.limits.clone();
    let listener = tokio::net::TcpListener::bind(options.bind)
        .await
        .map_err(|source| McpError::Bind { addr: options.bind, source })?;
    let addr = listener.local_addr().map_err(|source| McpError::Bind { addr: options.bind, source })?;
    let cancel = CancellationToken::new();
    let config = StreamableHttpServerConfig::default()
        .with_allowed_hosts(options.allowed_hosts.clone())
        .with_max_request_body_bytes(options.max_body_bytes)
        .with_sse_keep_alive(Some(limits.sse_keep_alive))
        .with_cancellation_token(cancel.child_token());
    let mut mcp_options = options.mcp.clone();
    mcp_options.session_id = None;
    let mut manager = LocalSessionManager::default();
    manager.session_config.keep_alive = Some(limits.session_idle_timeout);
    let manager = Arc::new(manager);
    let live = TaskTracker::new();
    let rt = runtime.clone();
    let (shutdown, tracker) = (cancel.clone(), live.clone());
    let service: StreamableHttpService<McpServer<A>, LocalSessionManager> = StreamableHttpService::new(
        move || {
            Ok(McpServer::<A>::new(rt.clone(), None, mcp_options.clone()).served_by(shutdown.clone(), tracker.token()))
        },
        manager.clone(),
        config,
    );
    let owners = Arc::new(SessionOwners::default());
    let shared = Arc::new(Shared::<A> {
        gate: Gate {
            path: options.path.clone(),
            allowed_origins: options.allowed_origins.clone(),
            tokens: options.bearer_tokens.iter().map(|(t, p)| (t.as_bytes().to_vec(), p.clone())).collect(),
            max_body_bytes: options.max_body_bytes,
        },
        service,
        owners: owners.clone(),
        runtime: runtime.clone(),
        max_streams: limits.max_sse_streams_per_principal,
        max_sessions: limits.max_sessions_per_principal,
    });
    live.spawn(purge_loop(owners.clone(), manager, runtime.clone(), limits.purge_interval, cancel.clone()));
    let handle = move |req: Request<hyper::body::Incoming>| {
        let shared = shared.clone();
        async move { shared.handle(req).await }
    };
    let join = tokio::spawn(accept_loop(listener, limits.connections(), handle, cancel.clone(), live.clone()));
    tracing::info!(%addr, "MCP streamable HTTP server listening");
    Ok(HttpServer { addr, cancel, join, sessions: owners, runtime, live })
}

/// Every `every`: forgets the owners of sessions rmcp has closed (idle, deleted, failed) and
/// drops expired confirmation tokens.
async fn purge_loop(
    owners: Arc<SessionOwners>,
    manager: Arc<LocalSessionManager>,
    runtime: Runtime,
    every: Duration,
    stop: CancellationToken,
) {
    let mut tick = tokio::time::interval(every);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            _ = stop.cancelled() => return,
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    fn gate() -> Gate {
        Gate {
            path: "/mcp".into(),
            allowed_origins: vec!["https://app.example".into()],
            tokens: vec![(b"t0k3n".to_vec(), Principal::new("u1", "o1", "r"))],
            max_body_bytes: 10,
        }
    }

    fn request(headers: &[(&str, &str)]) -> Request<()> {
        let mut b = Request::builder().method("POST").uri("/mcp");
        for (k, v) in headers {
            b = b.header(*k, *v);
        }
        b.body(()).unwrap()
    }

    #[test]
    fn admitted_requests_carry_the_principal_and_no_token() {
        let mut req = request(&[("authorization", "Bearer t0k3n"), ("origin", "https://app.example/")]);
        gate().admit(&mut req).unwrap();
        assert!(req.headers().get(header::AUTHORIZATION).is_none(), "the token is not forwarded");
        assert_eq!(req.extensions().get::<Principal>().unwrap().user_id, "u1");
    }

    #[test]
    fn the_bearer_scheme_is_matched_in_any_case() {
        for scheme in ["Bearer", "bearer", "BEARER", "bEaReR"] {
            let mut req = request(&[("authorization", &format!("{scheme} t0k3n"))]);
            assert!(gate().admit(&mut req).is_ok(), "{scheme}");
        }
        assert_eq!(bearer_token("Bearer   t0k3n "), Some("t0k3n"));
        assert_eq!(bearer_token("Basic t0k3n"), None);
        assert_eq!(bearer_token("Bearert0k3n"), None);
    }

    #[test]
    fn refusals() {
        let status = |h: &[(&str, &str)]| gate().admit(&mut request(h)).unwrap_err().status();
        assert_eq!(
            status(&[("authorization", "Bearer t0k3n"), ("origin", "https://evil.example")]),
            StatusCode::FORBIDDEN
        );
        assert_eq!(status(&[]), StatusCode::UNAUTHORIZED);
        assert_eq!(status(&[("authorization", "Bearer t0k3")]), StatusCode::UNAUTHORIZED);
        assert_eq!(
            status(&[("authorization", "Bearer t0k3n"), ("content-length", "11")]),
            StatusCode::PAYLOAD_TOO_LARGE
        );
        let mut other_path = Request::builder().uri("/other").body(()).unwrap();
        assert_eq!(gate().admit(&mut other_path).unwrap_err().status(), StatusCode::NOT_FOUND);
    }

    #[test]
    fn constant_time_compare() {
        assert!(ct_eq(b"abc", b"abc"));
        assert!(!ct_eq(b"abc", b"abd"));
        assert!(!ct_eq(b"abc", b"ab"));
    }

    #[test]
    fn limits_are_checked() {
        assert!(HttpLimits::default().check().is_ok());
        let bad = HttpLimits { max_connections: 0, ..HttpLimits::default() };
        assert!(bad.check().is_err());
        let bad = HttpLimits { max_sessions_per_principal: 0, ..HttpLimits::default() };
        assert!(bad.check().is_err());
        let bad = HttpLimits { idle_timeout: Duration::from_secs(10), ..HttpLimits::default() };
        assert!(bad.check().is_err(), "an idle timeout under the stream keep-alive would cut quiet streams");
    }
}
