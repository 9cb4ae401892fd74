//! The order flow both composite suites serve (`mcp_composite` over a byte stream,
//! `mcp_composite_http` over streamable HTTP): an intake that restates the request, then a
//! desk whose order is an action a person decides, both served over stdio and HTTP; the same
//! flow with a desk served over MCP in no way, and with a desk served only over stdio (each
//! also one level down); its model; and the person behind an rmcp client.

use crate::run_common::bump;
use agents_runtime::provider::ChatRequest;
use agents_runtime::provider::scripted::{RuleProvider, last_user_message, reply, tool_call, tool_outcomes};
use agents_runtime::{agent, composite, permissions, tool};
use rmcp::model::{
    ClientCapabilities, ClientConfig, ElicitRequestParams, ElicitResult, ElicitationAction, Implementation,
    ProtocolVersion,
};
use rmcp::service::RequestContext;
use rmcp::{ClientHandler, ErrorData, RoleClient};
use serde_json::json;
use std::sync::{Arc, Mutex};

permissions! {
    pub mod perms { items.read, items.write }
}

/// Reads the catalogue.
#[tool(permission = perms::items::read)]
pub async fn read_catalogue() -> Result<String, String> {
    Ok("keyboards, mice".into())
}

/// Submits an order for an item.
///
/// # Arguments
///
/// * `item` - what to order
#[tool(permission = perms::items::write, mutating, title = "Submit an order", risk = medium)]
pub async fn submit_item(item: String) -> Result<String, String> {
    bump(&item);
    Ok(format!("{item} ordered"))
}

agent! {
    /// Restates the person's request for the desk, changing nothing.
    pub struct Intake;
    tools: [read_catalogue],
    expose: { mcp: [stdio, http(auth = bearer)] },
}

agent! {
    /// Orders what it is handed.
    pub struct Desk;
    tools: [submit_item],
    expose: { mcp: [stdio, http(auth = bearer)] },
}

agent! {
    /// Orders what it is handed; served over MCP in no way.
    pub struct HiddenDesk;
    tools: [submit_item],
}

agent! {
    /// Orders what it is handed; served over MCP only on a byte stream.
    pub struct StdioDesk;
    tools: [submit_item],
    expose: { mcp: [stdio] },
}

composite! {
    /// The intake restates the request, then the desk orders it.
    pub struct OrderFlow: String -> String = then(Intake, Desk);
}

composite! {
    /// The intake restates the request, then a desk that is not served over MCP orders it.
    pub struct HiddenFlow: String -> String = then(Intake, HiddenDesk);
}

composite! {
    /// The hidden flow, nested behind a wrap-free composite of one more level.
    pub struct OuterFlow: String -> String = then(Intake, HiddenFlow);
}

composite! {
    /// The intake restates the request, then a desk served only over stdio orders it.
    pub struct StdioFlow: String -> String = then(Intake, StdioDesk);
}

composite! {
    /// The intake, then the flow whose desk is served only over stdio, one level down.
    pub struct OuterStdioFlow: String -> String = then(Intake, StdioFlow);
}

/// The order flow's tool: the composite's name.
pub const FLOW: &str = <OrderFlow as agents_runtime::agents_core::compose::Composite>::GRAPH.name;

fn offers(req: &ChatRequest, tool: &str) -> bool {
    req.tools.iter().any(|t| t.name == tool)
}

/// The order flow's model: the first node (not offered `submit_item`) hands on
/// `order: <the request>`; the desk orders exactly that, then reports what the tool answered.
pub fn model() -> RuleProvider {
    const TOOL: &str = "submit_item";
    RuleProvider::new()
        .when(|req| (!offers(req, TOOL)).then(|| reply(format!("order: {}", last_user_message(req).unwrap_or("")))))
        .when(|req| {
            let item = last_user_message(req)?.strip_prefix("order: ")?.to_owned();
            tool_outcomes(req).is_empty().then(|| tool_call(TOOL, json!({"item": item}).to_string()))
        })
        .when(|req| tool_outcomes(req).first().map(|o| reply(format!("finished: {}", o.content))))
        .fallback("done")
}

/// How the person behind the client answers.
#[derive(Clone, Copy)]
pub enum Answer {
    Approve,
    Decline,
    Dismiss,
    /// A client that declared no elicitation.
    CannotAsk,
    /// A person who never answers.
    Never,
}

/// The person behind an rmcp client: answers every elicitation with `answer`; keeps what it
/// read.
#[derive(Clone)]
pub struct Person {
    pub answer: Answer,
    pub asked: Arc<Mutex<Vec<String>>>,
}

impl Person {
    /// A person answering `answer`, who has read nothing yet.
    pub fn new(answer: Answer) -> Self {
        Person { answer, asked: Arc::new(Mutex::new(Vec::new())) }
    }
}

impl ClientHandler for Person {
    fn get_info(&self) -> ClientConfig {
        let caps = match self.answer {
            Answer::CannotAsk => ClientCapabilities::default(),
            _ => ClientCapabilities::builder().enable_elicitation().build(),
        };
        ClientConfig::new(caps, Implementation::new("test-person", "1"))
            .with_protocol_version(ProtocolVersion::V_2025_11_25)
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        if let ElicitRequestParams::FormElicitationParams { message, .. } = &request {
            self.asked.lock().unwrap().push(message.clone());
        }
        if let Answer::Never = self.answer {
            std::future::pending::<()>().await;
        }
        Ok(match self.answer {
            Answer::Approve => ElicitResult::new(ElicitationAction::Accept).with_content(json!({"approve": true})),
            Answer::Decline => ElicitResult::new(ElicitationAction::Decline),
            Answer::Dismiss | Answer::CannotAsk | Answer::Never => ElicitResult::new(ElicitationAction::Cancel),
        })
    }
}
