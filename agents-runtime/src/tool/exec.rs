//! The per-tier execution traits `#[tool]` implements, and the handler the registry runs.

use super::approval::Approval;
use super::args::{ErasedArgs, ParseArgs, parse_erased, parse_keeping_json};
use super::context::CallContext;
use super::future::ToolFuture;
use agents_core::Tool;
use std::fmt;
use std::marker::PhantomData;

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
    /// The registry's parse of the tool's arguments, as strict as its typed parse. `#[tool]`
    /// sets it: an isolated tool's keeps the checked JSON, which crosses to its worker process.
    #[doc(hidden)]
    const PARSE: ParseArgs = parse_erased::<Self>;
    /// The parse of the tool's arguments when a runtime's setting runs it in a worker process
    /// although its code does not mark it `isolated`: it keeps the checked JSON.
    #[doc(hidden)]
    const PARSE_KEEPING_JSON: ParseArgs = parse_keeping_json::<Self>;
    /// The handler.
    fn handler() -> Handler<A>;
}

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
