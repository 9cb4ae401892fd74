//! A scripted session, offline: the model proposes a refund, a person approves exactly those
//! arguments, the tool runs, and every audit record is printed.

use agents_runtime::audit::MemorySink;
use agents_runtime::events::Event;
use agents_runtime::provider::ScriptedProvider;
use agents_runtime::provider::scripted::{reply, tool_call};
use agents_runtime::{Principal, RoleMap, Runtime, Verdict};
use starter::{Assistant, perms};
use std::sync::Arc;

#[tokio::main]
async fn main() {
    println!("manifest {}\n", Assistant::MANIFEST_SHA256);
    let audit = Arc::new(MemorySink::new());
    // Replace the scripted model with a real one (the `http` feature) when the agent is ready.
    let model = Arc::new(ScriptedProvider::new([
        tool_call("refund_order", r#"{"order_id": 1042, "reason": "arrived broken"}"#),
        reply("Order 1042 is refunded."),
    ]));
    let runtime = Runtime::builder(audit.clone(), model)
        .roles(RoleMap::new().role("clerk", [perms::order::refund::NAME]))
        .build();
    let me = Principal::new("u-7", "shop-1", "clerk");
    let mut run = runtime
        .start::<Assistant>(me.clone(), "session-1", "Refund order 1042, it arrived broken".into())
        .expect("the run starts");
    while let Some(event) = run.events().recv().await {
        match event {
            Event::ConfirmRequired { call_id, title, args, .. } => {
                println!("{title}? {args}  -> approved\n");
                runtime.decide(&call_id, &me, Verdict::Approve).expect("the decision is recorded");
            }
            Event::Done { .. } => break,
            _ => {}
        }
    }
    let output = run.wait().await.expect("the run answered");
    println!("answer: {}\n", output.output.as_deref().unwrap_or_default());
    for record in audit.records() {
        println!("audit: {:?} {}", record.status, record.tool.as_deref().unwrap_or("-"));
    }
}
