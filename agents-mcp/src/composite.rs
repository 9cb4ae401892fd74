//! A composite served over MCP ([`serve_composite_io`]): one tool named after the composite,
//! which runs the whole tree for the session's principal; an action any node proposes asks
//! the person through elicitation, as a single agent's does, and the answer decides it.

use crate::options::{McpError, McpOptions};
use crate::server::ElicitConfirmer;
use agents_core::Principal;
use agents_runtime::Runtime;
use agents_runtime::compose::RunComposite;
use agents_runtime::events::Event;
use agents_runtime::run::{ConfirmAnswer, ConfirmRequest, Confirmer, DecisionError, PendingDecision, Verdict};
use futures::stream::{FuturesUnordered, StreamExt};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, JsonObject, ListToolsResult,
    PaginatedRequestParams, ProtocolVersion, ServerConfig, Tool, ToolAnnotations,
};
use rmcp::service::{ElicitationMode, RequestContext};
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde_json::{Value, json};
use std::borrow::Cow;
use std::marker::PhantomData;
use std::sync::Arc;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio_util::sync::CancellationToken;
use tokio_util::task::task_tracker::TaskTrackerToken;

/// The field of the tool's arguments that holds the composite's input: a composite's input
/// need not be a JSON object, an MCP tool's arguments always are.
pub const COMPOSITE_FIELD_INPUT: &str = "input";
/// The field of the tool's structured result that holds the composite's output.
pub const COMPOSITE_FIELD_OUTPUT: &str = "output";

/// Why a nested action is rejected when the MCP client cannot ask its person.
const NO_ELICITATION: &str = "the MCP client cannot ask a person (it declared no form elicitation), so the action was not approved; use a client that supports elicitation, or decide it through the decisions API";

/// Serves composite `C` for `principal` over a newline-delimited JSON-RPC byte stream (stdio,
/// a pipe, a socket) until the peer disconnects: one MCP tool named `C::GRAPH.name`, whose
/// arguments are `{"input": <C::Input>}`, which runs the whole tree
/// ([`Runtime::start_composite`]) for `principal` and answers `{"output": <C::Output>}` (an
/// error result saying which node failed when the tree does not complete).
///
/// While the tree runs, each action a node proposes (its `confirm_required`, at any depth)
/// asks the person behind the client through a form elicitation, with the same card and form
/// as a single agent's confirmation, and their answer decides that call for `principal`
/// ([`Runtime::decide_async`]; a proposal under a second confirmation asks again for the
/// acknowledgement, [`Runtime::acknowledge`]). Approved, the action runs once; declined,
/// answered anything but an approval, dismissed, timed out or interrupted, it is rejected
/// (recorded `rejected`) and nothing runs. A client that declared no form elicitation gets
/// every nested action rejected, nothing running without a person's decision, and the tool's
/// answer says so: a text content block counting the rejected actions and saying what to do
/// (use a client that supports elicitation, or decide through the decisions API).
///
/// What is checked before anything is served: every agent node of the composite (nested
/// composites' too) names `stdio` in its `expose: { mcp: [...] }` (serving the tree serves
/// every node, so one node that is not served this way refuses the whole composite:
/// [`McpError::NotExposed`] naming the node), the principal, and the frame limit (as
/// [`serve_io`](crate::serve_io)). What it serves is the composite, never a node's tool, and
/// every node runs for `principal` under its own manifest, each of its actions waiting for
/// that person. Agents a node's agent calls as granted agents run under that node's
/// exposure, as its tools do.
///
/// ```no_run
/// # async fn f<C>(runtime: agents_runtime::Runtime, me: agents_runtime::Principal) -> Result<(), agents_mcp::McpError>
/// # where C: agents_runtime::compose::RunComposite, C::Input: serde::de::DeserializeOwned + schemars::JsonSchema, C::Output: serde::Serialize {
/// agents_mcp::serve_composite_io::<C, _, _>(runtime, me, Default::default(), tokio::io::stdin(), tokio::io::stdout()).await
/// # }
/// ```
pub async fn serve_composite_io<C, R, W>(
    runtime: Runtime,
    principal: Principal,
    options: McpOptions,
    read: R,
    write: W,
) -> Result<(), McpError>
where
    C: RunComposite,
    C::Input: serde::de::DeserializeOwned + schemars::JsonSchema,
    C::Output: serde::Serialize,
    R: AsyncRead + Send + Unpin + 'static,
    W: AsyncWrite + Send + Unpin + 'static,
{
    crate::options::check_composite_exposed(&C::GRAPH, agents_core::expose::McpExposure::Stdio)?;
    principal.validate().map_err(|e| McpError::Options(e.to_string()))?;
    let max = crate::stdio::max_frame(&options)?;
    let server = CompositeServer::<C>::new(runtime, Some(principal), options, CancellationToken::new(), None);
    crate::stdio::serve_lines(server, max, read, write).await
}

/// The MCP server of one composite, for one MCP session: built only by the entry points that
/// check every agent node's `expose: { mcp: [...] }` ([`serve_composite_io`],
/// [`serve_composite_http`](crate::serve_composite_http), a [`FrontDoor`](crate::FrontDoor) of a
/// [`CompositeTree`](crate::door::CompositeTree)).
pub struct CompositeServer<C> {
    runtime: Runtime,
    /// The principal from configuration (a byte stream); `None` takes it from each HTTP request.
    configured: Option<Principal>,
    options: McpOptions,
    session_id: String,
    shutdown: CancellationToken,
    /// Keeps the HTTP server's count of live sessions.
    _live: Option<TaskTrackerToken>,
    _c: PhantomData<fn() -> C>,
}

impl<C> std::fmt::Debug for CompositeServer<C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CompositeServer").field("session_id", &self.session_id).finish_non_exhaustive()
    }
}

impl<C> CompositeServer<C> {
    pub(crate) fn new(
        runtime: Runtime,
        configured: Option<Principal>,
        options: McpOptions,
        shutdown: CancellationToken,
        live: Option<TaskTrackerToken>,
    ) -> Self {
        let session_id = options.session_id.clone().unwrap_or_else(|| format!("mcp-{}", uuid::Uuid::new_v4()));
        CompositeServer { runtime, configured, options, session_id, shutdown, _live: live, _c: PhantomData }
    }
}

impl<C> CompositeServer<C>
where
    C: RunComposite,
    C::Input: serde::de::DeserializeOwned + schemars::JsonSchema,
    C::Output: serde::Serialize,
{
    /// The one tool: the composite, its input under [`COMPOSITE_FIELD_INPUT`].
    fn tool() -> Tool {
        let input = serde_json::to_value(schemars::schema_for!(C::Input)).unwrap_or(json!({}));
        let schema = json!({
            "type": "object",
            "properties": {COMPOSITE_FIELD_INPUT: input},
            "required": [COMPOSITE_FIELD_INPUT],
            "additionalProperties": false,
        });
        let schema: JsonObject = match schema {
            Value::Object(m) => m,
            _ => JsonObject::new(),
        };
        // A tree may run actions (each one waits for the person).
        let annotations = ToolAnnotations::with_title(C::GRAPH.name).read_only(false);
        Tool::new(C::GRAPH.name, C::GRAPH.description, Arc::new(schema)).with_annotations(annotations)
    }

    /// The composite's input from the call's arguments: exactly `{"input": ...}`.
    fn input_of(request: &CallToolRequestParams) -> Result<C::Input, ErrorData> {
        let args = request.arguments.clone().unwrap_or_default();
        let extra: Vec<&String> = args.keys().filter(|k| k.as_str() != COMPOSITE_FIELD_INPUT).collect();
        if !extra.is_empty() {
            let message =
                format!("unknown argument(s) {extra:?}: pass the composite's input as `{COMPOSITE_FIELD_INPUT}`");
            return Err(ErrorData::invalid_params(message, None));
        }
        let value = args.get(COMPOSITE_FIELD_INPUT).cloned().ok_or_else(|| {
            ErrorData::invalid_params(format!("missing `{COMPOSITE_FIELD_INPUT}`: the composite's input"), None)
        })?;
        serde_json::from_value(value).map_err(|e| {
            let message = format!("`{COMPOSITE_FIELD_INPUT}` is not a `{}`: {e}", C::GRAPH.input);
            ErrorData::invalid_params(message, None)
        })
    }

    /// Runs the tree, asking the person about each nested action as it is proposed; the
    /// tool's result.
    async fn run(&self, call: Call, input: C::Input) -> Result<CallToolResult, ErrorData> {
        let Call { principal, session_id, caller_call_id, asker } = call;
        let mut handle = self
            .runtime
            .start_composite::<C>(principal.clone(), &session_id, input)
            .map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
        // Polled in this task, not spawned: a question asked here is asked on behalf of this
        // call (over HTTP, on its own event stream).
        let mut asks = FuturesUnordered::new();
        // Nested actions rejected because the client cannot ask its person.
        let mut unasked = 0usize;
        loop {
            let event = tokio::select! {
                event = handle.events().recv() => event,
                Some(()) = asks.next(), if !asks.is_empty() => continue,
            };
            let Some(event) = event.filter(|e| !matches!(e, Event::Done { .. })) else { break };
            if let Some(call_id) = nested_confirmation(&event) {
                unasked += usize::from(asker.is_none());
                let decide = Decide {
                    runtime: self.runtime.clone(),
                    principal: principal.clone(),
                    call_id: call_id.to_owned(),
                    caller_call_id: caller_call_id.clone(),
                };
                asks.push(decide.ask(asker.clone()));
            }
        }
        // The tree has ended: a question still open has nothing left to decide.
        drop(asks);
        let mut result = match handle.wait().await {
            Ok(out) => match out.output.map(serde_json::to_value) {
                Some(Ok(output)) => CallToolResult::structured(json!({COMPOSITE_FIELD_OUTPUT: output})),
                Some(Err(e)) => CallToolResult::error(vec![ContentBlock::text(format!("the output: {e}"))]),
                None => CallToolResult::error(vec![ContentBlock::text("the run tree ended without an output")]),
            },
            Err(e) => CallToolResult::error(vec![ContentBlock::text(e.to_string())]),
        };
        if unasked > 0 {
            // The answer says why the tree's actions did not run, beside what the tree made of it.
            let why = format!("{unasked} action(s) of the run tree were rejected: {NO_ELICITATION}");
            result.content.push(ContentBlock::text(why));
        }
        Ok(result)
    }
}

/// What one call of the tool runs with.
struct Call {
    /// Whom the tree runs for.
    principal: Principal,
    session_id: String,
    /// The call's id, under which a question asked during it is tied to its client.
    caller_call_id: String,
    /// Asks the person; `None`: the client cannot.
    asker: Option<Arc<dyn Confirmer>>,
}

/// The call id of a nested node's `confirm_required`, at any depth.
fn nested_confirmation(event: &Event) -> Option<&str> {
    match event {
        Event::Node { event, .. } => match event.as_ref() {
            Event::ConfirmRequired { call_id, .. } => Some(call_id),
            inner => nested_confirmation(inner),
        },
        _ => None,
    }
}

/// One nested proposal to decide for the tree's principal.
struct Decide {
    runtime: Runtime,
    principal: Principal,
    call_id: String,
    caller_call_id: String,
}

impl Decide {
    /// Asks the person through `asker` (none: the client cannot ask, and the action is
    /// rejected), then decides the call with their answer.
    async fn ask(self, asker: Option<Arc<dyn Confirmer>>) {
        let Some(asker) = asker else {
            return self.decide(Verdict::Reject, Some(NO_ELICITATION)).await;
        };
        let Some(request) = self.request().await else { return };
        let answer = asker.confirm(request.clone()).await;
        let verdict = match answer {
            ConfirmAnswer::Decided(v) => v,
            ConfirmAnswer::Undecided(why) => {
                let reason = format!("the elicitation ended unanswered: {}", why.code());
                return self.decide(Verdict::Reject, Some(&reason)).await;
            }
            // An answer a later release adds: no approval.
            _ => return self.decide(Verdict::Reject, Some("the elicitation gave no approval")).await,
        };
        match self.runtime.decide_async(&self.call_id, &self.principal, verdict, None).await {
            Err(DecisionError::AcknowledgementRequired(ack)) => {
                let digest = ack.digest.clone();
                let second = ConfirmRequest { second_confirmation: Some(*ack), ..request };
                match asker.confirm(second).await {
                    ConfirmAnswer::Decided(Verdict::Approve) => {
                        let done = self.runtime.acknowledge(&self.call_id, &self.principal, &digest).await;
                        self.log(done);
                    }
                    _ => self.decide(Verdict::Reject, Some("the warning was not acknowledged")).await,
                }
            }
            done => self.log(done),
        }
    }

    /// The card of the proposal as its decider reads it; `None` when it waits no more.
    async fn request(&self) -> Option<ConfirmRequest> {
        let pending = match self.runtime.pending_decisions(&self.principal).await {
            Ok(p) => p,
            Err(e) => {
                tracing::warn!(call_id = %self.call_id, error = %e, "a nested proposal could not be read; it is rejected");
                self.decide(Verdict::Reject, Some("its proposal could not be read to ask the person")).await;
                return None;
            }
        };
        let p: PendingDecision = pending.into_iter().find(|p| p.call_id == self.call_id)?;
        Some(ConfirmRequest {
            call_id: p.call_id,
            caller_call_id: self.caller_call_id.clone(),
            tool: p.tool,
            description: p.title.clone(),
            title: p.title,
            args: p.arguments,
            decider_args: p.decider_arguments,
            risk: p.risk,
            why: p.why,
            origins: p.origins,
            second_confirmation: None,
        })
    }

    async fn decide(&self, verdict: Verdict, reason: Option<&str>) {
        let done = self.runtime.decide_async(&self.call_id, &self.principal, verdict, reason).await;
        self.log(done);
    }

    fn log(&self, done: Result<(), DecisionError>) {
        if let Err(e) = done {
            tracing::warn!(call_id = %self.call_id, error = %e, "a nested decision was not taken");
        }
    }
}

impl<C> ServerHandler for CompositeServer<C>
where
    C: RunComposite,
    C::Input: serde::de::DeserializeOwned + schemars::JsonSchema,
    C::Output: serde::Serialize,
{
    fn get_info(&self) -> ServerConfig {
        crate::server::server_info(&self.options)
    }

    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        crate::server::eliciting_versions()
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(vec![Self::tool()]))
    }

    fn get_tool(&self, _name: &str) -> Option<Tool> {
        // The arguments are checked here, strictly; rmcp's own check is off.
        None
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        if request.name != C::GRAPH.name {
            let message = format!("unknown tool `{}`: this server serves `{}` only", request.name, C::GRAPH.name);
            return Err(ErrorData::invalid_params(message, Some(json!({"tool": request.name}))));
        }
        let input = Self::input_of(&request)?;
        let principal = crate::server::request_principal(self.configured.as_ref(), &context)?;
        let session_id = crate::server::transport_session(&context)
            .filter(|_| self.options.session_id.is_none())
            .unwrap_or_else(|| self.session_id.clone());
        let caller_call_id = format!("mcp-{}", uuid::Uuid::new_v4());
        let elicits = context.peer.supported_elicitation_modes().contains(&ElicitationMode::Form);
        let asker: Option<Arc<dyn Confirmer>> = elicits.then(|| {
            let confirmer =
                ElicitConfirmer::new(context.peer.clone(), self.options.elicitation_timeout, self.shutdown.clone())
                    .gone_with(&caller_call_id, crate::server::client_gone(&context));
            Arc::new(confirmer) as Arc<dyn Confirmer>
        });
        let call = Call { principal, session_id, caller_call_id, asker };
        Ok(CallToolResponse::Complete(self.run(call, input).await?))
    }
}
