//! The OpenAI-compatible provider against a canned server on 127.0.0.1.
#![cfg(feature = "http")]

use crate::provider_common;

use agents_runtime::provider::{
    ApiKey, OpenAiConfig, OpenAiProvider, PriceTable, Provider, ProviderError, ToolCallRequest,
};
use provider_common::*;
use serde_json::{Value, json};
use std::time::Duration;

const KEY: &str = "sk-test-7f3a9c";

fn provider(server: &TestServer) -> OpenAiProvider {
    provider_with_timeout(server, Duration::from_secs(20))
}

fn provider_with_timeout(server: &TestServer, timeout: Duration) -> OpenAiProvider {
    let config = OpenAiConfig::openai("gpt-4o-mini", ApiKey::new(KEY))
        .with_prices(PriceTable::new().with_price("gpt-4o-mini", 0.15, 0.60).unwrap())
        .with_http(fast_http(timeout));
    OpenAiProvider::new(OpenAiConfig { base_url: format!("{}/v1", server.base_url), ..config }).unwrap()
}

/// One `chat.completion.chunk` as OpenAI streams it.
fn chunk(delta: Value, finish_reason: Option<&str>) -> String {
    let chunk = json!({
        "id": "chatcmpl-AbC123",
        "object": "chat.completion.chunk",
        "created": 1_726_000_000,
        "model": "gpt-4o-mini-2024-07-18",
        "system_fingerprint": "fp_f85bea6784",
        "choices": [{"index": 0, "delta": delta, "logprobs": null, "finish_reason": finish_reason}],
        "usage": null,
    });
    format!("data: {chunk}\n\n")
}

fn usage_chunk(prompt: u64, completion: u64) -> String {
    let chunk = json!({
        "id": "chatcmpl-AbC123",
        "object": "chat.completion.chunk",
        "created": 1_726_000_000,
        "model": "gpt-4o-mini-2024-07-18",
        "system_fingerprint": "fp_f85bea6784",
        "choices": [],
        "usage": {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion},
    });
    format!("data: {chunk}\n\n")
}

fn done() -> String {
    "data: [DONE]\n\n".to_string()
}

fn text_stream(parts: &[&str]) -> Vec<u8> {
    let mut events = vec![chunk(json!({"role": "assistant", "content": ""}), None)];
    for p in parts {
        events.push(chunk(json!({"content": p}), None));
    }
    events.push(chunk(json!({}), Some("stop")));
    events.push(usage_chunk(20, 5));
    events.push(done());
    sse_response(&events)
}

#[tokio::test]
async fn streams_text_and_reports_usage_and_cost() {
    let server = TestServer::start(vec![Reply::Bytes(text_stream(&["Hel", "lo", " world"]))]).await;
    let p = provider(&server);
    let tokens = Tokens::default();
    let response = p.chat(&request(vec![user("Say hello")], vec![]), &tokens.sink()).await.unwrap();

    assert_eq!(tokens.all(), vec!["Hel", "lo", " world"]);
    assert_eq!(response.content, "Hello world");
    assert!(response.tool_calls.is_empty());
    assert_eq!(response.usage.input_tokens, 20);
    assert_eq!(response.usage.output_tokens, 5);
    let expected = (20.0 * 0.15 + 5.0 * 0.60) / 1e6;
    assert!((response.usage.cost_usd - expected).abs() < 1e-15);
    assert!(p.price_known());
    assert!(p.is_paid());

    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    let r = &requests[0];
    assert_eq!(r.method, "POST");
    assert_eq!(r.path, "/v1/chat/completions");
    assert_eq!(r.header("authorization"), Some(format!("Bearer {KEY}").as_str()));
    let body = r.json();
    assert_eq!(body["model"], "gpt-4o-mini");
    assert_eq!(body["stream"], true);
    assert_eq!(body["stream_options"], json!({"include_usage": true}));
    assert_eq!(
        body["messages"],
        json!([
            {"role": "system", "content": "You are terse."},
            {"role": "user", "content": "Say hello"},
        ])
    );
    assert!(body.get("tools").is_none(), "no tools key when none are offered");
}

#[tokio::test]
async fn reassembles_tool_call_arguments_from_fragments() {
    // Written out literally, as OpenAI sends it.
    let events: Vec<String> = [
        r#"data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1726000000,"model":"gpt-4o-mini","choices":[{"index":0,"delta":{"role":"assistant","content":null,"tool_calls":[{"index":0,"id":"call_Wx9","type":"function","function":{"name":"get_weather","arguments":""}}]},"logprobs":null,"finish_reason":null}]}"#,
        r#"data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1726000000,"model":"gpt-4o-mini","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"ci"}}]},"logprobs":null,"finish_reason":null}]}"#,
        r#"data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1726000000,"model":"gpt-4o-mini","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"ty\": \"Os"}}]},"logprobs":null,"finish_reason":null}]}"#,
        r#"data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1726000000,"model":"gpt-4o-mini","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"lo\"}"}}]},"logprobs":null,"finish_reason":null}]}"#,
        r#"data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1726000000,"model":"gpt-4o-mini","choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":"tool_calls"}]}"#,
        r#"data: [DONE]"#,
    ]
    .iter()
    .map(|e| format!("{e}\n\n"))
    .collect();
    let server = TestServer::start(vec![Reply::Bytes(sse_response(&events))]).await;
    let p = provider(&server);
    let tokens = Tokens::default();
    let response =
        p.chat(&request(vec![user("Weather in Oslo?")], vec![weather_tool()]), &tokens.sink()).await.unwrap();

    assert_eq!(
        response.tool_calls,
        vec![ToolCallRequest {
            id: "call_Wx9".into(),
            name: "get_weather".into(),
            arguments: r#"{"city": "Oslo"}"#.into(),
        }]
    );
    assert_eq!(response.content, "");
    assert!(tokens.all().is_empty());

    let body = server.requests()[0].json();
    assert_eq!(
        body["tools"],
        json!([{
            "type": "function",
            "function": {
                "name": "get_weather",
                "description": "Current weather for a city.",
                "parameters": {
                    "type": "object",
                    "properties": {"city": {"type": "string"}},
                    "required": ["city"],
                },
            },
        }])
    );
}

#[tokio::test]
async fn two_parallel_tool_calls_are_kept_apart_by_index() {
    let call = |index: u64, id: Option<&str>, name: Option<&str>, args: &str| {
        let mut c = json!({"index": index, "function": {"arguments": args}});
        if let Some(id) = id {
            c["id"] = json!(id);
            c["type"] = json!("function");
        }
        if let Some(name) = name {
            c["function"]["name"] = json!(name);
        }
        chunk(json!({"tool_calls": [c]}), None)
    };
    let events = vec![
        chunk(json!({"role": "assistant", "content": null}), None),
        call(0, Some("call_A"), Some("get_weather"), ""),
        call(0, None, None, r#"{"city":"#),
        call(1, Some("call_B"), Some("get_weather"), ""),
        call(1, None, None, r#"{"city":"Bergen"}"#),
        call(0, None, None, r#""Oslo"}"#),
        chunk(json!({}), Some("tool_calls")),
        usage_chunk(50, 30),
        done(),
    ];
    let server = TestServer::start(vec![Reply::Bytes(sse_response(&events))]).await;
    let response = provider(&server)
        .chat(&request(vec![user("Oslo and Bergen?")], vec![weather_tool()]), &|_: &str| {})
        .await
        .unwrap();
    assert_eq!(
        response.tool_calls,
        vec![
            ToolCallRequest { id: "call_A".into(), name: "get_weather".into(), arguments: r#"{"city":"Oslo"}"#.into() },
            ToolCallRequest {
                id: "call_B".into(),
                name: "get_weather".into(),
                arguments: r#"{"city":"Bergen"}"#.into(),
            },
        ]
    );
    assert_eq!(response.usage.output_tokens, 30);
}

#[tokio::test]
async fn parallel_calls_sharing_index_zero_are_split_by_id() {
    // Ollama numbers every call of a parallel batch 0 and sends each call whole.
    let events = vec![
        chunk(
            json!({"role": "assistant", "content": "", "tool_calls": [
                {"index": 0, "id": "call_1", "type": "function",
                 "function": {"name": "get_weather", "arguments": "{\"city\":\"Oslo\"}"}}
            ]}),
            None,
        ),
        chunk(
            json!({"tool_calls": [
                {"index": 0, "id": "call_2", "type": "function",
                 "function": {"name": "get_weather", "arguments": "{\"city\":\"Rome\"}"}}
            ]}),
            None,
        ),
        chunk(json!({}), Some("tool_calls")),
        done(),
    ];
    let server = TestServer::start(vec![Reply::Bytes(sse_response(&events))]).await;
    let response =
        provider(&server).chat(&request(vec![user("x")], vec![weather_tool()]), &|_: &str| {}).await.unwrap();
    let ids: Vec<&str> = response.tool_calls.iter().map(|c| c.id.as_str()).collect();
    assert_eq!(ids, ["call_1", "call_2"]);
    assert_eq!(response.tool_calls[1].arguments, r#"{"city":"Rome"}"#);
}

#[tokio::test]
async fn the_request_after_a_tool_round_maps_calls_and_results() {
    let server = TestServer::start(vec![Reply::Bytes(text_stream(&["Oslo 4 °C, Bergen 9 °C."]))]).await;
    let messages = tool_round("call_", "");
    let response = provider(&server).chat(&request(messages, vec![weather_tool()]), &|_: &str| {}).await.unwrap();
    assert_eq!(response.content, "Oslo 4 °C, Bergen 9 °C.");

    let body = server.requests()[0].json();
    assert_eq!(
        body["messages"],
        json!([
            {"role": "system", "content": "You are terse."},
            {"role": "user", "content": "Oslo and Bergen?"},
            {"role": "assistant", "content": null, "tool_calls": [
                {"id": "call_A", "type": "function",
                 "function": {"name": "get_weather", "arguments": "{\"city\":\"Oslo\"}"}},
                {"id": "call_B", "type": "function",
                 "function": {"name": "get_weather", "arguments": "{\"city\":\"Bergen\"}"}},
            ]},
            {"role": "tool", "tool_call_id": "call_A", "content": "{\"celsius\":4}"},
            {"role": "tool", "tool_call_id": "call_B", "content": "{\"error\":\"denied\"}"},
        ])
    );
}

#[tokio::test]
async fn a_response_schema_becomes_response_format() {
    let server = TestServer::start(vec![Reply::Bytes(text_stream(&["{}"]))]).await;
    let mut req = request(vec![user("x")], vec![]);
    let schema = json!({"type": "object", "properties": {"ok": {"type": "boolean"}}});
    req.response_schema = Some(schema.clone());
    provider(&server).chat(&req, &|_: &str| {}).await.unwrap();
    assert_eq!(
        server.requests()[0].json()["response_format"],
        json!({"type": "json_schema", "json_schema": {"name": "response", "schema": schema}})
    );
}

#[tokio::test]
async fn an_unpriced_model_costs_zero_and_says_so() {
    let server = TestServer::start(vec![Reply::Bytes(text_stream(&["hi"]))]).await;
    let config = OpenAiConfig::compatible("local-model", format!("{}/v1", server.base_url))
        .with_http(fast_http(Duration::from_secs(20)));
    assert!(!config.paid, "a server on 127.0.0.1 is not paid");
    let p = OpenAiProvider::new(config).unwrap();
    assert!(!p.price_known());
    let response = ask(&p).await.unwrap();
    assert_eq!(response.usage.input_tokens, 20);
    assert_eq!(response.usage.cost_usd, 0.0);
    assert_eq!(server.requests()[0].header("authorization"), None);
}

#[tokio::test]
async fn retries_after_429_and_then_succeeds() {
    let server = TestServer::start(vec![
        Reply::Bytes(json_response(
            429,
            "Too Many Requests",
            &[("retry-after", "0")],
            r#"{"error":{"message":"Rate limit reached","type":"requests","param":null,"code":"rate_limit_exceeded"}}"#,
        )),
        Reply::Bytes(text_stream(&["ok"])),
    ])
    .await;
    let response = ask(&provider(&server)).await.unwrap();
    assert_eq!(response.content, "ok");
    assert_eq!(server.requests().len(), 2, "one retry");
}

#[tokio::test]
async fn retry_after_is_honoured() {
    let server = TestServer::start(vec![
        Reply::Bytes(json_response(429, "Too Many Requests", &[("retry-after", "1")], "{}")),
        Reply::Bytes(text_stream(&["ok"])),
    ])
    .await;
    let started = std::time::Instant::now();
    ask(&provider(&server)).await.unwrap();
    assert!(started.elapsed() >= Duration::from_secs(1));
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test]
async fn a_retry_after_beyond_the_deadline_fails_at_once() {
    let server = TestServer::start(vec![Reply::Bytes(json_response(
        429,
        "Too Many Requests",
        &[("retry-after", "3600")],
        r#"{"error":{"message":"quota"}}"#,
    ))])
    .await;
    let err = provider_with_timeout(&server, Duration::from_secs(5))
        .chat(&request(vec![user("x")], vec![]), &|_: &str| {})
        .await
        .unwrap_err();
    match err {
        ProviderError::Upstream { status, attempts, .. } => {
            assert_eq!((status, attempts), (429, 1));
        }
        other => panic!("expected Upstream, got {other:?}"),
    }
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn three_500s_give_an_upstream_error() {
    let fail = || {
        Reply::Bytes(json_response(
            500,
            "Internal Server Error",
            &[],
            r#"{"error":{"message":"The server had an error while processing your request.","type":"server_error"}}"#,
        ))
    };
    let server = TestServer::start(vec![fail(), fail(), fail(), Reply::Bytes(text_stream(&["late"]))]).await;
    let err = ask(&provider(&server)).await.unwrap_err();
    assert_eq!(
        err,
        ProviderError::Upstream {
            status: 500,
            attempts: 3,
            detail: "The server had an error while processing your request.".into(),
        }
    );
    assert_eq!(server.requests().len(), 3);
}

#[tokio::test]
async fn a_refused_key_is_unauthorized_and_never_shown() {
    let body = format!(
        r#"{{"error":{{"message":"Incorrect API key provided: {KEY}. You can find your API key at https://platform.openai.com/account/api-keys.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}}}"#
    );
    let server = TestServer::start(vec![Reply::Bytes(json_response(401, "Unauthorized", &[], &body))]).await;
    let p = provider(&server);
    let err = ask(&p).await.unwrap_err();
    assert_eq!(err, ProviderError::Unauthorized { status: 401, env_var: "OPENAI_API_KEY".into() });
    let shown = format!("{err} {err:?} {p:?} {:?}", p.config());
    assert!(shown.contains("OPENAI_API_KEY"));
    assert!(!shown.contains(KEY), "{shown}");
    assert_eq!(server.requests().len(), 1, "a refused key is not retried");
}

#[tokio::test]
async fn an_unknown_model_is_reported_as_such() {
    let server = TestServer::start(vec![Reply::Bytes(json_response(
        404,
        "Not Found",
        &[],
        r#"{"error":{"message":"The model `gpt-9` does not exist or you do not have access to it.","type":"invalid_request_error","param":null,"code":"model_not_found"}}"#,
    ))])
    .await;
    let err = ask(&provider(&server)).await.unwrap_err();
    match err {
        ProviderError::UnknownModel { model, detail } => {
            assert_eq!(model, "gpt-4o-mini");
            assert!(detail.contains("does not exist"));
        }
        other => panic!("expected UnknownModel, got {other:?}"),
    }
}

#[tokio::test]
async fn a_404_without_a_model_error_means_a_wrong_base_url() {
    let server = TestServer::start(vec![Reply::Bytes(
        b"HTTP/1.1 404 Not Found\r\ncontent-type: text/html\r\ncontent-length: 22\r\nconnection: close\r\n\r\n<h1>404 Not Found</h1>".to_vec(),
    )])
    .await;
    let err = ask(&provider(&server)).await.unwrap_err();
    assert!(matches!(err, ProviderError::Unreachable { .. }), "{err:?}");
    assert!(err.to_string().contains("check the base URL"), "{err}");
    assert!(err.to_string().contains("/v1/chat/completions"), "{err}");
}

#[tokio::test]
async fn a_redirect_is_not_followed() {
    let server = TestServer::start(vec![Reply::Bytes(
        b"HTTP/1.1 301 Moved Permanently\r\nlocation: https://elsewhere.example/v1/chat/completions\r\ncontent-length: 0\r\nconnection: close\r\n\r\n".to_vec(),
    )])
    .await;
    let err = ask(&provider(&server)).await.unwrap_err();
    assert!(matches!(err, ProviderError::Unreachable { .. }), "{err:?}");
    assert!(err.to_string().contains("elsewhere.example"), "{err}");
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn a_bad_request_is_not_retried_and_says_why() {
    let server = TestServer::start(vec![Reply::Bytes(json_response(
        400,
        "Bad Request",
        &[],
        r#"{"error":{"message":"Invalid schema for function 'get_weather'.","type":"invalid_request_error","param":"tools[0]","code":null}}"#,
    ))])
    .await;
    let err = provider(&server).chat(&request(vec![user("x")], vec![weather_tool()]), &|_: &str| {}).await.unwrap_err();
    assert!(matches!(err, ProviderError::Other(_)), "{err:?}");
    assert!(err.to_string().contains("HTTP 400"));
    assert!(err.to_string().contains("Invalid schema"));
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn connection_refused_is_unreachable() {
    let url = closed_port_url().await;
    let config = OpenAiConfig::compatible("m", format!("{url}/v1")).with_http(fast_http(Duration::from_secs(20)));
    let err =
        OpenAiProvider::new(config).unwrap().chat(&request(vec![user("x")], vec![]), &|_: &str| {}).await.unwrap_err();
    match &err {
        ProviderError::Unreachable { url: shown, .. } => assert!(shown.starts_with(&url)),
        other => panic!("expected Unreachable, got {other:?}"),
    }
    assert!(err.to_string().contains("check the base URL"));
}

#[tokio::test]
async fn a_server_that_never_answers_times_out() {
    let server = TestServer::start(vec![Reply::Hang]).await;
    let err = ask(&provider_with_timeout(&server, Duration::from_millis(300))).await.unwrap_err();
    assert_eq!(err, ProviderError::Timeout { secs: 1 });
}

#[tokio::test]
async fn a_stream_that_stalls_midway_times_out() {
    let events = vec![
        chunk(json!({"role": "assistant", "content": ""}), None),
        chunk(json!({"content": "The answer is"}), None),
    ];
    let server = TestServer::start(vec![Reply::ThenStall(sse_partial(&events))]).await;
    // Long enough for the first fragment to arrive on a busy machine.
    assert_stall_times_out(&provider_with_timeout(&server, Duration::from_secs(1)), "The answer is").await;
}

#[tokio::test]
async fn a_stream_that_ends_early_is_a_protocol_error() {
    let events = vec![chunk(json!({"content": "cut"}), None)];
    let server = TestServer::start(vec![Reply::Bytes(sse_response(&events))]).await;
    let err = ask(&provider(&server)).await.unwrap_err();
    assert!(matches!(err, ProviderError::Protocol(_)), "{err:?}");
}

#[tokio::test]
async fn a_server_that_ignores_stream_is_read_as_one_answer() {
    let body = r#"{"id":"chatcmpl-2","object":"chat.completion","created":1726000000,"model":"llama3.2","choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[{"id":"call_9","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":7,"completion_tokens":3,"total_tokens":10}}"#;
    let server = TestServer::start(vec![Reply::Bytes(json_response(200, "OK", &[], body))]).await;
    let response =
        provider(&server).chat(&request(vec![user("x")], vec![weather_tool()]), &|_: &str| {}).await.unwrap();
    assert_eq!(response.tool_calls[0].id, "call_9");
    assert_eq!(response.tool_calls[0].arguments, r#"{"city":"Paris"}"#);
    assert_eq!(response.usage.input_tokens, 7);
}

#[test]
fn an_invalid_base_url_is_refused_up_front() {
    let err = OpenAiProvider::new(OpenAiConfig::compatible("m", "localhost:8080")).unwrap_err();
    assert!(matches!(err, ProviderError::Unreachable { .. }), "{err:?}");
}
