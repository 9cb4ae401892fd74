//! A canned HTTP server on 127.0.0.1 for the provider tests: it records each request and
//! answers each connection with the next canned reply, byte for byte.

#![allow(dead_code, unreachable_pub)]

#[cfg(feature = "http")]
use agents_runtime::provider::ProviderHttpOptions;
use agents_runtime::provider::{
    ChatMessage, ChatRequest, ChatResponse, Provider, ProviderError, ToolCallRequest, ToolDefinition,
};
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};
#[cfg(feature = "http")]
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// What the server does with one connection.
#[derive(Debug, Clone)]
pub enum Reply {
    /// Writes these bytes, then closes the connection.
    Bytes(Vec<u8>),
    /// Writes these bytes, then keeps the connection open without writing more.
    ThenStall(Vec<u8>),
    /// Reads the request and never answers.
    Hang,
}

/// One request as received.
#[derive(Debug, Clone)]
pub struct Recorded {
    pub method: String,
    pub path: String,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Recorded {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }

    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).expect("the request body is JSON")
    }
}

pub struct TestServer {
    pub base_url: String,
    requests: Arc<Mutex<Vec<Recorded>>>,
}

impl TestServer {
    /// Starts a server answering successive connections with `replies`; once they are used
    /// up it answers 418 so that an unexpected extra request is visible in the test.
    pub async fn start(replies: Vec<Reply>) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base_url = format!("http://{}", listener.local_addr().unwrap());
        let requests = Arc::new(Mutex::new(Vec::new()));
        let recorded = requests.clone();
        tokio::spawn(async move {
            let mut replies = replies.into_iter();
            loop {
                let Ok((socket, _)) = listener.accept().await else {
                    return;
                };
                let reply = replies.next().unwrap_or_else(|| {
                    Reply::Bytes(json_response(
                        418,
                        "I'm a teapot",
                        &[],
                        r#"{"error":"the test server has no more canned replies"}"#,
                    ))
                });
                let recorded = recorded.clone();
                tokio::spawn(serve(socket, reply, recorded));
            }
        });
        Self { base_url, requests }
    }

    pub fn requests(&self) -> Vec<Recorded> {
        self.requests.lock().unwrap().clone()
    }
}

async fn serve(mut socket: TcpStream, reply: Reply, recorded: Arc<Mutex<Vec<Recorded>>>) {
    let Some(request) = read_request(&mut socket).await else {
        return;
    };
    recorded.lock().unwrap().push(request);
    match reply {
        Reply::Bytes(bytes) => {
            let _ = socket.write_all(&bytes).await;
            let _ = socket.shutdown().await;
        }
        Reply::ThenStall(bytes) => {
            let _ = socket.write_all(&bytes).await;
            let _ = socket.flush().await;
            std::future::pending::<()>().await;
        }
        Reply::Hang => std::future::pending::<()>().await,
    }
}

async fn read_request(socket: &mut TcpStream) -> Option<Recorded> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    let head_end = loop {
        if let Some(at) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break at;
        }
        let n = socket.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
    let mut lines = head.split("\r\n");
    let mut first = lines.next()?.split(' ');
    let method = first.next()?.to_string();
    let path = first.next()?.to_string();
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    let length: usize =
        headers.iter().find(|(k, _)| k == "content-length").and_then(|(_, v)| v.parse().ok()).unwrap_or(0);
    let mut body = buf[head_end + 4..].to_vec();
    while body.len() < length {
        let n = socket.read(&mut chunk).await.ok()?;
        if n == 0 {
            break;
        }
        body.extend_from_slice(&chunk[..n]);
    }
    Some(Recorded { method, path, headers, body })
}

/// A complete JSON response.
pub fn json_response(status: u16, reason: &str, headers: &[(&str, &str)], body: &str) -> Vec<u8> {
    let mut out = format!(
        "HTTP/1.1 {status} {reason}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n",
        body.len()
    );
    for (k, v) in headers {
        out.push_str(&format!("{k}: {v}\r\n"));
    }
    out.push_str("\r\n");
    out.push_str(body);
    out.into_bytes()
}

/// The head of a chunked `text/event-stream` 200 response.
pub fn sse_head() -> String {
    "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream; charset=utf-8\r\ncache-control: no-cache\r\nconnection: close\r\ntransfer-encoding: chunked\r\n\r\n".to_string()
}

/// One HTTP chunk.
pub fn http_chunk(data: &str) -> String {
    format!("{:x}\r\n{data}\r\n", data.len())
}

/// A complete SSE response: each item is written as its own HTTP chunk.
pub fn sse_response(events: &[String]) -> Vec<u8> {
    let mut out = sse_head();
    for event in events {
        out.push_str(&http_chunk(event));
    }
    out.push_str("0\r\n\r\n");
    out.into_bytes()
}

/// The start of an SSE response whose stream then stalls (no terminating chunk).
pub fn sse_partial(events: &[String]) -> Vec<u8> {
    let mut out = sse_head();
    for event in events {
        out.push_str(&http_chunk(event));
    }
    out.into_bytes()
}

/// A port on 127.0.0.1 with nothing listening.
pub async fn closed_port_url() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    drop(listener);
    format!("http://{addr}")
}

/// Collects streamed tokens.
#[derive(Default)]
pub struct Tokens(pub Mutex<Vec<String>>);

impl Tokens {
    pub fn sink(&self) -> impl Fn(&str) + Send + Sync + '_ {
        |t: &str| self.0.lock().unwrap().push(t.to_string())
    }

    pub fn all(&self) -> Vec<String> {
        self.0.lock().unwrap().clone()
    }
}

pub fn user(text: &str) -> ChatMessage {
    ChatMessage::User { content: text.into() }
}

pub fn weather_tool() -> ToolDefinition {
    ToolDefinition {
        name: "get_weather".into(),
        description: "Current weather for a city.".into(),
        input_schema: json!({
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        }),
    }
}

pub fn request(messages: Vec<ChatMessage>, tools: Vec<ToolDefinition>) -> ChatRequest {
    ChatRequest { system: "You are terse.".into(), messages, tools, response_schema: None }
}

/// Per-call options with this timeout, three attempts and millisecond backoff.
#[cfg(feature = "http")]
pub fn fast_http(timeout: Duration) -> ProviderHttpOptions {
    ProviderHttpOptions {
        timeout,
        max_attempts: 3,
        initial_backoff: Duration::from_millis(1),
        max_backoff: Duration::from_millis(5),
        ..ProviderHttpOptions::default()
    }
}

/// A conversation after one tool round: the user asks about Oslo and Bergen, the assistant
/// (saying `assistant_text`) calls `get_weather` as `{id_prefix}A` and `{id_prefix}B`, the
/// first call answers and the second is refused.
pub fn tool_round(id_prefix: &str, assistant_text: &str) -> Vec<ChatMessage> {
    let call = |id: &str, city: &str| ToolCallRequest {
        id: format!("{id_prefix}{id}"),
        name: "get_weather".into(),
        arguments: format!(r#"{{"city":"{city}"}}"#),
    };
    let result = |id: &str, content: &str, is_error: bool| ChatMessage::Tool {
        call_id: format!("{id_prefix}{id}"),
        name: "get_weather".into(),
        content: content.into(),
        is_error,
    };
    vec![
        user("Oslo and Bergen?"),
        ChatMessage::Assistant {
            content: assistant_text.into(),
            tool_calls: vec![call("A", "Oslo"), call("B", "Bergen")],
        },
        result("A", r#"{"celsius":4}"#, false),
        result("B", r#"{"error":"denied"}"#, true),
    ]
}

/// Sends `provider` the one-word request `x` without tools, dropping the streamed tokens.
pub async fn ask(provider: &dyn Provider) -> Result<ChatResponse, ProviderError> {
    provider.chat(&request(vec![user("x")], vec![]), &|_: &str| {}).await
}

/// Asserts that the one-word request to `provider`, whose server streams `fragment` and then
/// stalls, times out after a second with `fragment` shown.
pub async fn assert_stall_times_out(provider: &dyn Provider, fragment: &str) {
    let tokens = Tokens::default();
    let err = provider.chat(&request(vec![user("x")], vec![]), &tokens.sink()).await.unwrap_err();
    assert_eq!(err, ProviderError::Timeout { secs: 1 });
    assert_eq!(tokens.all(), vec![fragment]);
}

pub mod hostile;

/// Collects the messages of `tracing` warnings emitted on this thread while it lives.
pub struct Capture {
    warnings: Arc<Mutex<Vec<String>>>,
    _guard: tracing::dispatcher::DefaultGuard,
}

impl Capture {
    pub fn install() -> Self {
        let warnings = Arc::new(Mutex::new(Vec::new()));
        let subscriber = CaptureSubscriber { warnings: warnings.clone() };
        let guard = tracing::dispatcher::set_default(&tracing::Dispatch::new(subscriber));
        // A call site first reached while no subscriber listened has cached "never".
        tracing::callsite::rebuild_interest_cache();
        Self { warnings, _guard: guard }
    }

    pub fn warnings(&self) -> Vec<String> {
        self.warnings.lock().unwrap().clone()
    }
}

struct CaptureSubscriber {
    warnings: Arc<Mutex<Vec<String>>>,
}

struct MessageVisitor(String);

impl tracing::field::Visit for MessageVisitor {
    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        if field.name() == "message" {
            self.0 = format!("{value:?}");
        }
    }
}

impl tracing::Subscriber for CaptureSubscriber {
    fn enabled(&self, metadata: &tracing::Metadata<'_>) -> bool {
        *metadata.level() <= tracing::Level::WARN
    }
    fn new_span(&self, _: &tracing::span::Attributes<'_>) -> tracing::span::Id {
        tracing::span::Id::from_u64(1)
    }
    fn record(&self, _: &tracing::span::Id, _: &tracing::span::Record<'_>) {}
    fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}
    fn event(&self, event: &tracing::Event<'_>) {
        if *event.metadata().level() == tracing::Level::WARN {
            let mut visitor = MessageVisitor(String::new());
            event.record(&mut visitor);
            self.warnings.lock().unwrap().push(visitor.0);
        }
    }
    fn enter(&self, _: &tracing::span::Id) {}
    fn exit(&self, _: &tracing::span::Id) {}
}
