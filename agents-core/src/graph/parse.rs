//! Reading a graph manifest from JSON, and the checks every manifest passes (read or built).

use super::{
    AgentNode, CompositeEntry, Edge, EdgeKind, FORMAT, GraphError, GraphManifest, NameLists, Node, NodeKind, OnFailure,
    Reaches, Router, VERSION,
};
use crate::strict::{StrictError, parse_args};
use serde_json::{Map, Value};
use std::collections::{BTreeMap, BTreeSet};

const REGENERATE: &str = "regenerate the file from the composite's `MANIFEST` constant instead of editing it by hand";

fn invalid(at: impl Into<String>, problem: impl Into<String>, fix: impl Into<String>) -> GraphError {
    GraphError::Invalid { at: at.into(), problem: problem.into(), fix: fix.into() }
}

/// One JSON object being read: every key must be read once, and none may be left over.
struct Obj<'a> {
    at: String,
    map: &'a Map<String, Value>,
    seen: BTreeSet<&'static str>,
}

impl<'a> Obj<'a> {
    fn new(at: String, value: &'a Value) -> Result<Self, GraphError> {
        match value.as_object() {
            Some(map) => Ok(Obj { at, map, seen: BTreeSet::new() }),
            None => Err(invalid(at, format!("expected a JSON object, found `{value}`"), REGENERATE)),
        }
    }

    fn get(&mut self, key: &'static str) -> Result<&'a Value, GraphError> {
        self.seen.insert(key);
        self.map.get(key).ok_or_else(|| invalid(&self.at, format!("the field `{key}` is missing"), REGENERATE))
    }

    fn str(&mut self, key: &'static str) -> Result<String, GraphError> {
        let v = self.get(key)?;
        v.as_str()
            .map(str::to_owned)
            .ok_or_else(|| invalid(format!("{}.{key}", self.at), format!("expected a string, found `{v}`"), REGENERATE))
    }

    fn count(&mut self, key: &'static str) -> Result<u64, GraphError> {
        let v = self.get(key)?;
        match v.as_u64() {
            Some(n) if n >= 1 => Ok(n),
            _ => Err(invalid(
                format!("{}.{key}", self.at),
                format!("expected a whole number of at least 1, found `{v}`"),
                REGENERATE,
            )),
        }
    }

    fn names(&mut self, key: &'static str) -> Result<Vec<String>, GraphError> {
        let v = self.get(key)?;
        let at = format!("{}.{key}", self.at);
        let Some(items) = v.as_array() else {
            return Err(invalid(at, format!("expected a list of names, found `{v}`"), REGENERATE));
        };
        items
            .iter()
            .map(|i| {
                i.as_str()
                    .map(str::to_owned)
                    .ok_or_else(|| invalid(&at, format!("`{i}` is not a string"), "list names as strings"))
            })
            .collect()
    }

    fn list(&mut self, key: &'static str) -> Result<&'a [Value], GraphError> {
        let v = self.get(key)?;
        v.as_array()
            .map(Vec::as_slice)
            .ok_or_else(|| invalid(format!("{}.{key}", self.at), format!("expected a list, found `{v}`"), REGENERATE))
    }

    /// Refuses a key no field of this object reads.
    fn done(self) -> Result<(), GraphError> {
        match self.map.keys().find(|k| !self.seen.contains(k.as_str())) {
            None => Ok(()),
            Some(k) => Err(invalid(
                self.at,
                format!("unknown field `{k}`"),
                "remove it, or read the file with the `agents` release that wrote it",
            )),
        }
    }
}

pub(super) fn parse(text: &str) -> Result<GraphManifest, GraphError> {
    let value = parse_args(text).map_err(|e| match e {
        StrictError::NotAnObject { .. } => GraphError::NotJson("the top level is not a JSON object".into()),
        StrictError::Syntax { line, column, detail, .. } => {
            GraphError::NotJson(format!("{detail} at line {line} column {column} (is the file cut short?)"))
        }
        StrictError::DuplicateKey { path, key, line, column } => GraphError::NotJson(format!(
            "the key `{key}` appears twice at line {line} column {column} (`{path}`), so the file has two readings; keep one"
        )),
        StrictError::TrailingCharacters { line, column } => {
            GraphError::NotJson(format!("unexpected characters after the manifest at line {line} column {column}"))
        }
        other => GraphError::NotJson(other.to_string()),
    })?;
    let mut top = Obj::new("the manifest".into(), &value)?;
    match top.get("format")?.as_str() {
        Some(FORMAT) => {}
        Some(other) => return Err(GraphError::WrongFormat(other.to_owned())),
        None => return Err(GraphError::WrongFormat(top.get("format")?.to_string())),
    }
    let version = top.get("version")?;
    if version.as_u64() != Some(VERSION) {
        return Err(GraphError::WrongVersion(version.to_string()));
    }
    let mut c = Obj::new("composite".into(), top.get("composite")?)?;
    let composite = CompositeEntry {
        name: c.str("name")?,
        description: c.str("description")?,
        input: c.str("input")?,
        output: c.str("output")?,
        entry: match c.map.get("entry") {
            Some(_) => Some(c.str("entry")?),
            None => None,
        },
    };
    c.done()?;
    let capabilities = lists(Obj::new("capabilities".into(), top.get("capabilities")?)?, true)?;
    let nodes = top.list("nodes")?.iter().enumerate().map(|(i, v)| node(i, v)).collect::<Result<Vec<_>, _>>()?;
    let edges = top.list("edges")?.iter().enumerate().map(|(i, v)| edge(i, v)).collect::<Result<Vec<_>, _>>()?;
    top.done()?;
    let graph = build(composite, nodes, edges)?;
    if graph.capabilities != normalized(capabilities.clone()) {
        return Err(invalid(
            "capabilities",
            "it is not the union of the agent nodes' tools, actions, handoffs and permissions",
            REGENERATE,
        ));
    }
    Ok(graph)
}

/// The four name lists of `obj` (when `close`, nothing else may be in it).
fn lists(mut obj: Obj<'_>, close: bool) -> Result<NameLists, GraphError> {
    let l = NameLists {
        actions: obj.names("actions")?,
        handoffs: obj.names("handoffs")?,
        permissions: obj.names("permissions")?,
        tools: obj.names("tools")?,
    };
    if close {
        obj.done()?;
    }
    Ok(l)
}

fn node(i: usize, v: &Value) -> Result<Node, GraphError> {
    let mut o = Obj::new(format!("nodes[{i}]"), v)?;
    let id = o.str("id")?;
    o.at = format!("nodes[{i}] (id `{id}`)");
    let kind = match o.str("kind")?.as_str() {
        "agent" => agent_node(&mut o, false)?,
        "composite" => agent_node(&mut o, true)?,
        "branch" => NodeKind::Branch {
            router: match o.str("router")?.as_str() {
                "code" => Router::Code,
                "model" => Router::Model,
                other => {
                    return Err(invalid(
                        format!("{}.router", o.at),
                        format!("unknown router `{other}`"),
                        "use `code` or `model`",
                    ));
                }
            },
        },
        "loop" => NodeKind::Loop { max_iterations: o.count("max_iterations")? },
        "parallel" => NodeKind::Parallel {
            join: o.str("join")?,
            on_failure: match o.str("on_failure")?.as_str() {
                "fail_fast" => OnFailure::FailFast,
                "collect" => OnFailure::Collect,
                other => {
                    return Err(invalid(
                        format!("{}.on_failure", o.at),
                        format!("unknown value `{other}`"),
                        "use `fail_fast` or `collect`",
                    ));
                }
            },
        },
        "forum" => NodeKind::Forum { rounds: o.count("rounds")? },
        "wrap" => NodeKind::Wrap { steps: o.names("steps")? },
        other => {
            return Err(invalid(
                format!("{}.kind", o.at),
                format!("unknown node kind `{other}`"),
                "a node is one of agent, composite, branch, loop, parallel, forum, wrap; read the file with the `agents` release that wrote it",
            ));
        }
    };
    o.done()?;
    Ok(Node { id, kind })
}

fn agent_node(o: &mut Obj<'_>, is_composite: bool) -> Result<NodeKind, GraphError> {
    let agent = o.str(if is_composite { "composite" } else { "agent" })?;
    let manifest_sha256 = o.str("manifest_sha256")?;
    let reaches = match o.str("reaches")?.as_str() {
        "none" => Reaches::None,
        "read" => Reaches::Read,
        "action" => Reaches::Action,
        "handoff" => Reaches::Handoff,
        other => {
            return Err(invalid(
                format!("{}.reaches", o.at),
                format!("unknown tier `{other}`"),
                "use none, read, action or handoff",
            ));
        }
    };
    let at = o.at.clone();
    let lists = lists(Obj { at, map: o.map, seen: BTreeSet::new() }, false)?;
    for key in ["actions", "handoffs", "permissions", "tools"] {
        o.seen.insert(key);
    }
    Ok(NodeKind::Agent(AgentNode { agent, is_composite, manifest_sha256, reaches, lists }))
}

fn edge(i: usize, v: &Value) -> Result<Edge, GraphError> {
    let mut o = Obj::new(format!("edges[{i}]"), v)?;
    let (from, to) = (o.str("from")?, o.str("to")?);
    let name = o.str("kind")?;
    let Some(kind) = EdgeKind::ALL.into_iter().find(|k| k.as_str() == name) else {
        return Err(invalid(
            format!("edges[{i}] ({from} -> {to}).kind"),
            format!("unknown edge kind `{name}`"),
            "an edge is one of then, arm, default, body, member, moderator, inner, tool, handoff",
        ));
    };
    o.done()?;
    Ok(Edge { from, to, kind })
}

fn normalized(mut l: NameLists) -> NameLists {
    for v in [&mut l.actions, &mut l.handoffs, &mut l.permissions, &mut l.tools] {
        v.sort();
        v.dedup();
    }
    l
}

/// Sorts, computes the union, and checks: ids unique, agents consistent, edges sound, no cycle.
pub(super) fn build(
    composite: CompositeEntry,
    mut nodes: Vec<Node>,
    mut edges: Vec<Edge>,
) -> Result<GraphManifest, GraphError> {
    nodes.sort_by(|a, b| a.id.cmp(&b.id));
    if let Some(w) = nodes.windows(2).find(|w| w[0].id == w[1].id) {
        return Err(invalid(
            format!("nodes (id `{}`)", w[0].id),
            "two nodes have this id",
            "give each node its own id",
        ));
    }
    let mut union = NameLists::default();
    for n in &mut nodes {
        check_node(n, &mut union)?;
    }
    edges.sort();
    if let Some(w) = edges.windows(2).find(|w| w[0] == w[1]) {
        return Err(invalid(format!("edges ({})", w[0]), "the edge is listed twice", "list each edge once"));
    }
    let kinds: BTreeMap<&str, &NodeKind> = nodes.iter().map(|n| (n.id.as_str(), &n.kind)).collect();
    if let Some(entry) = composite.entry.as_deref().filter(|e| !kinds.contains_key(e)) {
        return Err(invalid(
            "composite.entry",
            format!("no node has the id `{entry}`"),
            "name the node a run starts at, or regenerate the file from the composite's `MANIFEST` constant",
        ));
    }
    for e in &edges {
        check_edge(e, &kinds)?;
    }
    check_acyclic(&nodes, &edges)?;
    Ok(GraphManifest { composite, capabilities: normalized(union), nodes, edges })
}

fn check_node(n: &mut Node, union: &mut NameLists) -> Result<(), GraphError> {
    let at = format!("nodes (id `{}`)", n.id);
    if n.id.is_empty() {
        return Err(invalid(at, "a node's id is empty", "give the node an id"));
    }
    match &mut n.kind {
        NodeKind::Agent(a) => {
            a.lists = normalized(std::mem::take(&mut a.lists));
            let expected = a.lists.reaches();
            if a.reaches != expected {
                return Err(invalid(
                    format!("{at}.reaches"),
                    format!("it says `{}`, but the node's lists reach `{expected}`", a.reaches),
                    "the file was edited or written by a faulty tool; regenerate it from the composite's `MANIFEST` constant",
                ));
            }
            if a.manifest_sha256.len() != 64
                || !a.manifest_sha256.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
            {
                return Err(invalid(
                    format!("{at}.manifest_sha256"),
                    format!("`{}` is not a SHA-256 in lowercase hex (64 characters)", a.manifest_sha256),
                    "write the agent's MANIFEST_SHA256 here",
                ));
            }
            union.actions.extend(a.lists.actions.iter().cloned());
            union.handoffs.extend(a.lists.handoffs.iter().cloned());
            union.permissions.extend(a.lists.permissions.iter().cloned());
            union.tools.extend(a.lists.tools.iter().cloned());
        }
        NodeKind::Wrap { steps } if steps.is_empty() => {
            return Err(invalid(
                format!("{at}.steps"),
                "a wrap with no steps guards nothing",
                "name its steps, or remove the wrap",
            ));
        }
        NodeKind::Loop { max_iterations: 0 } | NodeKind::Forum { rounds: 0 } => {
            return Err(invalid(at, "a bound of 0 runs nothing", "give a bound of at least 1"));
        }
        _ => {}
    }
    Ok(())
}

fn check_edge(e: &Edge, kinds: &BTreeMap<&str, &NodeKind>) -> Result<(), GraphError> {
    let at = format!("edges ({e})");
    for end in [&e.from, &e.to] {
        if !kinds.contains_key(end.as_str()) {
            return Err(invalid(&at, format!("no node has the id `{end}`"), "add the node, or remove the edge"));
        }
    }
    let source = kinds[e.from.as_str()];
    if !e.kind.allowed_from(source) {
        return Err(invalid(
            at,
            format!("a `{}` node cannot have a `{}` edge", source.name(), e.kind.as_str()),
            "arm/default leave a branch, body a loop, member a parallel or forum, moderator a forum, inner a wrap, tool/handoff an agent, then any node",
        ));
    }
    Ok(())
}

/// Refuses a cycle (a loop is a `loop` node with a `body` edge, never an edge back).
fn check_acyclic(nodes: &[Node], edges: &[Edge]) -> Result<(), GraphError> {
    let mut indegree: BTreeMap<&str, usize> = nodes.iter().map(|n| (n.id.as_str(), 0)).collect();
    for e in edges {
        *indegree.entry(e.to.as_str()).or_default() += 1;
    }
    let mut ready: Vec<&str> = indegree.iter().filter(|(_, d)| **d == 0).map(|(id, _)| *id).collect();
    let mut done = 0;
    while let Some(id) = ready.pop() {
        done += 1;
        for e in edges.iter().filter(|e| e.from == id) {
            let d = indegree.get_mut(e.to.as_str()).expect("checked: every edge's ends are nodes");
            *d -= 1;
            if *d == 0 {
                ready.push(e.to.as_str());
            }
        }
    }
    if done == nodes.len() {
        return Ok(());
    }
    let on_cycle: Vec<&str> = indegree.iter().filter(|(_, d)| **d > 0).map(|(id, _)| *id).collect();
    Err(invalid(
        format!("edges (through the nodes {})", on_cycle.join(", ")),
        "the edges form a cycle",
        "a composite's graph is acyclic: a repeated step is a `loop` node with a `body` edge",
    ))
}
