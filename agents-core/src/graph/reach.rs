//! What a run entering a node may reach: the node and every node below it by edges.

use super::{GraphManifest, NodeKind, Reaches};
use std::collections::{BTreeMap, BTreeSet};

/// The graph's edges by source, for walks below a node.
pub(super) struct Reach<'a> {
    graph: &'a GraphManifest,
    below: BTreeMap<&'a str, Vec<&'a str>>,
}

impl<'a> Reach<'a> {
    pub(super) fn new(graph: &'a GraphManifest) -> Self {
        let mut below: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
        for e in &graph.edges {
            below.entry(e.from.as_str()).or_default().push(e.to.as_str());
        }
        Reach { graph, below }
    }

    /// Every node id reachable from `id`, `id` included (when it is a node).
    pub(super) fn nodes_from(&self, id: &str) -> BTreeSet<&'a str> {
        let mut seen = BTreeSet::new();
        let mut todo: Vec<&'a str> = self.graph.node(id).map(|n| n.id.as_str()).into_iter().collect();
        while let Some(n) = todo.pop() {
            if seen.insert(n) {
                todo.extend(self.below.get(n).into_iter().flatten().copied());
            }
        }
        seen
    }

    /// The most dangerous tier among the agent nodes reachable from `id`.
    pub(super) fn from(&self, id: &str) -> Reaches {
        self.nodes_from(id)
            .into_iter()
            .filter_map(|n| match &self.graph.node(n)?.kind {
                NodeKind::Agent(a) => Some(a.reaches),
                _ => None,
            })
            .max()
            .unwrap_or(Reaches::None)
    }
}
