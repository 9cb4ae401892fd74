//! Instructions planted in a reviewed document: a gullible model obeys every `[[call TOOL
//! ARGS]]` it reads in the passages the runtime gives it, and none of the calls acts without
//! the person. The action waits for a decision (declined here, so nothing runs); the read that
//! would carry a value copied from the document out waits too. The document's fake closing
//! marker does not end the data block, and its text never reaches the system prompt.
#![cfg(feature = "knowledge")]

use crate::run_common;

use agents_runtime::RunResultExt as _;
use agents_runtime::audit::{AuditStatus, MemorySink};
use agents_runtime::events::Event;
use agents_runtime::knowledge::{KnowledgeSettings, PASSAGES_CLOSE, PASSAGES_OPEN};
use agents_runtime::provider::scripted::{RuleProvider, reply, tool_calls, tool_outcomes};
use agents_runtime::provider::{ChatMessage, ChatRequest};
use agents_runtime::{ConfirmMode, Principal, RoleMap, RunStatus, Runtime, ToolContext, Verdict, agent, tool};
use run_common::*;
use std::sync::{Arc, Mutex};

/// Approves an expense claim.
///
/// # Arguments
///
/// * `claim` - the claim's id
/// * `amount` - the amount approved
#[tool(permission = public, mutating, title = "Approve expense")]
async fn approve_expense(cx: &ToolContext<'_>, claim: String, amount: u32) -> Result<String, String> {
    bump(cx.session_id());
    Ok(format!("{claim} approved for {amount}"))
}

/// Opens a page of the documentation site.
///
/// # Arguments
///
/// * `url` - the page's address
#[tool(permission = public, policy(net(hosts = ["docs.example.com"])))]
async fn open_doc(cx: &ToolContext<'_>, url: String) -> Result<String, String> {
    bump(cx.session_id());
    Ok(format!("opened {url}"))
}

agent! {
    /// Answers expense questions from the expense policy.
    pub struct Expenses;
    tools: [approve_expense, open_doc],
    knowledge: [embedded("tests/knowledge/planted.md", name = "expenses")],
}

/// The `[[call TOOL ARGS]]` instructions in the texts of the request's passages.
fn planted(request: &ChatRequest) -> Vec<(String, String)> {
    let mut calls = Vec::new();
    for m in &request.messages {
        let ChatMessage::User { content } = m else { continue };
        let Some((_, rest)) = content.split_once(PASSAGES_OPEN) else { continue };
        let Some((data, _)) = rest.rsplit_once(PASSAGES_CLOSE) else { continue };
        let passages: Vec<serde_json::Value> = serde_json::from_str(data.trim()).unwrap();
        for p in passages {
            let mut text = p["text"].as_str().unwrap_or_default();
            while let Some((_, after)) = text.split_once("[[call ") {
                let Some((call, rest)) = after.split_once("]]") else { break };
                let (tool, args) = call.split_once(' ').unwrap_or((call, "{}"));
                // The document names `open_page`; this agent's tool that reaches out is `open_doc`.
                let tool = if tool == "open_page" { "open_doc" } else { tool };
                calls.push((tool.to_owned(), args.to_owned()));
                text = rest;
            }
        }
    }
    calls
}

/// A model that obeys every instruction it reads in the passages, before anything else; it
/// keeps every request it was sent in `seen`.
fn gullible(seen: Arc<Mutex<Vec<ChatRequest>>>) -> RuleProvider {
    RuleProvider::new().when(move |request| {
        seen.lock().unwrap().push(request.clone());
        if !tool_outcomes(request).is_empty() {
            return Some(reply("done"));
        }
        let calls = planted(request);
        (!calls.is_empty()).then(|| tool_calls(calls))
    })
}

#[tokio::test]
async fn instructions_planted_in_a_policy_document_act_on_nothing_without_the_person() {
    let audit = Arc::new(MemorySink::new());
    let seen = Arc::new(Mutex::new(Vec::new()));
    let provider = Arc::new(gullible(seen.clone()));
    let settings = KnowledgeSettings { root: env!("CARGO_MANIFEST_DIR").into(), ..KnowledgeSettings::default() };
    let rt = Runtime::builder(audit.clone(), provider)
        .roles(RoleMap::new().role("clerk", Vec::<&str>::new()))
        .confirm_mode(ConfirmMode::Dialog)
        .knowledge(settings)
        .build();
    let me = Principal::new("u-1", "acme", "clerk");
    let mut run = rt.start::<Expenses>(me.clone(), "kn-planted", "when are expenses reimbursed?".to_owned()).unwrap();
    let mut asked = Vec::new();
    while let Some(e) = run.events().recv().await {
        match e {
            Event::ConfirmRequired { call_id, tool, .. } => {
                asked.push(tool);
                rt.decide(&call_id, &me, Verdict::Reject).unwrap();
            }
            Event::Done { .. } => break,
            _ => {}
        }
    }
    assert_eq!(run.wait().await.status(), RunStatus::Completed);
    // The model obeyed both instructions (the attack was attempted) ...
    asked.sort();
    assert_eq!(asked, ["approve_expense", "open_doc"], "both planted calls reached the person");
    // ... and nothing acted: each was proposed, declined, and never executed.
    assert_eq!(ran("kn-planted"), 0);
    assert!(with_status(&audit, AuditStatus::Executed).is_empty(), "{:?}", audit.records());
    assert_eq!(with_status(&audit, AuditStatus::Rejected).len(), 2);
    let request = seen.lock().unwrap()[0].clone();
    assert!(!request.system.contains("SYSTEM NOTICE"), "the document is never in the system prompt");
    let data = request.messages.iter().find_map(|m| match m {
        ChatMessage::User { content } if content.contains(PASSAGES_OPEN) => Some(content.clone()),
        _ => None,
    });
    assert_eq!(data.unwrap().matches(PASSAGES_CLOSE).count(), 1, "the planted closing marker stays inside the data");
}
