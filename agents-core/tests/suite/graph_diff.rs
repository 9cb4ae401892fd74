//! The graph diff against a reference: random graphs, random mutations, and the diff's
//! verdict compared with "which actions could a run of this graph reach, and through which
//! edge, within which bounds", computed here independently of the diff's rules.

use agents_core::diff::{ChangeKind, Rule};
use agents_core::graph::{
    AgentNode, CompositeEntry, Edge, EdgeKind, GraphManifest, NameLists, Node, NodeKind, NodeManifests, OnFailure,
    Router, diff,
};
use proptest::prelude::*;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::collections::{BTreeMap, BTreeSet};

const HASHES: [&str; 3] = [
    "1111111111111111111111111111111111111111111111111111111111111111",
    "2222222222222222222222222222222222222222222222222222222222222222",
    "3333333333333333333333333333333333333333333333333333333333333333",
];

/// What a run of a graph could do, as sets and bounds (the reference).
#[derive(Default)]
struct Power {
    /// Non-wrap nodes by (id, kind).
    nodes: BTreeSet<(String, &'static str)>,
    /// (edge or "self", agent node, item): an action or handoff reachable through an edge, or a
    /// node's own tool, action, handoff or permission.
    items: BTreeSet<(String, String, String)>,
    hashes: BTreeMap<String, String>,
    bounds: BTreeMap<String, u64>,
    model_routers: BTreeSet<String>,
    collecting: BTreeSet<String>,
    guards: BTreeSet<(String, String)>,
}

fn below(g: &GraphManifest, id: &str) -> BTreeSet<String> {
    let mut seen = BTreeSet::new();
    let mut todo = vec![id.to_owned()];
    while let Some(n) = todo.pop() {
        if seen.insert(n.clone()) {
            todo.extend(g.edges.iter().filter(|e| e.from == n).map(|e| e.to.clone()));
        }
    }
    seen
}

fn power(g: &GraphManifest) -> Power {
    let mut p = Power::default();
    let agents: BTreeMap<&str, &AgentNode> = g
        .nodes
        .iter()
        .filter_map(|n| match &n.kind {
            NodeKind::Agent(a) => Some((n.id.as_str(), a)),
            _ => None,
        })
        .collect();
    for n in &g.nodes {
        let id = n.id.clone();
        match &n.kind {
            NodeKind::Wrap { steps } => p.guards.extend(steps.iter().map(|s| (id.clone(), s.clone()))),
            kind => {
                p.nodes.insert((id.clone(), kind.name()));
            }
        }
        match &n.kind {
            NodeKind::Agent(a) => {
                p.hashes.insert(id.clone(), a.manifest_sha256.clone());
                for (field, names) in a.lists.fields() {
                    p.items.extend(names.iter().map(|x| ("self".into(), id.clone(), format!("{field}:{x}"))));
                }
            }
            NodeKind::Loop { max_iterations: b } | NodeKind::Forum { rounds: b } => {
                p.bounds.insert(format!("{}:{id}", n.kind.name()), *b);
            }
            NodeKind::Branch { router: Router::Model } => {
                p.model_routers.insert(id);
            }
            NodeKind::Parallel { on_failure: OnFailure::Collect, .. } => {
                p.collecting.insert(id);
            }
            _ => {}
        }
    }
    for e in &g.edges {
        for n in below(g, &e.to) {
            if let Some(a) = agents.get(n.as_str()) {
                for x in a.lists.actions.iter().chain(&a.lists.handoffs) {
                    p.items.insert((e.to_string(), n.clone(), x.clone()));
                }
            }
        }
    }
    p
}

/// Whether a run of `new` could do something a run of `old` could not.
fn grew(old: &GraphManifest, new: &GraphManifest) -> bool {
    let (a, b) = (power(old), power(new));
    !b.nodes.is_subset(&a.nodes)
        || !b.items.is_subset(&a.items)
        || b.hashes.iter().any(|(id, h)| a.hashes.get(id).is_some_and(|o| o != h))
        || b.bounds.iter().any(|(k, n)| a.bounds.get(k).is_some_and(|o| n > o))
        || b.model_routers.iter().any(|id| a.nodes.contains(&(id.clone(), "branch")) && !a.model_routers.contains(id))
        || b.collecting.iter().any(|id| a.nodes.contains(&(id.clone(), "parallel")) && !a.collecting.contains(id))
        || !a.guards.is_subset(&b.guards)
}

fn pick(r: &mut StdRng, from: &[&str]) -> Vec<String> {
    from.iter().filter(|_| r.gen_bool(0.4)).map(|s| (*s).to_owned()).collect()
}

fn random_kind(r: &mut StdRng) -> NodeKind {
    match r.gen_range(0..6) {
        0 | 1 => {
            let lists = NameLists {
                actions: pick(r, &["approve", "pay"]),
                handoffs: pick(r, &["escalate"]),
                permissions: pick(r, &["kyc.read", "kyc.write"]),
                tools: pick(r, &["lookup", "search"]),
            };
            NodeKind::Agent(AgentNode {
                is_composite: false,
                agent: ["reviewer", "intake"][r.gen_range(0..2)].into(),
                manifest_sha256: HASHES[r.gen_range(0..3)].into(),
                reaches: lists.reaches(),
                lists,
            })
        }
        2 => NodeKind::Branch { router: if r.gen_bool(0.5) { Router::Code } else { Router::Model } },
        3 => NodeKind::Loop { max_iterations: r.gen_range(1..5) },
        4 => NodeKind::Forum { rounds: r.gen_range(1..4) },
        _ if r.gen_bool(0.5) => {
            NodeKind::Wrap { steps: pick(r, &["audit", "redact"]).into_iter().chain(["guard".into()]).collect() }
        }
        _ => NodeKind::Parallel {
            join: ["all", "first"][r.gen_range(0..2)].into(),
            on_failure: if r.gen_bool(0.5) { OnFailure::FailFast } else { OnFailure::Collect },
        },
    }
}

/// Node ids are `n<rank>`; edges go from a lower rank to a higher, so no cycle forms.
fn rank(id: &str) -> u32 {
    id[1..].parse().expect("ids are n<rank>")
}

fn random_edge(r: &mut StdRng, nodes: &[Node]) -> Option<Edge> {
    let a = &nodes[r.gen_range(0..nodes.len())];
    let b = &nodes[r.gen_range(0..nodes.len())];
    if rank(&a.id) >= rank(&b.id) {
        return None;
    }
    let kinds: Vec<EdgeKind> = EdgeKind::ALL.into_iter().filter(|k| k.allowed_from(&a.kind)).collect();
    Some(Edge { from: a.id.clone(), to: b.id.clone(), kind: kinds[r.gen_range(0..kinds.len())] })
}

fn build(nodes: Vec<Node>, mut edges: Vec<Edge>) -> GraphManifest {
    edges.retain(|e| nodes.iter().find(|n| n.id == e.from).is_some_and(|n| e.kind.allowed_from(&n.kind)));
    edges.retain(|e| nodes.iter().any(|n| n.id == e.to));
    edges.sort();
    edges.dedup();
    let g = GraphManifest::from_parts(CompositeEntry::default(), nodes, edges).expect("a generated graph is valid");
    let read = GraphManifest::parse(&g.to_canonical_string()).expect("its canonical text reads");
    assert_eq!(read, g, "the canonical text round-trips");
    g
}

fn random_graph(r: &mut StdRng) -> GraphManifest {
    let nodes: Vec<Node> =
        (0..r.gen_range(1..7)).map(|i| Node { id: format!("n{}", i * 2), kind: random_kind(r) }).collect();
    let edges = (0..r.gen_range(0..10)).filter_map(|_| random_edge(r, &nodes)).collect();
    build(nodes, edges)
}

/// One random change to a graph: any node or edge, any field.
fn mutate(r: &mut StdRng, g: &GraphManifest) -> GraphManifest {
    let (mut nodes, mut edges) = (g.nodes.clone(), g.edges.clone());
    let i = r.gen_range(0..nodes.len());
    match r.gen_range(0..6) {
        0 => nodes.push(Node { id: format!("n{}", rank(&nodes[i].id) + 1), kind: random_kind(r) }),
        1 if nodes.len() > 1 => {
            let gone = nodes.remove(i).id;
            edges.retain(|e| e.from != gone && e.to != gone);
        }
        2 => edges.extend(random_edge(r, &nodes)),
        3 if !edges.is_empty() => {
            edges.remove(r.gen_range(0..edges.len()));
        }
        4 => nodes[i].kind = random_kind(r),
        _ => tweak(r, &mut nodes[i].kind),
    }
    nodes.sort_by(|a, b| a.id.cmp(&b.id));
    nodes.dedup_by(|a, b| a.id == b.id);
    build(nodes, edges)
}

/// One field of a node, changed in place.
fn tweak(r: &mut StdRng, kind: &mut NodeKind) {
    match kind {
        NodeKind::Agent(a) => {
            match r.gen_range(0..4) {
                0 => a.manifest_sha256 = HASHES[r.gen_range(0..3)].into(),
                1 => a.agent = format!("{}-v2", a.agent),
                _ => {
                    let fresh = random_kind(r);
                    if let NodeKind::Agent(b) = fresh {
                        a.lists = b.lists;
                    }
                }
            }
            a.reaches = a.lists.reaches();
        }
        NodeKind::Branch { router } => *router = if *router == Router::Code { Router::Model } else { Router::Code },
        NodeKind::Loop { max_iterations: b } | NodeKind::Forum { rounds: b } => *b = r.gen_range(1..5),
        NodeKind::Parallel { join, on_failure } => {
            if r.gen_bool(0.5) {
                *join = format!("{join}-2");
            } else {
                *on_failure = if *on_failure == OnFailure::Collect { OnFailure::FailFast } else { OnFailure::Collect };
            }
        }
        NodeKind::Wrap { steps } => {
            *steps = pick(r, &["audit", "redact"]).into_iter().chain(r.gen_bool(0.7).then(|| "guard".into())).collect();
            if steps.is_empty() {
                steps.push("audit".into());
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    /// The diff widens exactly when the reference says a run could do more; and the reverse
    /// direction of the same change never widens unless the reference says so too.
    #[test]
    fn the_verdict_matches_the_reference(seed in any::<u64>(), steps in 1..4usize) {
        let mut r = StdRng::seed_from_u64(seed);
        let old = random_graph(&mut r);
        let mut new = old.clone();
        for _ in 0..steps {
            new = mutate(&mut r, &new);
        }
        for (a, b) in [(&old, &new), (&new, &old)] {
            let d = diff(a, b, &NodeManifests::new());
            prop_assert_eq!(d.has_widening(), grew(a, b), "{}\nold {}\nnew {}", d, a.to_canonical_string(), b.to_canonical_string());
            prop_assert_eq!(d.is_empty(), a == b, "{}", d);
        }
    }
}

/// The classification of each rule the property exercises, named (so a broken rule says which).
#[test]
fn each_bound_and_guard_is_classified() {
    let one = |kind: NodeKind| {
        GraphManifest::from_parts(CompositeEntry::default(), vec![Node { id: "x".into(), kind }], vec![]).unwrap()
    };
    let cases = [
        (NodeKind::Loop { max_iterations: 2 }, NodeKind::Loop { max_iterations: 3 }, Rule::LimitRaised),
        (NodeKind::Forum { rounds: 2 }, NodeKind::Forum { rounds: 5 }, Rule::LimitRaised),
        (NodeKind::Branch { router: Router::Code }, NodeKind::Branch { router: Router::Model }, Rule::RouterChanged),
        (
            NodeKind::Parallel { join: "all".into(), on_failure: OnFailure::FailFast },
            NodeKind::Parallel { join: "all".into(), on_failure: OnFailure::Collect },
            Rule::FailurePolicyChanged,
        ),
        (
            NodeKind::Wrap { steps: vec!["a".into(), "b".into()] },
            NodeKind::Wrap { steps: vec!["a".into()] },
            Rule::GuardRemoved,
        ),
    ];
    for (a, b, rule) in cases {
        let d = diff(&one(a.clone()), &one(b.clone()), &NodeManifests::new());
        assert_eq!(d.changes.len(), 1, "{d}");
        assert_eq!((d.changes[0].kind, d.changes[0].rule), (ChangeKind::Widening, rule), "{d}");
        assert_eq!(d.changes[0].node.as_deref(), Some("x"));
        let back = diff(&one(b), &one(a), &NodeManifests::new());
        assert_eq!(back.changes[0].kind, ChangeKind::Narrowing, "{back}");
    }
}

fn agent_graph(sha256: &str) -> GraphManifest {
    let lists = NameLists { actions: vec!["approve".into()], tools: vec!["approve".into()], ..NameLists::default() };
    let node = AgentNode {
        agent: "reviewer".into(),
        is_composite: false,
        manifest_sha256: sha256.into(),
        reaches: lists.reaches(),
        lists,
    };
    GraphManifest::from_parts(
        CompositeEntry::default(),
        vec![Node { id: "review".into(), kind: NodeKind::Agent(node) }],
        vec![],
    )
    .unwrap()
}

/// A changed node hash is a widening nobody inspected, until both node manifests are given;
/// then the agent diff decides, under the node.
#[test]
fn a_changed_node_manifest_is_classified_by_the_agent_diff_when_given() {
    use agents_core::manifest::{AgentEntry, Manifest};
    let v1 = Manifest::from_entries(AgentEntry::new("reviewer", "Reviews."), vec![]).unwrap();
    let mut reworded = AgentEntry::new("reviewer", "Reviews KYC requests.");
    let v2 = Manifest::from_entries(reworded.clone(), vec![]).unwrap();
    reworded.limits.max_iterations += 10;
    let v3 = Manifest::from_entries(reworded, vec![]).unwrap();
    let (g1, g2, g3) = (agent_graph(&v1.sha256()), agent_graph(&v2.sha256()), agent_graph(&v3.sha256()));

    let blind = diff(&g1, &g2, &NodeManifests::new());
    assert!(blind.has_widening(), "{blind}");
    assert_eq!(blind.changes[0].rule, Rule::NodeManifestChanged);
    assert!(blind.to_string().contains("not inspected: give the node manifests"), "{blind}");

    let mut given = NodeManifests::new();
    for m in [v1, v2, v3] {
        given.insert(m);
    }
    let reworded = diff(&g1, &g2, &given);
    assert!(!reworded.has_widening() && !reworded.is_empty(), "{reworded}");
    assert!(reworded.changes.iter().all(|c| c.node.as_deref() == Some("review")), "{reworded}");
    let raised = diff(&g2, &g3, &given);
    assert!(raised.has_widening(), "{raised}");
    assert!(
        raised.changes.iter().any(|c| c.rule == Rule::LimitRaised && c.node.as_deref() == Some("review")),
        "{raised}"
    );
    assert!(raised.to_string().contains("node `review` limits.max_iterations"), "{raised}");
}

/// Guarding an action agent behind a wrap: the wrap is a narrowing, but the new edges into
/// a part of the graph that reaches an action are each a widening for a reviewer to see.
#[test]
fn a_new_edge_into_an_action_is_a_widening_and_into_reads_neutral() {
    let g = |edges: Vec<Edge>| {
        let mut nodes = agent_graph(HASHES[0]).nodes;
        nodes.push(Node { id: "first".into(), kind: NodeKind::Loop { max_iterations: 1 } });
        GraphManifest::from_parts(CompositeEntry::default(), nodes, edges).unwrap()
    };
    let e = Edge { from: "first".into(), to: "review".into(), kind: EdgeKind::Body };
    let d = diff(&g(vec![]), &g(vec![e.clone()]), &NodeManifests::new());
    assert_eq!((d.changes[0].kind, d.changes[0].rule), (ChangeKind::Widening, Rule::EdgeAdded), "{d}");
    assert!(
        d.to_string()
            .contains("node `first` edges: edge first -body-> review added: a run entering `review` may reach action"),
        "{d}"
    );
    let back = diff(&g(vec![e]), &g(vec![]), &NodeManifests::new());
    assert_eq!(back.changes[0].kind, ChangeKind::Narrowing, "{back}");
}
