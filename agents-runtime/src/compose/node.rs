//! How a node runs. A node's path names an agent or a composite, and `composite!` cannot tell
//! which, so it calls [`RunNode`] on either: agents have it by the one impl below (over every
//! `agent!` type, which implements `Registry`), and `composite!` writes it for each composite
//! it declares, next to the composite's plan ([`RunComposite`]). The two never overlap: a
//! composite is declared in its own crate as a type no `agent!` declares, so the compiler
//! sees it is no `Registry` (the same reasoning the core's `Flow` impls rest on).

use super::tree::{NodeFailure, Tree};
use crate::BoxFuture;
use crate::run::{ResumedCall, Runtime};
use crate::store::StoreError;
use crate::tool::Registry;
use agents_core::compose::{Composite, Flow};

/// A node of a run tree: runs as node `id` of `tree`. Not for applications: `agent!` types
/// have it, and `composite!` writes it.
#[doc(hidden)]
pub trait RunNode: Flow {
    /// Runs the node on `input`.
    fn run_node(
        tree: Tree,
        id: &'static str,
        input: Self::Input,
    ) -> BoxFuture<'static, Result<Self::Output, NodeFailure>>;

    /// Settles the node's orphaned proposals (an agent's: [`Runtime::resume_orphaned`]; a
    /// composite's: each of its nodes').
    fn resume_node(runtime: &Runtime) -> Resumption<'_>;
}

/// What a resumption of nodes settled (see [`Runtime::resume_orphaned_composite`]).
#[doc(hidden)]
pub type Resumption<'a> = BoxFuture<'a, Result<Vec<ResumedCall>, StoreError>>;

impl<A: Registry> RunNode for A {
    fn run_node(tree: Tree, id: &'static str, input: A::Input) -> BoxFuture<'static, Result<A::Output, NodeFailure>> {
        Box::pin(async move { tree.run_agent::<A>(id, input).await })
    }

    fn resume_node(runtime: &Runtime) -> Resumption<'_> {
        Box::pin(runtime.resume_orphaned::<A>())
    }
}

/// A composite's run plan, written by `composite!` from its flow: which node runs when, on
/// what. Sealed by [`Composite`] (only `composite!` implements it).
#[doc(hidden)]
pub trait RunComposite: Composite {
    /// Runs the composite's flow on `input`, its nodes under `tree`.
    fn run(tree: Tree, input: Self::Input) -> BoxFuture<'static, Result<Self::Output, NodeFailure>>;

    /// Settles the orphaned proposals of every agent node, nested composites' included.
    fn resume_nodes(runtime: &Runtime) -> Resumption<'_>;
}
