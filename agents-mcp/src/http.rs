//! The standalone server of an agent over streamable HTTP: bearer tokens mapped to
//! principals, then the [front door](crate::door) (origin, session owners, body limit, strict
//! JSON, caps), behind the shared [`listener`](crate::listener)'s connection limits.
//!
//! - every request names its principal through a bearer token (scheme matched without regard
//!   to case, RFC 7235; compared in constant time); a missing or unknown token gets 401, and
//!   the token is never forwarded;
//! - a request on another path gets 404; one from a foreign `Origin` gets 403 before its token
//!   is looked at;
//! - limits ([`HttpLimits`]) bound connections, the time to send headers, idle connections,
//!   open event streams and open MCP sessions per principal, and back off when `accept`
//!   fails (descriptors exhausted) instead of spinning.

use crate::door::Served;
use crate::door::{FrontDoor, FrontDoorOptions, Origins, ResponseBody, SessionOwners, plain};
use crate::listener::{ConnectionLimits, accept_loop};
use crate::options::{McpError, McpOptions};
use agents_runtime::compose::RunComposite;
use agents_runtime::{Principal, Registry, Runtime};
use http::{HeaderValue, Request, Response, StatusCode, header};
use std::collections::HashMap;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

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
        let (c, door) = (ConnectionLimits::default(), FrontDoorOptions::default());
        HttpLimits {
            max_connections: c.max_connections,
            header_read_timeout: c.header_read_timeout,
            keep_alive_timeout: c.keep_alive_timeout,
            idle_timeout: c.idle_timeout,
            sse_keep_alive: door.sse_keep_alive,
            max_sse_streams_per_principal: door.max_streams_per_principal,
            max_sessions_per_principal: door.max_sessions_per_principal,
            session_idle_timeout: door.session_idle_timeout,
            accept_backoff_min: c.accept_backoff_min,
            accept_backoff_max: c.accept_backoff_max,
            purge_interval: door.purge_interval,
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
        let door = FrontDoorOptions::default();
        McpHttpOptions {
            bind: SocketAddr::from((Ipv4Addr::LOCALHOST, 0)),
            path: "/mcp".to_owned(),
            allowed_origins: door.allowed_origins,
            allowed_hosts: door.allowed_hosts,
            bearer_tokens: HashMap::new(),
            max_body_bytes: door.max_body_bytes,
            limits: HttpLimits::default(),
            mcp: door.mcp,
        }
    }
}

impl McpHttpOptions {
    /// What the front door holds requests to.
    fn door(&self) -> FrontDoorOptions {
        FrontDoorOptions {
            allowed_origins: self.allowed_origins.clone(),
            allowed_hosts: self.allowed_hosts.clone(),
            max_body_bytes: self.max_body_bytes,
            max_sessions_per_principal: self.limits.max_sessions_per_principal,
            max_streams_per_principal: self.limits.max_sse_streams_per_principal,
            session_idle_timeout: self.limits.session_idle_timeout,
            sse_keep_alive: self.limits.sse_keep_alive,
            purge_interval: self.limits.purge_interval,
            mcp: self.mcp.clone(),
        }
    }

    /// Why these options cannot be served, if they cannot.
    fn check(&self) -> Result<(), McpError> {
        if self.bearer_tokens.is_empty() {
            return Err(McpError::Options(
                "no bearer tokens configured: every request would get 401; map at least one token to a principal"
                    .into(),
            ));
        }
        if self.bearer_tokens.keys().any(|t| t.trim().is_empty() || t.trim() != t || t.contains(char::is_whitespace)) {
            return Err(McpError::Options(
                "a bearer token is empty or contains whitespace; use non-empty tokens without spaces".into(),
            ));
        }
        if self.max_body_bytes == 0 {
            return Err(McpError::Options("max_body_bytes must be at least 1".into()));
        }
        self.limits.check()
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
        self.sessions.count()
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

/// The bearer tokens of the server and the principal each authenticates.
struct Gate {
    path: String,
    tokens: Vec<(Vec<u8>, Principal)>,
}

/// Compares in time independent of where the first difference is.
fn ct_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// The credentials of an `Authorization: Bearer <token>` header; the scheme is matched
/// without regard to case (RFC 7235 §2.1).
fn bearer_token(value: &str) -> Option<&str> {
    let (scheme, rest) = value.trim_start().split_once(' ')?;
    scheme.eq_ignore_ascii_case("bearer").then(|| rest.trim())
}

impl Gate {
    /// The checks before the front door serves a request: its path, its origin, then its
    /// token, which is removed from the request. `Err` is the response to send.
    fn admit<B>(&self, req: &mut Request<B>, origins: &Origins) -> Result<Principal, Box<Response<ResponseBody>>> {
        if req.uri().path() != self.path {
            return Err(Box::new(plain(StatusCode::NOT_FOUND, "not found: the MCP endpoint is elsewhere")));
        }
        if let Some(refusal) = origins.refusal(req.headers()) {
            return Err(Box::new(refusal));
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
        principal.ok_or_else(|| {
            let mut r = plain(StatusCode::UNAUTHORIZED, "unauthorized: send a valid bearer token");
            r.headers_mut().insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
            Box::new(r)
        })
    }
}

/// What one request needs from the server.
struct Shared<A: Served> {
    gate: Gate,
    door: FrontDoor<A>,
}

impl<A: Served> Shared<A> {
    /// One request (the listener counts it as in progress on its connection until its
    /// response body is dropped).
    async fn handle(&self, mut req: Request<hyper::body::Incoming>) -> Response<ResponseBody> {
        match self.gate.admit(&mut req, self.door.origins()) {
            Ok(principal) => self.door.serve(principal, req).await,
            Err(refusal) => *refusal,
        }
    }
}

/// Serves agent `A` over streamable HTTP. Returns once listening; the server runs on the
/// current tokio runtime until [`HttpServer::shutdown`]. Refused ([`McpError::NotExposed`])
/// unless the agent's manifest names `http(auth = bearer)`.
pub async fn serve_http<A: Registry>(runtime: Runtime, options: McpHttpOptions) -> Result<HttpServer, McpError> {
    serve::<A>(runtime, options).await
}

/// Serves composite `C` over MCP streamable HTTP: the tool of [`serve_composite_io`](crate::serve_composite_io) (one
/// tool named `C::GRAPH.name`, `{"input": ...}` in, `{"output": ...}` out, each nested action
/// asked of the person through elicitation), behind the same server as an agent's
/// ([`serve_http`](crate::serve_http)): each request's principal from its bearer token, the
/// `Host` and `Origin` checks, an MCP session usable only by the principal that opened it,
/// the body, session and stream limits. The tree runs for the principal of the request that
/// calls the tool, and only that principal's client is asked to decide its actions.
///
/// Refused before anything is served ([`McpError::NotExposed`], naming the node) unless every
/// agent node of `C`, nested composites' included, names `http(auth = bearer)` in its
/// `expose: { mcp: [...] }`.
///
/// ```no_run
/// # async fn f<C>(runtime: agents_runtime::Runtime, me: agents_runtime::Principal) -> Result<(), agents_mcp::McpError>
/// # where C: agents_runtime::compose::RunComposite, C::Input: serde::de::DeserializeOwned + schemars::JsonSchema, C::Output: serde::Serialize {
/// let mut options = agents_mcp::McpHttpOptions::default();
/// options.bearer_tokens.insert("a-long-random-token".into(), me);
/// let server = agents_mcp::serve_composite_http::<C>(runtime, options).await?;
/// println!("serving on {}", server.local_addr());
/// # Ok(()) }
/// ```
pub async fn serve_composite_http<C>(runtime: Runtime, options: McpHttpOptions) -> Result<HttpServer, McpError>
where
    C: RunComposite,
    C::Input: serde::de::DeserializeOwned + schemars::JsonSchema,
    C::Output: serde::Serialize,
{
    serve::<crate::door::CompositeTree<C>>(runtime, options).await
}

/// Serves `A` (an agent, or a composite's tree) over streamable HTTP, once its exposure and
/// the options are checked.
pub(crate) async fn serve<A: Served>(runtime: Runtime, options: McpHttpOptions) -> Result<HttpServer, McpError> {
    A::check_exposed(agents_core::expose::McpExposure::HttpBearer)?;
    options.check()?;
    let listener = tokio::net::TcpListener::bind(options.bind)
        .await
        .map_err(|source| McpError::Bind { addr: options.bind, source })?;
    let addr = listener.local_addr().map_err(|source| McpError::Bind { addr: options.bind, source })?;
    let (cancel, live) = (CancellationToken::new(), TaskTracker::new());
    let door = FrontDoor::<A>::standalone(runtime.clone(), options.door(), &cancel, &live);
    let sessions = door.owners();
    let gate = Gate {
        path: options.path.clone(),
        tokens: options.bearer_tokens.iter().map(|(t, p)| (t.as_bytes().to_vec(), p.clone())).collect(),
    };
    let shared = Arc::new(Shared { gate, door });
    let handle = move |req: Request<hyper::body::Incoming>| {
        let shared = shared.clone();
        async move { shared.handle(req).await }
    };
    let connections = options.limits.connections();
    let join = tokio::spawn(accept_loop(listener, connections, handle, cancel.clone(), live.clone()));
    tracing::info!(%addr, "MCP streamable HTTP server listening");
    Ok(HttpServer { addr, cancel, join, sessions, runtime, live })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gate() -> Gate {
        Gate { path: "/mcp".into(), tokens: vec![(b"t0k3n".to_vec(), Principal::new("u1", "o1", "r"))] }
    }

    fn origins() -> Origins {
        Origins::new(["https://app.example"])
    }

    fn request(headers: &[(&str, &str)]) -> Request<()> {
        let mut b = Request::builder().method("POST").uri("/mcp");
        for (k, v) in headers {
            b = b.header(*k, *v);
        }
        b.body(()).unwrap()
    }

    #[test]
    fn admitted_requests_name_the_principal_and_carry_no_token() {
        let mut req = request(&[("authorization", "Bearer t0k3n"), ("origin", "https://app.example/")]);
        assert_eq!(gate().admit(&mut req, &origins()).unwrap().user_id, "u1");
        assert!(req.headers().get(header::AUTHORIZATION).is_none(), "the token is not forwarded");
    }

    #[test]
    fn the_bearer_scheme_is_matched_in_any_case() {
        for scheme in ["Bearer", "bearer", "BEARER", "bEaReR"] {
            let mut req = request(&[("authorization", &format!("{scheme} t0k3n"))]);
            assert!(gate().admit(&mut req, &origins()).is_ok(), "{scheme}");
        }
        assert_eq!(bearer_token("Bearer   t0k3n "), Some("t0k3n"));
        assert_eq!(bearer_token("Basic t0k3n"), None);
        assert_eq!(bearer_token("Bearert0k3n"), None);
    }

    #[test]
    fn refusals() {
        let status = |h: &[(&str, &str)]| gate().admit(&mut request(h), &origins()).unwrap_err().status();
        assert_eq!(
            status(&[("authorization", "Bearer t0k3n"), ("origin", "https://evil.example")]),
            StatusCode::FORBIDDEN
        );
        assert_eq!(status(&[("origin", "https://evil.example")]), StatusCode::FORBIDDEN, "the origin first");
        assert_eq!(status(&[]), StatusCode::UNAUTHORIZED);
        assert_eq!(status(&[("authorization", "Bearer t0k3")]), StatusCode::UNAUTHORIZED);
        let mut other_path = Request::builder().uri("/other").body(()).unwrap();
        assert_eq!(gate().admit(&mut other_path, &origins()).unwrap_err().status(), StatusCode::NOT_FOUND);
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
