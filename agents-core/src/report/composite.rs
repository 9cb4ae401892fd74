//! The report of a composite's graph manifest: the graph drawn left to right in layers (a
//! node's layer is its longest path from a node no edge enters), each node filled by the most
//! dangerous tier a run entering it may reach, each edge labelled by its kind; with a previous
//! manifest, the classified changes and the nodes they widened outlined.

use super::graph::{COL_GAP, Edge, GAP_Y, LEFT, NODE_H, Node, NodeText, Px, TOP, Whole, edge, node_width, tier_fill};
use super::{CSP, LINKED_CSP, code_spans};
use crate::Tier;
use crate::diff::{ChangeKind, ManifestDiff, Rule};
use crate::graph::{GraphManifest, NodeKind, Reaches};
use askama::Template;
use std::collections::{BTreeMap, BTreeSet};

/// What goes into a composite's report.
#[derive(Debug, Clone, Copy)]
pub struct CompositeReport<'a> {
    /// The graph manifest shown.
    pub graph: &'a GraphManifest,
    /// Where it was read from.
    pub source: &'a str,
    /// Its canonical SHA-256.
    pub sha256: &'a str,
    /// The changes from a previous graph manifest, and that manifest's name.
    pub diff: Option<(&'a ManifestDiff, &'a str)>,
    /// `None`: the style sheet inline. `Some(href)`: a link to [`super::STYLE`] at `href`.
    pub stylesheet: Option<&'a str>,
}

impl<'a> CompositeReport<'a> {
    /// A self-contained report of `graph`: no diff, the style sheet inline.
    pub fn new(graph: &'a GraphManifest, source: &'a str, sha256: &'a str) -> Self {
        CompositeReport { graph, source, sha256, diff: None, stylesheet: None }
    }
}

#[derive(Template)]
#[template(path = "composite.html")]
struct Page<'a> {
    csp: &'static str,
    stylesheet: Option<&'a str>,
    g: &'a GraphManifest,
    source: &'a str,
    sha256: &'a str,
    changes: Option<Changes<'a>>,
    drawing: Drawing<'a>,
    rows: Vec<NodeRow<'a>>,
}

struct Changes<'a> {
    old_name: &'a str,
    summary: String,
    widening: usize,
    rows: Vec<ChangeRow<'a>>,
}

/// A change's kind, where it is, and its reason in pieces (`true`: a piece quoted in
/// backticks, shown as code).
type ChangeRow<'a> = (&'static str, String, Vec<(&'a str, bool)>);

struct Drawing<'a> {
    width: Whole,
    height: Whole,
    node_h: f64,
    edges: Vec<(Edge, Label)>,
    nodes: Vec<Drawn<'a>>,
}

struct Label {
    x: Px,
    y: Px,
    text: &'static str,
    title: String,
}

struct Drawn<'a> {
    text: NodeText<'a>,
    kind: &'static str,
    reaches: &'static str,
    fill: &'static str,
    color: &'static str,
    widened: bool,
}

struct NodeRow<'a> {
    id: &'a str,
    kind: &'static str,
    details: String,
    reaches: Reaches,
    widened: bool,
}

/// The nodes and the edges (as `from -kind-> to`) a diff widened.
#[derive(Default)]
struct Widened<'a> {
    nodes: BTreeSet<&'a str>,
    edges: BTreeSet<&'a str>,
}

impl<'a> Widened<'a> {
    fn of(d: &'a ManifestDiff) -> Self {
        let mut w = Widened::default();
        for c in d.of_kind(ChangeKind::Widening) {
            if c.rule == Rule::EdgeAdded {
                w.edges.extend(c.new.as_deref());
            } else {
                w.nodes.extend(c.node.as_deref());
            }
        }
        w
    }
}

/// Builds the whole HTML document of a composite's report.
pub fn render_composite(r: &CompositeReport<'_>) -> String {
    let widened = r.diff.map(|(d, _)| Widened::of(d)).unwrap_or_default();
    let rows = r
        .graph
        .nodes
        .iter()
        .map(|n| NodeRow {
            id: &n.id,
            kind: n.kind.name(),
            details: details(&n.kind),
            reaches: r.graph.reach_from(&n.id),
            widened: widened.nodes.contains(n.id.as_str()),
        })
        .collect();
    let page = Page {
        csp: if r.stylesheet.is_some() { LINKED_CSP } else { CSP },
        stylesheet: r.stylesheet,
        g: r.graph,
        source: r.source,
        sha256: r.sha256,
        changes: r.diff.map(|(d, old_name)| Changes {
            old_name,
            summary: d.summary(),
            widening: d.count(ChangeKind::Widening),
            rows: d.changes.iter().map(|c| (c.kind.as_str(), c.location(), code_spans(&c.reason))).collect(),
        }),
        drawing: drawing(r.graph, &widened),
        rows,
    };
    page.render().expect("the template renders plain values")
}

/// A node's second line, and its details in the table.
fn details(kind: &NodeKind) -> String {
    match kind {
        NodeKind::Agent(a) => format!("{} · reaches: {}", a.agent, a.reaches),
        NodeKind::Branch { router } => format!("router: {}", router.as_str()),
        NodeKind::Loop { max_iterations } => format!("at most {max_iterations} iteration(s)"),
        NodeKind::Parallel { join, on_failure } => format!("join {join} · on failure {}", on_failure.as_str()),
        NodeKind::Forum { rounds } => format!("{rounds} round(s)"),
        NodeKind::Wrap { steps } => format!("steps: {}", steps.join(", ")),
    }
}

/// Each node's layer: its longest path from a node no edge enters (the graph is acyclic).
fn layers(g: &GraphManifest) -> BTreeMap<&str, usize> {
    let mut layer: BTreeMap<&str, usize> = g.nodes.iter().map(|n| (n.id.as_str(), 0)).collect();
    for _ in 0..g.nodes.len() {
        let mut moved = false;
        for e in &g.edges {
            let next = layer[e.from.as_str()] + 1;
            if layer[e.to.as_str()] < next {
                layer.insert(e.to.as_str(), next);
                moved = true;
            }
        }
        if !moved {
            break;
        }
    }
    layer
}

fn reach_fill(r: Reaches) -> (&'static str, &'static str) {
    match r {
        Reaches::None => ("#f1f5f9", "#0f172a"),
        Reaches::Read => tier_fill(Tier::Read),
        Reaches::Action => tier_fill(Tier::Action),
        Reaches::Handoff => tier_fill(Tier::Handoff),
    }
}

fn drawing<'a>(g: &'a GraphManifest, widened: &Widened<'_>) -> Drawing<'a> {
    let layer = layers(g);
    let columns = layer.values().max().map_or(1, |m| m + 1);
    let mut col_w = vec![120.0_f64; columns];
    let subs: BTreeMap<&str, String> = g.nodes.iter().map(|n| (n.id.as_str(), details(&n.kind))).collect();
    for n in &g.nodes {
        let c = &mut col_w[layer[n.id.as_str()]];
        *c = c.max(node_width(&n.id, &subs[n.id.as_str()]));
    }
    let col_x: Vec<f64> = col_w.iter().scan(LEFT, |x, w| Some(std::mem::replace(x, *x + w + COL_GAP))).collect();
    let mut rows = vec![0usize; columns];
    let mut boxes: BTreeMap<&str, Node> = BTreeMap::new();
    for n in &g.nodes {
        let c = layer[n.id.as_str()];
        let y = TOP + rows[c] as f64 * (NODE_H + GAP_Y);
        rows[c] += 1;
        boxes.insert(n.id.as_str(), Node { x: col_x[c], y, w: col_w[c] });
    }
    let bottom = boxes.values().map(|b| b.y + NODE_H).fold(TOP + NODE_H, f64::max);
    let edges = g
        .edges
        .iter()
        .map(|e| {
            let (from, to) = (boxes[e.from.as_str()].right(), boxes[e.to.as_str()].left());
            let label = Label {
                x: Px((from.0 + to.0) / 2.0 - 14.0),
                y: Px((from.1 + to.1) / 2.0 - 4.0),
                text: e.kind.as_str(),
                title: e.to_string(),
            };
            (edge(from, to, widened.edges.contains(label.title.as_str())), label)
        })
        .collect();
    let nodes = g
        .nodes
        .iter()
        .map(|n| {
            let reaches = g.reach_from(&n.id);
            let (fill, color) = reach_fill(reaches);
            let text = boxes[n.id.as_str()].text(&n.id, subs[n.id.as_str()].clone());
            Drawn {
                text,
                kind: n.kind.name(),
                reaches: reaches.as_str(),
                fill,
                color,
                widened: widened.nodes.contains(n.id.as_str()),
            }
        })
        .collect();
    let width = col_x.last().copied().unwrap_or(LEFT) + col_w.last().copied().unwrap_or(120.0) + 40.0;
    Drawing { width: Whole(width), height: Whole(bottom + 20.0), node_h: NODE_H, edges, nodes }
}
