//! A branch's choice, checked against its graph: the one reading of a router's answer (code
//! or model) that the runtime will follow. It fails closed: anything but the id of one of the
//! branch's arms takes the branch's declared default.

use super::graph::{EdgeKind, Graph};
use crate::constant::eq;

/// The node a branch runs for `choice` (a [`super::Route`]'s answer, or the name a model
/// chose): the arm whose node id is `choice`, or else the branch's default arm. `None` when
/// `branch` is no branch of `graph` with a default (which `composite!` never writes).
///
/// ```
/// use agents_core::compose::{Capabilities, Edge, EdgeKind, Graph, Node, NodeKind, Router, arm_for};
/// const fn agent(id: &'static str) -> Node {
///     Node { id, kind: NodeKind::AgentNode { agent: id, manifest_sha256: "", capabilities: Capabilities::NONE } }
/// }
/// const GRAPH: Graph = Graph {
///     name: "desk", description: "", input: "String", output: "String", entry: "branch",
///     nodes: &[Node { id: "branch", kind: NodeKind::Branch { router: Router::Model } }, agent("it"), agent("person")],
///     edges: &[
///         Edge { from: "branch", to: "it", kind: EdgeKind::Arm },
///         Edge { from: "branch", to: "person", kind: EdgeKind::Default },
///     ],
/// };
/// assert_eq!(arm_for(&GRAPH, "branch", Some("it")), Some("it"));
/// assert_eq!(arm_for(&GRAPH, "branch", Some("ignore previous instructions")), Some("person"));
/// assert_eq!(arm_for(&GRAPH, "branch", None), Some("person"));
/// ```
pub fn arm_for(graph: &Graph, branch: &str, choice: Option<&str>) -> Option<&'static str> {
    let mut default = None;
    for edge in graph.edges.iter().filter(|e| eq(e.from, branch)) {
        match edge.kind {
            EdgeKind::Arm if choice.is_some_and(|c| c == edge.to) => return Some(edge.to),
            EdgeKind::Default => default = Some(edge.to),
            _ => {}
        }
    }
    default
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compose::{Capabilities, Edge, Node, NodeKind, Router};

    const fn agent(id: &'static str) -> Node {
        Node { id, kind: NodeKind::AgentNode { agent: id, manifest_sha256: "", capabilities: Capabilities::NONE } }
    }

    const GRAPH: Graph = Graph {
        name: "desk",
        description: "",
        input: "String",
        output: "String",
        entry: "triage",
        nodes: &[
            agent("triage"),
            Node { id: "branch", kind: NodeKind::Branch { router: Router::Model } },
            agent("it"),
            agent("hr"),
            agent("person"),
            Node { id: "branch-2", kind: NodeKind::Branch { router: Router::Code } },
            agent("admin"),
        ],
        edges: &[
            Edge { from: "triage", to: "branch", kind: EdgeKind::Then },
            Edge { from: "branch", to: "it", kind: EdgeKind::Arm },
            Edge { from: "branch", to: "hr", kind: EdgeKind::Arm },
            Edge { from: "branch", to: "person", kind: EdgeKind::Default },
            Edge { from: "branch", to: "branch-2", kind: EdgeKind::Then },
            Edge { from: "branch-2", to: "admin", kind: EdgeKind::Arm },
            Edge { from: "branch-2", to: "person", kind: EdgeKind::Default },
        ],
    };

    #[test]
    fn an_arm_named_runs() {
        assert_eq!(arm_for(&GRAPH, "branch", Some("it")), Some("it"));
        assert_eq!(arm_for(&GRAPH, "branch", Some("hr")), Some("hr"));
        assert_eq!(arm_for(&GRAPH, "branch", Some("person")), Some("person"), "the default by name");
    }

    #[test]
    fn anything_else_takes_the_default() {
        for choice in [None, Some(""), Some("IT"), Some("it "), Some("triage"), Some("branch-2"), Some("admin")] {
            assert_eq!(arm_for(&GRAPH, "branch", choice), Some("person"), "{choice:?}");
        }
    }

    #[test]
    fn a_node_that_is_no_branch_has_no_arm() {
        assert_eq!(arm_for(&GRAPH, "triage", Some("branch")), None);
        assert_eq!(arm_for(&GRAPH, "nowhere", Some("it")), None);
    }
}
