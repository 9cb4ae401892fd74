//! The execution side of tools: contexts, the confirmation witness, and the per-tier traits
//! that `#[tool]` implements. Action tools run only with an [`Approval`], which only this
//! crate can mint; handoff tools implement no execution trait at all.

use crate::BoxFuture;
use crate::core::{Principal, Tool, ToolSpec};
use serde_json::Value;
use std::any::Any;
use std::fmt;
use std::marker::PhantomData;
use std::sync::Arc;

/// An error a tool returns to the model.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct ToolError {
    /// What went wrong, for the model and the audit record.
    pub message: String,
}

impl ToolError {
    /// A tool error.
    pub fn new(message: impl Into<String>) -> Self {
        ToolError { message: message.into() }
    }
}

/// Runs another tool through the same gate; installed by the runtime.
pub(crate) type NestedInvoker =
    Arc<dyn Fn(&'static str, Value) -> BoxFuture<'static, Result<Value, ToolError>> + Send + Sync>;

/// Everything the runtime knows about one call. Built only by the runtime.
pub struct CallContext {
    // Shared with the run: building a call's context copies no text but the call id.
    pub(crate) principal: Arc<Principal>,
    pub(crate) run_id: crate::core::SharedStr,
    pub(crate) session_id: crate::core::SharedStr,
    pub(crate) call_id: crate::core::SharedStr,
    pub(crate) spec: &'static ToolSpec,
    pub(crate) invoker: Option<NestedInvoker>,
}

impl fmt::Debug for CallContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CallContext")
            .field("principal", &self.principal)
            .field("run_id", &self.run_id)
            .field("call_id", &self.call_id)
            .field("tool", &self.spec.name)
            .finish_non_exhaustive()
    }
}

/// What a tool handler sees: the principal the run acts for, the ids, and (for tools that
/// declare `A: Grants<T>` bounds) a way to invoke other granted tools through the gate.
///
/// ```ignore
/// #[tool(permission = perms::athlete::read)]
/// /// Lists the caller's athletes.
/// async fn list_athletes(cx: &ToolContext<'_>) -> Result<Vec<String>, MyError> {
///     athletes_service::list(cx.principal()).await
/// }
/// ```
pub struct ToolContext<'a, A = ()> {
    call: &'a CallContext,
    _agent: PhantomData<fn() -> A>,
}

impl<A> Clone for ToolContext<'_, A> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<A> Copy for ToolContext<'_, A> {}

impl<A> fmt::Debug for ToolContext<'_, A> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.call.fmt(f)
    }
}

impl<'a, A> ToolContext<'a, A> {
    #[doc(hidden)]
    pub fn __new(call: &'a CallContext) -> Self {
        ToolContext { call, _agent: PhantomData }
    }
    /// The user the run acts for. Pass it to the application's own services.
    pub fn principal(&self) -> &'a Principal {
        &self.call.principal
    }
    /// The run's id.
    pub fn run_id(&self) -> &'a str {
        self.call.run_id.as_str()
    }
    /// The session's id.
    pub fn session_id(&self) -> &'a str {
        self.call.session_id.as_str()
    }
    /// This call's id.
    pub fn call_id(&self) -> &'a str {
        &self.call.call_id
    }
    /// This tool's spec.
    pub fn spec(&self) -> &'static ToolSpec {
        self.call.spec
    }
}

impl<A: crate::core::Agent> ToolContext<'_, A> {
    /// Invokes another tool through the gate (availability, strict parse, interceptors,
    /// audit and, for action tools, a person's confirmation). Compiles only when the agent
    /// grants `T`: declare the bound `A: Grants<T>` on the tool function.
    pub fn invoke<T: Tool>(&self, args: Value) -> BoxFuture<'static, Result<Value, ToolError>>
    where
        A: crate::core::Grants<T>,
    {
        match &self.call.invoker {
            Some(invoke) => invoke(T::NAME, args),
            None => Box::pin(async move {
                Err(ToolError::new(format!("`{}` cannot be invoked here: nested calls run only inside a run", T::NAME)))
            }),
        }
    }
}

/// The witness that a person approved this exact call. Only the gate mints one, after
/// redeeming a confirmation token bound to the session, the tool and the arguments.
pub struct Approval<'a> {
    _token: PhantomData<&'a ()>,
    _private: (),
}

impl fmt::Debug for Approval<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Approval")
    }
}

impl Approval<'_> {
    pub(crate) fn mint() -> Self {
        Approval { _token: PhantomData, _private: () }
    }
}

/// Typed arguments behind a type-erased box, as the registry passes them from its parse to the
/// tool's handler.
///
/// ```
/// use agents_runtime::tool::ErasedArgs;
///
/// assert_eq!(ErasedArgs::new(42_u32).take::<u32>(), Some(42));
/// assert_eq!(ErasedArgs::new(42_u32).take::<u64>(), None);
/// ```
pub struct ErasedArgs(
    // The value is kept as `Some(args)`, so that `take` moves it out through `downcast_mut`:
    // no `Box<T>` (and no drop code for one) is built per argument type.
    Box<dyn Any + Send>,
);

impl ErasedArgs {
    /// Erases the type of `args`.
    pub fn new<T: Send + 'static>(args: T) -> Self {
        ErasedArgs(Box::new(Some(args)))
    }

    /// The arguments, when they are a `T`; `None` when they are of another type.
    pub fn take<T: 'static>(mut self) -> Option<T> {
        // A `match`, not `and_then(Option::take)`: that would build one more function per type.
        match self.0.downcast_mut::<Option<T>>() {
            Some(slot) => slot.take(),
            None => None,
        }
    }
}

impl fmt::Debug for ErasedArgs {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ErasedArgs")
    }
}

/// The future a tool's handler returns: the tool's own future, boxed once, whose output becomes
/// the tool result ([`IntoToolResult`]) when it completes.
///
/// ```
/// use agents_runtime::tool::ToolFuture;
///
/// let fut = ToolFuture::new(async { Ok::<_, String>(vec![1, 2, 3]) });
/// let result = futures::executor::block_on(fut);
/// assert_eq!(result.unwrap(), serde_json::json!([1, 2, 3]));
/// ```
#[must_use = "a future does nothing unless polled"]
pub struct ToolFuture<'a>(std::pin::Pin<Box<dyn PollResult + Send + 'a>>);

impl<'a> ToolFuture<'a> {
    /// Boxes `future`; its output is converted with [`IntoToolResult`].
    pub fn new<F>(future: F) -> Self
    where
        F: std::future::Future<Output: IntoToolResult> + Send + 'a,
    {
        ToolFuture(Box::pin(future))
    }
}

impl fmt::Debug for ToolFuture<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ToolFuture")
    }
}

impl std::future::Future for ToolFuture<'_> {
    type Output = Result<Value, ToolError>;

    fn poll(self: std::pin::Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> std::task::Poll<Self::Output> {
        self.get_mut().0.as_mut().poll_result(cx)
    }
}

/// A future polled through a trait object, its output converted to a tool result.
///
/// A trait method, implemented for the future itself: the code for each tool's future is then
/// compiled with that tool (its module), not in one shared unit that every edit of any tool
/// would make the compiler redo.
pub(crate) trait PollResult {
    fn poll_result(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<Value, ToolError>>;
}

impl<F: std::future::Future<Output: IntoToolResult>> PollResult for F {
    fn poll_result(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<Value, ToolError>> {
        match self.poll(cx) {
            std::task::Poll::Ready(output) => std::task::Poll::Ready(output.into_tool_result()),
            std::task::Poll::Pending => std::task::Poll::Pending,
        }
    }
}

/// Boxes a tool's own future as its handler's future (what `#[tool]` generates calls). A
/// trait method for the same reason as [`PollResult`]: each tool's instance is compiled with
/// the tool.
#[doc(hidden)]
pub trait IntoToolFuture<'a>: std::future::Future<Output: IntoToolResult> + Send + Sized + 'a {
    /// `ToolFuture::new(self)`.
    fn into_tool_future(self) -> ToolFuture<'a> {
        ToolFuture(Box::pin(self))
    }
}

impl<'a, F: std::future::Future<Output: IntoToolResult> + Send + 'a> IntoToolFuture<'a> for F {}

/// A read tool: runs on its own.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot run on its own: it is not a read tool",
    label = "not a read tool",
    note = "an action tool (`mutating`) runs only with the `Approval` the runtime mints after a person approves the exact call; a handoff tool has no execution path at all",
    note = "let the runtime carry out the call (`Runtime::start`, `Runtime::direct`): it checks the grant, asks a person to confirm an action and audits the call"
)]
pub trait ReadTool: Tool {
    /// Runs the tool.
    fn run<'a>(cx: &'a CallContext, args: Self::Args) -> ToolFuture<'a>;
}

/// An action tool: runs only with an [`Approval`].
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not an action tool",
    label = "only a tool declared `mutating` runs with an `Approval`",
    note = "a handoff tool has no execution path at all: a call to it becomes a record for a person to act on; a read tool runs through `ReadTool::run`"
)]
pub trait ActionTool: Tool {
    /// Runs the tool, consuming the witness of a person's approval.
    fn run_approved<'a>(cx: &'a CallContext, args: Self::Args, approval: Approval<'a>) -> ToolFuture<'a>;
}

/// A handoff tool: no execution path exists; a call becomes a record for a human queue.
pub trait HandoffTool: Tool {}

/// How the registry carries out a tool of agent `A`.
pub enum Handler<A> {
    /// A read tool.
    Read(for<'a> fn(&'a CallContext, ErasedArgs) -> ToolFuture<'a>),
    /// An action tool.
    Action(for<'a> fn(&'a CallContext, ErasedArgs, Approval<'a>) -> ToolFuture<'a>),
    /// A handoff tool.
    Handoff(PhantomData<fn() -> A>),
}

impl<A> fmt::Debug for Handler<A> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Handler::Read(_) => "Handler::Read",
            Handler::Action(_) => "Handler::Action",
            Handler::Handoff(_) => "Handler::Handoff",
        })
    }
}

/// Implemented by `#[tool]` for every agent that may carry the tool (for tools generic over
/// the agent, only agents that grant every tool it invokes).
#[diagnostic::on_unimplemented(
    message = "the agent `{A}` cannot carry the tool `{Self}`",
    label = "`{Self}` invokes tools that `{A}` does not grant",
    note = "a tool that invokes other tools (its `A: Grants<...>` bounds) needs every agent that grants it to grant those tools too; add them to the agent's `tools`"
)]
pub trait Dispatch<A>: Tool {
    /// The handler.
    fn handler() -> Handler<A>;
}

/// A registry entry: the spec, a strict typed parse, and the handler.
pub struct ToolEntry<A> {
    /// The tool's spec.
    pub spec: &'static ToolSpec,
    /// The cached input schema.
    pub schema: fn() -> &'static Value,
    /// Typed deserialization of already-strictly-parsed arguments (borrowed: no copy).
    pub parse: fn(&Value) -> Result<ErasedArgs, String>,
    /// How to carry it out.
    pub handler: Handler<A>,
}

impl<A> fmt::Debug for ToolEntry<A> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolEntry").field("tool", &self.spec.name).field("handler", &self.handler).finish()
    }
}

impl<A> ToolEntry<A> {
    /// The entry of tool `T`, which the agent must grant.
    pub fn of<T: Dispatch<A>>() -> Self
    where
        A: crate::core::Grants<T>,
    {
        ToolEntry { spec: &T::SPEC, schema: T::input_schema, parse: parse_erased::<T>, handler: T::handler() }
    }
}

/// Typed deserialization of one tool's arguments; generic over the tool only, so every agent
/// that grants it shares one copy.
fn parse_erased<T: Tool>(v: &Value) -> Result<ErasedArgs, String> {
    // A `match`, not `map`/`map_err` closures: this is instantiated once per tool, and every
    // closure is one more function to compile for each.
    match T::parse_args(v) {
        Ok(args) => Ok(ErasedArgs::new(args)),
        Err(e) => Err(e),
    }
}

/// The registry `agent!` generates: a `match` on the tool's position in
/// [`Agent::tools`](crate::core::Agent::tools).
pub trait Registry: crate::core::Agent + Sized {
    /// The entry of the tool at `index` in `tools()`.
    fn entry_at(index: usize) -> Option<ToolEntry<Self>>;
    /// The entry of a granted tool, by name.
    fn entry(name: &str) -> Option<ToolEntry<Self>> {
        Self::tool_index(name).and_then(Self::entry_at)
    }
}

/// Link-time registration of every tool in a binary.
#[derive(Debug)]
pub struct ToolRegistration {
    /// The tool's spec.
    pub spec: &'static ToolSpec,
}

inventory::collect!(ToolRegistration);

/// Every tool linked into this binary, sorted by name.
pub fn linked_tools() -> Vec<&'static ToolSpec> {
    let mut v: Vec<_> = inventory::iter::<ToolRegistration>.into_iter().map(|r| r.spec).collect();
    v.sort_by(|a, b| a.name.cmp(b.name));
    v
}

/// Converts a handler's return value into the tool result.
pub trait IntoToolResult {
    /// The conversion.
    fn into_tool_result(self) -> Result<Value, ToolError>;
}

impl<T: serde::Serialize, E: fmt::Display> IntoToolResult for Result<T, E> {
    fn into_tool_result(self) -> Result<Value, ToolError> {
        match self {
            Ok(v) => {
                serde_json::to_value(v).map_err(|e| ToolError::new(format!("the result could not be serialized: {e}")))
            }
            Err(e) => Err(ToolError::new(e.to_string())),
        }
    }
}
