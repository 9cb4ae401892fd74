//! The typed side of composition: what a node takes and gives ([`Flow`]), a composite
//! ([`Composite`]), and the application's hooks of the combinators (a branch's [`Route`], a
//! loop's [`Stop`], a parallel node's [`Join`], a wrap's [`Step`]).

use super::graph::{Graph, NodeKind};
use crate::agent::Agent;

/// A node of a composite: an agent (every `agent!` type) or a composite (every `composite!`
/// type). Sealed: nothing else is a node.
pub trait Flow: crate::seal::DeclaredFlow + Send + Sync + 'static {
    /// What it takes.
    type Input: Send + 'static;
    /// What it gives.
    type Output: Send + 'static;
    /// How a composite's graph manifest names it: an agent by its name, its manifest's hash
    /// and its capability summary; a composite by its name, its manifest's hash and its graph.
    const NODE: NodeKind;
    /// What it is for, in the words of its doc comment: what a model router reads about it
    /// when it is an arm of a `branch(model, ...)`. Empty unless given.
    const DESCRIPTION: &'static str = "";
}

impl<A: Agent> crate::seal::DeclaredFlow for A {}

impl<A: Agent> Flow for A {
    type Input = A::Input;
    type Output = A::Output;
    const NODE: NodeKind =
        NodeKind::AgentNode { agent: A::SPEC.name, manifest_sha256: A::MANIFEST_SHA256, capabilities: A::CAPABILITIES };
    const DESCRIPTION: &'static str = A::SPEC.description;
}

/// Agents joined by typed combinators: declared with `composite!`, which writes its graph,
/// its manifest and the checks that each node takes what the one before it gives.
///
/// Sealed: a hand-written impl does not compile (it lacks the doc-hidden seal only
/// `composite!` writes).
pub trait Composite: Flow + crate::seal::DeclaredByCompositeMacro {
    /// The graph: every node, every edge.
    const GRAPH: Graph;
    /// The graph manifest: canonical JSON, exactly these bytes (see [`super::text`]).
    const MANIFEST: &'static str;
    /// Lowercase hex SHA-256 of exactly the [`Composite::MANIFEST`] bytes.
    const MANIFEST_SHA256: &'static str;
}

/// A branch's router written in the application's code: the id of the arm (its node id in
/// the graph manifest) that takes `input`; `None`, or an id that is no arm, takes the default
/// (see [`super::arm_for`]).
#[diagnostic::on_unimplemented(
    message = "`{Self}` does not route `{In}`",
    label = "a branch's router must implement `Route<{In}>` for the branch's input",
    note = "implement `Route<{In}>` for `{Self}`: `fn route(input: &{In}) -> Option<&'static str>` names the arm by its node id"
)]
pub trait Route<In>: Send + Sync + 'static {
    /// The arm that takes `input`, by node id.
    fn route(input: &In) -> Option<&'static str>;
}

/// A loop's stop condition on its body's output.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a stop condition on `{T}`",
    label = "a loop's `until` must implement `Stop<{T}>` for its body's output",
    note = "implement `Stop<{T}>` for `{Self}`: `fn stop(output: &{T}) -> bool`"
)]
pub trait Stop<T>: Send + Sync + 'static {
    /// Whether the loop ends with `output`.
    fn stop(output: &T) -> bool;
}

/// How a parallel node's members failed or answered, for its join.
pub type MemberResult<T> = Result<T, String>;

/// A parallel node's join: its members' outputs (in the order they are declared) into one.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a join",
    label = "a parallel node's `join` must implement `Join`",
    note = "implement `Join` for `{Self}`, with `Item` the members' output type"
)]
pub trait Join: Send + Sync + 'static {
    /// The members' output.
    type Item;
    /// The node's output.
    type Output: Send + 'static;
    /// One output from the members' results (each member's failure as its message, when the
    /// node collects failures).
    fn join(items: Vec<MemberResult<Self::Item>>) -> Result<Self::Output, String>;
}

/// A step of a wrap: runs on the value before (on the input) or after (on the output) the
/// inner node, and may refuse it.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a step on `{T}`",
    label = "a wrap's steps must implement `Step<{T}>`: `before` on its input, `after` on its output",
    note = "implement `Step<{T}>` for `{Self}`: `fn step(value: {T}) -> Result<{T}, String>`"
)]
pub trait Step<T>: Send + Sync + 'static {
    /// The value, passed on or changed, or a refusal.
    fn step(value: T) -> Result<T, String>;
}
