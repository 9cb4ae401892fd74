//! What the runtime knows about one call ([`CallContext`]), what a tool's body sees of it
//! ([`ToolContext`]), the application's state, and what the runtime supplies to a tool's
//! parameters rather than the model ([`Supplied`]).

use super::error::ToolError;
use crate::BoxFuture;
use agents_core::{Principal, Tool, ToolSpec};
use serde_json::Value;
use std::any::Any;
use std::fmt;
use std::marker::PhantomData;
use std::sync::Arc;

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
