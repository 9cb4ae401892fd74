//! The execution side of tools: contexts, the confirmation witness, and the per-tier traits
//! that `#[tool]` implements. Action tools run only with an [`Approval`], which only this
//! crate can mint; handoff tools implement no execution trait at all.

use crate::BoxFuture;
use agents_core::{Principal, Tool, ToolSpec};
use serde_json::Value;
use std::any::Any;
use std::fmt;
use std::marker::PhantomData;
use std::sync::Arc;

/// An error a tool returns to the model. Its text ([`ToolError::message`], also its
/// `Display`) is what the model and the audit record receive; the typed cause, when there is
/// one, stays with the Rust caller ([`std::error::Error::source`]).
#[derive(Clone)]
pub struct ToolError {
    /// What went wrong, for the model and the audit record.
    pub message: String,
    /// For an imported tool refused because its server no longer says what was pinned: the
    /// SHA-256 of what the server says now, for the call's `failed` record.
    pub(crate) listed_sha256: Option<String>,
    source: Option<Arc<dyn std::error::Error + Send + Sync + 'static>>,
}

impl ToolError {
    /// A tool error.
    pub fn new(message: impl Into<String>) -> Self {
        ToolError { message: message.into(), listed_sha256: None, source: None }
    }

    /// A tool error with its typed cause: the model reads `message`; a caller that holds the
    /// error (a tool that invoked another, a direct session) can downcast the cause.
    ///
    /// ```
    /// use agents_runtime::ToolError;
    /// use std::error::Error as _;
    ///
    /// let io = std::io::Error::new(std::io::ErrorKind::NotFound, "no such file");
    /// let e = ToolError::with_source("the report is missing", io);
    /// assert_eq!(e.to_string(), "the report is missing");
    /// let cause = e.source().and_then(|s| s.downcast_ref::<std::io::Error>()).unwrap();
    /// assert_eq!(cause.kind(), std::io::ErrorKind::NotFound);
    /// ```
    pub fn with_source(message: impl Into<String>, source: impl std::error::Error + Send + Sync + 'static) -> Self {
        ToolError { message: message.into(), listed_sha256: None, source: Some(Arc::new(source)) }
    }
}

impl fmt::Display for ToolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl fmt::Debug for ToolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("ToolError");
        d.field("message", &self.message);
        if let Some(s) = &self.source {
            d.field("source", s);
        }
        d.finish()
    }
}

impl std::error::Error for ToolError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.source.as_deref().map(|s| s as &(dyn std::error::Error + 'static))
    }
}

/// Two tool errors are equal when their texts are (what the model and the record see).
impl PartialEq for ToolError {
    fn eq(&self, other: &Self) -> bool {
        self.message == other.message
    }
}

impl Eq for ToolError {}

/// The application's values the tools read by type ([`RuntimeBuilder::state`](crate::RuntimeBuilder::state),
/// [`ToolContext::state`]). Cheap to clone: one reference count.
#[derive(Clone, Default)]
pub struct AppState(Option<Arc<std::collections::HashMap<std::any::TypeId, Arc<dyn Any + Send + Sync>>>>);

impl AppState {
    /// Adds `value` under its type (replacing an earlier value of that type).
    pub(crate) fn insert<T: Send + Sync + 'static>(&mut self, value: Arc<T>) {
        let mut map = self.0.as_deref().cloned().unwrap_or_default();
        map.insert(std::any::TypeId::of::<T>(), value);
        self.0 = Some(Arc::new(map));
    }

    /// The value of type `T`, when the application gave one.
    pub fn get<T: Send + Sync + 'static>(&self) -> Option<&T> {
        self.0.as_ref()?.get(&std::any::TypeId::of::<T>())?.downcast_ref::<T>()
    }
}

impl fmt::Debug for AppState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "AppState({} values)", self.0.as_ref().map_or(0, |m| m.len()))
    }
}

/// Runs another tool through the same gate; installed by the runtime.
pub(crate) type NestedInvoker =
    Arc<dyn Fn(&'static str, Value) -> BoxFuture<'static, Result<Value, ToolError>> + Send + Sync>;

/// Everything the runtime knows about one call. Built only by the runtime.
pub struct CallContext {
    // Shared with the run: building a call's context copies no text but the call id.
    pub(crate) principal: Arc<Principal>,
    pub(crate) run_id: agents_core::SharedStr,
    pub(crate) session_id: agents_core::SharedStr,
    pub(crate) call_id: agents_core::SharedStr,
    pub(crate) spec: &'static ToolSpec,
    pub(crate) invoker: Option<NestedInvoker>,
    /// Set by the gate after it redeemed this call's confirmation token (action calls only).
    pub(crate) approved: Option<ApprovedCall>,
    /// The application's state (empty in a worker process).
    pub(crate) state: AppState,
    /// Where imported tools are called (see [`crate::imported`]).
    pub(crate) imports: Option<Arc<dyn crate::imported::ImportedTools>>,
    /// Set when this call of an imported tool was refused because its server no longer says
    /// what was pinned: the SHA-256 of what it says now (the gate copies it into the error).
    pub(crate) listed_sha256: std::sync::OnceLock<String>,
}

/// The gate's record that a person approved this call: the redeemed token's id, the tool, and
/// a random nonce that the witness handed to the handler must carry.
#[derive(Clone)]
pub(crate) struct ApprovedCall {
    pub(crate) token_id: String,
    pub(crate) tool: &'static str,
    pub(crate) nonce: [u8; 16],
}

impl ApprovedCall {
    /// The record of a token the gate has just redeemed for `tool`.
    pub(crate) fn redeemed(token: &crate::token::ConfirmationToken, tool: &'static str) -> Self {
        ApprovedCall { token_id: token.id().to_owned(), tool, nonce: crate::token::random_bytes::<16>() }
    }
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
    /// The application's value of type `T`, handed to the runtime with
    /// [`RuntimeBuilder::state`](crate::RuntimeBuilder::state); `None` when it gave none (and
    /// in a worker process, where an isolated tool runs).
    ///
    /// ```ignore
    /// #[tool(permission = perms::leave::read)]
    /// /// Reads the user's leave balance.
    /// async fn leave_balance(cx: &ToolContext<'_>) -> Result<f64, String> {
    ///     let db = cx.state::<Db>().ok_or("the leave database is not configured")?;
    ///     db.balance(cx.principal())
    /// }
    /// ```
    pub fn state<T: Send + Sync + 'static>(&self) -> Option<&'a T> {
        self.call.state.get::<T>()
    }
}

impl<A: agents_core::Agent> ToolContext<'_, A> {
    /// Invokes another tool through the gate (availability, strict parse, interceptors,
    /// audit and, for action tools, a person's confirmation). Compiles only when the agent
    /// grants `T`: declare the bound `A: Grants<T>` on the tool function.
    ///
    /// At run time the call is refused unless `T` is among the tools this tool's manifest entry
    /// lists under `uses` (its `Grants<...>` bounds): an edge the manifest does not show cannot
    /// be taken, even through a helper trait that implies the grant.
    pub fn invoke<T: Tool>(&self, args: Value) -> BoxFuture<'static, Result<Value, ToolError>>
    where
        A: agents_core::Grants<T>,
    {
        let spec = self.call.spec;
        if !spec.uses.contains(&T::NAME) {
            let message = format!(
                "tool `{}` may not invoke `{}`: its manifest entry does not list it under `uses`; declare the bound `A: Grants<{}>` on the tool function",
                spec.name,
                T::NAME,
                T::NAME
            );
            return Box::pin(async move { Err(ToolError::new(message)) });
        }
        match &self.call.invoker {
            Some(invoke) => invoke(T::NAME, args),
            None => Box::pin(async move {
                Err(ToolError::new(format!("`{}` cannot be invoked here: nested calls run only inside a run", T::NAME)))
            }),
        }
    }
}

/// The witness that a person approved this exact call of the tool `T`. Only the gate mints
/// one, after redeeming a confirmation token bound to the session, the tool and the arguments.
///
/// - Tied to the tool by its type: [`ActionTool::run_approved`] of `T` takes an
///   `Approval<'_, T>`, so a witness for one tool does not type-check for another.
/// - Tied to this call by its value: it carries the nonce of the gate's record of the redeemed
///   token, kept in this call's [`CallContext`]. The tool's `run_approved` compares the two
///   before the body runs and refuses on any difference, so a witness moved to another call,
///   or bytes forged with `unsafe` (`std::mem::zeroed`, `transmute`), run nothing.
///
/// No constructor is public; against `unsafe` code that reads the runtime's memory there is no
/// guarantee (see the crate docs, "Whom each guarantee holds against").
pub struct Approval<'a, T: ?Sized> {
    nonce: [u8; 16],
    _call: PhantomData<&'a CallContext>,
    _tool: PhantomData<fn() -> T>,
}

impl<T: ?Sized> fmt::Debug for Approval<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Approval")
    }
}

impl<'a, T: Tool> Approval<'a, T> {
    /// The witness of `call`'s approval, when the gate recorded one for the tool `T`.
    pub(crate) fn of_call(call: &'a CallContext) -> Result<Self, ToolError> {
        match &call.approved {
            Some(record) if record.tool == T::NAME && call.spec.name == T::NAME => {
                Ok(Approval { nonce: record.nonce, _call: PhantomData, _tool: PhantomData })
            }
            _ => Err(ToolError::new(format!(
                "`{}` was not approved for this call; nothing ran (an action tool runs only after a person approved the exact call)",
                T::NAME
            ))),
        }
    }

    /// Whether this witness is the one the gate recorded for `call`: same tool, same nonce.
    pub(crate) fn verify(&self, call: &CallContext) -> Result<(), ToolError> {
        let ok = match &call.approved {
            Some(record) => {
                record.tool == T::NAME
                    && call.spec.name == T::NAME
                    && record.nonce.iter().zip(&self.nonce).fold(0u8, |acc, (a, b)| acc | (a ^ b)) == 0
            }
            None => false,
        };
        if ok {
            Ok(())
        } else {
            Err(ToolError::new(format!(
                "the approval presented for `{}` does not belong to this call; nothing ran",
                T::NAME
            )))
        }
    }

    /// The id of the confirmation token the gate redeemed for this call.
    pub fn token_id<'c>(&self, call: &'c CallContext) -> Option<&'c str> {
        call.approved.as_ref().filter(|r| r.nonce == self.nonce).map(|r| r.token_id.as_str())
    }

    #[cfg(test)]
    pub(crate) fn forged(nonce: [u8; 16]) -> Self {
        Approval { nonce, _call: PhantomData, _tool: PhantomData }
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

/// A read tool: runs on its own. Sealed (only `#[tool]` implements it, for read tools).
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot run on its own: it is not a read tool",
    label = "not a read tool",
    note = "an action tool (`mutating`) runs only with the `Approval` the runtime mints after a person approves the exact call; a handoff tool has no execution path at all",
    note = "let the runtime carry out the call (`Runtime::start`, `Runtime::direct`): it checks the grant, asks a person to confirm an action and audits the call"
)]
pub trait ReadTool: Tool + agents_core::seal::ReadByToolMacro {
    /// Runs the tool.
    fn run<'a>(cx: &'a CallContext, args: Self::Args) -> ToolFuture<'a>;
}

/// An action tool: runs only with an [`Approval`] of this tool for this call. Sealed (only
/// `#[tool]` implements it, for `mutating` tools); its `run_approved` checks the witness
/// against the call before the body runs.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not an action tool",
    label = "only a tool declared `mutating` runs with an `Approval`",
    note = "a handoff tool has no execution path at all: a call to it becomes a record for a person to act on; a read tool runs through `ReadTool::run`"
)]
pub trait ActionTool: Tool + agents_core::seal::ActionByToolMacro {
    /// Runs the tool, consuming the witness of a person's approval of this call. A witness
    /// that is not this call's runs nothing and returns an error.
    fn run_approved<'a>(cx: &'a CallContext, args: Self::Args, approval: Approval<'a, Self>) -> ToolFuture<'a>;
}

/// A handoff tool: no execution path exists; a call becomes a record for a human queue.
/// Sealed (only `#[tool]` implements it, for `handoff` tools).
pub trait HandoffTool: Tool + agents_core::seal::HandoffByToolMacro {}

/// How the registry carries out a tool of agent `A`.
pub enum Handler<A> {
    /// A read tool.
    Read(for<'a> fn(&'a CallContext, ErasedArgs) -> ToolFuture<'a>),
    /// An action tool: the handler takes the witness from the call's approval record (set by
    /// the gate after it redeemed the token) and runs nothing without one.
    Action(for<'a> fn(&'a CallContext, ErasedArgs) -> ToolFuture<'a>),
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
/// the agent, only agents that grant every tool it invokes). Sealed by `Tool`'s seal: only
/// `#[tool]` implements it, so a tool's handler is always its own.
#[diagnostic::on_unimplemented(
    message = "the agent `{A}` cannot carry the tool `{Self}`",
    label = "`{Self}` invokes tools that `{A}` does not grant",
    note = "a tool that invokes other tools (its `A: Grants<...>` bounds) needs every agent that grants it to grant those tools too; add them to the agent's `tools`"
)]
pub trait Dispatch<A>: Tool + agents_core::seal::DispatchedByToolMacro<A> {
    /// The handler.
    fn handler() -> Handler<A>;
}

/// A registry entry: the spec, a strict typed parse, and the handler.
///
/// Built only by [`RegisteredTool::of`], from one tool's own `#[tool]` declaration: an entry cannot
/// pair one tool's spec with another tool's handler, parse or schema.
pub struct RegisteredTool<A> {
    /// The tool's spec.
    pub(crate) spec: &'static ToolSpec,
    /// The cached input schema.
    pub(crate) schema: fn() -> &'static Value,
    /// Typed deserialization of already-strictly-parsed arguments (borrowed: no copy).
    pub(crate) parse: fn(&Value) -> Result<ErasedArgs, String>,
    /// The parse for a worker process (keeps the checked JSON): a runtime setting may isolate
    /// a tool its code does not mark `isolated` (see `crate::isolate::Isolation`).
    pub(crate) parse_isolated: fn(&Value) -> Result<ErasedArgs, String>,
    /// How to carry it out.
    pub(crate) handler: Handler<A>,
}

impl<A> fmt::Debug for RegisteredTool<A> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RegisteredTool").field("tool", &self.spec.name).field("handler", &self.handler).finish()
    }
}

impl<A> RegisteredTool<A> {
    /// The tool's spec.
    pub fn spec(&self) -> &'static ToolSpec {
        self.spec
    }

    /// The tool's cached input schema.
    pub fn schema(&self) -> &'static Value {
        (self.schema)()
    }

    /// Typed deserialization of already-strictly-parsed arguments.
    pub fn parse(&self, args: &Value) -> Result<ErasedArgs, String> {
        (self.parse)(args)
    }

    /// How the tool is carried out (callable only with a [`CallContext`], which only the
    /// runtime makes).
    pub fn handler(&self) -> &Handler<A> {
        &self.handler
    }

    /// The tool's tier, as its handler carries it out.
    pub fn tier(&self) -> agents_core::Tier {
        match self.handler {
            Handler::Read(_) => agents_core::Tier::Read,
            Handler::Action(_) => agents_core::Tier::Action,
            Handler::Handoff(_) => agents_core::Tier::Handoff,
        }
    }

    /// The entry of tool `T`, which the agent must grant.
    pub fn of<T: Dispatch<A>>() -> Self
    where
        A: agents_core::Grants<T>,
    {
        // An isolated tool's arguments cross to its worker process as JSON: the parse checks
        // them as strictly as any tool's and keeps the checked value (see `crate::isolate`).
        let parse = if T::SPEC.policy.isolated { crate::isolate::parse_for_worker::<T> } else { parse_erased::<T> };
        let parse_isolated = crate::isolate::parse_for_worker::<T>;
        RegisteredTool { spec: &T::SPEC, schema: T::input_schema, parse, parse_isolated, handler: T::handler() }
    }
}

/// Typed deserialization of one tool's arguments; generic over the tool only, so every agent
/// that grants it shares one copy.
pub(crate) fn parse_erased<T: Tool>(v: &Value) -> Result<ErasedArgs, String> {
    // A `match`, not `map`/`map_err` closures: this is instantiated once per tool, and every
    // closure is one more function to compile for each.
    match T::parse_args(v) {
        Ok(args) => Ok(ErasedArgs::new(args)),
        Err(e) => Err(e),
    }
}

/// The registry `agent!` generates: a `match` on the tool's position in
/// [`Agent::tools`](agents_core::Agent::tools).
///
/// Sealed (a hand-written impl does not compile), and checked: `Runtime::start` and
/// `Runtime::direct` refuse, once per agent type, an agent whose registry does not produce
/// exactly its `MANIFEST` bytes (see [`verify_registry`]).
pub trait Registry: agents_core::Agent + Sized {
    /// The entry of the tool at `index` in `tools()`.
    fn entry_at(index: usize) -> Option<RegisteredTool<Self>>;
    /// The entry of a granted tool, by name.
    fn entry(name: &str) -> Option<RegisteredTool<Self>> {
        Self::tool_index(name).and_then(Self::entry_at)
    }
}

/// Why a registry is refused: it does not produce exactly its agent's `MANIFEST`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "agent `{agent}` is refused: its registry does not match its `MANIFEST` ({reason}); declare agents only with `agent!`, which builds both from one source"
)]
pub struct RegistryMismatch {
    /// The agent's name.
    pub agent: &'static str,
    /// What differs.
    pub reason: String,
}

/// Checks that `A`'s registry is exactly what its `MANIFEST` states: the manifest rebuilt from
/// the specs the registry runs (each entry's own spec, in `tools()` order, with its handler's
/// tier) has the same bytes as `A::MANIFEST`, and `A::MANIFEST_SHA256` is their SHA-256.
/// The runtime calls this once per agent type before the first run or direct session.
pub fn verify_registry<A: Registry>() -> Result<(), RegistryMismatch> {
    let refuse = |reason: String| Err(RegistryMismatch { agent: A::SPEC.name, reason });
    let tools = A::tools();
    let mut specs: Vec<&'static ToolSpec> = Vec::with_capacity(tools.len());
    for (i, listed) in tools.iter().enumerate() {
        let Some(entry) = A::entry_at(i) else {
            return refuse(format!("no registry entry for the listed tool `{}`", listed.name));
        };
        if entry.spec != *listed {
            return refuse(format!("entry {i} runs `{}` where `tools()` lists `{}`", entry.spec.name, listed.name));
        }
        if entry.tier() != entry.spec.tier {
            return refuse(format!(
                "`{}` is declared {} but its handler is {}",
                entry.spec.name,
                entry.spec.tier,
                entry.tier()
            ));
        }
        specs.push(entry.spec);
    }
    if A::entry_at(tools.len()).is_some() {
        return refuse("the registry has entries beyond the listed tools".to_owned());
    }
    if tools.windows(2).any(|w| w[0].name >= w[1].name) {
        return refuse("`tools()` is not sorted by name without duplicates".to_owned());
    }
    let rebuilt = match agents_core::manifest::Manifest::from_specs(&A::SPEC, &specs) {
        Ok(m) => m.to_canonical_string(),
        Err(e) => return refuse(e.to_string()),
    };
    if rebuilt != A::MANIFEST {
        let at = rebuilt
            .bytes()
            .zip(A::MANIFEST.bytes())
            .position(|(a, b)| a != b)
            .unwrap_or(rebuilt.len().min(A::MANIFEST.len()));
        let near = |s: &str| s.get(at.saturating_sub(40)..(at + 40).min(s.len())).unwrap_or_default().to_owned();
        return refuse(format!(
            "the manifest the registry produces differs from `MANIFEST` at byte {at}: registry `…{}…`, MANIFEST `…{}…`",
            near(&rebuilt),
            near(A::MANIFEST)
        ));
    }
    if agents_core::canonical::sha256_hex(A::MANIFEST.as_bytes()) != A::MANIFEST_SHA256 {
        return refuse("`MANIFEST_SHA256` is not the SHA-256 of `MANIFEST`".to_owned());
    }
    Ok(())
}

/// [`verify_registry`], remembered per agent type for the life of the process.
pub(crate) fn verified_registry<A: Registry>() -> Result<(), RegistryMismatch> {
    use std::collections::HashMap;
    use std::sync::Mutex;
    static VERIFIED: Mutex<Option<HashMap<std::any::TypeId, Result<(), RegistryMismatch>>>> = Mutex::new(None);
    let id = std::any::TypeId::of::<A>();
    if let Some(known) = VERIFIED.lock().unwrap_or_else(|e| e.into_inner()).get_or_insert_with(HashMap::new).get(&id) {
        return known.clone();
    }
    let result = verify_registry::<A>();
    if let Err(e) = &result {
        tracing::error!(agent = A::SPEC.name, "{e}");
    }
    VERIFIED.lock().unwrap_or_else(|e| e.into_inner()).get_or_insert_with(HashMap::new).insert(id, result.clone());
    result
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

/// Converts a handler's return value into the tool result: what a tool's return type must be.
///
/// A tool returns `Result<T, E>` where `T` is [`ToolSuccess`] (`serde::Serialize`) and `E` is
/// [`ToolFailure`] (`Display`). `#[tool]` checks this at the function's return type, so a
/// mistake is reported there, in these words, rather than inside the expansion.
#[diagnostic::on_unimplemented(
    message = "a tool returns `Result<T, E>` where `T: Serialize` and `E: Display`; `{Self}` is not a `Result`",
    label = "a tool cannot return `{Self}`",
    note = "wrap the value: `-> Result<{Self}, String>` and return `Ok(value)`; the error's text is what the model and the person read when the tool fails"
)]
pub trait IntoToolResult {
    /// The conversion.
    fn into_tool_result(self) -> Result<Value, ToolError>;

    /// Boxes a tool's future whose output is `Self` (what `#[tool]` generates calls, at the
    /// tool's return type, so that a return type or a future that is not `Send` is reported
    /// on the user's tokens).
    #[doc(hidden)]
    fn tool_future<'a, F>(future: F) -> ToolFuture<'a>
    where
        F: std::future::Future<Output = Self> + Send + 'a,
        Self: Sized,
    {
        ToolFuture(Box::pin(future))
    }
}

/// What a tool's success value must be: it is sent to the model as JSON, so it implements
/// `serde::Serialize`. Implemented for every such type; the trait exists so the compiler says
/// this in a tool's terms.
#[diagnostic::on_unimplemented(
    message = "a tool's success value is sent to the model as JSON, but `{Self}` does not implement `serde::Serialize`",
    label = "`{Self}` is not `Serialize`",
    note = "derive it on your type: `#[derive(serde::Serialize)]`, or return a type that is (`String`, `serde_json::Value`, ...)"
)]
pub trait ToolSuccess: serde::Serialize {}

#[diagnostic::do_not_recommend]
impl<T: serde::Serialize + ?Sized> ToolSuccess for T {}

/// What a tool's error must be: the model and the person read it as text, so it implements
/// `Display`. Implemented for every such type; the trait exists so the compiler says this in
/// a tool's terms.
#[diagnostic::on_unimplemented(
    message = "a tool's error is shown to the model and the person as text, but `{Self}` does not implement `std::fmt::Display`",
    label = "`{Self}` is not `Display`",
    note = "implement `Display` for your error type (or use `thiserror`), or return `Result<T, String>` and map the error: `.map_err(|e| e.to_string())`"
)]
pub trait ToolFailure: fmt::Display {}

#[diagnostic::do_not_recommend]
impl<T: fmt::Display + ?Sized> ToolFailure for T {}

/// What a tool's parameter type must be: the model sends it as JSON and is told its shape by
/// a JSON schema, so it implements `serde::Deserialize` and `schemars::JsonSchema` (and
/// `Clone` and `Debug`, as the generated arguments type does). Implemented for every such
/// type; the trait exists so the compiler says this at the parameter, in a tool's terms.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a tool parameter: the model sends it as JSON, so it must implement `serde::Deserialize`, `schemars::JsonSchema`, `Clone` and `Debug`",
    label = "not a JSON argument",
    note = "derive them on your type: `#[derive(Clone, Debug, serde::Deserialize, schemars::JsonSchema)]`, or take a type that has them (`String`, `u64`, `Vec<String>`, ...)"
)]
pub trait ToolArgument: Sized {
    /// Reads the field `field` of the arguments' object (`None` for an absent `Option`).
    #[doc(hidden)]
    fn read_field(map: &serde_json::Map<String, Value>, field: &'static str) -> Result<Self, serde_json::Error>;
    /// The parameter's schema, with its description and secret mark, and whether it may be
    /// left out.
    #[doc(hidden)]
    fn field_schema(
        generator: &mut schemars::SchemaGenerator,
        description: &str,
        secret: bool,
    ) -> (schemars::Schema, bool);
    /// `Clone::clone`.
    #[doc(hidden)]
    fn clone_field(&self) -> Self;
    /// `Debug::fmt`.
    #[doc(hidden)]
    fn debug_field(&self) -> &dyn fmt::Debug;
}

#[diagnostic::do_not_recommend]
impl<T> ToolArgument for T
where
    T: serde::de::DeserializeOwned + schemars::JsonSchema + Clone + fmt::Debug,
{
    fn read_field(map: &serde_json::Map<String, Value>, field: &'static str) -> Result<Self, serde_json::Error> {
        crate::__private::arg_field(map, field)
    }

    fn field_schema(
        generator: &mut schemars::SchemaGenerator,
        description: &str,
        secret: bool,
    ) -> (schemars::Schema, bool) {
        let mut schema = generator.subschema_for::<T>();
        if !description.is_empty() {
            schema.insert("description".to_owned(), Value::from(description));
        }
        if secret {
            schema.insert("x-agents-secret".to_owned(), Value::Bool(true));
        }
        (schema, T::_schemars_private_is_option())
    }

    fn clone_field(&self) -> Self {
        self.clone()
    }

    fn debug_field(&self) -> &dyn fmt::Debug {
        self
    }
}

/// What the runtime gives a tool's parameter, rather than the model: the call's context
/// (`&ToolContext<'_>`, `&ToolContext<'_, A>`) and the capability handles (`FsAccess`,
/// `NetAccess`, `EnvAccess`) for the tool's declared policy.
///
/// `#[tool]` passes each such parameter `Supplied::supply(call)`, so the compiler, not the
/// spelling of the type, decides what the parameter gets: the context under a type alias or a
/// renamed import is the context. Sealed: only the runtime's own types are supplied.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not given by the runtime: a tool's parameter is a JSON argument, the context `&ToolContext<'_>` or a capability handle (`FsAccess`, `NetAccess`, `EnvAccess`)",
    label = "taken as what the runtime gives, since it is written `&Name<'_>`",
    note = "a JSON argument is owned, `&T` or `Option<&T>`: take `String`, `u64` or your own `Deserialize` type"
)]
pub trait Supplied<'a>: Sized + supplied::Sealed {
    /// The value for this call.
    #[doc(hidden)]
    fn supply(call: &'a CallContext) -> Self;
}

mod supplied {
    pub trait Sealed {}
    impl<A> Sealed for super::ToolContext<'_, A> {}
    impl Sealed for crate::FsAccess {}
    impl Sealed for crate::NetAccess {}
    impl Sealed for crate::EnvAccess {}
}

impl<'a, A> Supplied<'a> for ToolContext<'a, A> {
    fn supply(call: &'a CallContext) -> Self {
        ToolContext::__new(call)
    }
}

impl Supplied<'_> for crate::FsAccess {
    fn supply(call: &CallContext) -> Self {
        crate::FsAccess::for_spec(call.spec)
    }
}

impl Supplied<'_> for crate::NetAccess {
    fn supply(call: &CallContext) -> Self {
        crate::NetAccess::for_spec(call.spec)
    }
}

impl Supplied<'_> for crate::EnvAccess {
    fn supply(call: &CallContext) -> Self {
        crate::EnvAccess::for_spec(call.spec)
    }
}

/// The last step of `agent!` (it receives the tools' manifest entries); named so because the
/// compiler names it in the note of an error that arises in an agent's expansion.
#[doc(hidden)]
pub use agents_macros::__agent_finish as agent_manifest;

/// What a direct call of a tool function asks for, and never gets: `#[tool]` turns the
/// function into a marker type the runtime calls, so `my_tool(args)` is refused with this
/// trait's message at the call.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is a tool: `#[tool]` made it a type the runtime calls, so it is not called as a function",
    label = "a tool runs only through the runtime",
    note = "grant it in `agent! {{ tools: [...] }}` and let the runtime call it (`Runtime::start`, `Runtime::direct`): it checks the grant, asks a person to confirm an action and audits the call",
    note = "to unit-test its body, move the logic into a plain function that the tool calls and test that, or call the tool through `Runtime::direct` with a scripted provider (and a `Confirmer` for an action tool)"
)]
pub trait NotCalledDirectly<Args> {}

impl<T: ToolSuccess, E: ToolFailure> IntoToolResult for Result<T, E> {
    fn into_tool_result(self) -> Result<Value, ToolError> {
        match self {
            Ok(v) => {
                serde_json::to_value(v).map_err(|e| ToolError::new(format!("the result could not be serialized: {e}")))
            }
            Err(e) => Err(ToolError::new(e.to_string())),
        }
    }
}

#[cfg(test)]
mod witness_tests {
    use super::*;
    use crate::tool as agents_tool;
    use std::sync::atomic::{AtomicUsize, Ordering};

    static RAN: AtomicUsize = AtomicUsize::new(0);

    /// Deletes everything: the body counts its runs.
    ///
    /// # Arguments
    ///
    /// * `n` - returned as it is
    #[crate::tool(permission = public, mutating, title = "Delete everything")]
    async fn delete_everything(n: u64) -> Result<u64, String> {
        RAN.fetch_add(1, Ordering::SeqCst);
        Ok(n)
    }

    fn context(approved: Option<ApprovedCall>) -> CallContext {
        CallContext {
            principal: Arc::new(Principal::new("u1", "org1", "admin")),
            run_id: "run".into(),
            session_id: "session".into(),
            call_id: "call".into(),
            spec: &<delete_everything as Tool>::SPEC,
            invoker: None,
            approved,
            state: AppState::default(),
            imports: None,
            listed_sha256: std::sync::OnceLock::new(),
        }
    }

    fn record(nonce: u8) -> ApprovedCall {
        ApprovedCall { token_id: "t".repeat(32), tool: "delete_everything", nonce: [nonce; 16] }
    }

    fn handler() -> for<'a> fn(&'a CallContext, ErasedArgs) -> ToolFuture<'a> {
        match <delete_everything as agents_tool::Dispatch<()>>::handler() {
            Handler::Action(f) => f,
            other => panic!("expected an action handler, got {other:?}"),
        }
    }

    crate::agent! {
        /// Deletes.
        pub struct Deleter;
        tools: [delete_everything],
    }

    #[tokio::test]
    async fn a_context_invokes_only_what_its_tools_uses_lists() {
        // The calling tool's spec lists nothing under `uses`: even an agent that grants the
        // tool cannot reach it through this context.
        let cx = context(None);
        let r = ToolContext::<Deleter>::__new(&cx).invoke::<delete_everything>(serde_json::json!({ "n": 1 })).await;
        assert!(r.unwrap_err().message.contains("does not list it under `uses`"));
    }

    #[tokio::test]
    async fn a_forged_or_moved_witness_runs_no_handler() {
        let before = RAN.load(Ordering::SeqCst);
        // Forged bytes (as `unsafe { std::mem::zeroed() }` would give), on a call the gate did
        // not approve and on one it did.
        for cx in [context(None), context(Some(record(7)))] {
            let r = <delete_everything as ActionTool>::run_approved(
                &cx,
                DeleteEverythingArgs { n: 1 },
                Approval::forged([0; 16]),
            )
            .await;
            assert!(r.unwrap_err().message.contains("does not belong to this call"));
        }
        // The witness of one approved call, moved to another call of the same tool.
        let (approved, other) = (context(Some(record(7))), context(Some(record(9))));
        let moved = Approval::<delete_everything>::of_call(&approved).unwrap();
        let r = <delete_everything as ActionTool>::run_approved(&other, DeleteEverythingArgs { n: 1 }, moved).await;
        assert!(r.is_err());
        // The registry's handler on a call without the gate's approval record.
        let r = handler()(&context(None), ErasedArgs::new(DeleteEverythingArgs { n: 1 })).await;
        assert!(r.unwrap_err().message.contains("was not approved for this call"));
        assert_eq!(RAN.load(Ordering::SeqCst), before, "a handler ran without this call's approval");
        // The same handler on the call the gate approved runs the body once.
        let r = handler()(&context(Some(record(7))), ErasedArgs::new(DeleteEverythingArgs { n: 3 })).await;
        assert_eq!(r.unwrap(), serde_json::json!(3));
        assert_eq!(RAN.load(Ordering::SeqCst), before + 1);
    }
}
