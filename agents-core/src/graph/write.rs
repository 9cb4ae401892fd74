//! The canonical text of a graph manifest.

use super::{CompositeEntry, FORMAT, GraphManifest, NameLists, Node, NodeKind, VERSION};
use serde_json::{Map, Value, json};

/// The canonical JSON text ([`crate::canonical`] rules: keys sorted, no whitespace).
pub(super) fn canonical(g: &GraphManifest) -> String {
    let c = &g.composite;
    let value = json!({
        "capabilities": lists(&g.capabilities),
        "composite": composite(c),
        "edges": g.edges.iter().map(|e| json!({"from": e.from, "kind": e.kind.as_str(), "to": e.to})).collect::<Vec<_>>(),
        "format": FORMAT,
        "nodes": g.nodes.iter().map(node).collect::<Vec<_>>(),
        "version": VERSION,
    });
    crate::canonical::to_string(&value)
}

fn composite(c: &CompositeEntry) -> Value {
    let mut m = json!({"description": c.description, "input": c.input, "name": c.name, "output": c.output});
    if let Some(entry) = &c.entry {
        m["entry"] = json!(entry);
    }
    m
}

fn lists(l: &NameLists) -> Map<String, Value> {
    l.fields().into_iter().map(|(k, v)| (k.to_owned(), json!(v))).collect()
}

fn node(n: &Node) -> Value {
    let mut m = Map::new();
    m.insert("id".into(), json!(n.id));
    m.insert("kind".into(), json!(n.kind.name()));
    match &n.kind {
        NodeKind::Agent(a) => {
            m.extend(lists(&a.lists));
            m.insert(if a.is_composite { "composite" } else { "agent" }.into(), json!(a.agent));
            m.insert("manifest_sha256".into(), json!(a.manifest_sha256));
            m.insert("reaches".into(), json!(a.reaches.as_str()));
        }
        NodeKind::Branch { router } => {
            m.insert("router".into(), json!(router.as_str()));
        }
        NodeKind::Loop { max_iterations } => {
            m.insert("max_iterations".into(), json!(max_iterations));
        }
        NodeKind::Parallel { join, on_failure } => {
            m.insert("join".into(), json!(join));
            m.insert("on_failure".into(), json!(on_failure.as_str()));
        }
        NodeKind::Forum { rounds } => {
            m.insert("rounds".into(), json!(rounds));
        }
        NodeKind::Wrap { steps } => {
            m.insert("steps".into(), json!(steps));
        }
    }
    Value::Object(m)
}
