use super::*;
use crate::constant::{self, Writer};

const INTAKE: Capabilities = Capabilities {
    actions: &[],
    handoffs: &[],
    permissions: &["kyc.read"],
    tools: &["read_application"],
    reaches: Reach::Read,
    expose_mcp: &[],
};
const REVIEW: Capabilities = Capabilities {
    actions: &["approve"],
    handoffs: &["escalate"],
    permissions: &["kyc.decide", "kyc.read"],
    tools: &["approve", "escalate", "read_application"],
    reaches: Reach::Handoff,
    expose_mcp: &[],
};

const fn agent(id: &'static str, sha: &'static str, capabilities: Capabilities) -> Node {
    Node { id, kind: NodeKind::AgentNode { agent: id, manifest_sha256: sha, capabilities } }
}

const NODES: &[Node] = &[
    agent("intake", "11", INTAKE),
    Node { id: "route", kind: NodeKind::Branch { router: Router::Model } },
    agent("review", "22", REVIEW),
    agent("human", "33", Capabilities::NONE),
];
const EDGES: &[Edge] = &[
    Edge { from: "intake", to: "route", kind: EdgeKind::Then },
    Edge { from: "route", to: "review", kind: EdgeKind::Arm },
    Edge { from: "route", to: "human", kind: EdgeKind::Default },
];
const GRAPH: Graph = Graph {
    name: "kyc",
    description: "Intake, then \"review\".",
    input: "Request",
    output: "Decision",
    entry: "intake",
    nodes: NODES,
    edges: EDGES,
};
const MANIFEST: &str = crate::composite_manifest!(&GRAPH);

const SHUFFLED: Graph =
    Graph { nodes: &[NODES[3], NODES[1], NODES[0], NODES[2]], edges: &[EDGES[2], EDGES[0], EDGES[1]], ..GRAPH };
const SHUFFLED_MANIFEST: &str = crate::composite_manifest!(&SHUFFLED);

#[test]
fn the_manifest_is_the_expected_canonical_text() {
    let expected = concat!(
        r#"{"capabilities":{"actions":["approve"],"handoffs":["escalate"],"permissions":["kyc.decide","kyc.read"],"tools":["approve","escalate","read_application"]},"#,
        r#""composite":{"description":"Intake, then \"review\".","entry":"intake","input":"Request","name":"kyc","output":"Decision"},"#,
        r#""edges":[{"from":"intake","kind":"then","to":"route"},{"from":"route","kind":"default","to":"human"},{"from":"route","kind":"arm","to":"review"}],"#,
        r#""format":"agents.composite-manifest","nodes":["#,
        r#"{"actions":[],"agent":"human","handoffs":[],"id":"human","kind":"agent","manifest_sha256":"33","permissions":[],"reaches":"none","tools":[]},"#,
        r#"{"actions":[],"agent":"intake","handoffs":[],"id":"intake","kind":"agent","manifest_sha256":"11","permissions":["kyc.read"],"reaches":"read","tools":["read_application"]},"#,
        r#"{"actions":["approve"],"agent":"review","handoffs":["escalate"],"id":"review","kind":"agent","manifest_sha256":"22","permissions":["kyc.decide","kyc.read"],"reaches":"handoff","tools":["approve","escalate","read_application"]},"#,
        r#"{"id":"route","kind":"branch","router":"model"}],"version":1}"#
    );
    assert_eq!(MANIFEST, expected);
}

#[test]
fn the_manifest_is_canonical_json() {
    let value: serde_json::Value = serde_json::from_str(MANIFEST).unwrap();
    assert_eq!(crate::canonical::to_string(&value), MANIFEST);
}

#[test]
fn the_order_of_declaration_changes_nothing() {
    assert_eq!(MANIFEST, SHUFFLED_MANIFEST);
}

#[test]
fn every_combinator_node_is_written_canonically() {
    const INNER: Graph = Graph { name: "inner", entry: "review", nodes: &[NODES[2]], edges: &[], ..GRAPH };
    const ALL: Graph = Graph {
        entry: "again",
        nodes: &[
            Node { id: "again", kind: NodeKind::Loop { max_iterations: 3 } },
            Node { id: "fan", kind: NodeKind::Parallel { join: "both", on_failure: OnFailure::Collect } },
            Node { id: "panel", kind: NodeKind::Forum { rounds: 2 } },
            Node { id: "guard", kind: NodeKind::Wrap { steps: &["redact", "check"] } },
            Node {
                id: "nested",
                kind: NodeKind::CompositeNode { composite: "inner", manifest_sha256: "44", graph: &INNER },
            },
            NODES[0],
        ],
        edges: &[
            Edge { from: "again", to: "fan", kind: EdgeKind::Body },
            Edge { from: "fan", to: "panel", kind: EdgeKind::Member },
            Edge { from: "fan", to: "nested", kind: EdgeKind::Member },
            Edge { from: "panel", to: "intake", kind: EdgeKind::Moderator },
            Edge { from: "guard", to: "again", kind: EdgeKind::Inner },
        ],
        ..GRAPH
    };
    const TEXT: &str = crate::composite_manifest!(&ALL);
    let value: serde_json::Value = serde_json::from_str(TEXT).unwrap();
    assert_eq!(crate::canonical::to_string(&value), TEXT);
    let nodes = value["nodes"].as_array().unwrap();
    let ids: Vec<&str> = nodes.iter().map(|n| n["id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["again", "fan", "guard", "intake", "nested", "panel"]);
    assert_eq!(nodes[0]["max_iterations"], 3);
    assert_eq!(nodes[1]["on_failure"], "collect");
    assert_eq!(nodes[2]["steps"], serde_json::json!(["redact", "check"]));
    assert_eq!(nodes[4]["kind"], "composite");
    // The reviewers' reader takes what the compiler wrote, byte for byte (the short fake
    // hashes of these fixtures made whole first).
    let text = ["11", "22", "33", "44"].iter().fold(TEXT.to_owned(), |t, h| {
        t.replace(&format!(r#""manifest_sha256":"{h}""#), &format!(r#""manifest_sha256":"{}""#, h.repeat(32)))
    });
    let read = crate::graph::GraphManifest::parse(&text).expect("the reader accepts the written manifest");
    assert!(read.is_canonical_text(text.as_bytes()));
    assert_eq!(read.to_canonical_string(), text);
    assert_eq!(read.composite.entry.as_deref(), Some("again"));
    assert_eq!(nodes[4]["reaches"], "handoff", "a nested composite reaches what its nodes reach");
    assert_eq!(nodes[4]["tools"], serde_json::json!(["approve", "escalate", "read_application"]));
    assert_eq!(
        value["capabilities"]["permissions"],
        serde_json::json!(["kyc.decide", "kyc.read"]),
        "the union takes a nested composite's capabilities, each name once"
    );
}

#[test]
fn a_node_manifest_change_changes_the_composite_hash() {
    const CHANGED: Graph = Graph { nodes: &[NODES[0], NODES[1], agent("review", "23", REVIEW), NODES[3]], ..GRAPH };
    const CHANGED_TEXT: &str = crate::composite_manifest!(&CHANGED);
    const A: [u8; 64] = constant::sha256_hex(MANIFEST.as_bytes());
    const B: [u8; 64] = constant::sha256_hex(CHANGED_TEXT.as_bytes());
    assert_ne!(A, B);
    assert_eq!(constant::utf8(&A), crate::canonical::sha256_hex(MANIFEST.as_bytes()));
}

fn refused(graph: Graph) -> String {
    let result = std::panic::catch_unwind(|| {
        let mut w = Writer::new(&mut []);
        text::write(&mut w, &graph);
    });
    let panic = result.expect_err("the graph was written");
    panic.downcast_ref::<&str>().map(|s| s.to_string()).or_else(|| panic.downcast_ref::<String>().cloned()).unwrap()
}

macro_rules! refused {
    ($($field:tt)*) => {{
        const G: Graph = Graph { $($field)* };
        refused(G)
    }};
}

#[test]
fn a_graph_that_is_not_one_is_refused() {
    let twice = refused! { nodes: &[NODES[0], NODES[0]], edges: &[], ..GRAPH };
    assert!(twice.contains("one id"), "{twice}");
    let to = refused! { nodes: &[NODES[0]], edges: &[Edge { from: "intake", to: "nowhere", kind: EdgeKind::Then }], ..GRAPH };
    assert!(to.contains("reaches no node"), "{to}");
    let from = refused! { nodes: &[NODES[0]], edges: &[Edge { from: "nowhere", to: "intake", kind: EdgeKind::Then }], ..GRAPH };
    assert!(from.contains("leaves no node"), "{from}");
    let entry = refused! { entry: "route", nodes: &[NODES[0]], edges: &[], ..GRAPH };
    assert!(entry.contains("entry"), "{entry}");
    let edge_twice = refused! { edges: &[EDGES[0], EDGES[0]], ..GRAPH };
    assert!(edge_twice.contains("one edge twice"), "{edge_twice}");
    let empty = refused! { entry: "", nodes: &[Node { id: "", ..NODES[1] }], edges: &[], ..GRAPH };
    assert!(empty.contains("empty id"), "{empty}");
    assert!(std::panic::catch_unwind(|| text::check(&GRAPH)).is_ok());
}

#[test]
fn reach_is_the_most_dangerous_tier() {
    assert_eq!(Reach::None.max(Reach::Read), Reach::Read);
    assert_eq!(Reach::Handoff.max(Reach::Action), Reach::Handoff);
    assert_eq!(Reach::of_tier(crate::Tier::Action), Reach::Action);
    assert_eq!(text::reaches(&GRAPH), Reach::Handoff);
}

mod generated {
    //! Random graphs: the const writer's text is canonical JSON, its lists sorted, its union
    //! the union, whatever the names (quotes, backslashes, control characters, any script).
    use super::super::*;
    use crate::constant::Writer;
    use proptest::prelude::*;
    use std::collections::BTreeSet;

    fn leak(s: String) -> &'static str {
        Box::leak(s.into_boxed_str())
    }

    fn leak_list(v: Vec<String>) -> &'static [&'static str] {
        Box::leak(v.into_iter().map(leak).collect::<Vec<_>>().into_boxed_slice())
    }

    fn write(graph: &Graph) -> String {
        let mut counter = Writer::new(&mut []);
        text::write(&mut counter, graph);
        let mut bytes = vec![0u8; counter.len()];
        let mut w = Writer::new(&mut bytes);
        text::write(&mut w, graph);
        w.finish();
        String::from_utf8(bytes).unwrap()
    }

    fn name() -> impl Strategy<Value = String> {
        prop_oneof!["[a-z_.]{1,8}", "\\PC{1,6}", "[\"\\\\\\x00-\\x1f]{1,4}"]
    }

    fn caps() -> impl Strategy<Value = Capabilities> {
        proptest::collection::vec(proptest::collection::vec(name(), 0..4), 4).prop_map(|mut lists| Capabilities {
            tools: leak_list(lists.pop().unwrap()),
            permissions: leak_list(lists.pop().unwrap()),
            handoffs: leak_list(lists.pop().unwrap()),
            actions: leak_list(lists.pop().unwrap()),
            reaches: Reach::Read,
            expose_mcp: &[],
        })
    }

    fn graph() -> impl Strategy<Value = Graph> {
        (proptest::collection::btree_set(name(), 1..6), proptest::collection::vec(caps(), 6), name())
            .prop_flat_map(|(ids, caps, description)| {
                let ids: Vec<String> = ids.into_iter().collect();
                let n = ids.len();
                let edges = proptest::collection::btree_set((0..n, 0..n, 0..3usize), 0..6);
                (Just(ids), Just(caps), Just(description), edges)
            })
            .prop_map(|(ids, caps, description, edges)| {
                let ids: Vec<&'static str> = ids.into_iter().map(leak).collect();
                let nodes: Vec<Node> = ids
                    .iter()
                    .zip(caps)
                    .map(|(id, capabilities)| Node {
                        id,
                        kind: NodeKind::AgentNode { agent: id, manifest_sha256: "00", capabilities },
                    })
                    .collect();
                let kinds = [EdgeKind::Then, EdgeKind::Arm, EdgeKind::Member];
                let edges: Vec<Edge> =
                    edges.into_iter().map(|(f, t, k)| Edge { from: ids[f], to: ids[t], kind: kinds[k] }).collect();
                Graph {
                    name: "random",
                    description: leak(description),
                    input: "In",
                    output: "Out",
                    entry: ids[0],
                    nodes: Box::leak(nodes.into_boxed_slice()),
                    edges: Box::leak(edges.into_boxed_slice()),
                }
            })
    }

    proptest! {
        #[test]
        fn the_text_is_canonical_sorted_and_the_union_is_the_union(graph in graph()) {
            let text = write(&graph);
            let value: serde_json::Value = serde_json::from_str(&text).unwrap();
            prop_assert_eq!(crate::canonical::to_string(&value), text.clone());
            prop_assert_eq!(value["composite"]["description"].as_str(), Some(graph.description));
            let ids: Vec<&str> = value["nodes"].as_array().unwrap().iter().map(|n| n["id"].as_str().unwrap()).collect();
            let sorted: BTreeSet<&str> = graph.nodes.iter().map(|n| n.id).collect();
            prop_assert_eq!(ids, sorted.into_iter().collect::<Vec<_>>());
            let edges: Vec<(String, String, String)> = value["edges"].as_array().unwrap().iter()
                .map(|e| (e["from"].as_str().unwrap().into(), e["to"].as_str().unwrap().into(), e["kind"].as_str().unwrap().into()))
                .collect();
            let mut expected: Vec<(String, String, String)> =
                graph.edges.iter().map(|e| (e.from.into(), e.to.into(), e.kind.as_str().into())).collect();
            expected.sort();
            prop_assert_eq!(edges, expected);
            for (key, pick) in [("actions", 0), ("handoffs", 1), ("permissions", 2), ("tools", 3)] {
                let union: BTreeSet<&str> = graph.nodes.iter().flat_map(|n| match n.kind {
                    NodeKind::AgentNode { capabilities: c, .. } => [c.actions, c.handoffs, c.permissions, c.tools][pick].to_vec(),
                    _ => Vec::new(),
                }).collect();
                let written: Vec<&str> = value["capabilities"][key].as_array().unwrap().iter().map(|v| v.as_str().unwrap()).collect();
                prop_assert_eq!(written, union.into_iter().collect::<Vec<_>>());
            }
        }
    }
}
