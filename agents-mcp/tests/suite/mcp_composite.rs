//! A composite served over MCP ([`serve_composite_io`]) to rmcp's client over a byte stream:
//! one tool that runs the whole tree, its output the tree's; the action a nested node proposes
//! asks the person through elicitation, and their answer decides it. Approved, it runs once,
//! its records carrying the node's path; declined or dismissed, it is `rejected` and nothing
//! runs; a client gone while it waits gets it rejected too; a client without elicitation gets
//! it rejected, saying why; arguments of the wrong
//! shape are refused before anything starts.

use crate::order_flow::*;
use crate::run_common::ran;
use agents_mcp::serve_composite_io;
use agents_runtime::audit::{AuditStatus, MemorySink};
use agents_runtime::{Principal, RoleMap, Runtime};
use rmcp::model::{CallToolRequestParams, CallToolResult};
use rmcp::service::RunningService;
use rmcp::{RoleClient, ServiceExt};
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};
use std::time::Duration;

struct Served {
    client: RunningService<RoleClient, Person>,
    audit: Arc<MemorySink>,
    asked: Arc<Mutex<Vec<String>>>,
}

/// The composite served for a clerk over an in-memory byte stream, reached by `answer`'s client.
async fn serve(answer: Answer) -> Served {
    let audit = Arc::new(MemorySink::new());
    let runtime = Runtime::builder(audit.clone(), Arc::new(model()))
        .roles(RoleMap::new().role("clerk", ["items.read", "items.write"]))
        .build();
    let (server_end, client_end) = tokio::io::duplex(1 << 16);
    let (read, write) = tokio::io::split(server_end);
    let clerk = Principal::new("c1", "org1", "clerk");
    tokio::spawn(serve_composite_io::<OrderFlow, _, _>(runtime, clerk, Default::default(), read, write));
    let asked = Arc::new(Mutex::new(Vec::new()));
    let client = Person { answer, asked: asked.clone() }.serve(client_end).await.expect("handshake");
    Served { client, audit, asked }
}

fn order(args: Value) -> CallToolRequestParams {
    let mut p = CallToolRequestParams::new(FLOW.to_owned());
    p.arguments = args.as_object().cloned();
    p
}

async fn call(served: &Served, args: Value) -> CallToolResult {
    let call = served.client.call_tool(order(args));
    tokio::time::timeout(Duration::from_secs(30), call).await.expect("the tree ended within 30 s").expect("a result")
}

/// The records of `submit_item` with `status`.
fn submits(audit: &MemorySink, status: AuditStatus) -> Vec<agents_runtime::audit::AuditRecord> {
    audit.records().into_iter().filter(|r| r.status == status && r.tool.as_deref() == Some("submit_item")).collect()
}

#[tokio::test]
async fn one_tool_named_after_the_composite_takes_its_input() {
    let served = serve(Answer::Approve).await;
    let tools = served.client.list_all_tools().await.unwrap();
    assert_eq!(tools.len(), 1, "{tools:?}");
    assert_eq!(tools[0].name, FLOW);
    let schema = serde_json::to_value(&*tools[0].input_schema).unwrap();
    assert_eq!(schema["properties"]["input"]["type"], "string", "{schema}");
    assert_eq!(schema["required"], json!(["input"]));
}

#[tokio::test]
async fn a_nested_action_approved_by_elicitation_runs_once_and_its_records_name_the_node() {
    let served = serve(Answer::Approve).await;
    let item = "a keyboard (approved)";
    let out = call(&served, json!({"input": item})).await;
    assert_eq!(out.is_error, Some(false), "{out:?}");
    // The tool's output is the tree's: the desk's answer, after its approved order ran.
    // (The tool's result reaches the model as JSON: a quoted string.)
    assert_eq!(out.structured_content, Some(json!({"output": format!("finished: \"{item} ordered\"")})));
    assert_eq!(ran(item), 1, "the approved order ran exactly once");
    // The person read the card of the nested node's call, with its exact arguments.
    let asked = served.asked.lock().unwrap().clone();
    assert_eq!(asked.len(), 1, "{asked:?}");
    assert!(asked[0].contains("Submit an order") && asked[0].contains(item), "{}", asked[0]);
    // Its records carry the node's path under the tree's run id, and its decision.
    let executed = submits(&served.audit, AuditStatus::Executed);
    assert_eq!(executed.len(), 1);
    let node = executed[0].node.clone().expect("a node's record names its node");
    assert_eq!(node.path, format!("{FLOW}/desk"));
    assert!(node.parent_run_id.is_some());
    let confirmed = submits(&served.audit, AuditStatus::Confirmed);
    assert_eq!(confirmed.len(), 1, "the person's approval is recorded");
    assert_eq!(confirmed[0].call_id, executed[0].call_id);
    assert_eq!(confirmed[0].user_id.as_ref(), "c1", "decided for the session's own principal");
}

#[tokio::test]
async fn a_declined_elicitation_rejects_the_nested_action_and_nothing_runs() {
    let served = serve(Answer::Decline).await;
    let item = "a keyboard (declined)";
    let out = call(&served, json!({"input": item})).await;
    assert_eq!(ran(item), 0, "a declined order never runs");
    assert_eq!(served.asked.lock().unwrap().len(), 1);
    let rejected = submits(&served.audit, AuditStatus::Rejected);
    assert_eq!(rejected.len(), 1, "{:?}", served.audit.records());
    assert_eq!(rejected[0].node.as_ref().map(|n| n.path.clone()), Some(format!("{FLOW}/desk")));
    assert!(submits(&served.audit, AuditStatus::Executed).is_empty());
    // The tree still ends, with the desk's answer to the rejection as its output.
    let output = out.structured_content.expect("the tree's output")["output"].as_str().unwrap().to_owned();
    assert!(output.starts_with("finished: ") && !output.contains("ordered"), "{output}");
}

#[tokio::test]
async fn a_dismissed_elicitation_rejects_the_nested_action_saying_why() {
    let served = serve(Answer::Dismiss).await;
    let item = "a keyboard (dismissed)";
    call(&served, json!({"input": item})).await;
    assert_eq!(ran(item), 0);
    let rejected = submits(&served.audit, AuditStatus::Rejected);
    assert_eq!(rejected.len(), 1, "{:?}", served.audit.records());
    let reason = rejected[0].reason.clone().unwrap_or_default();
    assert!(reason.contains("dismissed"), "{reason}");
}

#[tokio::test]
async fn a_client_without_elicitation_gets_the_nested_action_rejected_saying_why() {
    let served = serve(Answer::CannotAsk).await;
    let item = "a keyboard (no elicitation)";
    let out = call(&served, json!({"input": item})).await;
    assert_eq!(ran(item), 0, "nothing runs without a person's decision");
    // The tool's answer says why, and what to do.
    let said: Vec<String> = out.content.iter().filter_map(|c| c.as_text().map(|t| t.text.clone())).collect();
    let why = said.iter().find(|t| t.contains("were rejected")).unwrap_or_else(|| panic!("{said:?}"));
    assert!(why.starts_with("1 action(s) of the run tree were rejected: "), "{why}");
    assert!(why.contains("cannot ask a person") && why.contains("decisions API"), "{why}");
    assert!(served.asked.lock().unwrap().is_empty(), "the client was never asked");
    let rejected = submits(&served.audit, AuditStatus::Rejected);
    assert_eq!(rejected.len(), 1, "{:?}", served.audit.records());
    let reason = rejected[0].reason.clone().unwrap_or_default();
    assert!(reason.contains("elicitation"), "{reason}");
}

#[tokio::test]
async fn arguments_of_the_wrong_shape_are_refused_and_start_nothing() {
    let served = serve(Answer::Approve).await;
    for (args, says) in [
        (json!({}), "missing `input`"),
        (json!({"input": 7}), "is not a `String`"),
        (json!({"input": "a mouse (extra)", "item": "a mouse (extra)"}), "unknown argument"),
    ] {
        let refused = served.client.call_tool(order(args.clone())).await.expect_err("refused");
        assert!(refused.to_string().contains(says), "{args}: {refused}");
    }
    assert_eq!(ran("a mouse (extra)"), 0);
    assert!(served.audit.records().is_empty(), "no tree started: {:?}", served.audit.records());
}

#[tokio::test]
async fn a_client_gone_while_a_nested_action_waits_rejects_it_and_the_tree_ends() {
    let Served { client, audit, asked } = serve(Answer::Never).await;
    let item = "a keyboard (client gone)";
    let peer = client.peer().clone();
    let waiting = tokio::spawn(async move { peer.call_tool(order(json!({"input": item}))).await });
    for _ in 0..400 {
        if !asked.lock().unwrap().is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert_eq!(asked.lock().unwrap().len(), 1, "the person was asked");
    client.cancel().await.expect("the client closes");
    waiting.abort();
    // The question ends `disconnected`: the action is rejected, and the tree ends.
    let mut ended = false;
    for _ in 0..400 {
        let finished = audit.records().iter().any(|r| {
            r.status == AuditStatus::RunFinished && r.node.as_ref().is_some_and(|n| n.parent_run_id.is_none())
        });
        if finished {
            ended = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert!(ended, "the tree ended: {:?}", audit.records());
    assert_eq!(ran(item), 0);
    let rejected = submits(&audit, AuditStatus::Rejected);
    assert_eq!(rejected.len(), 1, "{:?}", audit.records());
    let reason = rejected[0].reason.clone().unwrap_or_default();
    assert!(reason.contains("disconnected"), "{reason}");
}

/// A composite one of whose agent nodes (directly, or inside a nested composite) is not served
/// over MCP this way is refused before anything is served, naming the node.
#[tokio::test]
async fn a_composite_with_a_node_not_exposed_over_stdio_is_refused_naming_it() {
    for refused in [serve_refused::<HiddenFlow>().await, serve_refused::<OuterFlow>().await] {
        let text = refused.to_string();
        assert!(text.contains("`HiddenDesk`"), "{text}");
        assert!(text.contains("declares no way to be served over MCP"), "{text}");
    }
}

async fn serve_refused<C>() -> agents_mcp::McpError
where
    C: agents_runtime::compose::RunComposite,
    C::Input: serde::de::DeserializeOwned + schemars::JsonSchema,
    C::Output: serde::Serialize,
{
    let runtime = Runtime::builder(Arc::new(MemorySink::new()), Arc::new(model())).build();
    let (server_end, _client_end) = tokio::io::duplex(1 << 16);
    let (read, write) = tokio::io::split(server_end);
    let clerk = Principal::new("c1", "org1", "clerk");
    let served = serve_composite_io::<C, _, _>(runtime, clerk, Default::default(), read, write);
    tokio::time::timeout(Duration::from_secs(10), served)
        .await
        .expect("refused at once")
        .expect_err("a node not served over stdio refuses the composite")
}
