//! A hostile server on loopback, both wire formats: the key it echoes, in any of the usual
//! encodings and on every error path, never shows in an error; absurd header values and
//! settings do not panic the provider; a key is refused over a cleartext link to another
//! machine. (The size limits and the memory they bound are in `provider_hostile_memory`.)
#![cfg(feature = "http")]

use crate::provider_common;

use agents_runtime::provider::config::{ConfigError, ProviderConfig};
use agents_runtime::provider::{
    AnthropicConfig, AnthropicProvider, ApiKey, OpenAiConfig, OpenAiProvider, Provider, ProviderError,
    ProviderHttpOptions,
};
use base64::Engine as _;
use provider_common::hostile::{Body, Hostile};
use provider_common::*;
use std::time::Duration;

const KEY: &str = "sk-proj-R4nd0mK3yV4lu3-9xQ2";

#[derive(Clone, Copy, Debug, PartialEq)]
enum Format {
    OpenAi,
    Anthropic,
}

fn provider(format: Format, base_url: &str, http: ProviderHttpOptions) -> Box<dyn Provider> {
    match format {
        Format::OpenAi => Box::new(
            OpenAiProvider::new(OpenAiConfig {
                base_url: format!("{base_url}/v1"),
                ..OpenAiConfig::openai("gpt-4o-mini", ApiKey::new(KEY)).with_http(http)
            })
            .unwrap(),
        ),
        Format::Anthropic => Box::new(
            AnthropicProvider::new(
                AnthropicConfig::new("claude-sonnet-4-5", ApiKey::new(KEY)).with_base_url(base_url).with_http(http),
            )
            .unwrap(),
        ),
    }
}

fn quick() -> ProviderHttpOptions {
    let mut http = fast_http(Duration::from_secs(10));
    http.max_attempts = 2;
    http
}

/// A whole HTTP response.
fn response(status: &str, headers: &[&str], body: &str) -> (String, Body) {
    let mut head = format!("HTTP/1.1 {status}\r\nconnection: close\r\ncontent-length: {}\r\n", body.len());
    for h in headers {
        head.push_str(h);
        head.push_str("\r\n");
    }
    head.push_str("\r\n");
    (head, Body::Fixed(body.as_bytes().to_vec()))
}

/// The key in the encodings a server or proxy may echo it in: (name, the form as it appears
/// in the server's text, a JSON-safe rendering of that text).
fn encodings() -> Vec<(&'static str, String)> {
    let b64 = base64::engine::general_purpose::STANDARD;
    vec![
        ("plain", KEY.to_string()),
        ("json-unicode-escape", KEY.bytes().map(|b| format!("\\u{b:04x}")).collect()),
        ("percent", KEY.bytes().map(|b| format!("%{b:02X}")).collect()),
        ("base64-basic-credential", format!("Basic {}", b64.encode(format!("user:{KEY}")))),
        ("hex", hex_of(KEY)),
        ("html-entities", KEY.bytes().map(|b| format!("&#{b};")).collect()),
    ]
}

fn hex_of(s: &str) -> String {
    s.bytes().map(|b| format!("{b:02x}")).collect()
}

/// Every form of the key that must not be shown: the key and each encoding's key part.
fn forbidden() -> Vec<String> {
    let b64 = base64::engine::general_purpose::STANDARD;
    let mut out: Vec<String> = encodings().into_iter().map(|(_, form)| form).collect();
    out.push(b64.encode(format!("user:{KEY}")));
    out.push(KEY[..12].to_string());
    out
}

/// Asserts that `err`, as displayed and debugged, quotes the server's text (the marker) and
/// shows no form of the key.
fn assert_redacted(err: &ProviderError, what: &str) {
    let shown = format!("{err} | {err:?}");
    assert!(shown.contains("ECHO"), "{what}: the server's text is quoted: {shown}");
    assert!(shown.contains("****"), "{what}: the key is masked: {shown}");
    for form in forbidden() {
        assert!(!shown.contains(&form), "{what}: shows `{form}`: {shown}");
    }
}

/// A server text with the key in `form`, inside a JSON string (so escapes stay as written).
fn echo(form: &str) -> String {
    format!("ECHO[{form}] invalid key")
}

/// One hostile server and a provider of each format pointed at it.
struct Rig {
    server: Hostile,
    openai: Box<dyn Provider>,
    anthropic: Box<dyn Provider>,
}

impl Rig {
    async fn new() -> Self {
        let server = Hostile::start(Vec::new(), Body::Fixed(Vec::new())).await;
        let openai = provider(Format::OpenAi, &server.base_url, quick());
        let anthropic = provider(Format::Anthropic, &server.base_url, quick());
        Self { server, openai, anthropic }
    }

    /// The error a `format` provider reports when the server answers `(head, body)`.
    async fn error_for(&self, format: Format, reply: (String, Body)) -> ProviderError {
        self.server.set(reply.0, reply.1);
        let p = if format == Format::OpenAi { &self.openai } else { &self.anthropic };
        ask(&**p).await.expect_err("the server answered with an error")
    }
}

#[tokio::test]
async fn the_key_echoed_in_an_http_error_body_is_never_shown() {
    let rig = Rig::new().await;
    for format in [Format::OpenAi, Format::Anthropic] {
        for (encoding, form) in encodings() {
            let text = echo(&form);
            let json_body = format!(r#"{{"error":{{"message":"{text}","type":"invalid_request_error"}}}}"#);
            let cases = [
                ("400", response("400 Bad Request", &["content-type: application/json"], &json_body)),
                ("422", response("422 Unprocessable", &["content-type: application/json"], &json_body)),
                ("404", response("404 Not Found", &["content-type: application/json"], &json_body)),
                (
                    "404-model",
                    response(
                        "404 Not Found",
                        &["content-type: application/json"],
                        &format!(
                            r#"{{"error":{{"message":"The model does not exist {text}","type":"not_found_error","code":"model_not_found"}}}}"#
                        ),
                    ),
                ),
                (
                    "429",
                    response(
                        "429 Too Many Requests",
                        &["content-type: application/json", "retry-after: 0"],
                        &json_body,
                    ),
                ),
                ("500", response("500 Internal Server Error", &["content-type: application/json"], &json_body)),
                ("529", response("529 Overloaded", &["content-type: application/json"], &json_body)),
                (
                    "503-html",
                    response("503 Service Unavailable", &["content-type: text/html"], &format!("<h1>{text}</h1>")),
                ),
                // A JSON body without a message field is shown as it is, escapes and all.
                (
                    "400-raw-json",
                    response(
                        "400 Bad Request",
                        &["content-type: application/json"],
                        &format!(r#"{{"detail":"{text}"}}"#),
                    ),
                ),
                // The error type is quoted too (by the Anthropic provider).
                (
                    "400-type",
                    response(
                        "400 Bad Request",
                        &["content-type: application/json"],
                        &format!(r#"{{"error":{{"message":"ECHO","type":"{form}"}}}}"#),
                    ),
                ),
            ];
            for (path, reply) in cases {
                if path == "400-type" && format == Format::OpenAi {
                    continue;
                }
                let err = rig.error_for(format, reply).await;
                assert_redacted(&err, &format!("{format:?} {path} {encoding}"));
            }
        }
    }
}

#[tokio::test]
async fn the_key_echoed_in_a_stream_or_a_whole_answer_is_never_shown() {
    let rig = Rig::new().await;
    let sse = ["content-type: text/event-stream"];
    let json = ["content-type: application/json"];
    for (encoding, form) in encodings() {
        let text = echo(&form);
        let openai = [
            (
                "in-stream error",
                response(
                    "200 OK",
                    &sse,
                    &format!("data: {{\"error\":{{\"message\":\"{text}\",\"type\":\"server_error\"}}}}\n\n"),
                ),
            ),
            ("malformed event", response("200 OK", &sse, &format!("data: {{\"choices\": {text}\n\n"))),
            ("whole error", response("200 OK", &json, &format!(r#"{{"error":{{"message":"{text}"}}}}"#))),
        ];
        for (path, reply) in openai {
            assert_redacted(&rig.error_for(Format::OpenAi, reply).await, &format!("OpenAi {path} {encoding}"));
        }
        let mut anthropic = vec![
            (
                "malformed event",
                response("200 OK", &sse, &format!("event: message_start\ndata: {{\"type\": {text}\n\n")),
            ),
            (
                "whole error",
                response(
                    "200 OK",
                    &json,
                    &format!(r#"{{"type":"error","error":{{"type":"api_error","message":"{text}"}}}}"#),
                ),
            ),
            (
                "error type",
                response(
                    "200 OK",
                    &sse,
                    &format!(
                        "event: error\ndata: {{\"type\":\"error\",\"error\":{{\"type\":\"ECHO {form}\",\"message\":\"m\"}}}}\n\n"
                    ),
                ),
            ),
        ];
        for kind in [
            "overloaded_error",
            "api_error",
            "rate_limit_error",
            "invalid_request_error",
            "authentication_error",
            "permission_error",
            "not_found_error",
            "request_too_large",
            "some_future_error",
        ] {
            anthropic.push((
                kind,
                response(
                    "200 OK",
                    &sse,
                    &format!("event: error\ndata: {{\"type\":\"error\",\"error\":{{\"type\":\"{kind}\",\"message\":\"{text}\"}}}}\n\n"),
                ),
            ));
        }
        for (path, reply) in anthropic {
            assert_redacted(&rig.error_for(Format::Anthropic, reply).await, &format!("Anthropic {path} {encoding}"));
        }
    }
}

#[tokio::test]
async fn the_key_in_a_redirect_target_is_never_shown() {
    let rig = Rig::new().await;
    for format in [Format::OpenAi, Format::Anthropic] {
        for (encoding, form) in encodings().into_iter().filter(|(name, _)| !name.contains("base64")) {
            let location = format!("location: https://elsewhere.example/ECHO/{form}/v1");
            let err = rig.error_for(format, response("302 Found", &[&location], "")).await;
            assert!(matches!(err, ProviderError::Unreachable { .. }), "{err:?}");
            assert_redacted(&err, &format!("{format:?} redirect {encoding}"));
        }
    }
}

/// Raw answers whose header values no parser expects.
fn absurd_answers() -> Vec<(&'static str, Vec<u8>)> {
    let sse_ok =
        "data: {\"choices\":[{\"delta\":{\"content\":\"ok\"},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n";
    let mut answers: Vec<(&'static str, Vec<u8>)> = Vec::new();
    for (name, value) in [
        ("retry-after 1e300", "1e300"),
        ("retry-after beyond u64", "18446744073709551616"),
        ("retry-after u64::MAX", "18446744073709551615"),
        ("retry-after inf", "inf"),
        ("retry-after NaN", "NaN"),
        ("retry-after negative", "-5"),
        ("retry-after year 9999", "Fri, 31 Dec 9999 23:59:59 GMT"),
        (
            "retry-after 1000 digits",
            "9999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999",
        ),
    ] {
        answers.push((name, format!("HTTP/1.1 429 Too Many Requests\r\nretry-after: {value}\r\ncontent-length: 2\r\nconnection: close\r\n\r\n{{}}").into_bytes()));
    }
    answers.push((
        "retry-after not UTF-8",
        b"HTTP/1.1 503 Unavailable\r\nretry-after: \xff\xfe\xfd\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
            .to_vec(),
    ));
    answers.push(("content-length beyond u64", format!("HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: 99999999999999999999999999\r\nconnection: close\r\n\r\n{sse_ok}").into_bytes()));
    answers.push((
        "content-length negative",
        format!("HTTP/1.1 200 OK\r\ncontent-length: -1\r\nconnection: close\r\n\r\n{sse_ok}").into_bytes(),
    ));
    answers.push((
        "content-length twice, different",
        format!("HTTP/1.1 200 OK\r\ncontent-length: 3\r\ncontent-length: 900\r\nconnection: close\r\n\r\n{sse_ok}")
            .into_bytes(),
    ));
    answers.push(("content-length shorter than body", format!("HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: 10\r\nconnection: close\r\n\r\n{sse_ok}").into_bytes()));
    answers.push(("chunk size beyond u64", b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\nconnection: close\r\n\r\nfffffffffffffffffffffffff\r\ndata: x\r\n0\r\n\r\n".to_vec()));
    answers.push((
        "content-type not UTF-8",
        format!("HTTP/1.1 200 OK\r\ncontent-type: \u{7f}text/\u{1}\r\nconnection: close\r\n\r\n{sse_ok}").into_bytes(),
    ));
    let mut bad_type = b"HTTP/1.1 200 OK\r\ncontent-type: \xff\xfe\r\nconnection: close\r\n\r\n".to_vec();
    bad_type.extend_from_slice(sse_ok.as_bytes());
    answers.push(("content-type raw bytes", bad_type));
    answers.push(("status 999", b"HTTP/1.1 999 Whatever\r\ncontent-length: 0\r\nconnection: close\r\n\r\n".to_vec()));
    answers.push(("status 000", b"HTTP/1.1 000 Zero\r\ncontent-length: 0\r\nconnection: close\r\n\r\n".to_vec()));
    answers.push(("status line garbage", b"HTTP/9 OK OK OK\r\n\r\n".to_vec()));
    answers.push(("no head at all", b"\x00\x01\x02 binary".to_vec()));
    answers.push((
        "a 200 KB header",
        format!("HTTP/1.1 200 OK\r\nx-big: {}\r\nconnection: close\r\n\r\n{sse_ok}", "b".repeat(200_000)).into_bytes(),
    ));
    let many: String = (0..5_000).map(|i| format!("x-h{i}: v\r\n")).collect();
    answers.push(("5000 headers", format!("HTTP/1.1 200 OK\r\n{many}connection: close\r\n\r\n{sse_ok}").into_bytes()));
    answers.push((
        "location not UTF-8",
        b"HTTP/1.1 302 Found\r\nlocation: \xff\xfe/\r\ncontent-length: 0\r\nconnection: close\r\n\r\n".to_vec(),
    ));
    answers.push(("informational 100 then 200", format!("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n{sse_ok}").into_bytes()));
    answers
}

#[tokio::test]
async fn absurd_header_values_never_panic_the_provider() {
    let rig = Rig::new().await;
    for format in [Format::OpenAi, Format::Anthropic] {
        for (name, raw) in absurd_answers() {
            rig.server.set(raw, Body::Fixed(Vec::new()));
            let p = if format == Format::OpenAi { &rig.openai } else { &rig.anthropic };
            // A panic here fails the test; any answer or error is fine, within the deadline.
            let result = tokio::time::timeout(Duration::from_secs(15), ask(&**p)).await;
            let result = result.unwrap_or_else(|_| panic!("{format:?} {name}: the call did not end"));
            if let Err(ProviderError::Upstream { status, detail, .. }) = &result {
                assert!([429, 503].contains(status), "{format:?} {name}: {detail}");
            }
        }
    }
}

#[tokio::test]
async fn a_retry_after_too_large_for_the_clock_fails_the_call_at_once() {
    for value in ["1e300", "18446744073709551615", "inf"] {
        let raw = format!(
            "HTTP/1.1 429 Too Many Requests\r\nretry-after: {value}\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
        );
        let server = Hostile::start(raw, Body::Fixed(Vec::new())).await;
        let err = ask(&*provider(Format::OpenAi, &server.base_url, quick())).await.unwrap_err();
        assert!(
            matches!(&err, ProviderError::Upstream { status: 429, attempts: 1, detail } if detail.contains("would not fit")),
            "{value}: {err:?}"
        );
        assert_eq!(server.connections(), 1, "{value}: not retried");
    }
}

#[tokio::test]
async fn a_timeout_too_large_for_the_clock_means_no_deadline_not_a_panic() {
    let ok = "data: {\"choices\":[{\"delta\":{\"content\":\"ok\"},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n";
    let server = Hostile::start(
        "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n",
        Body::Fixed(ok.as_bytes().to_vec()),
    )
    .await;
    let http = ProviderHttpOptions { timeout: Duration::MAX, ..quick() };
    let response = ask(&*provider(Format::OpenAi, &server.base_url, http)).await.unwrap();
    assert_eq!(response.content, "ok");
}

#[test]
fn a_key_over_http_to_another_machine_is_refused_when_the_provider_is_built() {
    for url in ["http://10.0.0.5:8000", "http://model.internal", "http://192.0.2.1"] {
        let openai = OpenAiProvider::new(
            OpenAiConfig::compatible("m", format!("{url}/v1")).with_api_key(ApiKey::new(KEY), "AGENTS_API_KEY"),
        )
        .unwrap_err();
        let anthropic =
            AnthropicProvider::new(AnthropicConfig::new("c", ApiKey::new(KEY)).with_base_url(url)).unwrap_err();
        for err in [openai, anthropic] {
            assert!(matches!(&err, ProviderError::CleartextKey { .. }), "{url}: {err:?}");
            let text = err.to_string();
            assert!(text.contains("https://") && text.contains("allow_cleartext_key"), "{text}");
            assert!(text.contains("AGENTS_ALLOW_CLEARTEXT_KEY=1"), "{text}");
            assert!(!text.contains(KEY));
        }
    }
    // Without a key, over TLS, to this machine, or opted in: built.
    assert!(OpenAiProvider::new(OpenAiConfig::compatible("m", "http://10.0.0.5:8000/v1")).is_ok());
    let with_key = |url: &str| OpenAiConfig::compatible("m", url).with_api_key(ApiKey::new(KEY), "AGENTS_API_KEY");
    assert!(OpenAiProvider::new(with_key("https://10.0.0.5:8000/v1")).is_ok());
    assert!(OpenAiProvider::new(with_key("http://127.0.0.1:8000/v1")).is_ok());
    assert!(OpenAiProvider::new(with_key("http://localhost:8000/v1")).is_ok());
    let opted_in = ProviderHttpOptions { allow_cleartext_key: true, ..ProviderHttpOptions::default() };
    assert!(OpenAiProvider::new(with_key("http://10.0.0.5:8000/v1").with_http(opted_in.clone())).is_ok());
    assert!(
        AnthropicProvider::new(
            AnthropicConfig::new("c", ApiKey::new(KEY)).with_base_url("http://10.0.0.5").with_http(opted_in)
        )
        .is_ok()
    );
}

#[test]
fn the_environment_refuses_a_cleartext_key_unless_opted_in() {
    let vars = |extra: &[(&'static str, &'static str)]| {
        let mut all = vec![("AGENTS_MODEL", "openai-compatible:m@http://10.0.0.5:8000/v1"), ("AGENTS_API_KEY", KEY)];
        all.extend_from_slice(extra);
        move |name: &str| all.iter().find(|(k, _)| *k == name).map(|(_, v)| v.to_string())
    };
    let err = ProviderConfig::from_vars(vars(&[])).unwrap_err();
    assert!(matches!(err, ConfigError::Provider(ProviderError::CleartextKey { .. })), "{err:?}");
    assert!(err.to_string().contains("AGENTS_ALLOW_CLEARTEXT_KEY=1"), "{err}");
    let config = ProviderConfig::from_vars(vars(&[("AGENTS_ALLOW_CLEARTEXT_KEY", "1")])).unwrap().unwrap();
    assert!(config.build().is_ok());
    let err = ProviderConfig::from_vars(vars(&[("AGENTS_ALLOW_CLEARTEXT_KEY", "yes")])).unwrap_err();
    assert!(matches!(err, ConfigError::Invalid { .. }), "{err:?}");
}
