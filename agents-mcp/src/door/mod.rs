//! The front door of MCP over HTTP: everything a hostile client could use is decided here,
//! before a request reaches rmcp's streamable HTTP service. Both the standalone server
//! ([`serve_http`](crate::serve_http)) and an endpoint mounted in an application's router (the
//! `agents-service` crate's) authenticate the request their own way, then hand it over here:
//!
//! - a request with an `Origin` header not on the allowlist gets 403 ([`Origins`]; checked
//!   before authentication, through [`FrontDoor::origins`]);
//! - a request that names an MCP session (`Mcp-Session-Id`) goes on only when it comes from the
//!   principal that opened that session. POST (tool calls, and the JSON-RPC responses that
//!   answer an elicitation), GET (the event stream, with or without `Last-Event-ID`) and DELETE
//!   from anyone else get the same 404 as an unknown session, word for word, change nothing,
//!   and are audited as `denied`;
//! - a body over the limit gets 413, whether declared or sent in chunks;
//! - a POST body with duplicate keys or integers beyond 2^53 is refused with the JSON-RPC error
//!   the stdio transport answers (`-32600`), before rmcp parses it (its parse would keep the
//!   last duplicate silently);
//! - event streams and open MCP sessions per principal are capped (429; a refused `initialize`
//!   makes no session);
//! - the agent is told when a client goes away before its response is complete
//!   ([`ClientGone`]): a confirmation asked then ends as `disconnected`;
//! - the token is never forwarded: rmcp, the agent and its tools do not see it;
//! - a timer purges the records of ended sessions and expired confirmation tokens.

mod answers;
mod body;
mod origins;
mod owners;
mod served;

pub use answers::ResponseBody;
pub(crate) use answers::plain;
pub use origins::Origins;
pub(crate) use owners::SessionOwners;
pub use served::{CompositeTree, Served};

use crate::options::McpOptions;
use crate::server::{ClientGone, ClientGoneBody};
use agents_runtime::{Principal, Runtime};
use body::{declared_too_large, is_event_stream, strict_body};
use bytes::Bytes;
use http::{HeaderMap, Method, Request, Response, StatusCode, header};
use http_body_util::{BodyExt, Full};
use owners::Slot;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

/// The largest request body accepted by default (1 MiB).
pub const DEFAULT_MAX_BODY_BYTES: usize = 1024 * 1024;

/// The MCP session header.
const SESSION_HEADER: &str = "mcp-session-id";

/// What the front door holds a request to. Every default is safe for an endpoint reachable by
/// untrusted clients.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct FrontDoorOptions {
    /// Browser origins allowed to call (`scheme://host[:port]`). A request with an `Origin`
    /// header not on this list gets 403; a request without one passes. Default: none.
    pub allowed_origins: Vec<String>,
    /// `Host` values accepted (DNS-rebinding protection), checked by rmcp. Default: the
    /// loopback names; add the public host name of a deployment.
    pub allowed_hosts: Vec<String>,
    /// The largest request body (bytes); larger ones get 413. Default 1 MiB.
    pub max_body_bytes: usize,
    /// MCP sessions one principal (user in an organisation) may hold open at once; a further
    /// `initialize` gets 429 and makes no session. A session counts until it is deleted
    /// (DELETE) or, once closed for idleness, purged. Default 32.
    pub max_sessions_per_principal: usize,
    /// Event streams (GET, including a resume with `Last-Event-ID`) one principal may hold
    /// open at once; more get 429. Default 16.
    pub max_streams_per_principal: usize,
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

impl Default for FrontDoorOptions {
    fn default() -> Self {
        FrontDoorOptions {
            allowed_origins: Vec::new(),
            allowed_hosts: vec!["localhost".into(), "127.0.0.1".into(), "::1".into()],
            max_body_bytes: DEFAULT_MAX_BODY_BYTES,
            max_sessions_per_principal: 32,
            max_streams_per_principal: 16,
            session_idle_timeout: Duration::from_secs(300),
            sse_keep_alive: Duration::from_secs(15),
            purge_interval: Duration::from_secs(30),
            mcp: McpOptions::default(),
        }
    }
}

/// The front door of agent `A` (or of a composite's run tree, `A` =
/// [`CompositeTree<C>`]) over MCP streamable HTTP (see the [module docs](self)): the checks
/// every request passes, in front of rmcp's [`StreamableHttpService`]. The caller
/// authenticates the request (bearer tokens, or an application's own authenticator) and calls
/// [`FrontDoor::serve`] with the principal.
pub struct FrontDoor<A: Served> {
    origins: Origins,
    max_body_bytes: usize,
    max_sessions: usize,
    max_streams: usize,
    service: StreamableHttpService<A::Server, LocalSessionManager>,
    manager: Arc<LocalSessionManager>,
    owners: Arc<SessionOwners>,
    runtime: Runtime,
    purge_interval: Duration,
    purging: AtomicBool,
    purge_stop: CancellationToken,
}

impl<A: Served> std::fmt::Debug for FrontDoor<A> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FrontDoor")
            .field("agent", &A::name())
            .field("origins", &self.origins)
            .field("max_body_bytes", &self.max_body_bytes)
            .field("sessions", &self.owners.count())
            .finish_non_exhaustive()
    }
}

/// The slots a request holds while it runs: an event stream's (kept with its response body),
/// a session being opened (until the session is owned).
struct Slots {
    stream: Option<Slot>,
    _opening: Option<Slot>,
}

/// Hands the request over for `principal`: the principal and the client-gone signal in its
/// extensions (the MCP server reads them), the token removed (never forwarded).
fn hand_over<B>(req: &mut Request<B>, principal: &Principal, gone: &CancellationToken) {
    req.headers_mut().remove(header::AUTHORIZATION);
    req.extensions_mut().insert(principal.clone());
    req.extensions_mut().insert(ClientGone(gone.clone()));
}

/// The MCP session a request names, if any (any bytes: a session id that is not text names no
/// session of the caller's either).
fn session_of(headers: &HeaderMap) -> Option<String> {
    headers.get(SESSION_HEADER).map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
}

impl<A: Served> FrontDoor<A> {
    /// The front door of an endpoint mounted in an application's router, behind the
    /// application's own authentication of each request: once `shutdown` is cancelled, pending
    /// confirmations end as `skipped` with reason `shutdown`. The purge runs on the tokio
    /// runtime of the first request and ends when the door is dropped.
    ///
    /// Refused ([`McpError::NotExposed`](crate::McpError::NotExposed)) unless the agent's
    /// manifest names `http(auth = service)` (`expose: { mcp: [http(auth = service)] }`; for a
    /// composite, every agent node's manifest): the application, not this crate, maps each
    /// request to a principal.
    pub fn new(
        runtime: Runtime,
        options: FrontDoorOptions,
        shutdown: CancellationToken,
    ) -> Result<Self, crate::McpError> {
        A::check_exposed(agents_core::expose::McpExposure::HttpService)?;
        Ok(Self::build(runtime, options, shutdown, None))
    }

    /// The front door of [`serve_http`](crate::serve_http): cancelling `stop` also ends rmcp's
    /// sessions and the purge, and every MCP session counts in `live` until it is dropped.
    pub(crate) fn standalone(
        runtime: Runtime,
        options: FrontDoorOptions,
        stop: &CancellationToken,
        live: &TaskTracker,
    ) -> Self {
        Self::build(runtime, options, stop.clone(), Some(live.clone()))
    }

    fn build(
        runtime: Runtime,
        options: FrontDoorOptions,
        shutdown: CancellationToken,
        live: Option<TaskTracker>,
    ) -> Self {
        let mut config = StreamableHttpServerConfig::default()
            .with_allowed_hosts(options.allowed_hosts.clone())
            .with_max_request_body_bytes(options.max_body_bytes)
            .with_sse_keep_alive(Some(options.sse_keep_alive));
        let purge_stop = match live {
            Some(_) => {
                config = config.with_cancellation_token(shutdown.child_token());
                shutdown.clone()
            }
            None => CancellationToken::new(),
        };
        let mut manager = LocalSessionManager::default();
        manager.session_config.keep_alive = Some(options.session_idle_timeout);
        let manager = Arc::new(manager);
        let mut mcp = options.mcp.clone();
        mcp.session_id = None;
        let rt = runtime.clone();
        let service = StreamableHttpService::new(
            move || Ok(A::server(rt.clone(), mcp.clone(), shutdown.clone(), live.as_ref().map(TaskTracker::token))),
            manager.clone(),
            config,
        );
        FrontDoor {
            origins: Origins::new(&options.allowed_origins),
            max_body_bytes: options.max_body_bytes,
            max_sessions: options.max_sessions_per_principal,
            max_streams: options.max_streams_per_principal,
            service,
            manager,
            owners: Arc::new(SessionOwners::default()),
            runtime,
            purge_interval: options.purge_interval,
            purging: AtomicBool::new(false),
            purge_stop,
        }
    }

    /// The `Origin` allowlist, for the check before authentication.
    pub fn origins(&self) -> &Origins {
        &self.origins
    }

    /// MCP sessions the door currently knows (opened and not yet purged).
    pub fn session_count(&self) -> usize {
        self.owners.count()
    }

    pub(crate) fn owners(&self) -> Arc<SessionOwners> {
        self.owners.clone()
    }

    /// Serves one request of `principal`, whom the caller authenticated (and whose origin it
    /// checked): the body limit, the session's owner, the strict JSON rules and the caps, then
    /// rmcp's service. The response's body tells the agent if the client goes away before its
    /// end, and holds an event stream's slot while it lasts.
    pub async fn serve<B>(&self, principal: Principal, req: Request<B>) -> Response<ResponseBody>
    where
        B: hyper::body::Body<Data = Bytes>,
        B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    {
        self.start_purging();
        let gone = CancellationToken::new();
        let (response, stream) = self.route(principal, req, &gone).await;
        response.map(|inner| ClientGoneBody::new(inner, gone, stream).boxed())
    }

    /// One request through every check, to rmcp's service; the event stream's slot if the
    /// response is one.
    async fn route<B>(
        &self,
        principal: Principal,
        mut req: Request<B>,
        gone: &CancellationToken,
    ) -> (Response<ResponseBody>, Option<Slot>)
    where
        B: hyper::body::Body<Data = Bytes>,
        B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    {
        if declared_too_large(req.headers(), self.max_body_bytes) {
            return (answers::too_large(), None);
        }
        hand_over(&mut req, &principal, gone);
        let method = req.method().clone();
        let session = session_of(req.headers());
        if let Some(session) = &session
            && !self.owners.owned_by(session, &principal)
        {
            return (self.refuse_foreign_session(&principal, &method, session).await, None);
        }
        let (parts, body) = req.into_parts();
        let body = match self.read_body(&method, body).await {
            Ok(body) => body,
            Err(refusal) => return (*refusal, None),
        };
        let slots = match self.take_slots(&principal, &method, session.is_none()) {
            Ok(slots) => slots,
            Err(refusal) => return (*refusal, None),
        };
        let response = self.service.handle(Request::from_parts(parts, body)).await;
        if response.status().is_success() {
            let created = response.headers().get(SESSION_HEADER).and_then(|v| v.to_str().ok());
            self.owners.settle(&principal, &method, session.as_deref(), created);
        }
        let stream = if is_event_stream(&response) { slots.stream } else { None };
        (response, stream)
    }

    /// Someone else's session, or none: the same answer either way, audited, and nothing
    /// changes.
    async fn refuse_foreign_session(
        &self,
        principal: &Principal,
        method: &Method,
        session: &str,
    ) -> Response<ResponseBody> {
        tracing::warn!(user = %principal.user_id, %method, "request on an MCP session the caller does not own refused");
        let reason =
            format!("{method} request on MCP session `{session}`, which this principal did not open; refused with 404");
        if let Err(e) = A::audit_refusal(&self.runtime, principal, session, reason).await {
            tracing::error!(error = %e, "the refusal could not be audited");
        }
        answers::session_not_found()
    }

    /// A POST's body, read within the limit under the strict JSON rules; GET and DELETE carry
    /// no body worth reading.
    async fn read_body<B>(&self, method: &Method, body: B) -> Result<ResponseBody, Box<Response<ResponseBody>>>
    where
        B: hyper::body::Body<Data = Bytes>,
        B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    {
        if *method != Method::POST {
            return Ok(Full::new(Bytes::new()).boxed());
        }
        Ok(Full::new(strict_body(body, self.max_body_bytes).await?).boxed())
    }

    /// The slots the request needs, taken before it runs so that a refused request changes
    /// nothing: an event stream's (GET; a POST's stream ends with its call and is not limited
    /// here) and a new session's (a POST without a session asks for one: `initialize`).
    fn take_slots(
        &self,
        principal: &Principal,
        method: &Method,
        opens: bool,
    ) -> Result<Slots, Box<Response<ResponseBody>>> {
        let stream = if *method == Method::GET {
            let slot = self.owners.open_stream(principal, self.max_streams);
            Some(slot.ok_or_else(|| {
                let text = "too many requests: close one of your open event streams first";
                Box::new(plain(StatusCode::TOO_MANY_REQUESTS, text))
            })?)
        } else {
            None
        };
        let opening = if *method == Method::POST && opens {
            let slot = self.owners.begin_session(principal, self.max_sessions);
            Some(slot.ok_or_else(|| self.too_many_sessions(principal))?)
        } else {
            None
        };
        Ok(Slots { stream, _opening: opening })
    }

    /// The 429 for a principal that holds the most open sessions allowed.
    fn too_many_sessions(&self, principal: &Principal) -> Box<Response<ResponseBody>> {
        tracing::warn!(user = %principal.user_id, max = self.max_sessions, "MCP session refused: too many open sessions");
        let text = format!(
            "too many requests: this principal already has {} open MCP sessions, the most allowed; \
             end one (DELETE with its Mcp-Session-Id) or wait for an idle one to close",
            self.max_sessions
        );
        Box::new(plain(StatusCode::TOO_MANY_REQUESTS, &text))
    }

    /// Starts the purge on the first request (a router may be built outside a tokio runtime).
    fn start_purging(&self) {
        if self.purging.swap(true, Ordering::AcqRel) {
            return;
        }
        tokio::spawn(owners::purge(
            Arc::downgrade(&self.owners),
            Arc::downgrade(&self.manager),
            self.runtime.clone(),
            self.purge_interval,
            self.purge_stop.clone(),
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_handed_over_carries_the_principal_and_the_signal_and_no_token() {
        let mut req = Request::builder().header("authorization", "Bearer t0k3n").body(()).unwrap();
        let gone = CancellationToken::new();
        hand_over(&mut req, &Principal::new("u1", "o1", "r"), &gone);
        assert!(req.headers().get(header::AUTHORIZATION).is_none(), "the token is not forwarded");
        assert_eq!(req.extensions().get::<Principal>().unwrap().user_id, "u1");
        gone.cancel();
        assert!(req.extensions().get::<ClientGone>().unwrap().0.is_cancelled());
    }

    #[test]
    fn any_session_header_names_a_session() {
        let mut h = HeaderMap::new();
        assert_eq!(session_of(&h), None);
        h.insert(SESSION_HEADER, http::HeaderValue::from_bytes(b"s\xff1").unwrap());
        assert_eq!(session_of(&h).as_deref(), Some("s\u{fffd}1"));
    }
}
