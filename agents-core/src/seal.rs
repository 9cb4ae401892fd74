//! Seals of the traits the macros implement. Not a public API.
//!
//! `Grants`, `WithinCeiling`, `FitsCeilingOf`, `Agent` (here) and `Registry`, `Dispatch`, `Tool`, `ReadTool`,
//! `ActionTool`, `HandoffTool` (in `agents-runtime`) are implemented by code that `agent!` and
//! `#[tool]` generate in the user's crate, so they cannot be sealed by a private supertrait:
//! the generated code must be able to name it. Each has instead a supertrait from this
//! doc-hidden module, which only the macros implement. A hand-written impl of the public trait
//! then fails to compile with a message that says which macro to use. Code that names this
//! module steps outside the guarantee, as `unsafe` code does; what the runtime still checks
//! against such code is listed on each public trait.

/// Seal of `Grants<T>`: implemented only by `agent!`.
#[diagnostic::on_unimplemented(
    message = "`{Self}` may grant `{T}` only through `agent!`",
    label = "a hand-written `Grants` impl: grants are declared, not implemented",
    note = "add `{T}` to `tools: [...]` in the `agent!` that declares `{Self}`; the grant then appears in the manifest reviewers read"
)]
pub trait GrantedByAgentMacro<T> {}

/// Seal of `WithinCeiling<P>`: implemented only by `agent!`.
#[diagnostic::on_unimplemented(
    message = "the ceiling of `{Self}` is declared only through `agent!`",
    label = "a hand-written `WithinCeiling` impl",
    note = "list the permission `{P}` in `ceiling: [...]` of the `agent!` that declares `{Self}`; reviewers see the ceiling in the manifest"
)]
pub trait CeilingByAgentMacro<P> {}

/// Seal of `FitsCeilingOf<C>`: implemented only by `agent!`.
///
/// `agent!` implements it for each agent with the bounds of its `FitsCeilingOf` impl. With
/// that impl alone, the compiler would answer a hand-written `FitsCeilingOf` impl for an
/// agent that does not fit with the message of the first bound that fails (a tool's
/// permission outside the ceiling), which speaks of a tool where there is none. The impl below
/// for [`Unimplementable`] types, which no type is, gives the compiler a second candidate, so
/// that when neither applies it reports this trait's own message.
#[diagnostic::on_unimplemented(
    message = "`FitsCeilingOf` is sealed: only `agent!` implements it, so whether `{Self}` fits within the ceiling of `{C}` is decided by `agent!` alone",
    label = "a hand-written `FitsCeilingOf` impl",
    note = "`agent!` writes this impl for each agent, bounded by the permissions of its tools, of the agents it grants and of the agents its handoff tools hand the run to; remove this impl, and grant `{Self}` with `agents: [...]` in the `agent!` of `{C}` or hand off to it with `#[tool(handoff = {Self})]`"
)]
pub trait FitsByAgentMacro<C> {}

impl<S: Unimplementable, C> FitsByAgentMacro<C> for S {}

/// Implemented by no type, and by no crate but this one (its supertrait is private): the
/// bound of the second [`FitsByAgentMacro`] impl (see there), which never applies.
pub trait Unimplementable: private::Sealed {}

mod private {
    /// The supertrait no other crate can name.
    pub trait Sealed {}
}

/// Seal of `Agent` and `Registry`: implemented only by `agent!`.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not declared with `agent!`",
    label = "a hand-written agent: its manifest would not be the registry that runs",
    note = "declare the agent with `agent! {{ /// what it is for\n pub struct {Self}; tools: [...], }}`: it writes `Agent`, `Registry`, the grants and `MANIFEST` from one source"
)]
pub trait DeclaredByAgentMacro {}

/// Seal of `Tool` and `Dispatch`: implemented only by `#[tool]`.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not declared with `#[tool]`",
    label = "a hand-written tool trait impl",
    note = "annotate a function with `#[tool(permission = ...)]`: it writes the tool's spec, its arguments and its execution from one source"
)]
pub trait DeclaredByToolMacro {
    /// The first 128 bits of the SHA-256 of the tool's manifest entry as `#[tool]` wrote it:
    /// `agent!` compares it with the entry it received through the tool's macro path, so the
    /// path it resolves as a macro and the one it resolves as a type name one declaration.
    const MANIFEST_ENTRY: u128;
}

/// Seal of `ReadTool`: implemented by `#[tool]` for read tools only.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a read tool declared with `#[tool]`",
    label = "a hand-written `ReadTool` impl",
    note = "`#[tool]` makes a tool without `mutating` or `handoff` a read tool; an action tool runs only with a person's approval, a handoff tool never runs"
)]
pub trait ReadByToolMacro {}

/// Seal of `ActionTool`: implemented by `#[tool]` for `mutating` tools only.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not an action tool declared with `#[tool(mutating, ...)]`",
    label = "a hand-written `ActionTool` impl",
    note = "`#[tool(mutating, title = \"...\")]` makes an action tool; it runs only after a person approved the exact call"
)]
pub trait ActionByToolMacro {}

/// Seal of `HandoffTool`: implemented by `#[tool]` for `handoff` tools only.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a handoff tool declared with `#[tool(handoff, ...)]`",
    label = "a hand-written `HandoffTool` impl"
)]
pub trait HandoffByToolMacro {}

/// Seal of `Dispatch<A>`: implemented by `#[tool]` with the same bounds as its `Dispatch`
/// impl, so that no hand-written `Dispatch` impl can give a tool another handler.
#[diagnostic::on_unimplemented(
    message = "the handler of `{Self}` for `{A}` is written only by `#[tool]`",
    label = "a hand-written `Dispatch` impl",
    note = "a tool's handler is its own body, run by the runtime; if `{Self}` invokes tools `{A}` does not grant, add them to the agent's `tools`"
)]
pub trait DispatchedByToolMacro<A> {}

/// Seal of `compose::Flow`: implemented for every agent and, by `composite!`, for each
/// composite.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is neither an agent nor a composite",
    label = "not an agent (`agent!`) or a composite (`composite!`)",
    note = "a composite's nodes are agents declared with `agent!` and composites declared with `composite!`"
)]
pub trait DeclaredFlow {}

/// Seal of `compose::Composite`: implemented only by `composite!`.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not declared with `composite!`",
    label = "a hand-written composite: its graph manifest would not be the nodes that run",
    note = "declare it with `composite! {{ /// what it is for\n pub struct {Self}: Input -> Output = then(A, B); }}`: it writes the graph, its manifest and the type checks from one source"
)]
pub trait DeclaredByCompositeMacro {}
