//! The MCP server handler: `tools/list` from the availability snapshot, `tools/call` through
//! the gate, confirmation through elicitation.

use crate::options::McpOptions;
use agents_core::{Principal, Risk, Tier, ToolSpec};
use agents_runtime::BoxFuture;
use agents_runtime::events::Event;
use agents_runtime::run::{ConfirmAnswer, ConfirmRequest, Confirmer, DirectSession, Runtime, Undecided, Verdict};
use agents_runtime::tool::Registry;
use hyper::body::{Body as HttpBody, Frame, SizeHint};
use rmcp::model::ContentBlock;
use rmcp::model::{
    BooleanSchema, CallToolRequestParams, CallToolResponse, CallToolResult, ElicitRequestParams, ElicitationAction,
    ElicitationSchema, Implementation, InitializeResult, JsonObject, ListToolsResult, PaginatedRequestParams,
    PrimitiveSchemaDefinition, ProtocolVersion, ServerCapabilities, ServerConfig, Tool, ToolAnnotations,
};
use rmcp::service::{ElicitationMode, RequestContext};
use rmcp::{ErrorData, Peer, RoleServer, ServerHandler};
use serde_json::{Value, json};
use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::sync::OnceCell;
use tokio_util::sync::CancellationToken;

/// Put in a request's extensions by an HTTP transport: cancelled when the client goes away
/// before the response to this request is complete. A confirmation asked during that request
/// then ends as `disconnected` instead of waiting for its timeout.
#[derive(Clone, Debug)]
pub struct ClientGone(pub CancellationToken);

/// A response body that cancels its request's [`ClientGone`] token when it is dropped before
/// its end (the client went away), and keeps `guard` (what must last as long as the response:
/// an event stream's slot, a count of requests in progress) until it is dropped. Both HTTP
/// transports (this crate's server and `agents-service`'s endpoint) wrap their responses in it.
pub struct ClientGoneBody<B: HttpBody, G = ()> {
    inner: B,
    finished: bool,
    gone: CancellationToken,
    _guard: G,
}

impl<B: HttpBody, G> ClientGoneBody<B, G> {
    /// Wraps `inner`: `gone` is cancelled if the body is dropped before its end.
    pub fn new(inner: B, gone: CancellationToken, guard: G) -> Self {
        ClientGoneBody { inner, finished: false, gone, _guard: guard }
    }
}

impl<B: HttpBody + Unpin, G: Unpin> HttpBody for ClientGoneBody<B, G> {
    type Data = B::Data;
    type Error = B::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
        let r = Pin::new(&mut self.inner).poll_frame(cx);
        if matches!(r, Poll::Ready(None)) || self.inner.is_end_stream() {
            self.finished = true;
        }
        r
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

impl<B: HttpBody, G> Drop for ClientGoneBody<B, G> {
    fn drop(&mut self) {
        if !self.finished && !self.inner.is_end_stream() {
            self.gone.cancel();
        }
    }
}

/// The disconnect signal of each call waiting in this session, by call id.
type Calls = Arc<Mutex<HashMap<String, CancellationToken>>>;

/// The name of the boolean field a person sets in the elicitation form.
pub(crate) const APPROVE_FIELD: &str = "approve";

/// An MCP server for agent `A`: one per MCP session. Every call goes through a
/// [`DirectSession`] bound to one principal; the MCP layer never runs a tool itself.
///
/// Built only by the entry points that check the agent's `expose: { mcp: [...] }`; an
/// application cannot build one to serve on a transport of its own:
///
/// ```compile_fail,E0624
/// fn own_transport<A: agents_runtime::Registry>(runtime: agents_runtime::Runtime) {
///     let _ = agents_mcp::McpServer::<A>::new(runtime, None, agents_mcp::McpOptions::default());
/// }
/// ```
pub struct McpServer<A: Registry> {
    runtime: Runtime,
    /// The principal from configuration (stdio); `None` takes it from the HTTP request.
    configured: Option<Principal>,
    options: McpOptions,
    session_id: String,
    /// Cancelled when the server shuts down.
    shutdown: CancellationToken,
    bound: OnceCell<Arc<Bound<A>>>,
    /// Keeps the server's count of live sessions (see `HttpServer::wait`).
    _live: Option<tokio_util::task::task_tracker::TaskTrackerToken>,
}

struct Bound<A: Registry> {
    principal: Principal,
    session: DirectSession<A>,
    tools: Vec<Tool>,
    calls: Calls,
}

impl<A: Registry> Drop for McpServer<A> {
    fn drop(&mut self) {
        // The session ends here; its end record says whether the server took it down.
        if self.shutdown.is_cancelled()
            && let Some(bound) = self.bound.get()
        {
            bound.session.stop(Undecided::Shutdown);
        }
    }
}

impl<A: Registry> std::fmt::Debug for McpServer<A> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpServer")
            .field("agent", &A::SPEC.name)
            .field("session_id", &self.session_id)
            .finish_non_exhaustive()
    }
}

impl<A: Registry> McpServer<A> {
    /// A server for one MCP session. With `principal` set the session acts for it; without,
    /// the principal comes from each HTTP request (see [`serve_http`](crate::serve_http)),
    /// and the first one binds the session.
    ///
    /// Not public: a server is reached only through the entry points that check the agent's
    /// `expose: { mcp: [...] }` ([`serve_stdio`](crate::serve_stdio),
    /// [`serve_io`](crate::serve_io), [`serve_http`](crate::serve_http),
    /// [`FrontDoor::new`](crate::FrontDoor::new)), so no transport of an application's own
    /// serves an agent in a way its manifest does not name.
    pub(crate) fn new(runtime: Runtime, principal: Option<Principal>, options: McpOptions) -> Self {
        let session_id = options.session_id.clone().unwrap_or_else(|| format!("mcp-{}", uuid::Uuid::new_v4()));
        McpServer {
            runtime,
            configured: principal,
            options,
            session_id,
            shutdown: CancellationToken::new(),
            bound: OnceCell::new(),
            _live: None,
        }
    }

    /// A server whose pending confirmations end as `skipped` with reason `shutdown` (not
    /// `disconnected`, even when the shutdown then closes the client's connection) once
    /// `shutdown` is cancelled; its session's end record says `shutdown` too (the front door
    /// of an endpoint mounted in an application's router cancels it when the application
    /// starts shutting down).
    pub(crate) fn shutdown_on(mut self, shutdown: CancellationToken) -> Self {
        self.shutdown = shutdown;
        self
    }

    /// A server that ends pending confirmations as `shutdown` when `shutdown` is cancelled,
    /// and counts itself in `live` until it is dropped.
    pub(crate) fn served_by(
        mut self,
        shutdown: CancellationToken,
        live: tokio_util::task::task_tracker::TaskTrackerToken,
    ) -> Self {
        self.shutdown = shutdown;
        self._live = Some(live);
        self
    }

    async fn bound(&self, ctx: &RequestContext<RoleServer>) -> Result<Arc<Bound<A>>, ErrorData> {
        let principal = request_principal(self.configured.as_ref(), ctx)?;
        let bound = self
            .bound
            .get_or_try_init(|| async {
                let elicits = ctx.peer.supported_elicitation_modes().contains(&ElicitationMode::Form);
                let calls = Calls::default();
                let confirmer: Option<Arc<dyn Confirmer>> = if elicits {
                    Some(Arc::new(ElicitConfirmer {
                        peer: ctx.peer.clone(),
                        timeout: self.options.elicitation_timeout,
                        shutdown: self.shutdown.clone(),
                        calls: calls.clone(),
                    }))
                } else {
                    None
                };
                // Over HTTP the records carry the transport's session id, as the client and a
                // refused request that names it do.
                let transport_id = transport_session(ctx).filter(|_| self.options.session_id.is_none());
                let session_id = transport_id.as_deref().unwrap_or(&self.session_id);
                let session = self
                    .runtime
                    .direct::<A>(principal.clone(), session_id, confirmer)
                    .await
                    .map_err(|e| ErrorData::invalid_request(e.to_string(), None))?;
                let session = if self.options.session_id.is_none() { session.ephemeral() } else { session };
                let tools = session
                    .available()
                    .into_iter()
                    .map(|spec| tool_of(spec, session.input_schema(spec.name)))
                    .collect();
                tracing::info!(%session_id, user = %principal.user_id, elicitation = elicits, "MCP session bound");
                Ok::<_, ErrorData>(Arc::new(Bound { principal: principal.clone(), session, tools, calls }))
            })
            .await?;
        if bound.principal != principal {
            tracing::warn!(session_id = %self.session_id, "request for another principal refused on a bound MCP session");
            return Err(ErrorData::invalid_request(
                "this MCP session belongs to another principal; start a new session with your own token",
                None,
            ));
        }
        Ok(bound.clone())
    }
}

/// The HTTP request a call came in (none over a byte stream).
fn parts(ctx: &RequestContext<RoleServer>) -> Option<&http::request::Parts> {
    ctx.extensions.get::<http::request::Parts>()
}

/// Whom a request acts for: the principal configured (a byte stream), else the one the HTTP
/// transport authenticated the request as.
pub(crate) fn request_principal(
    configured: Option<&Principal>,
    ctx: &RequestContext<RoleServer>,
) -> Result<Principal, ErrorData> {
    if let Some(p) = configured {
        return Ok(p.clone());
    }
    parts(ctx).and_then(|parts| parts.extensions.get::<Principal>()).cloned().ok_or_else(|| {
        ErrorData::invalid_request("no principal for this request: authenticate with a bearer token", None)
    })
}

/// The MCP session id of the HTTP transport, which the records carry as the client does.
pub(crate) fn transport_session(ctx: &RequestContext<RoleServer>) -> Option<String> {
    parts(ctx).and_then(|p| p.headers.get("mcp-session-id")).and_then(|v| v.to_str().ok()).map(str::to_owned)
}

/// The signal that the client of this HTTP request went away ([`ClientGone`]).
pub(crate) fn client_gone(ctx: &RequestContext<RoleServer>) -> Option<CancellationToken> {
    parts(ctx).and_then(|p| p.extensions.get::<ClientGone>()).map(|g| g.0.clone())
}

/// The MCP tool definition of a spec: the cached input schema and tier annotations.
pub(crate) fn tool_of(spec: &ToolSpec, schema: Option<&Value>) -> Tool {
    let input: JsonObject = match schema {
        Some(Value::Object(m)) => m.clone(),
        _ => {
            let mut m = JsonObject::new();
            m.insert("type".into(), Value::String("object".into()));
            m
        }
    };
    let base = match spec.title {
        Some(t) => ToolAnnotations::with_title(t),
        None => ToolAnnotations::new(),
    };
    let annotations = match spec.tier {
        Tier::Read => base.read_only(true),
        Tier::Action => base.read_only(false).destructive(spec.risk >= Risk::High),
        Tier::Handoff => base.read_only(false).destructive(false),
        // A tier this server does not know: the most cautious hints.
        _ => base.read_only(false).destructive(true),
    };
    Tool::new(spec.name, spec.description, Arc::new(input)).with_annotations(annotations)
}

/// What a server of this crate says of itself: tools only, its name and version, and the
/// application's instructions.
pub(crate) fn server_info(options: &McpOptions) -> ServerConfig {
    let mut info = InitializeResult::new(ServerCapabilities::builder().enable_tools().build())
        .with_server_info(Implementation::new(options.server_name.clone(), env!("CARGO_PKG_VERSION")));
    info.protocol_version = ProtocolVersion::LATEST_WITH_INITIALIZE;
    if let Some(i) = &options.instructions {
        info = info.with_instructions(i.clone());
    }
    info
}

/// The protocol versions a server that asks through elicitation speaks: elicitation is a
/// server-to-client request, which later revisions removed.
pub(crate) fn eliciting_versions() -> Cow<'static, [ProtocolVersion]> {
    Cow::Borrowed(ProtocolVersion::known_up_to(&ProtocolVersion::V_2025_11_25))
}

impl<A: Registry> ServerHandler for McpServer<A> {
    fn get_info(&self) -> ServerConfig {
        server_info(&self.options)
    }

    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        eliciting_versions()
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let bound = self.bound(&context).await?;
        Ok(ListToolsResult::with_all_items(bound.tools.clone()))
    }

    fn get_tool(&self, _name: &str) -> Option<Tool> {
        // The gate validates arguments (strict parse, typed parse); rmcp's own check is off.
        None
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let bound = self.bound(&context).await?;
        let arguments = match &request.arguments {
            Some(m) => serde_json::to_string(m).map_err(|e| ErrorData::invalid_params(e.to_string(), None))?,
            None => "{}".to_owned(),
        };
        let call_id = format!("mcp-{}", uuid::Uuid::new_v4());
        let name: &str = &request.name;
        let spec = bound.session.available().into_iter().find(|s| s.name == name);
        // Handoff records are published on the session's bus; listen before the call.
        let mut events = matches!(spec.map(|s| s.tier), Some(Tier::Handoff)).then(|| bound.session.subscribe());
        // A person asked during this call is asked on this request's behalf: if its client goes
        // away, the question ends as `disconnected`.
        if let Some(gone) = client_gone(&context) {
            lock(&bound.calls).insert(call_id.clone(), gone);
        }
        let out = bound.session.call(&call_id, name, &arguments).await;
        lock(&bound.calls).remove(&call_id);
        let Some(_spec) = spec else {
            // Refused and audited by the gate; unknown names are protocol errors in MCP.
            let reason = out.content.get("error").and_then(Value::as_str).unwrap_or("unknown tool").to_owned();
            return Err(ErrorData::invalid_params(reason, Some(json!({"tool": name}))));
        };
        let mut content = out.content;
        if let Some(rx) = events.as_mut() {
            while let Ok(event) = rx.try_recv() {
                if let Event::Handoff { record, .. } = event
                    && record.call_id == call_id
                {
                    if let Value::Object(m) = &mut content {
                        m.insert("record".into(), serde_json::to_value(&record).unwrap_or(Value::Null));
                    }
                    break;
                }
            }
        }
        Ok(CallToolResponse::Complete(result_of(content, out.is_error)))
    }
}

fn result_of(content: Value, is_error: bool) -> CallToolResult {
    match (content.is_object(), is_error) {
        (true, false) => CallToolResult::structured(content),
        (true, true) => CallToolResult::structured_error(content),
        (false, false) => CallToolResult::success(vec![ContentBlock::text(text_of(content))]),
        (false, true) => CallToolResult::error(vec![ContentBlock::text(text_of(content))]),
    }
}

fn text_of(content: Value) -> String {
    match content {
        Value::String(s) => s,
        other => other.to_string(),
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Asks the person behind the MCP client through a form elicitation.
pub(crate) struct ElicitConfirmer {
    peer: Peer<RoleServer>,
    timeout: Duration,
    shutdown: CancellationToken,
    calls: Calls,
}

impl ElicitConfirmer {
    /// Asks through `peer`, for at most `timeout`; a question ends as `shutdown` once
    /// `shutdown` is cancelled.
    pub(crate) fn new(peer: Peer<RoleServer>, timeout: Duration, shutdown: CancellationToken) -> Self {
        ElicitConfirmer { peer, timeout, shutdown, calls: Calls::default() }
    }

    /// A question asked for call `caller_call_id` ends as `disconnected` once `gone` is
    /// cancelled (its HTTP client went away).
    pub(crate) fn gone_with(self, caller_call_id: &str, gone: Option<CancellationToken>) -> Self {
        if let Some(gone) = gone {
            lock(&self.calls).insert(caller_call_id.to_owned(), gone);
        }
        self
    }
}

/// The text a person reads before deciding: the arguments as the tool will receive them,
/// secret values included ([`ConfirmRequest::decider_args`]): the person is bound by exactly
/// these values, and the client that asks them sent the call, so it holds them already. The
/// audit records of the call keep the masked copy.
pub(crate) fn elicitation_message(request: &ConfirmRequest) -> String {
    format!("{}\n\nSet \"{APPROVE_FIELD}\" to true to run it once; anything else and nothing runs.", card_text(request))
}

/// The card of [`elicitation_message`], without what to answer.
fn card_text(request: &ConfirmRequest) -> String {
    let shown = request.decider_args.as_value();
    let args = serde_json::to_string_pretty(shown).unwrap_or_else(|_| shown.to_string());
    // A read that carries a value copied from a tool result out, or an action whose values
    // came from content the user did not write, says so first, in the runtime's words.
    let why = request.why.as_deref().map(|w| format!("\n\nCheck before deciding: {w}.")).unwrap_or_default();
    format!(
        "Confirm action: {}{why}\n\nTool `{}` (risk: {}) will run with exactly these arguments:\n{}",
        request.title, request.tool, request.risk, args
    )
}

/// The form a person fills in: one boolean.
pub(crate) fn approval_schema() -> ElicitationSchema {
    let mut props = BTreeMap::new();
    props.insert(
        APPROVE_FIELD.to_owned(),
        PrimitiveSchemaDefinition::Boolean(
            BooleanSchema::new()
                .title("Approve")
                .description("Run this action once, exactly as shown")
                .with_default(false),
        ),
    );
    ElicitationSchema::new(props).with_required(vec![APPROVE_FIELD.to_owned()])
}

impl Confirmer for ElicitConfirmer {
    fn confirm(&self, request: ConfirmRequest) -> BoxFuture<'static, ConfirmAnswer> {
        let peer = self.peer.clone();
        let timeout = self.timeout;
        let shutdown = self.shutdown.clone();
        let gone = lock(&self.calls).get(&request.caller_call_id).cloned();
        Box::pin(async move {
            // After a first approval of a proposal that needs a second confirmation, the
            // form asks for the acknowledgement of its warning instead.
            let second = request.second_confirmation.clone();
            let (message, requested_schema) = match &second {
                Some(ack) => {
                    let card = card_text(&request);
                    (crate::second::message(&request, ack, &card), crate::second::schema(ack))
                }
                None => (elicitation_message(&request), approval_schema()),
            };
            let params = ElicitRequestParams::FormElicitationParams { meta: None, message, requested_schema };
            let client_gone = async {
                match gone {
                    Some(g) => g.cancelled().await,
                    None => std::future::pending().await,
                }
            };
            // Whatever ends the question, a shutdown in progress is what ended it.
            let ended = |why: Undecided| {
                let why = if shutdown.is_cancelled() { Undecided::Shutdown } else { why };
                tracing::warn!(call_id = %request.call_id, reason = why.code(), "elicitation ended without an answer; the action will not run");
                ConfirmAnswer::Undecided(why)
            };
            tokio::select! {
                biased;
                _ = shutdown.cancelled() => ended(Undecided::Shutdown),
                _ = client_gone => ended(Undecided::Disconnected),
                answer = peer.create_elicitation_with_timeout(params, Some(timeout)) => match answer {
                    Ok(answer) => match answer.action {
                        ElicitationAction::Accept => {
                            let content = answer.content.as_ref();
                            let approved = match &second {
                                Some(ack) => crate::second::acknowledged(content, ack),
                                None => content.and_then(|c| c.get(APPROVE_FIELD)).and_then(Value::as_bool) == Some(true),
                            };
                            ConfirmAnswer::Decided(if approved { Verdict::Approve } else { Verdict::Reject })
                        }
                        ElicitationAction::Decline => ConfirmAnswer::Decided(Verdict::Reject),
                        // Cancel (dismissed), or anything a later revision adds: no decision,
                        // and nothing runs.
                        _ => ended(Undecided::Dismissed),
                    },
                    Err(rmcp::service::ServiceError::Timeout { .. }) => ended(Undecided::TimedOut),
                    // The transport closed, the client cancelled, or the session ended.
                    Err(e) => {
                        tracing::debug!(error = %e, "elicitation failed");
                        ended(Undecided::Disconnected)
                    }
                },
            }
        })
    }
}
