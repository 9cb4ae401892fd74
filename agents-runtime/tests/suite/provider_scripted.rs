//! The offline providers: scripted replay and rules.

use crate::provider_common;

use agents_runtime::provider::scripted::{
    ScriptedProvider, last_user_message, reply, tool_call, tool_calls, tool_outcomes,
};
use agents_runtime::provider::{
    ChatMessage, ChatRequest, ChatResponse, Provider, ProviderError, RuleProvider, ToolDefinition, Usage,
};
use provider_common::{Tokens, request, user};
use serde_json::json;

fn tool(name: &str) -> ToolDefinition {
    ToolDefinition {
        name: name.into(),
        description: format!("The {name} tool."),
        input_schema: json!({"type": "object"}),
    }
}

/// Appends the assistant's calls and the given results, as the run loop does.
fn after_tools(mut req: ChatRequest, response: &ChatResponse, results: &[(&str, bool)]) -> ChatRequest {
    req.messages
        .push(ChatMessage::Assistant { content: response.content.clone(), tool_calls: response.tool_calls.clone() });
    for (call, (content, is_error)) in response.tool_calls.iter().zip(results) {
        req.messages.push(ChatMessage::Tool {
            call_id: call.id.clone(),
            name: call.name.clone(),
            content: content.to_string(),
            is_error: *is_error,
        });
    }
    req
}

#[tokio::test]
async fn scripted_responses_come_back_in_order_then_it_says_it_ran_out() {
    let paid = ChatResponse {
        usage: Usage { input_tokens: 10, output_tokens: 2, cost_usd: 0.01, estimated: false },
        ..reply("Done: it is sunny in Oslo today.")
    };
    let p =
        ScriptedProvider::new([tool_calls([("get_weather", r#"{"city":"Oslo"}"#), ("get_time", "{}")]), paid.clone()])
            .with_model("m1")
            .with_paid(true);
    assert_eq!((p.name(), p.model(), p.is_paid()), ("scripted", "m1", true));
    assert_eq!(p.remaining(), 2);

    let req = request(vec![user("weather?")], vec![tool("get_weather")]);
    let tokens = Tokens::default();
    let first = p.chat(&req, &tokens.sink()).await.unwrap();
    let ids: Vec<&str> = first.tool_calls.iter().map(|c| c.id.as_str()).collect();
    assert_eq!(ids, ["call_1", "call_2"]);

    let second = p.chat(&req, &tokens.sink()).await.unwrap();
    assert_eq!(second, paid);
    let streamed = tokens.all();
    assert!(streamed.len() >= 2, "streamed in fragments: {streamed:?}");
    assert_eq!(streamed.concat(), "Done: it is sunny in Oslo today.");

    let err = p.chat(&req, &tokens.sink()).await.unwrap_err();
    match &err {
        ProviderError::Other(text) => {
            assert!(text.contains("no response left"), "{text}");
            assert!(text.contains("all 2 scripted responses"), "{text}");
        }
        other => panic!("expected Other, got {other:?}"),
    }
    assert_eq!(p.requests().len(), 3);
    assert_eq!(p.requests()[0], req);

    p.push(reply("more"));
    assert_eq!(p.chat(&req, &tokens.sink()).await.unwrap().content, "more");
}

#[tokio::test]
async fn scripted_ids_continue_across_rounds_and_keep_given_ids() {
    let mut given = tool_call("a", "{}");
    given.tool_calls[0].id = "mine".into();
    let p = ScriptedProvider::new([tool_call("a", "{}"), given, tool_call("b", "{}")]);
    let req = request(vec![user("x")], vec![]);
    let mut ids = Vec::new();
    for _ in 0..3 {
        ids.push(p.chat(&req, &|_: &str| {}).await.unwrap().tool_calls[0].id.clone());
    }
    assert_eq!(ids, ["call_1", "mine", "call_2"]);
}

fn demo_rules() -> RuleProvider {
    RuleProvider::new()
        .on_keyword("weather", "get_weather", r#"{"city": "{after:in}"}"#)
        .on_any_keyword(["patient", "record"], "get_patient", r#"{"id": {number}}"#)
        .on_keyword("delete", "delete_everything", "{}")
}

#[tokio::test]
async fn rules_call_the_tool_then_summarise_the_result() {
    let p = demo_rules();
    assert!(!p.is_paid());
    let req = request(vec![user("What's the weather in Oslo?")], vec![tool("get_weather"), tool("get_patient")]);
    let first = p.chat(&req, &|_: &str| {}).await.unwrap();
    assert_eq!(first.tool_calls.len(), 1);
    assert_eq!(first.tool_calls[0].name, "get_weather");
    assert_eq!(first.tool_calls[0].arguments, r#"{"city": "Oslo"}"#);
    assert_eq!(first.tool_calls[0].id, "call_1");

    let req = after_tools(req, &first, &[(r#"{"celsius":4}"#, false)]);
    let tokens = Tokens::default();
    let second = p.chat(&req, &tokens.sink()).await.unwrap();
    assert!(second.tool_calls.is_empty(), "no second call of the same tool");
    assert!(second.content.contains(r#"get_weather: {"celsius":4}"#), "{}", second.content);
    assert_eq!(tokens.all().concat(), second.content);

    // A new user message starts a new turn: the rules apply again.
    let mut req = req;
    req.messages.push(ChatMessage::Assistant { content: second.content.clone(), tool_calls: vec![] });
    req.messages.push(user("And the weather in Rome?"));
    let third = p.chat(&req, &|_: &str| {}).await.unwrap();
    assert_eq!(third.tool_calls[0].arguments, r#"{"city": "Rome"}"#);
    assert_eq!(third.tool_calls[0].id, "call_2");
}

#[tokio::test]
async fn several_matching_rules_make_parallel_calls() {
    let req =
        request(vec![user("Weather in Paris, and patient 42 please")], vec![tool("get_weather"), tool("get_patient")]);
    let r = demo_rules().chat(&req, &|_: &str| {}).await.unwrap();
    let calls: Vec<(&str, &str)> = r.tool_calls.iter().map(|c| (c.name.as_str(), c.arguments.as_str())).collect();
    assert_eq!(calls, [("get_weather", r#"{"city": "Paris"}"#), ("get_patient", r#"{"id": 42}"#)]);
}

#[tokio::test]
async fn a_rule_whose_tool_is_not_offered_does_not_fire() {
    let req = request(vec![user("delete everything")], vec![tool("get_weather")]);
    let r = demo_rules().chat(&req, &|_: &str| {}).await.unwrap();
    assert!(r.tool_calls.is_empty());
    assert!(r.content.contains("did not recognise"), "{}", r.content);
    assert!(r.content.contains("weather, patient, record"), "{}", r.content);
}

#[tokio::test]
async fn a_template_that_cannot_be_filled_does_not_fire() {
    let req = request(vec![user("show the patient")], vec![tool("get_patient")]);
    let r = demo_rules().fallback("Which patient? Give me a number.").chat(&req, &|_: &str| {}).await.unwrap();
    assert!(r.tool_calls.is_empty());
    assert_eq!(r.content, "Which patient? Give me a number.");
}

#[tokio::test]
async fn errors_are_summarised_as_failures() {
    let p = demo_rules();
    let req = request(vec![user("patient 7")], vec![tool("get_patient")]);
    let first = p.chat(&req, &|_: &str| {}).await.unwrap();
    let req = after_tools(req, &first, &[(r#"{"error":"not permitted"}"#, true)]);
    let second = p.chat(&req, &|_: &str| {}).await.unwrap();
    assert!(second.content.contains(r#"get_patient did not succeed: {"error":"not permitted"}"#), "{}", second.content);
}

#[tokio::test]
async fn custom_rules_run_first_and_can_chain_tools() {
    let p = RuleProvider::new()
        .when(|req| {
            let done = tool_outcomes(req);
            match done.last().map(|o| o.name) {
                None if last_user_message(req)?.contains("book") => Some(tool_call("find_slot", "{}")),
                Some("find_slot") => Some(tool_call("book_slot", r#"{"slot":1}"#)),
                _ => None,
            }
        })
        .summarize_with(|outcomes| format!("{} step(s) done", outcomes.len()));
    let req = request(vec![user("book me in")], vec![]);
    let first = p.chat(&req, &|_: &str| {}).await.unwrap();
    assert_eq!(first.tool_calls[0].name, "find_slot");
    let req = after_tools(req, &first, &[("[1]", false)]);
    let second = p.chat(&req, &|_: &str| {}).await.unwrap();
    assert_eq!(second.tool_calls[0].name, "book_slot");
    let req = after_tools(req, &second, &[("booked", false)]);
    let third = p.chat(&req, &|_: &str| {}).await.unwrap();
    assert!(third.tool_calls.is_empty());
    assert_eq!(third.content, "2 step(s) done");
}

#[tokio::test]
async fn with_no_rules_the_fallback_explains_how_to_use_a_real_model() {
    let r = RuleProvider::new().chat(&request(vec![user("hi")], vec![]), &|_: &str| {}).await.unwrap();
    assert!(r.content.contains("AGENTS_MODEL"), "{}", r.content);
}
