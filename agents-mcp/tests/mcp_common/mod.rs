//! A small HTTP/1.1 client for the MCP HTTP tests: one request per connection, chunked and
//! sized bodies, and event streams read one event at a time while they stay open.

#![allow(dead_code)]

use serde_json::{Value, json};
use std::net::SocketAddr;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;

/// How long any single read waits before the test fails.
pub(crate) const READ_TIMEOUT: Duration = Duration::from_secs(10);

pub(crate) const PROTOCOL: &str = "2025-11-25";

enum Framing {
    Chunked { left: usize, done: bool },
    Length(usize),
    UntilClose,
}

/// A response whose body is read as it arrives.
pub(crate) struct Exchange {
    pub(crate) status: u16,
    pub(crate) headers: Vec<(String, String)>,
    stream: BufReader<TcpStream>,
    framing: Framing,
    buffered: Vec<u8>,
}

impl Exchange {
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }

    pub(crate) fn is_event_stream(&self) -> bool {
        self.header("content-type").is_some_and(|v| v.starts_with("text/event-stream"))
    }

    /// The next piece of the body, `None` at its end.
    async fn piece(&mut self) -> Option<Vec<u8>> {
        match &mut self.framing {
            Framing::Length(0) => None,
            Framing::Length(n) => {
                let mut buf = vec![0; *n];
                self.stream.read_exact(&mut buf).await.ok()?;
                *n = 0;
                Some(buf)
            }
            Framing::UntilClose => {
                let mut buf = vec![0; 4096];
                let n = self.stream.read(&mut buf).await.ok()?;
                (n > 0).then(|| {
                    buf.truncate(n);
                    buf
                })
            }
            Framing::Chunked { left, done } => {
                if *done {
                    return None;
                }
                if *left == 0 {
                    let mut line = String::new();
                    self.stream.read_line(&mut line).await.ok()?;
                    if line.trim().is_empty() {
                        line.clear();
                        self.stream.read_line(&mut line).await.ok()?;
                    }
                    let size = usize::from_str_radix(line.trim().split(';').next()?, 16).ok()?;
                    if size == 0 {
                        *done = true;
                        return None;
                    }
                    *left = size;
                }
                let mut buf = vec![0; (*left).min(8192)];
                let n = self.stream.read(&mut buf).await.ok()?;
                if n == 0 {
                    return None;
                }
                buf.truncate(n);
                *left -= n;
                Some(buf)
            }
        }
    }

    /// The whole body as text (waits for its end).
    pub(crate) async fn text(mut self) -> String {
        let mut all = std::mem::take(&mut self.buffered);
        while let Ok(Some(p)) = tokio::time::timeout(READ_TIMEOUT, self.piece()).await {
            all.extend_from_slice(&p);
        }
        String::from_utf8_lossy(&all).into_owned()
    }

    /// The next server-sent event's `(id, data)`, `None` when the stream ended or nothing came
    /// within `wait`.
    pub(crate) async fn next_event(&mut self, wait: Duration) -> Option<(Option<String>, String)> {
        tokio::time::timeout(wait, async {
            loop {
                if let Some(end) = find_event_end(&self.buffered) {
                    let raw: Vec<u8> = self.buffered.drain(..end).collect();
                    let text = String::from_utf8_lossy(&raw).replace("\r\n", "\n");
                    let (mut id, mut data) = (None, Vec::new());
                    for line in text.lines() {
                        if let Some(v) = line.strip_prefix("id:") {
                            id = Some(v.trim().to_owned());
                        } else if let Some(v) = line.strip_prefix("data:") {
                            data.push(v.trim_start().to_owned());
                        }
                    }
                    return Some((id, data.join("\n")));
                }
                let piece = self.piece().await?;
                self.buffered.extend_from_slice(&piece);
            }
        })
        .await
        .ok()
        .flatten()
    }

    /// The next JSON-RPC message of a JSON or event-stream body, with the event id it came
    /// under.
    pub(crate) async fn message(&mut self) -> Option<(Option<String>, Value)> {
        if !self.is_event_stream() {
            let mut all = std::mem::take(&mut self.buffered);
            while let Ok(Some(p)) = tokio::time::timeout(READ_TIMEOUT, self.piece()).await {
                all.extend_from_slice(&p);
            }
            return serde_json::from_slice(&all).ok().map(|v| (None, v));
        }
        loop {
            let (id, data) = self.next_event(READ_TIMEOUT).await?;
            if let Ok(v) = serde_json::from_str::<Value>(&data)
                && v.get("jsonrpc").is_some()
            {
                return Some((id, v));
            }
        }
    }
}

fn find_event_end(buf: &[u8]) -> Option<usize> {
    let a = buf.windows(2).position(|w| w == b"\n\n").map(|i| i + 2);
    let b = buf.windows(4).position(|w| w == b"\r\n\r\n").map(|i| i + 4);
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// Sends one request on a new connection and reads the response head.
pub(crate) async fn request(addr: SocketAddr, method: &str, headers: &[(&str, &str)], body: &[u8]) -> Exchange {
    let stream = TcpStream::connect(addr).await.expect("connect");
    let mut head = format!("{method} /mcp HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nConnection: close\r\n", addr.port());
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str(&format!("Content-Length: {}\r\n\r\n", body.len()));
    let mut stream = BufReader::new(stream);
    stream.get_mut().write_all(head.as_bytes()).await.expect("write head");
    let _ = stream.get_mut().write_all(body).await;
    let mut status_line = String::new();
    tokio::time::timeout(READ_TIMEOUT, stream.read_line(&mut status_line)).await.expect("a response").unwrap();
    let status = status_line.split_whitespace().nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
    let mut headers = Vec::new();
    loop {
        let mut line = String::new();
        tokio::time::timeout(READ_TIMEOUT, stream.read_line(&mut line)).await.expect("headers").unwrap();
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        if let Some((k, v)) = line.split_once(':') {
            headers.push((k.trim().to_ascii_lowercase(), v.trim().to_owned()));
        }
    }
    let find = |n: &str| headers.iter().find(|(k, _)| k == n).map(|(_, v)| v.clone());
    let framing = if find("transfer-encoding").is_some_and(|v| v.eq_ignore_ascii_case("chunked")) {
        Framing::Chunked { left: 0, done: false }
    } else if let Some(n) = find("content-length").and_then(|v| v.parse().ok()) {
        Framing::Length(n)
    } else {
        Framing::UntilClose
    };
    Exchange { status, headers, stream, framing, buffered: Vec::new() }
}

/// One MCP client identity: a bearer token and, once initialized, a session.
#[derive(Clone)]
pub(crate) struct Client {
    pub(crate) addr: SocketAddr,
    pub(crate) bearer: String,
    pub(crate) session: Option<String>,
}

impl Client {
    pub(crate) fn new(addr: SocketAddr, token: &str) -> Self {
        Client { addr, bearer: format!("Bearer {token}"), session: None }
    }

    /// The same token and another client's session id.
    pub(crate) fn on_session_of(&self, other: &Client) -> Self {
        Client { session: other.session.clone(), ..self.clone() }
    }

    fn headers<'a>(&'a self, extra: &[(&'a str, &'a str)]) -> Vec<(&'a str, &'a str)> {
        let mut h = vec![
            ("Accept", "application/json, text/event-stream"),
            ("Content-Type", "application/json"),
            ("Authorization", self.bearer.as_str()),
            ("MCP-Protocol-Version", PROTOCOL),
        ];
        if let Some(s) = &self.session {
            h.push(("Mcp-Session-Id", s.as_str()));
        }
        h.extend_from_slice(extra);
        h
    }

    pub(crate) async fn post(&self, body: &Value) -> Exchange {
        request(self.addr, "POST", &self.headers(&[]), body.to_string().as_bytes()).await
    }

    pub(crate) async fn post_raw(&self, body: &[u8]) -> Exchange {
        request(self.addr, "POST", &self.headers(&[]), body).await
    }

    /// Opens the session's event stream (GET), optionally resuming after `last_event_id`.
    pub(crate) async fn get_stream(&self, last_event_id: Option<&str>) -> Exchange {
        let mut extra = vec![("Accept", "text/event-stream")];
        if let Some(id) = last_event_id {
            extra.push(("Last-Event-ID", id));
        }
        let mut h = self.headers(&[]);
        h.retain(|(k, _)| *k != "Accept" && *k != "Content-Type");
        h.extend(extra);
        request(self.addr, "GET", &h, b"").await
    }

    pub(crate) async fn delete(&self) -> Exchange {
        let mut h = self.headers(&[]);
        h.retain(|(k, _)| *k != "Content-Type");
        request(self.addr, "DELETE", &h, b"").await
    }

    /// `initialize` (declaring form elicitation when `elicits`) and `notifications/initialized`.
    pub(crate) async fn initialize(&mut self, elicits: bool) {
        let capabilities = if elicits { json!({"elicitation": {"form": {}}}) } else { json!({}) };
        let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": PROTOCOL, "capabilities": capabilities, "clientInfo": {"name": "raw", "version": "1"}}});
        let mut r = self.post(&init).await;
        assert_eq!(r.status, 200, "initialize");
        self.session = Some(r.header("mcp-session-id").expect("a session id").to_owned());
        let (_, m) = r.message().await.expect("initialize result");
        assert!(m.get("result").is_some(), "{m}");
        let r = self.post(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).await;
        assert_eq!(r.status, 202, "initialized");
    }

    /// Starts `tools/call`; the answer (and any elicitation) arrives on the returned stream.
    pub(crate) async fn call(&self, id: u64, tool: &str, arguments: Value) -> Exchange {
        self.post(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": tool, "arguments": arguments}}))
            .await
    }

    /// Answers an elicitation request `id` (accept with `approve`).
    pub(crate) async fn answer(&self, id: &Value, approve: bool) -> Exchange {
        self.post(&json!({"jsonrpc": "2.0", "id": id, "result": {"action": "accept", "content": {"approve": approve}}}))
            .await
    }
}

/// Reads messages until the server's elicitation request; returns its JSON-RPC id.
pub(crate) async fn elicitation_id(call: &mut Exchange) -> Value {
    loop {
        let (_, m) = call.message().await.expect("an elicitation request");
        if m["method"] == "elicitation/create" {
            return m["id"].clone();
        }
    }
}

/// Reads messages until the response to request `id`.
pub(crate) async fn response_to(call: &mut Exchange, id: u64) -> Value {
    loop {
        let (_, m) = call.message().await.unwrap_or_else(|| panic!("no response to request {id}"));
        if m["id"] == json!(id) && m.get("method").is_none() {
            return m;
        }
    }
}
