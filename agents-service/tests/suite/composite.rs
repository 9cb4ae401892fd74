//! A composite served by the HTTP service, through real sockets on loopback: listed with its
//! graph manifest's hash, started by the runs route as one run tree, its nodes' events on the
//! run's SSE stream with their path, a nested node's action listed and decided for the same
//! person only (another user gets the refusal a single run's decision gets, audited), and one
//! `stop` ending every node.

use crate::common::{self, Desk, alice, bob, carol, ended, get, listen, perms, post, records_of};
use agents_runtime::audit::{AuditStatus, MemorySink};
use agents_runtime::provider::ChatRequest;
use agents_runtime::provider::scripted::{RuleProvider, reply, tool_call, tool_outcomes};
use agents_runtime::{Runtime, agent, composite, tool};
use agents_service::{DevAuthenticator, Service};
use serde_json::{Value, json};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

/// Reads the catalogue.
#[tool(permission = perms::items::read)]
async fn read_catalogue() -> Result<String, String> {
    Ok("keyboards, mice".into())
}

agent! {
    /// Restates the person's request for the desk, changing nothing.
    pub struct Intake;
    tools: [read_catalogue],
}

composite! {
    /// The intake restates the request, then the desk acts on it.
    pub struct DeskFlow: String -> String = then(Intake, Desk);
}

const FLOW: &str = <DeskFlow as agents_runtime::agents_core::compose::Composite>::GRAPH.name;

fn offers(req: &ChatRequest, tool: &str) -> bool {
    req.tools.iter().any(|t| t.name == tool)
}

/// The intake restates; the desk submits what it was handed, then says it is done.
fn model() -> RuleProvider {
    RuleProvider::new()
        .when(|req| (!offers(req, "submit_item")).then(|| reply("The person asks for a keyboard; submit it.")))
        .when(|req| tool_outcomes(req).is_empty().then(|| tool_call("submit_item", r#"{"item": "a keyboard"}"#)))
        .fallback("done")
}

struct Tree {
    base: SocketAddr,
    audit: Arc<MemorySink>,
}

/// A service serving the desk agent and the composite with one runtime.
async fn serve() -> Tree {
    let audit = Arc::new(MemorySink::new());
    let runtime = Runtime::builder(audit.clone(), Arc::new(model())).roles(common::roles()).build();
    let service = Service::builder(Arc::new(DevAuthenticator::enabled()), audit.clone(), audit.clone())
        .agent::<Desk>(runtime.clone())
        .composite::<DeskFlow>(runtime)
        .build();
    Tree { base: listen(&service).await, audit }
}

/// Starts the composite for alice in `session`; the tree's run id.
async fn start_tree(base: SocketAddr, session: &str) -> String {
    let body = json!({"agent": FLOW, "input": "I need a keyboard", "session_id": session}).to_string();
    let r = post(base, "/v1/runs", &alice(), &body).await;
    assert_eq!(r.status, 201, "{}", r.body);
    assert_eq!(r.json()["agent"], FLOW);
    r.json()["run_id"].as_str().unwrap().to_owned()
}

/// The decisions listed for `who`.
async fn decisions(base: SocketAddr, who: &agents_runtime::Principal) -> Vec<Value> {
    let r = get(base, "/v1/decisions", who).await;
    assert_eq!(r.status, 200, "{}", r.body);
    r.json()["decisions"].as_array().unwrap().clone()
}

/// Waits until alice has a decision listed; it.
async fn nested_decision(base: SocketAddr) -> Value {
    for _ in 0..400 {
        if let Some(d) = decisions(base, &alice()).await.into_iter().next() {
            return d;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("no decision was listed for alice within 10 s");
}

#[tokio::test]
async fn the_composite_is_listed_with_its_graph_manifest_hash() {
    let tree = serve().await;
    let r = get(tree.base, "/v1/agents", &alice()).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let listed = r.json()["agents"].as_array().unwrap().clone();
    let flow = listed.iter().find(|a| a["name"] == FLOW).unwrap_or_else(|| panic!("{listed:?}"));
    let sha = <DeskFlow as agents_runtime::agents_core::compose::Composite>::MANIFEST_SHA256;
    assert_eq!(flow["manifest_sha256"], sha);
    assert_eq!(flow["kind"], "composite");
    let desk = listed.iter().find(|a| a["name"] == common::AGENT).unwrap();
    assert_eq!(desk["kind"], "agent");
}

#[tokio::test]
async fn a_nested_action_is_decided_over_http_by_the_same_person_and_then_runs() {
    let tree = serve().await;
    let run = start_tree(tree.base, "tree-decided").await;
    let mut stream = common::open(tree.base, &run, &alice(), None).await;
    assert_eq!(stream.status, 200, "{}", stream.body_if_refused);

    // The desk node's action waits; its card names the node.
    let d = nested_decision(tree.base).await;
    let call = d["call_id"].as_str().unwrap().to_owned();
    // A node's id is its type's name in kebab case.
    let node = format!("{FLOW}/desk");
    assert_eq!(d["node"], node.as_str(), "{d}");
    assert_eq!(d["tool"], "submit_item");

    // Another user of the organisation and another organisation: not listed, not decidable.
    assert!(decisions(tree.base, &bob()).await.is_empty());
    for stranger in [bob(), carol()] {
        let r = post(tree.base, &format!("/v1/decisions/{call}"), &stranger, r#"{"verdict": "approve"}"#).await;
        assert_eq!((r.status, r.code()), (404, "not_found".to_owned()), "{}", r.body);
    }
    let refused: Vec<_> =
        records_of(&tree.audit, &call).into_iter().filter(|r| r.status == AuditStatus::Denied).collect();
    assert_eq!(refused.len(), 2, "each refusal is audited: {refused:?}");
    assert!(refused.iter().all(|r| r.user_id != alice().user_id));
    assert_eq!(common::executed("tree-decided"), 0, "nothing ran on a stranger's word");

    let r = post(tree.base, &format!("/v1/decisions/{call}"), &alice(), r#"{"verdict": "approve"}"#).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let summary = ended(tree.base, &alice(), &run).await;
    assert_eq!(summary["status"], "completed", "{summary}");
    assert_eq!(common::executed("tree-decided"), 1);
    let statuses: Vec<AuditStatus> = records_of(&tree.audit, &call)
        .into_iter()
        .filter(|r| r.status != AuditStatus::Denied)
        .map(|r| r.status)
        .collect();
    assert_eq!(statuses, [AuditStatus::Proposed, AuditStatus::Confirmed, AuditStatus::Executed]);

    // The stream: each node's events with the node's path, the action's card among them, and
    // the tree's own `done` last.
    let events = stream.until("done").await;
    let nodes: Vec<Value> = events.iter().filter(|e| e.event == "node").map(|e| e.json()).collect();
    let asked = nodes.iter().find(|n| n["event"]["type"] == "confirm_required").expect("the card on the stream");
    assert_eq!(
        (asked["node"].as_str(), asked["event"]["call_id"].as_str()),
        (Some(node.as_str()), Some(call.as_str()))
    );
    assert_eq!(asked["run_id"], run.as_str(), "a node's event names the tree's run");
    assert!(nodes.iter().any(|n| n["node"] == format!("{FLOW}/intake").as_str()), "{nodes:?}");
    let done = events.last().unwrap().json();
    assert_eq!((done["run_id"].as_str(), done["status"].as_str()), (Some(run.as_str()), Some("completed")));
}

#[tokio::test]
async fn stop_ends_every_node_of_the_tree() {
    let tree = serve().await;
    let run = start_tree(tree.base, "tree-stopped").await;
    let d = nested_decision(tree.base).await;
    let call = d["call_id"].as_str().unwrap().to_owned();

    // Another user cannot stop it.
    let r = post(tree.base, &format!("/v1/runs/{run}/stop"), &bob(), "{}").await;
    assert_eq!(r.status, 404, "{}", r.body);
    assert_eq!(get(tree.base, &format!("/v1/runs/{run}"), &alice()).await.json()["status"], "running");

    let r = post(tree.base, &format!("/v1/runs/{run}/stop"), &alice(), "{}").await;
    assert_eq!(r.status, 202, "{}", r.body);
    let summary = ended(tree.base, &alice(), &run).await;
    assert_eq!(summary["status"], "cancelled", "{summary}");
    // The nested node's pending action ended with its run: skipped, never run, no longer listed.
    let statuses: Vec<AuditStatus> = records_of(&tree.audit, &call).into_iter().map(|r| r.status).collect();
    assert_eq!(statuses, [AuditStatus::Proposed, AuditStatus::Skipped]);
    assert_eq!(common::executed("tree-stopped"), 0);
    assert!(decisions(tree.base, &alice()).await.is_empty());
    let late = post(tree.base, &format!("/v1/decisions/{call}"), &alice(), r#"{"verdict": "approve"}"#).await;
    assert_eq!(late.status, 404, "{}", late.body);
    assert_eq!(common::executed("tree-stopped"), 0);
}

#[tokio::test]
async fn an_input_the_composite_does_not_take_is_refused_and_starts_nothing() {
    let tree = serve().await;
    let body = json!({"agent": FLOW, "input": {"not": "text"}, "session_id": "tree-bad"}).to_string();
    let r = post(tree.base, "/v1/runs", &alice(), &body).await;
    assert_eq!((r.status, r.code()), (400, "invalid_request".to_owned()), "{}", r.body);
    assert!(r.json()["error"]["message"].as_str().unwrap().contains(FLOW), "{}", r.body);
    assert!(tree.audit.records().is_empty(), "nothing was recorded");
    let runs = get(tree.base, "/v1/runs", &alice()).await.json();
    assert_eq!(runs["runs"], json!([]));
}
