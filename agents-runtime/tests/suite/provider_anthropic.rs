//! The Anthropic Messages provider against a canned server on 127.0.0.1.
#![cfg(feature = "http")]

use crate::provider_common;

use agents_runtime::provider::{
    AnthropicConfig, AnthropicProvider, ApiKey, PriceTable, Provider, ProviderError, ToolCallRequest,
};
use provider_common::*;
use serde_json::{Value, json};
use std::time::Duration;

const KEY: &str = "sk-ant-test-51c0ffee";
const MODEL: &str = "claude-sonnet-4-5-20250929";

fn provider_with_timeout(server: &TestServer, timeout: Duration) -> AnthropicProvider {
    AnthropicProvider::new(
        AnthropicConfig::new(MODEL, ApiKey::new(KEY))
            .with_base_url(server.base_url.clone())
            .with_prices(PriceTable::new().with_price("claude-sonnet-4-5*", 3.0, 15.0).unwrap())
            .with_http(fast_http(timeout)),
    )
    .unwrap()
}

fn provider(server: &TestServer) -> AnthropicProvider {
    provider_with_timeout(server, Duration::from_secs(20))
}

/// One event as the Messages API streams it: `event:` line, `data:` line, blank line.
fn event(data: Value) -> String {
    format!("event: {}\ndata: {data}\n\n", data["type"].as_str().unwrap())
}

fn message_start(input_tokens: u64) -> String {
    event(json!({
        "type": "message_start",
        "message": {
            "id": "msg_01XFDUDYJgAACzvnptvVoYEL",
            "type": "message",
            "role": "assistant",
            "content": [],
            "model": MODEL,
            "stop_reason": null,
            "stop_sequence": null,
            "usage": {"input_tokens": input_tokens, "output_tokens": 1},
        },
    }))
}

fn text_block(index: u64, parts: &[&str]) -> Vec<String> {
    let mut events = vec![event(json!({
        "type": "content_block_start",
        "index": index,
        "content_block": {"type": "text", "text": ""},
    }))];
    for p in parts {
        events.push(event(json!({
            "type": "content_block_delta",
            "index": index,
            "delta": {"type": "text_delta", "text": p},
        })));
    }
    events.push(event(json!({"type": "content_block_stop", "index": index})));
    events
}

fn tool_block(index: u64, id: &str, name: &str, parts: &[&str]) -> Vec<String> {
    let mut events = vec![event(json!({
        "type": "content_block_start",
        "index": index,
        "content_block": {"type": "tool_use", "id": id, "name": name, "input": {}},
    }))];
    for p in parts {
        events.push(event(json!({
            "type": "content_block_delta",
            "index": index,
            "delta": {"type": "input_json_delta", "partial_json": p},
        })));
    }
    events.push(event(json!({"type": "content_block_stop", "index": index})));
    events
}

fn message_end(stop_reason: &str, output_tokens: u64) -> Vec<String> {
    vec![
        event(json!({
            "type": "message_delta",
            "delta": {"stop_reason": stop_reason, "stop_sequence": null},
            "usage": {"output_tokens": output_tokens},
        })),
        event(json!({"type": "message_stop"})),
    ]
}

fn text_stream(parts: &[&str]) -> Vec<u8> {
    let mut events = vec![message_start(25)];
    events.push(event(json!({"type": "ping"})));
    events.extend(text_block(0, parts));
    events.extend(message_end("end_turn", 15));
    sse_response(&events)
}

#[tokio::test]
async fn streams_text_and_reports_usage_and_cost() {
    let server = TestServer::start(vec![Reply::Bytes(text_stream(&["Hello", "!", " How can I help?"]))]).await;
    let p = provider(&server);
    let tokens = Tokens::default();
    let response = p.chat(&request(vec![user("Hi")], vec![]), &tokens.sink()).await.unwrap();

    assert_eq!(tokens.all(), vec!["Hello", "!", " How can I help?"]);
    assert_eq!(response.content, "Hello! How can I help?");
    assert_eq!(response.usage.input_tokens, 25);
    assert_eq!(response.usage.output_tokens, 15);
    let expected = (25.0 * 3.0 + 15.0 * 15.0) / 1e6;
    assert!((response.usage.cost_usd - expected).abs() < 1e-15);
    assert!(p.price_known());

    let r = &server.requests()[0];
    assert_eq!(r.path, "/v1/messages");
    assert_eq!(r.header("x-api-key"), Some(KEY));
    assert_eq!(r.header("anthropic-version"), Some("2023-06-01"));
    assert_eq!(r.header("authorization"), None);
    let body = r.json();
    assert_eq!(body["model"], MODEL);
    assert_eq!(body["max_tokens"], 4096);
    assert_eq!(body["stream"], true);
    assert_eq!(body["system"], "You are terse.");
    assert_eq!(body["messages"], json!([{"role": "user", "content": [{"type": "text", "text": "Hi"}]}]));
}

#[tokio::test]
async fn reassembles_tool_input_from_partial_json() {
    // Written out literally, as the API sends it.
    let stream = concat!(
        "event: message_start\n",
        "data: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_014p7gG3wDgGV9EUtLvnow3U\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"claude-sonnet-4-5-20250929\",\"stop_sequence\":null,\"usage\":{\"input_tokens\":472,\"output_tokens\":2},\"content\":[],\"stop_reason\":null}}\n\n",
        "event: content_block_start\n",
        "data: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n",
        "event: ping\n",
        "data: {\"type\": \"ping\"}\n\n",
        "event: content_block_delta\n",
        "data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Let me check.\"}}\n\n",
        "event: content_block_stop\n",
        "data: {\"type\":\"content_block_stop\",\"index\":0}\n\n",
        "event: content_block_start\n",
        "data: {\"type\":\"content_block_start\",\"index\":1,\"content_block\":{\"type\":\"tool_use\",\"id\":\"toolu_01T1x1fJ34qAmk2tNTrN7Up6\",\"name\":\"get_weather\",\"input\":{}}}\n\n",
        "event: content_block_delta\n",
        "data: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"\"}}\n\n",
        "event: content_block_delta\n",
        "data: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"city\\\": \"}}\n\n",
        "event: content_block_delta\n",
        "data: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"\\\"San Fra\"}}\n\n",
        "event: content_block_delta\n",
        "data: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"ncisco\\\"}\"}}\n\n",
        "event: content_block_stop\n",
        "data: {\"type\":\"content_block_stop\",\"index\":1}\n\n",
        "event: message_delta\n",
        "data: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"tool_use\",\"stop_sequence\":null},\"usage\":{\"output_tokens\":89}}\n\n",
        "event: message_stop\n",
        "data: {\"type\":\"message_stop\"}\n\n",
    );
    // Split into network chunks at arbitrary points, not at event boundaries.
    let chunks: Vec<String> = stream.as_bytes().chunks(97).map(|c| String::from_utf8(c.to_vec()).unwrap()).collect();
    let server = TestServer::start(vec![Reply::Bytes(sse_response(&chunks))]).await;
    let tokens = Tokens::default();
    let response = provider(&server)
        .chat(&request(vec![user("Weather in SF?")], vec![weather_tool()]), &tokens.sink())
        .await
        .unwrap();
    assert_eq!(response.content, "Let me check.");
    assert_eq!(tokens.all(), vec!["Let me check."]);
    assert_eq!(
        response.tool_calls,
        vec![ToolCallRequest {
            id: "toolu_01T1x1fJ34qAmk2tNTrN7Up6".into(),
            name: "get_weather".into(),
            arguments: r#"{"city": "San Francisco"}"#.into(),
        }]
    );
    assert_eq!(response.usage.input_tokens, 472);
    assert_eq!(response.usage.output_tokens, 89);

    let body = server.requests()[0].json();
    assert_eq!(
        body["tools"],
        json!([{
            "name": "get_weather",
            "description": "Current weather for a city.",
            "input_schema": {
                "type": "object",
                "properties": {"city": {"type": "string"}},
                "required": ["city"],
            },
        }])
    );
}

#[tokio::test]
async fn two_parallel_tool_uses() {
    let mut events = vec![message_start(100)];
    events.extend(tool_block(0, "toolu_A", "get_weather", &[r#"{"city":"#, r#" "Oslo"}"#]));
    events.extend(tool_block(1, "toolu_B", "get_weather", &[r#"{"city": "Bergen"}"#]));
    events.extend(message_end("tool_use", 60));
    let server = TestServer::start(vec![Reply::Bytes(sse_response(&events))]).await;
    let response = provider(&server)
        .chat(&request(vec![user("Oslo and Bergen?")], vec![weather_tool()]), &|_: &str| {})
        .await
        .unwrap();
    assert_eq!(
        response.tool_calls,
        vec![
            ToolCallRequest {
                id: "toolu_A".into(),
                name: "get_weather".into(),
                arguments: r#"{"city": "Oslo"}"#.into(),
            },
            ToolCallRequest {
                id: "toolu_B".into(),
                name: "get_weather".into(),
                arguments: r#"{"city": "Bergen"}"#.into(),
            },
        ]
    );
}

#[tokio::test]
async fn a_tool_without_input_deltas_gets_an_empty_object() {
    let mut events = vec![message_start(10)];
    events.extend(tool_block(0, "toolu_N", "list_cities", &[]));
    events.extend(message_end("tool_use", 5));
    let server = TestServer::start(vec![Reply::Bytes(sse_response(&events))]).await;
    let response =
        provider(&server).chat(&request(vec![user("x")], vec![weather_tool()]), &|_: &str| {}).await.unwrap();
    assert_eq!(response.tool_calls[0].arguments, "{}");
}

#[tokio::test]
async fn the_request_after_a_tool_round_maps_tool_use_and_tool_result() {
    let server = TestServer::start(vec![Reply::Bytes(text_stream(&["Oslo is 4 °C."]))]).await;
    let messages = tool_round("toolu_", "Checking both.");
    let mut req = request(messages, vec![weather_tool()]);
    req.response_schema = Some(json!({"type": "object"}));
    provider(&server).chat(&req, &|_: &str| {}).await.unwrap();

    let body = server.requests()[0].json();
    assert_eq!(
        body["messages"],
        json!([
            {"role": "user", "content": [{"type": "text", "text": "Oslo and Bergen?"}]},
            {"role": "assistant", "content": [
                {"type": "text", "text": "Checking both."},
                {"type": "tool_use", "id": "toolu_A", "name": "get_weather", "input": {"city": "Oslo"}},
                {"type": "tool_use", "id": "toolu_B", "name": "get_weather", "input": {"city": "Bergen"}},
            ]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "toolu_A", "content": "{\"celsius\":4}"},
                {"type": "tool_result", "tool_use_id": "toolu_B", "content": "{\"error\":\"denied\"}", "is_error": true},
            ]},
        ])
    );
    let system = body["system"].as_str().unwrap();
    assert!(system.starts_with("You are terse."));
    assert!(system.contains(r#"{"type":"object"}"#), "{system}");
}

#[tokio::test]
async fn retries_after_overload_and_429() {
    let server = TestServer::start(vec![
        Reply::Bytes(json_response(
            429,
            "Too Many Requests",
            &[("retry-after", "0")],
            r#"{"type":"error","error":{"type":"rate_limit_error","message":"Number of request tokens has exceeded your per-minute rate limit"}}"#,
        )),
        Reply::Bytes(json_response(
            529,
            "Overloaded",
            &[],
            r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
        )),
        Reply::Bytes(text_stream(&["ok"])),
    ])
    .await;
    let response = ask(&provider(&server)).await.unwrap();
    assert_eq!(response.content, "ok");
    assert_eq!(server.requests().len(), 3);
}

#[tokio::test]
async fn three_500s_give_an_upstream_error() {
    let fail = || {
        Reply::Bytes(json_response(
            500,
            "Internal Server Error",
            &[],
            r#"{"type":"error","error":{"type":"api_error","message":"Internal server error"}}"#,
        ))
    };
    let server = TestServer::start(vec![fail(), fail(), fail()]).await;
    let err = ask(&provider(&server)).await.unwrap_err();
    assert_eq!(err, ProviderError::Upstream { status: 500, attempts: 3, detail: "Internal server error".into() });
    assert_eq!(server.requests().len(), 3);
}

#[tokio::test]
async fn a_refused_key_is_unauthorized_and_never_shown() {
    let server = TestServer::start(vec![Reply::Bytes(json_response(
        401,
        "Unauthorized",
        &[],
        &format!(r#"{{"type":"error","error":{{"type":"authentication_error","message":"invalid x-api-key {KEY}"}}}}"#),
    ))])
    .await;
    let p = provider(&server);
    let err = ask(&p).await.unwrap_err();
    assert_eq!(err, ProviderError::Unauthorized { status: 401, env_var: "ANTHROPIC_API_KEY".into() });
    let shown = format!("{err} {err:?} {p:?}");
    assert!(shown.contains("ANTHROPIC_API_KEY"));
    assert!(!shown.contains(KEY), "{shown}");
}

#[tokio::test]
async fn an_unknown_model_is_reported_as_such() {
    let server = TestServer::start(vec![Reply::Bytes(json_response(
        404,
        "Not Found",
        &[],
        &format!(r#"{{"type":"error","error":{{"type":"not_found_error","message":"model: {MODEL}"}}}}"#),
    ))])
    .await;
    let err = ask(&provider(&server)).await.unwrap_err();
    assert_eq!(err, ProviderError::UnknownModel { model: MODEL.into(), detail: format!("model: {MODEL}") });
}

#[tokio::test]
async fn a_404_that_is_not_about_the_model_means_a_wrong_base_url() {
    let server = TestServer::start(vec![Reply::Bytes(json_response(
        404,
        "Not Found",
        &[],
        r#"{"type":"error","error":{"type":"not_found_error","message":"Not Found"}}"#,
    ))])
    .await;
    let err = ask(&provider(&server)).await.unwrap_err();
    assert!(matches!(err, ProviderError::Unreachable { .. }), "{err:?}");
    assert!(err.to_string().contains("check the base URL"));
}

#[tokio::test]
async fn connection_refused_is_unreachable() {
    let url = closed_port_url().await;
    let err = AnthropicProvider::new(AnthropicConfig::new(MODEL, ApiKey::new(KEY)).with_base_url(url.clone()))
        .unwrap()
        .chat(&request(vec![user("x")], vec![]), &|_: &str| {})
        .await
        .unwrap_err();
    assert!(matches!(err, ProviderError::Unreachable { .. }), "{err:?}");
    assert!(err.to_string().contains(&url));
    assert!(!err.to_string().contains(KEY));
}

#[tokio::test]
async fn a_server_that_never_answers_times_out() {
    let server = TestServer::start(vec![Reply::Hang]).await;
    let err = ask(&provider_with_timeout(&server, Duration::from_millis(300))).await.unwrap_err();
    assert_eq!(err, ProviderError::Timeout { secs: 1 });
}

#[tokio::test]
async fn a_stream_that_stalls_midway_times_out() {
    let mut events = vec![message_start(10)];
    events.extend(text_block(0, &["Thinking about"]).into_iter().take(2));
    let server = TestServer::start(vec![Reply::ThenStall(sse_partial(&events))]).await;
    // Long enough for the first fragment to arrive on a busy machine.
    assert_stall_times_out(&provider_with_timeout(&server, Duration::from_secs(1)), "Thinking about").await;
}

#[tokio::test]
async fn an_error_event_in_the_stream_is_reported() {
    let mut events = vec![message_start(10)];
    events.push(event(json!({
        "type": "error",
        "error": {"type": "overloaded_error", "message": "Overloaded"},
    })));
    let server = TestServer::start(vec![Reply::Bytes(sse_response(&events))]).await;
    let err = ask(&provider(&server)).await.unwrap_err();
    assert_eq!(
        err,
        ProviderError::Upstream {
            status: 529,
            attempts: 1,
            detail: "overloaded_error in the stream: Overloaded".into()
        }
    );
    assert_eq!(server.requests().len(), 1, "not retried once streaming began");
}

#[tokio::test]
async fn a_stream_without_message_stop_is_a_protocol_error() {
    let mut events = vec![message_start(10)];
    events.extend(text_block(0, &["cut"]));
    let server = TestServer::start(vec![Reply::Bytes(sse_response(&events))]).await;
    let err = ask(&provider(&server)).await.unwrap_err();
    assert!(matches!(err, ProviderError::Protocol(_)), "{err:?}");
}

#[tokio::test]
async fn a_base_url_ending_in_v1_is_not_doubled() {
    let server = TestServer::start(vec![Reply::Bytes(text_stream(&["ok"]))]).await;
    let p = AnthropicProvider::new(
        AnthropicConfig::new(MODEL, ApiKey::new(KEY)).with_base_url(format!("{}/v1/", server.base_url)),
    )
    .unwrap();
    ask(&p).await.unwrap();
    assert_eq!(server.requests()[0].path, "/v1/messages");
}
