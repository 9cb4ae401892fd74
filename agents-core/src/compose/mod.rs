//! Composition of agents: the graph of a composite and its manifest.
//!
//! A composite joins agents (and other composites) with typed combinators (`then`,
//! `branch`, `loop`, `parallel`, `forum`, `wrap`). Its [`Graph`] is a const value, so its
//! manifest is derived without running anything: canonical JSON naming each node (an agent
//! by its name, its `MANIFEST_SHA256` and its capability summary, never its whole manifest),
//! each edge with its kind, and the union of every node's capabilities. Any change of a
//! node's manifest changes the composite's hash.
//!
//! ```
//! use agents_core::compose::{Capabilities, Edge, EdgeKind, Graph, Node, NodeKind, Reach, Router};
//!
//! const TRIAGE: Capabilities = Capabilities {
//!     actions: &[], handoffs: &[], permissions: &["tickets.read"], tools: &["read_ticket"],
//!     reaches: Reach::Read, expose_mcp: &[],
//! };
//! const GRAPH: Graph = Graph {
//!     name: "helpdesk", description: "Triage, then one specialist.",
//!     input: "Ticket", output: "Answer", entry: "triage",
//!     nodes: &[
//!         Node { id: "triage", kind: NodeKind::AgentNode { agent: "triage", manifest_sha256: "ab", capabilities: TRIAGE } },
//!         Node { id: "route", kind: NodeKind::Branch { router: Router::Code } },
//!     ],
//!     edges: &[Edge { from: "triage", to: "route", kind: EdgeKind::Then }],
//! };
//! const MANIFEST: &str = agents_core::composite_manifest!(&GRAPH);
//! assert!(MANIFEST.starts_with(r#"{"capabilities":{"actions":[],"handoffs":[],"permissions":["tickets.read"],"tools":["read_ticket"]}"#));
//! ```

pub mod baseline;
#[doc(hidden)]
pub mod check;
mod flow;
mod graph;
mod route;
mod summary;
pub mod text;

pub use flow::{Composite, Flow, Join, MemberResult, Route, Step, Stop};
pub use graph::{Capabilities, Edge, EdgeKind, Graph, Node, NodeKind, OnFailure, Reach, Router};
pub use route::arm_for;
pub use summary::CapabilityLists;

/// The canonical text of a composite manifest for a const [`Graph`] expression (no generic
/// parameter), as a `&'static str`; a graph that fails [`text::check`] does not compile.
#[macro_export]
macro_rules! composite_manifest {
    ($graph:expr) => {
        $crate::const_text!($crate::compose::text::write, $graph)
    };
}

#[cfg(test)]
mod tests;
