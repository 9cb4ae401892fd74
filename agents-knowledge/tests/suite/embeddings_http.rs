//! The OpenAI embeddings client against a real HTTP server on the loopback interface: the
//! wire format, usage for the budget, and a hostile server (a wrong vector count, a huge
//! body, numbers that are not finite, a key echoed back in an error).

use agents_knowledge::{EmbedError, Embedder, OpenAiEmbedder, OpenAiEmbeddingConfig};
use agents_provider::{ApiKey, ProviderError, ProviderHttpOptions, ProviderLimit, ProviderLimits};
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

const KEY: &str = "sk-test-4f9a8b7c6d5e4f3a2b1c";

/// A loopback HTTP/1.1 server answering every request with `status` and `body`; it keeps
/// the requests it received (head and body).
async fn serve(status: u16, body: Vec<u8>) -> (String, Arc<Mutex<Vec<(String, Value)>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}/v1", listener.local_addr().unwrap());
    let seen = Arc::new(Mutex::new(Vec::new()));
    let keep = seen.clone();
    tokio::spawn(async move {
        loop {
            let Ok((mut socket, _)) = listener.accept().await else { return };
            let (keep, body) = (keep.clone(), body.clone());
            tokio::spawn(async move {
                let mut request = Vec::new();
                let mut buf = [0u8; 8192];
                let head_end = loop {
                    let n = socket.read(&mut buf).await.unwrap_or(0);
                    if n == 0 {
                        return;
                    }
                    request.extend_from_slice(&buf[..n]);
                    if let Some(at) = request.windows(4).position(|w| w == b"\r\n\r\n") {
                        break at + 4;
                    }
                };
                let head = String::from_utf8_lossy(&request[..head_end]).to_string();
                let length: usize = head
                    .lines()
                    .find_map(|l| l.to_ascii_lowercase().strip_prefix("content-length:").map(|v| v.trim().to_string()))
                    .and_then(|v| v.parse().ok())
                    .unwrap_or(0);
                while request.len() < head_end + length {
                    let n = socket.read(&mut buf).await.unwrap_or(0);
                    if n == 0 {
                        break;
                    }
                    request.extend_from_slice(&buf[..n]);
                }
                let json = serde_json::from_slice(&request[head_end..]).unwrap_or(Value::Null);
                keep.lock().unwrap().push((head, json));
                let reply = format!(
                    "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                    body.len()
                );
                let _ = socket.write_all(reply.as_bytes()).await;
                let _ = socket.write_all(&body).await;
            });
        }
    });
    (base, seen)
}

fn embedder(base: &str) -> OpenAiEmbedder {
    let http = ProviderHttpOptions {
        timeout: Duration::from_secs(10),
        max_attempts: 1,
        limits: ProviderLimits { max_body_bytes: 1 << 20, ..ProviderLimits::default() },
        ..ProviderHttpOptions::default()
    };
    let config = OpenAiEmbeddingConfig {
        http,
        ..OpenAiEmbeddingConfig::compatible("embed-small", base).with_api_key(ApiKey::new(KEY), "EMBED_KEY")
    };
    OpenAiEmbedder::new(config).unwrap()
}

fn inputs() -> Vec<String> {
    vec!["annual leave".into(), "probation".into()]
}

#[tokio::test]
async fn the_wire_format_in_both_directions_and_usage_for_the_budget() {
    // Out of order, placed by `index`.
    let answer = json!({
        "object": "list",
        "data": [
            {"object": "embedding", "index": 1, "embedding": [0.0, 1.0, 0.5]},
            {"object": "embedding", "index": 0, "embedding": [1.0, 0.0, -0.5]},
        ],
        "model": "embed-small",
        "usage": {"prompt_tokens": 5, "total_tokens": 5},
    });
    let (base, seen) = serve(200, answer.to_string().into_bytes()).await;
    let got = embedder(&base).embed(&inputs()).await.unwrap();
    assert_eq!(got.vectors, vec![vec![1.0, 0.0, -0.5], vec![0.0, 1.0, 0.5]]);
    assert_eq!((got.usage.calls, got.usage.inputs, got.usage.tokens, got.usage.estimated), (1, 2, 5, false));
    let seen = seen.lock().unwrap();
    let (head, body) = &seen[0];
    assert!(head.starts_with("POST /v1/embeddings "), "{head}");
    assert!(head.to_ascii_lowercase().contains(&format!("authorization: bearer {}", KEY.to_ascii_lowercase())));
    assert_eq!(body["input"], json!(["annual leave", "probation"]));
    assert_eq!(body["model"], "embed-small");
}

#[tokio::test]
async fn missing_usage_is_estimated_and_said_so() {
    let answer = json!({"data": [{"embedding": [1.0]}, {"embedding": [2.0]}]});
    let (base, _) = serve(200, answer.to_string().into_bytes()).await;
    let got = embedder(&base).embed(&inputs()).await.unwrap();
    assert_eq!((got.usage.tokens, got.usage.estimated), (3 + 3, true), "a quarter of the bytes, rounded up");
}

#[tokio::test]
async fn a_wrong_vector_count_is_refused() {
    let answer = json!({"data": [{"index": 0, "embedding": [1.0, 2.0]}]});
    let (base, _) = serve(200, answer.to_string().into_bytes()).await;
    let err = embedder(&base).embed(&inputs()).await.unwrap_err();
    assert_eq!(err, EmbedError::Count { expected: 2, got: 1 });
    let answer = json!({"data": [{"index": 0, "embedding": [1.0]}, {"index": 0, "embedding": [1.0]}]});
    let (base, _) = serve(200, answer.to_string().into_bytes()).await;
    let err = embedder(&base).embed(&inputs()).await.unwrap_err();
    assert!(matches!(err, EmbedError::Protocol(ref m) if m.contains("two vectors")), "{err:?}");
}

#[tokio::test]
async fn numbers_that_are_not_finite_or_not_numbers_are_refused() {
    // 1e39 does not fit an f32 (it would be infinite); 1e400 does not fit JSON's f64.
    for (body, what) in [
        (r#"{"data":[{"embedding":[1e39]},{"embedding":[1.0]}]}"#, "inf"),
        (r#"{"data":[{"embedding":[1e400]},{"embedding":[1.0]}]}"#, "not json"),
        (r#"{"data":[{"embedding":["NaN"]},{"embedding":[1.0]}]}"#, "string"),
        (r#"{"data":[{"embedding":[1.0, 2.0]},{"embedding":[1.0]}]}"#, "mixed"),
    ] {
        let (base, _) = serve(200, body.as_bytes().to_vec()).await;
        let err = embedder(&base).embed(&inputs()).await.unwrap_err();
        match what {
            "inf" => assert_eq!(err, EmbedError::NotFinite { index: 0 }),
            "not json" => assert!(matches!(err, EmbedError::Provider(ProviderError::Protocol(_))), "{err:?}"),
            "string" => assert!(matches!(err, EmbedError::Protocol(_)), "{err:?}"),
            _ => assert_eq!(err, EmbedError::Dimension { expected: 2, got: 1 }),
        }
    }
}

#[tokio::test]
async fn a_huge_body_is_cut_at_the_limit() {
    let mut body = br#"{"data":[{"embedding":["#.to_vec();
    body.extend(std::iter::repeat_n(b'1', 4 << 20));
    let (base, _) = serve(200, body).await;
    let err = embedder(&base).embed(&inputs()).await.unwrap_err();
    assert_eq!(err, EmbedError::Provider(ProviderError::LimitExceeded { limit: ProviderLimit::Body, max: 1 << 20 }));
}

#[tokio::test]
async fn a_key_echoed_by_the_server_never_reaches_the_error_or_debug() {
    let body = json!({"error": {"message": format!("bad request for key {KEY}")}}).to_string();
    let (base, _) = serve(400, body.into_bytes()).await;
    let embedder = embedder(&base);
    let err = embedder.embed(&inputs()).await.unwrap_err();
    assert!(!err.to_string().contains(KEY), "{err}");
    assert!(err.to_string().contains("****"), "{err}");
    assert!(!format!("{embedder:?}").contains(KEY));
    let (base, _) = serve(401, b"{}".to_vec()).await;
    let err = self::embedder(&base).embed(&inputs()).await.unwrap_err();
    assert!(err.to_string().contains("EMBED_KEY"), "names the variable to check: {err}");
}

#[test]
fn a_key_in_clear_to_another_machine_is_refused() {
    let config = OpenAiEmbeddingConfig::compatible("m", "http://10.1.2.3:8000/v1").with_api_key(ApiKey::new(KEY), "K");
    let err = OpenAiEmbedder::new(config).unwrap_err();
    assert!(matches!(err, EmbedError::Provider(ProviderError::CleartextKey { .. })), "{err:?}");
}
