//! A composite's graph manifest: its canonical text round-trips byte for byte, and every
//! malformed or contradictory file is refused with an error that says where and what to do.

use agents_core::graph::{EdgeKind, GraphError, GraphManifest, NodeKind, Reaches};
use serde_json::{Value, json};

const SHA_A: &str = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
const SHA_B: &str = "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb";

/// A KYC pipeline: intake (read) → guard(review (action)) → loop over a forum.
pub fn kyc() -> Value {
    json!({
        "capabilities": {"actions": ["approve"], "handoffs": [], "permissions": ["kyc.read", "kyc.write"], "tools": ["approve", "lookup"]},
        "composite": {"description": "Reviews a KYC request.", "input": "RawRequest", "name": "kyc-pipeline", "output": "ApprovalDecision"},
        "edges": [
            {"from": "again", "kind": "body", "to": "panel"},
            {"from": "guard", "kind": "inner", "to": "review"},
            {"from": "intake", "kind": "then", "to": "guard"},
            {"from": "panel", "kind": "member", "to": "intake"},
        ],
        "format": "agents.composite-manifest",
        "nodes": [
            {"id": "again", "kind": "loop", "max_iterations": 3},
            {"id": "guard", "kind": "wrap", "steps": ["rate_limit", "redact"]},
            {"actions": [], "agent": "kyc-intake", "handoffs": [], "id": "intake", "kind": "agent", "manifest_sha256": SHA_A,
             "permissions": ["kyc.read"], "reaches": "read", "tools": ["lookup"]},
            {"id": "panel", "kind": "forum", "rounds": 2},
            {"actions": ["approve"], "agent": "kyc-reviewer", "handoffs": [], "id": "review", "kind": "agent", "manifest_sha256": SHA_B,
             "permissions": ["kyc.write"], "reaches": "action", "tools": ["approve"]},
        ],
        "version": 1
    })
}

pub fn text(v: &Value) -> String {
    agents_core::canonical::to_string(v)
}

fn refused(v: &Value) -> String {
    match GraphManifest::parse(&text(v)) {
        Err(e) => e.to_string(),
        Ok(g) => panic!("accepted: {g:?}"),
    }
}

#[test]
fn canonical_text_round_trips_byte_for_byte() {
    let t = text(&kyc());
    let g = GraphManifest::parse(&t).expect("the fixture reads");
    assert_eq!(g.to_canonical_string(), t);
    assert!(g.is_canonical_text(t.as_bytes()));
    assert_eq!(g.sha256(), agents_core::canonical::sha256_hex(t.as_bytes()));
    assert_eq!(g.nodes.len(), 5);
    assert!(
        matches!(g.node("guard").map(|n| &n.kind), Some(NodeKind::Wrap { steps }) if steps == &["rate_limit", "redact"])
    );
    assert!(g.edges.iter().any(|e| e.kind == EdgeKind::Inner && e.to == "review"));
}

#[test]
fn reach_follows_edges_to_the_most_dangerous_tier() {
    let g = GraphManifest::parse(&text(&kyc())).unwrap();
    assert_eq!(g.reach_from("review"), Reaches::Action);
    assert_eq!(g.reach_from("guard"), Reaches::Action);
    assert_eq!(g.reach_from("again"), Reaches::Action, "loop → forum → intake → guard → review");
    let mut v = kyc();
    v["edges"].as_array_mut().unwrap().retain(|e| e["to"] != "guard");
    let g = GraphManifest::parse(&text(&v)).unwrap();
    assert_eq!(g.reach_from("again"), Reaches::Read);
    assert_eq!(g.reach_from("nope"), Reaches::None);
}

#[test]
fn a_file_out_of_order_reads_but_is_not_canonical() {
    let mut v = kyc();
    v["nodes"].as_array_mut().unwrap().reverse();
    let pretty = serde_json::to_string_pretty(&v).unwrap();
    let g = GraphManifest::parse(&pretty).unwrap();
    assert!(!g.is_canonical_text(pretty.as_bytes()));
    assert_eq!(g.to_canonical_string(), text(&kyc()));
}

#[test]
fn torn_json_is_refused() {
    let t = text(&kyc());
    let e = GraphManifest::parse(&t[..t.len() / 2]).unwrap_err();
    assert!(matches!(e, GraphError::NotJson(_)), "{e}");
    assert!(e.to_string().contains("cut short"), "{e}");
}

#[test]
fn a_repeated_key_is_refused() {
    let t = text(&kyc()).replacen(r#""version":1"#, r#""version":1,"version":1"#, 1);
    let e = GraphManifest::parse(&t).unwrap_err().to_string();
    assert!(e.contains("the key `version` appears twice") && e.contains("two readings"), "{e}");
    let e = GraphManifest::parse(&format!("{} {{}}", text(&kyc()))).unwrap_err().to_string();
    assert!(e.contains("unexpected characters after the manifest"), "{e}");
}

#[test]
fn wrong_format_and_version_are_refused() {
    let mut v = kyc();
    v["format"] = json!("agents.permission-manifest");
    assert!(
        matches!(GraphManifest::parse(&text(&v)), Err(GraphError::WrongFormat(f)) if f == "agents.permission-manifest")
    );
    let mut v = kyc();
    v["version"] = json!(2);
    assert!(matches!(GraphManifest::parse(&text(&v)), Err(GraphError::WrongVersion(_))));
}

#[test]
fn an_unknown_node_kind_is_refused_with_where_and_what_to_do() {
    let mut v = kyc();
    v["nodes"][0]["kind"] = json!("retry");
    let e = refused(&v);
    assert!(e.contains(r#"nodes[0] (id `again`).kind"#) && e.contains("unknown node kind `retry`"), "{e}");
    assert!(e.contains("agent, composite, branch, loop"), "{e}");
}

#[test]
fn an_unknown_edge_kind_is_refused() {
    let mut v = kyc();
    v["edges"][0]["kind"] = json!("goto");
    assert!(refused(&v).contains("unknown edge kind `goto`"));
}

#[test]
fn a_missing_field_is_refused() {
    let mut v = kyc();
    v["nodes"][0].as_object_mut().unwrap().remove("max_iterations");
    let e = refused(&v);
    assert!(e.contains(r#"nodes[0] (id `again`)"#) && e.contains("`max_iterations` is missing"), "{e}");
}

#[test]
fn an_unknown_field_is_refused() {
    let mut v = kyc();
    v["nodes"][0]["unbounded"] = json!(true);
    assert!(refused(&v).contains("unknown field `unbounded`"));
    let mut v = kyc();
    v["extra"] = json!(1);
    assert!(refused(&v).contains("unknown field `extra`"));
}

#[test]
fn an_edge_to_an_unknown_node_is_refused() {
    let mut v = kyc();
    v["edges"][2]["to"] = json!("ghost");
    let e = refused(&v);
    assert!(e.contains(r#"no node has the id `ghost`"#) && e.contains("add the node, or remove the edge"), "{e}");
}

#[test]
fn a_duplicate_id_is_refused() {
    let mut v = kyc();
    v["nodes"][3]["id"] = json!("again");
    let e = refused(&v);
    assert!(e.contains(r#"(id `again`)"#) && e.contains("two nodes have this id"), "{e}");
}

#[test]
fn a_duplicate_edge_is_refused() {
    let mut v = kyc();
    let first = v["edges"][0].clone();
    v["edges"].as_array_mut().unwrap().push(first);
    assert!(refused(&v).contains("listed twice"));
}

#[test]
fn reaches_that_contradicts_the_actions_is_refused() {
    let mut v = kyc();
    v["nodes"][4]["reaches"] = json!("read");
    let e = refused(&v);
    assert!(
        e.contains(r#"(id `review`).reaches"#) && e.contains("it says `read`, but the node's lists reach `action`"),
        "{e}"
    );
}

#[test]
fn capabilities_that_are_not_the_union_are_refused() {
    let mut v = kyc();
    v["capabilities"]["actions"] = json!([]);
    assert!(refused(&v).contains("not the union"));
}

#[test]
fn an_edge_kind_its_source_cannot_have_is_refused() {
    let mut v = kyc();
    v["edges"][0]["kind"] = json!("arm");
    assert!(refused(&v).contains("a `loop` node cannot have a `arm` edge"));
}

#[test]
fn a_cycle_is_refused() {
    let mut v = kyc();
    v["edges"].as_array_mut().unwrap().push(json!({"from": "review", "kind": "then", "to": "again"}));
    let e = refused(&v);
    assert!(e.contains("cycle") && e.contains("again"), "{e}");
}

#[test]
fn a_malformed_manifest_hash_is_refused() {
    let mut v = kyc();
    v["nodes"][2]["manifest_sha256"] = json!("AAAA");
    assert!(refused(&v).contains("not a SHA-256 in lowercase hex"));
}

#[test]
fn a_zero_bound_and_an_empty_wrap_are_refused() {
    let mut v = kyc();
    v["nodes"][0]["max_iterations"] = json!(0);
    assert!(refused(&v).contains("at least 1"));
    let mut v = kyc();
    v["nodes"][1]["steps"] = json!([]);
    assert!(refused(&v).contains("guards nothing"));
}

#[test]
fn an_entry_that_names_no_node_is_refused() {
    let mut v = kyc();
    v["composite"]["entry"] = json!("nowhere");
    let e = refused(&v);
    assert!(e.contains("composite.entry") && e.contains("no node has the id `nowhere`"), "{e}");
}

#[test]
fn a_nested_composite_node_reads_back_as_written() {
    let mut v = kyc();
    let nodes = v["nodes"].as_array_mut().unwrap();
    let agent = nodes.iter_mut().find(|n| n["kind"] == "agent").expect("the fixture has an agent node");
    agent["kind"] = json!("composite");
    let name = agent.as_object_mut().unwrap().remove("agent").unwrap();
    agent["composite"] = name;
    let text = agents_core::canonical::to_string(&v);
    let read = GraphManifest::parse(&text).expect("a nested composite node is read");
    assert_eq!(read.to_canonical_string(), text);
}
