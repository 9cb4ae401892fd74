//! The canonical text of a composite's graph manifest, written by const evaluation (keys
//! sorted, no whitespace, lists in byte order: the rules of [`crate::canonical`]), and the
//! checks a graph passes before it is written.

use super::graph::{Edge, Graph, List, Node, NodeKind, Reach};
use crate::constant::{Writer, cmp, eq};
use core::cmp::Ordering;

/// The `format` of a composite manifest.
pub const FORMAT: &str = "agents.composite-manifest";
/// The `version` of the format this crate writes.
pub const VERSION: u64 = 1;

/// Writes the manifest of `graph`. Panics (a compile error in a const) if [`check`] fails.
pub const fn write(w: &mut Writer<'_>, graph: &Graph) {
    check(graph);
    w.raw("{");
    w.key("capabilities");
    capabilities(w, graph);
    w.raw(",");
    w.key("composite");
    composite(w, graph);
    w.raw(",");
    w.key("edges");
    edges(w, graph);
    w.raw(",");
    w.key("format");
    w.json_string(FORMAT);
    w.raw(",");
    w.key("nodes");
    nodes(w, graph);
    w.raw(",");
    w.key("version");
    w.number(VERSION);
    w.raw("}");
}

/// Checks a graph: node ids unique and not empty, every edge between two of its nodes, the
/// entry one of them, no edge twice. Panics with what is wrong (a compile error in a const).
pub const fn check(graph: &Graph) {
    let nodes = graph.nodes;
    let mut i = 0;
    while i < nodes.len() {
        assert!(!nodes[i].id.is_empty(), "a composite's node has an empty id");
        let mut j = i + 1;
        while j < nodes.len() {
            assert!(!eq(nodes[i].id, nodes[j].id), "two nodes of a composite have one id");
            j += 1;
        }
        i += 1;
    }
    assert!(node(graph, graph.entry).is_some(), "a composite's entry is none of its nodes");
    let mut e = 0;
    while e < graph.edges.len() {
        let edge = graph.edges[e];
        assert!(node(graph, edge.from).is_some(), "an edge of a composite leaves no node of it");
        assert!(node(graph, edge.to).is_some(), "an edge of a composite reaches no node of it");
        let mut f = e + 1;
        while f < graph.edges.len() {
            assert!(!matches!(edge_cmp(&edge, &graph.edges[f]), Ordering::Equal), "a composite has one edge twice");
            f += 1;
        }
        e += 1;
    }
}

/// The node of `graph` whose id is `id`.
pub const fn node(graph: &Graph, id: &str) -> Option<&'static Node> {
    let nodes = graph.nodes;
    let mut i = 0;
    while i < nodes.len() {
        if eq(nodes[i].id, id) {
            return Some(&nodes[i]);
        }
        i += 1;
    }
    None
}

/// The most dangerous tier among every tool of `graph`, nested composites included.
pub const fn reaches(graph: &Graph) -> Reach {
    let mut reach = Reach::None;
    let mut i = 0;
    while i < graph.nodes.len() {
        reach = match graph.nodes[i].kind {
            NodeKind::AgentNode { capabilities, .. } => reach.max(capabilities.reaches),
            NodeKind::CompositeNode { graph: inner, .. } => reach.max(reaches(inner)),
            _ => reach,
        };
        i += 1;
    }
    reach
}

const fn composite(w: &mut Writer<'_>, graph: &Graph) {
    w.raw("{");
    w.key("description");
    w.json_string(graph.description);
    w.raw(",");
    w.key("entry");
    w.json_string(graph.entry);
    w.raw(",");
    w.key("input");
    w.json_string(graph.input);
    w.raw(",");
    w.key("name");
    w.json_string(graph.name);
    w.raw(",");
    w.key("output");
    w.json_string(graph.output);
    w.raw("}");
}

/// The union of every node's capabilities: `{"actions":[..],"handoffs":[..],...}`.
const fn capabilities(w: &mut Writer<'_>, graph: &Graph) {
    w.raw("{");
    let mut l = 0;
    while l < List::ALL.len() {
        if l > 0 {
            w.raw(",");
        }
        w.key(List::ALL[l].key());
        union(w, graph, List::ALL[l]);
        l += 1;
    }
    w.raw("}");
}

/// One list of the union, sorted, without repeats: the smallest name after the last written,
/// again and again (graphs are small; nothing to allocate in const).
const fn union(w: &mut Writer<'_>, graph: &Graph, list: List) {
    w.raw("[");
    let mut last: Option<&str> = None;
    while let Some(next) = smallest_after(graph, list, last) {
        if last.is_some() {
            w.raw(",");
        }
        w.json_string(next);
        last = Some(next);
    }
    w.raw("]");
}

/// The smallest name of `list` in `graph` (nested composites included) after `last`.
const fn smallest_after(graph: &Graph, list: List, last: Option<&str>) -> Option<&'static str> {
    let mut best: Option<&'static str> = None;
    let mut i = 0;
    while i < graph.nodes.len() {
        let found = match graph.nodes[i].kind {
            NodeKind::AgentNode { capabilities, .. } => smallest_in(capabilities.list(list), last),
            NodeKind::CompositeNode { graph: inner, .. } => smallest_after(inner, list, last),
            _ => None,
        };
        best = smaller(best, found);
        i += 1;
    }
    best
}

const fn smallest_in(names: &'static [&'static str], last: Option<&str>) -> Option<&'static str> {
    let mut best: Option<&'static str> = None;
    let mut i = 0;
    while i < names.len() {
        let after = match last {
            Some(last) => matches!(cmp(names[i], last), Ordering::Greater),
            None => true,
        };
        if after {
            best = smaller(best, Some(names[i]));
        }
        i += 1;
    }
    best
}

const fn smaller(a: Option<&'static str>, b: Option<&'static str>) -> Option<&'static str> {
    match (a, b) {
        (Some(x), Some(y)) => match cmp(y, x) {
            Ordering::Less => b,
            _ => a,
        },
        (None, _) => b,
        (_, None) => a,
    }
}

/// The nodes, by id.
const fn nodes(w: &mut Writer<'_>, graph: &Graph) {
    w.raw("[");
    let mut last: Option<&str> = None;
    loop {
        let mut best: Option<&Node> = None;
        let mut i = 0;
        while i < graph.nodes.len() {
            let candidate = &graph.nodes[i];
            let after = match last {
                Some(last) => matches!(cmp(candidate.id, last), Ordering::Greater),
                None => true,
            };
            let before_best = match best {
                Some(b) => matches!(cmp(candidate.id, b.id), Ordering::Less),
                None => true,
            };
            if after && before_best {
                best = Some(candidate);
            }
            i += 1;
        }
        let Some(next) = best else { break };
        if last.is_some() {
            w.raw(",");
        }
        node_text(w, next);
        last = Some(next.id);
    }
    w.raw("]");
}

/// One node: its keys in byte order.
const fn node_text(w: &mut Writer<'_>, node: &Node) {
    w.raw("{");
    match node.kind {
        NodeKind::AgentNode { agent, manifest_sha256, capabilities } => {
            leaf(w, node, "agent", agent, manifest_sha256, capabilities.reaches, &Source::Agent(capabilities))
        }
        NodeKind::CompositeNode { composite, manifest_sha256, graph } => {
            leaf(w, node, "composite", composite, manifest_sha256, reaches(graph), &Source::Graph(graph))
        }
        NodeKind::Branch { router } => {
            id_kind(w, node);
            w.raw(",");
            w.key("router");
            w.json_string(match router {
                super::graph::Router::Code => "code",
                super::graph::Router::Model => "model",
            });
        }
        NodeKind::Loop { max_iterations } => {
            id_kind(w, node);
            w.raw(",");
            w.key("max_iterations");
            w.number(max_iterations as u64);
        }
        NodeKind::Parallel { join, on_failure } => {
            w.key("id");
            w.json_string(node.id);
            w.raw(",");
            w.key("join");
            w.json_string(join);
            w.raw(",");
            w.key("kind");
            w.json_string(node.kind.as_str());
            w.raw(",");
            w.key("on_failure");
            w.json_string(match on_failure {
                super::graph::OnFailure::FailFast => "fail_fast",
                super::graph::OnFailure::Collect => "collect",
            });
        }
        NodeKind::Forum { rounds } => {
            id_kind(w, node);
            w.raw(",");
            w.key("rounds");
            w.number(rounds as u64);
        }
        NodeKind::Wrap { steps } => {
            id_kind(w, node);
            w.raw(",");
            w.key("steps");
            w.raw("[");
            let mut i = 0;
            while i < steps.len() {
                if i > 0 {
                    w.raw(",");
                }
                w.json_string(steps[i]);
                i += 1;
            }
            w.raw("]");
        }
    }
    w.raw("}");
}

const fn id_kind(w: &mut Writer<'_>, node: &Node) {
    w.key("id");
    w.json_string(node.id);
    w.raw(",");
    w.key("kind");
    w.json_string(node.kind.as_str());
}

/// Where a leaf's lists come from: an agent's summary, or a nested composite's union.
enum Source {
    Agent(super::graph::Capabilities),
    Graph(&'static Graph),
}

/// An agent or nested composite node: `actions`, `agent`|`composite`, `handoffs`, `id`,
/// `kind`, `manifest_sha256`, `permissions`, `reaches`, `tools`.
const fn leaf(w: &mut Writer<'_>, node: &Node, key: &str, name: &str, sha: &str, reach: Reach, source: &Source) {
    list(w, source, List::Actions);
    w.raw(",");
    w.key(key);
    w.json_string(name);
    w.raw(",");
    list(w, source, List::Handoffs);
    w.raw(",");
    id_kind(w, node);
    w.raw(",");
    w.key("manifest_sha256");
    w.json_string(sha);
    w.raw(",");
    list(w, source, List::Permissions);
    w.raw(",");
    w.key("reaches");
    w.json_string(reach.as_str());
    w.raw(",");
    list(w, source, List::Tools);
}

const fn list(w: &mut Writer<'_>, source: &Source, which: List) {
    w.key(which.key());
    match source {
        Source::Agent(capabilities) => {
            w.raw("[");
            let mut last: Option<&str> = None;
            while let Some(next) = smallest_in(capabilities.list(which), last) {
                if last.is_some() {
                    w.raw(",");
                }
                w.json_string(next);
                last = Some(next);
            }
            w.raw("]");
        }
        Source::Graph(graph) => union(w, graph, which),
    }
}

/// The edges, by `from`, then `to`, then `kind`.
const fn edges(w: &mut Writer<'_>, graph: &Graph) {
    w.raw("[");
    let mut last: Option<&Edge> = None;
    loop {
        let mut best: Option<&Edge> = None;
        let mut i = 0;
        while i < graph.edges.len() {
            let candidate = &graph.edges[i];
            let after = match last {
                Some(last) => matches!(edge_cmp(candidate, last), Ordering::Greater),
                None => true,
            };
            let before_best = match best {
                Some(b) => matches!(edge_cmp(candidate, b), Ordering::Less),
                None => true,
            };
            if after && before_best {
                best = Some(candidate);
            }
            i += 1;
        }
        let Some(next) = best else { break };
        if last.is_some() {
            w.raw(",");
        }
        w.raw("{");
        w.key("from");
        w.json_string(next.from);
        w.raw(",");
        w.key("kind");
        w.json_string(next.kind.as_str());
        w.raw(",");
        w.key("to");
        w.json_string(next.to);
        w.raw("}");
        last = Some(next);
    }
    w.raw("]");
}

const fn edge_cmp(a: &Edge, b: &Edge) -> Ordering {
    match cmp(a.from, b.from) {
        Ordering::Equal => match cmp(a.to, b.to) {
            Ordering::Equal => cmp(a.kind.as_str(), b.kind.as_str()),
            other => other,
        },
        other => other,
    }
}
