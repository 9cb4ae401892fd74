//! A hostile server that sends far more than any limit allows, for both wire formats,
//! streaming and not: each call ends with the typed limit error, the client stops reading
//! (the server could write only a fraction of what it had), and the peak RSS of the process
//! grows by at most 64 MB while the default limits apply.
//!
//! This binary holds only these tests and runs them one at a time (a lock), so the peak RSS
//! read from /proc/self/status is this call's own.
#![cfg(feature = "http")]

mod provider_common;

use agents_runtime::provider::{
    AnthropicConfig, AnthropicProvider, ApiKey, OpenAiConfig, OpenAiProvider, Provider, ProviderError, ProviderLimit,
    ProviderLimits,
};
use provider_common::hostile::{Body, Hostile, head, peak_growth, reset_peak};
use provider_common::*;
use std::time::Duration;

/// What the server offers: 256 MiB, far beyond every default limit.
const OFFERED: u64 = 256 << 20;
/// The peak RSS growth allowed for one call under the default limits.
const MAX_GROWTH: u64 = 64 << 20;

static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

#[derive(Clone, Copy, Debug)]
enum Format {
    OpenAi,
    Anthropic,
}

fn provider(format: Format, server: &Hostile) -> Box<dyn Provider> {
    let mut http = fast_http(Duration::from_secs(60));
    http.max_attempts = 1;
    match format {
        Format::OpenAi => Box::new(
            OpenAiProvider::new(OpenAiConfig {
                base_url: format!("{}/v1", server.base_url),
                ..OpenAiConfig::openai("gpt-4o-mini", ApiKey::new("sk-hostile")).with_http(http)
            })
            .unwrap(),
        ),
        Format::Anthropic => Box::new(
            AnthropicProvider::new(
                AnthropicConfig::new("claude-sonnet-4-5", ApiKey::new("sk-ant-hostile"))
                    .with_base_url(server.base_url.clone())
                    .with_http(http),
            )
            .unwrap(),
        ),
    }
}

/// Runs one call against `body`, and checks the typed error, that reading stopped, and the
/// peak RSS growth.
async fn expect_limit(format: Format, content_type: &str, body: Body, limit: ProviderLimit) {
    let _one = ONE_AT_A_TIME.lock().await;
    let server = Hostile::start(head(content_type), body).await;
    let p = provider(format, &server);
    let baseline = reset_peak();
    let err = ask(&*p).await.unwrap_err();
    let growth = peak_growth(baseline);
    assert!(
        growth <= MAX_GROWTH,
        "{format:?} {limit:?}: the peak RSS grew by {} MiB (at most {} MiB allowed); the call ended with {err}",
        growth >> 20,
        MAX_GROWTH >> 20
    );
    let max = ProviderLimits::default().get(limit);
    assert_eq!(err, ProviderError::LimitExceeded { limit, max }, "{format:?}: {err}");
    assert!(err.to_string().contains(limit.setting()), "{err}");
    // The client hung up: the server could not write even a quarter of what it offered.
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert!(server.written() < OFFERED / 4, "{format:?} {limit:?}: the server wrote {} MiB", server.written() >> 20);
    eprintln!(
        "{format:?} {limit:?}: peak RSS growth {} KiB, server wrote {} KiB",
        growth >> 10,
        server.written() >> 10
    );
}

fn endless(prefix: &str, unit: &str) -> Body {
    Body::Endless { prefix: prefix.into(), unit: unit.into(), suffix: Vec::new(), total: OFFERED }
}

const SSE: &str = "text/event-stream";
const JSON: &str = "application/json";

// --- a non-streaming answer body ---

#[tokio::test]
async fn an_endless_json_body_ends_at_the_body_limit() {
    expect_limit(Format::OpenAi, JSON, endless(r#"{"choices":[{"message":{"content":""#, "x"), ProviderLimit::Body)
        .await;
    expect_limit(Format::Anthropic, JSON, endless(r#"{"content":[{"type":"text","text":""#, "x"), ProviderLimit::Body)
        .await;
}

// --- one SSE line without its newline ---

#[tokio::test]
async fn one_endless_sse_line_ends_at_the_event_limit() {
    expect_limit(Format::OpenAi, SSE, endless(r#"data: {"choices":[{"delta":{"content":""#, "y"), ProviderLimit::Event)
        .await;
    expect_limit(
        Format::Anthropic,
        SSE,
        endless(r#"data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":""#, "y"),
        ProviderLimit::Event,
    )
    .await;
}

#[tokio::test]
async fn endless_data_lines_of_one_event_end_at_the_event_limit() {
    expect_limit(Format::OpenAi, SSE, endless("", "data: zzzzzzzzzzzzzzzzzzzzzzzzzzzzzz\n"), ProviderLimit::Event)
        .await;
    expect_limit(Format::Anthropic, SSE, endless("", "data: zzzzzzzzzzzzzzzzzzzzzzzzzzzzzz\n"), ProviderLimit::Event)
        .await;
}

// --- the answer's text, many well-formed events ---

fn text_events_openai() -> String {
    let text = "t".repeat(16 * 1024);
    format!("data: {{\"choices\":[{{\"index\":0,\"delta\":{{\"content\":\"{text}\"}}}}]}}\n\n")
}

fn text_events_anthropic() -> String {
    let text = "t".repeat(16 * 1024);
    format!(
        "data: {{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{{\"type\":\"text_delta\",\"text\":\"{text}\"}}}}\n\n"
    )
}

#[tokio::test]
async fn endless_text_ends_at_the_text_limit() {
    expect_limit(Format::OpenAi, SSE, endless("", &text_events_openai()), ProviderLimit::Text).await;
    let start = "data: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":1,\"output_tokens\":1}}}\n\n\
                 data: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n";
    expect_limit(Format::Anthropic, SSE, endless(start, &text_events_anthropic()), ProviderLimit::Text).await;
}

// --- the arguments of one tool call ---

#[tokio::test]
async fn endless_arguments_of_one_call_end_at_the_call_limit() {
    let open = "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"call_1\",\"type\":\"function\",\"function\":{\"name\":\"get_weather\",\"arguments\":\"\"}}]}}]}\n\n";
    let args = "a".repeat(8 * 1024);
    let fragment = format!(
        "data: {{\"choices\":[{{\"index\":0,\"delta\":{{\"tool_calls\":[{{\"index\":0,\"function\":{{\"arguments\":\"{args}\"}}}}]}}}}]}}\n\n"
    );
    expect_limit(Format::OpenAi, SSE, endless(open, &fragment), ProviderLimit::CallArguments).await;

    let open = "data: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"tool_use\",\"id\":\"toolu_1\",\"name\":\"get_weather\",\"input\":{}}}\n\n";
    let delta = format!(
        "data: {{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{{\"type\":\"input_json_delta\",\"partial_json\":\"{args}\"}}}}\n\n"
    );
    expect_limit(Format::Anthropic, SSE, endless(open, &delta), ProviderLimit::CallArguments).await;
}

// --- the arguments of all calls of one answer, each call within its own limit ---

fn openai_call_with_big_arguments(i: u64) -> Vec<u8> {
    let args = "b".repeat(512 * 1024);
    format!(
        "data: {{\"choices\":[{{\"index\":0,\"delta\":{{\"tool_calls\":[{{\"index\":{i},\"id\":\"call_{i}\",\"function\":{{\"name\":\"get_weather\",\"arguments\":\"{args}\"}}}}]}}}}]}}\n\n"
    )
    .into_bytes()
}

fn anthropic_call_with_big_arguments(i: u64) -> Vec<u8> {
    let args = "b".repeat(512 * 1024);
    format!(
        "data: {{\"type\":\"content_block_start\",\"index\":{i},\"content_block\":{{\"type\":\"tool_use\",\"id\":\"toolu_{i}\",\"name\":\"get_weather\",\"input\":{{}}}}}}\n\n\
         data: {{\"type\":\"content_block_delta\",\"index\":{i},\"delta\":{{\"type\":\"input_json_delta\",\"partial_json\":\"{args}\"}}}}\n\n"
    )
    .into_bytes()
}

#[tokio::test]
async fn endless_calls_with_big_arguments_end_at_the_answer_limit() {
    let body = Body::Numbered { prefix: Vec::new(), unit: openai_call_with_big_arguments, total: OFFERED };
    expect_limit(Format::OpenAi, SSE, body, ProviderLimit::AnswerArguments).await;
    let body = Body::Numbered { prefix: Vec::new(), unit: anthropic_call_with_big_arguments, total: OFFERED };
    expect_limit(Format::Anthropic, SSE, body, ProviderLimit::AnswerArguments).await;
}

// --- the number of tool calls ---

fn openai_new_call(i: u64) -> Vec<u8> {
    format!(
        "data: {{\"choices\":[{{\"index\":0,\"delta\":{{\"tool_calls\":[{{\"index\":{i},\"id\":\"c{i}\",\"function\":{{\"name\":\"f\",\"arguments\":\"{{}}\"}}}}]}}}}]}}\n\n"
    )
    .into_bytes()
}

fn anthropic_new_block(i: u64) -> Vec<u8> {
    format!(
        "data: {{\"type\":\"content_block_start\",\"index\":{i},\"content_block\":{{\"type\":\"tool_use\",\"id\":\"t{i}\",\"name\":\"f\",\"input\":{{}}}}}}\n\n"
    )
    .into_bytes()
}

#[tokio::test]
async fn endless_tool_calls_end_at_the_count_limit() {
    let body = Body::Numbered { prefix: Vec::new(), unit: openai_new_call, total: OFFERED };
    expect_limit(Format::OpenAi, SSE, body, ProviderLimit::ToolCalls).await;
    let body = Body::Numbered { prefix: Vec::new(), unit: anthropic_new_block, total: OFFERED };
    expect_limit(Format::Anthropic, SSE, body, ProviderLimit::ToolCalls).await;
}

// --- limits inside a whole (non-streaming) answer that fits the body limit ---

#[tokio::test]
async fn a_whole_answer_within_the_body_limit_still_meets_the_other_limits() {
    let text = "w".repeat(1_500_000);
    let openai = format!(r#"{{"choices":[{{"message":{{"content":"{text}"}}}}]}}"#);
    expect_limit(Format::OpenAi, JSON, Body::Fixed(openai.into_bytes()), ProviderLimit::Text).await;
    let anthropic = format!(r#"{{"content":[{{"type":"text","text":"{text}"}}],"stop_reason":"end_turn"}}"#);
    expect_limit(Format::Anthropic, JSON, Body::Fixed(anthropic.into_bytes()), ProviderLimit::Text).await;

    let calls: Vec<String> = (0..100)
        .map(|i| format!(r#"{{"id":"c{i}","type":"function","function":{{"name":"f","arguments":"{{}}"}}}}"#))
        .collect();
    let openai = format!(r#"{{"choices":[{{"message":{{"content":null,"tool_calls":[{}]}}}}]}}"#, calls.join(","));
    expect_limit(Format::OpenAi, JSON, Body::Fixed(openai.into_bytes()), ProviderLimit::ToolCalls).await;
    let blocks: Vec<String> =
        (0..100).map(|i| format!(r#"{{"type":"tool_use","id":"t{i}","name":"f","input":{{}}}}"#)).collect();
    let anthropic = format!(r#"{{"content":[{}],"stop_reason":"tool_use"}}"#, blocks.join(","));
    expect_limit(Format::Anthropic, JSON, Body::Fixed(anthropic.into_bytes()), ProviderLimit::ToolCalls).await;
}
