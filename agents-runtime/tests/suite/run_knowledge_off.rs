//! A runtime built without its `knowledge` feature: an agent that declares knowledge refuses
//! to start, saying which feature to enable, and nothing is recorded or asked of the model; an
//! agent without knowledge runs as before. (Run with `--no-default-features`: `cargo xtask
//! features` does.)
#![cfg(not(feature = "knowledge"))]

use agents_runtime::RunResultExt as _;
use agents_runtime::audit::MemorySink;
use agents_runtime::provider::ScriptedProvider;
use agents_runtime::provider::scripted::reply;
use agents_runtime::run::StartError;
use agents_runtime::{Agent, Principal, RoleMap, RunStatus, Runtime, agent};
use std::sync::Arc;

agent! {
    /// Answers leave questions from the leave policy.
    pub struct WithPolicy;
    tools: [],
    knowledge: [embedded("tests/knowledge/leave.md")],
}

agent! {
    /// Answers without documents.
    pub struct Plain;
    tools: [],
}

#[tokio::test]
async fn an_agent_with_knowledge_refuses_to_start_and_names_the_feature() {
    let audit = Arc::new(MemorySink::new());
    let provider = Arc::new(ScriptedProvider::new([reply("ok")]));
    let rt = Runtime::builder(audit.clone(), provider.clone())
        .roles(RoleMap::new().role("clerk", Vec::<&str>::new()))
        .build();
    let me = Principal::new("u-1", "acme", "clerk");
    let Err(e) = rt.start::<WithPolicy>(me.clone(), "kn-off", "leave?".to_owned()) else {
        panic!("an agent with knowledge must not start without the feature")
    };
    assert_eq!(e, StartError::KnowledgeNotBuilt { agent: WithPolicy::SPEC.name });
    assert!(e.to_string().contains("`knowledge` feature"), "{e}");
    rt.records_settled().await;
    assert!(audit.records().is_empty(), "nothing was recorded");
    assert!(provider.requests().is_empty(), "the model was not called");
    // The control: the same runtime runs an agent without knowledge.
    let run = rt.start::<Plain>(me, "kn-off-plain", "hello".to_owned()).unwrap();
    assert_eq!(run.wait().await.status(), RunStatus::Completed);
}
