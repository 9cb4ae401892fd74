//! A test agent, a service on a loopback port, and a small HTTP/1.1 client over a raw TCP
//! stream (so a test controls exactly when it reads an event stream, or does not).
#![allow(dead_code, unreachable_pub, missing_docs)]

use agents_runtime::audit::{AuditRecord, MemorySink};
use agents_runtime::provider::scripted::{RuleProvider, last_user_message, reply, tool_calls, tool_outcomes};
use agents_runtime::{Principal, RoleMap, Runtime, ToolContext, agent, permissions, tool};
use agents_service::{Authenticator, DevAuthenticator, Service, ServiceLimits};
use serde_json::Value;
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;

permissions! {
    pub mod perms { items.read, items.write }
}

fn executions() -> &'static Mutex<HashMap<String, usize>> {
    static E: OnceLock<Mutex<HashMap<String, usize>>> = OnceLock::new();
    E.get_or_init(Default::default)
}

/// How often `submit_item` ran in a session.
pub fn executed(session: &str) -> usize {
    executions().lock().unwrap().get(session).copied().unwrap_or(0)
}

/// Looks an item up.
#[tool(permission = perms::items::read)]
async fn lookup_item(name: String) -> Result<String, String> {
    Ok(format!("{name}: in stock"))
}

/// Returns a large text (64 KiB).
#[tool(permission = perms::items::read)]
async fn big_report() -> Result<String, String> {
    Ok("x".repeat(64 * 1024))
}

/// Submits an item request.
///
/// # Arguments
///
/// * `item` - the item wanted
#[tool(permission = perms::items::write, mutating, title = "Submit an item request")]
async fn submit_item(cx: &ToolContext<'_>, item: String) -> Result<String, String> {
    *executions().lock().unwrap().entry(cx.session_id().to_owned()).or_insert(0) += 1;
    Ok(format!("requested {item}"))
}

/// Shares a note with the supplier (a service outside the application).
///
/// # Arguments
///
/// * `note` - the note
#[tool(permission = perms::items::read, egress)]
async fn share_note(note: String) -> Result<String, String> {
    Ok(format!("shared {} characters", note.len()))
}

agent! {
    /// Answers about items and files item requests.
    pub struct Desk;
    tools: [lookup_item, big_report, submit_item, share_note],
}

pub const AGENT: &str = "Desk";

pub fn alice() -> Principal {
    Principal::new("alice", "acme", "employee")
}
pub fn bob() -> Principal {
    Principal::new("bob", "acme", "employee")
}
pub fn carol() -> Principal {
    Principal::new("carol", "globex", "employee")
}
pub fn audrey() -> Principal {
    Principal::new("audrey", "acme", "auditor")
}

pub fn dev(p: &Principal) -> (String, String) {
    ("x-dev-principal".into(), format!("{}/{}/{}", p.user_id, p.org_id, p.role))
}

pub fn test_model() -> RuleProvider {
    RuleProvider::new()
        // "share": look the keyboard up, then send what the lookup said out.
        .when(|req| {
            let share = last_user_message(req).is_some_and(|m| m.contains("share"));
            let done = tool_outcomes(req);
            match (share, done.as_slice()) {
                (true, []) => Some(tool_calls([("lookup_item", r#"{"name": "keyboard"}"#.to_owned())])),
                (true, [looked]) => {
                    let text = serde_json::from_str::<String>(looked.content).unwrap_or(looked.content.to_owned());
                    Some(tool_calls([("share_note", serde_json::json!({ "note": text }).to_string())]))
                }
                _ => None,
            }
        })
        .when(|req| {
            let flood = last_user_message(req).is_some_and(|m| m.contains("flood"));
            (flood && tool_outcomes(req).len() < 80).then(|| tool_calls((0..8).map(|_| ("big_report", "{}"))))
        })
        .when(|req| {
            let done = tool_outcomes(req);
            (!done.is_empty()).then(|| reply(format!("done: {} call(s)", done.len())))
        })
        .on_keyword("submit", "submit_item", r#"{"item": "a keyboard"}"#)
        .on_keyword("lookup", "lookup_item", r#"{"name": "keyboard"}"#)
        .fallback("hello")
}

pub fn roles() -> RoleMap {
    RoleMap::new().role("employee", ["items.read", "items.write"]).role("auditor", ["items.read"])
}

pub struct Served {
    pub base: SocketAddr,
    pub audit: Arc<MemorySink>,
    pub service: Service,
    pub runtime: Runtime,
}

pub async fn serve(limits: ServiceLimits) -> Served {
    serve_with(Arc::new(DevAuthenticator::enabled()), limits, None).await
}

/// A service on a free loopback port. With `shared`, it uses that audit log and runtime (a
/// second service process over the same durable state).
pub async fn serve_with(
    auth: Arc<dyn Authenticator>,
    limits: ServiceLimits,
    shared: Option<(Arc<MemorySink>, Runtime)>,
) -> Served {
    let (audit, runtime) = shared.unwrap_or_else(|| {
        let audit = Arc::new(MemorySink::new());
        let runtime = Runtime::builder(audit.clone(), Arc::new(test_model())).roles(roles()).build();
        (audit, runtime)
    });
    let service =
        Service::builder(auth, audit.clone(), audit.clone()).agent::<Desk>(runtime.clone()).limits(limits).build();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = listener.local_addr().unwrap();
    let router = service.router();
    tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });
    Served { base, audit, service, runtime }
}

/// A response: status, headers (lower-case names), body.
#[derive(Debug)]
pub struct Reply {
    pub status: u16,
    pub headers: HashMap<String, String>,
    pub body: String,
}

impl Reply {
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.body))
    }
    /// The error code of a JSON refusal.
    pub fn code(&self) -> String {
        self.json()["error"]["code"].as_str().unwrap_or_else(|| panic!("no error code in {}", self.body)).to_owned()
    }
}

async fn head(reader: &mut BufReader<TcpStream>) -> (u16, HashMap<String, String>) {
    let mut line = String::new();
    reader.read_line(&mut line).await.unwrap();
    let status: u16 = line.split(' ').nth(1).unwrap_or_else(|| panic!("bad status line {line:?}")).parse().unwrap();
    let mut headers = HashMap::new();
    loop {
        line.clear();
        reader.read_line(&mut line).await.unwrap();
        let l = line.trim_end();
        if l.is_empty() {
            break;
        }
        let (k, v) = l.split_once(':').unwrap();
        headers.insert(k.trim().to_ascii_lowercase(), v.trim().to_owned());
    }
    (status, headers)
}

async fn send(
    base: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(String, String)],
    body: Option<&str>,
) -> TcpStream {
    let mut stream = TcpStream::connect(base).await.unwrap();
    let mut req = format!("{method} {path} HTTP/1.1\r\nHost: {base}\r\nConnection: close\r\n");
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    if let Some(b) = body {
        req.push_str(&format!("Content-Type: application/json\r\nContent-Length: {}\r\n", b.len()));
    }
    req.push_str("\r\n");
    stream.write_all(req.as_bytes()).await.unwrap();
    if let Some(b) = body {
        // The server may refuse before reading it all (413); that is its answer.
        let _ = stream.write_all(b.as_bytes()).await;
    }
    stream
}

/// One request, `Connection: close`, the whole response read.
pub async fn call(
    base: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(String, String)],
    body: Option<&str>,
) -> Reply {
    let stream = send(base, method, path, headers, body).await;
    let mut reader = BufReader::new(stream);
    let (status, headers) = head(&mut reader).await;
    let mut raw = Vec::new();
    let _ = reader.read_to_end(&mut raw).await;
    let body = if headers.get("transfer-encoding").is_some_and(|v| v.contains("chunked")) {
        dechunk(&raw)
    } else {
        String::from_utf8_lossy(&raw).into_owned()
    };
    Reply { status, headers, body }
}

fn dechunk(raw: &[u8]) -> String {
    let mut out = Vec::new();
    let mut rest = raw;
    while let Some(pos) = rest.windows(2).position(|w| w == b"\r\n") {
        let size = usize::from_str_radix(std::str::from_utf8(&rest[..pos]).unwrap().trim(), 16).unwrap();
        rest = &rest[pos + 2..];
        if size == 0 || rest.len() < size {
            break;
        }
        out.extend_from_slice(&rest[..size]);
        rest = &rest[size + 2..];
    }
    String::from_utf8_lossy(&out).into_owned()
}

pub async fn get(base: SocketAddr, path: &str, who: &Principal) -> Reply {
    call(base, "GET", path, &[dev(who)], None).await
}

pub async fn post(base: SocketAddr, path: &str, who: &Principal, body: &str) -> Reply {
    call(base, "POST", path, &[dev(who)], Some(body)).await
}

/// Starts a run of the test agent; its id.
pub async fn start(base: SocketAddr, who: &Principal, session: &str, input: &str) -> String {
    let body = serde_json::json!({"agent": AGENT, "input": input, "session_id": session}).to_string();
    let r = post(base, "/v1/runs", who, &body).await;
    assert_eq!(r.status, 201, "{}", r.body);
    r.json()["run_id"].as_str().unwrap().to_owned()
}

/// Waits until the run is no longer running; its summary. Panics (the run stalled) after 60 s.
pub async fn ended(base: SocketAddr, who: &Principal, run_id: &str) -> Value {
    for _ in 0..1200 {
        let r = get(base, &format!("/v1/runs/{run_id}"), who).await;
        let v = r.json();
        if v["status"] != "running" {
            return v;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("run {run_id} did not end within 60 s: it stalled");
}

/// Waits until a decision is listed for `who`; its call id.
pub async fn pending_call(base: SocketAddr, who: &Principal) -> String {
    for _ in 0..400 {
        let r = get(base, "/v1/decisions", who).await;
        assert_eq!(r.status, 200, "{}", r.body);
        if let Some(call) = r.json()["decisions"][0]["call_id"].as_str() {
            return call.to_owned();
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("no decision was listed for {} within 10 s", who.user_id);
}

/// One server-sent event.
#[derive(Debug, Clone, PartialEq)]
pub struct Sse {
    pub id: Option<u64>,
    pub event: String,
    pub data: String,
}

impl Sse {
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.data).unwrap()
    }
}

/// An open event stream, read only when the test asks.
pub struct Stream {
    pub status: u16,
    pub headers: HashMap<String, String>,
    reader: BufReader<TcpStream>,
    chunk_left: usize,
    text: String,
    pub body_if_refused: String,
}

pub async fn open(base: SocketAddr, run_id: &str, who: &Principal, last_id: Option<u64>) -> Stream {
    let mut headers = vec![dev(who), ("Accept".into(), "text/event-stream".into())];
    if let Some(id) = last_id {
        headers.push(("Last-Event-ID".into(), id.to_string()));
    }
    let stream = send(base, "GET", &format!("/v1/runs/{run_id}/events"), &headers, None).await;
    let mut reader = BufReader::new(stream);
    let (status, headers) = head(&mut reader).await;
    let mut s = Stream { status, headers, reader, chunk_left: 0, text: String::new(), body_if_refused: String::new() };
    if status != 200 {
        let mut raw = Vec::new();
        let _ = s.reader.read_to_end(&mut raw).await;
        s.body_if_refused = String::from_utf8_lossy(&raw).into_owned();
        if s.headers.get("transfer-encoding").is_some_and(|v| v.contains("chunked")) {
            s.body_if_refused = dechunk(&raw);
        }
    }
    s
}

impl Stream {
    /// More decoded bytes of the body; false at its end.
    async fn fill(&mut self) -> bool {
        if self.chunk_left == 0 {
            let mut line = String::new();
            if self.reader.read_line(&mut line).await.unwrap_or(0) == 0 {
                return false;
            }
            if line.trim().is_empty() {
                line.clear();
                if self.reader.read_line(&mut line).await.unwrap_or(0) == 0 {
                    return false;
                }
            }
            let size = usize::from_str_radix(line.trim(), 16).unwrap_or(0);
            if size == 0 {
                return false;
            }
            self.chunk_left = size;
        }
        let mut buf = vec![0u8; self.chunk_left.min(64 * 1024)];
        let n = self.reader.read(&mut buf).await.unwrap_or(0);
        if n == 0 {
            return false;
        }
        self.chunk_left -= n;
        self.text.push_str(&String::from_utf8_lossy(&buf[..n]));
        true
    }

    /// The next event (comments skipped), or `None` at the end of the stream. Panics after 30 s.
    pub async fn next(&mut self) -> Option<Sse> {
        tokio::time::timeout(Duration::from_secs(30), async {
            loop {
                if let Some(end) = self.text.find("\n\n") {
                    let block: String = self.text.drain(..end + 2).collect();
                    let (mut id, mut event, mut data) = (None, String::from("message"), Vec::new());
                    for line in block.lines() {
                        if let Some(v) = line.strip_prefix("id:") {
                            id = Some(v.trim().parse().unwrap());
                        } else if let Some(v) = line.strip_prefix("event:") {
                            event = v.trim().to_owned();
                        } else if let Some(v) = line.strip_prefix("data:") {
                            data.push(v.strip_prefix(' ').unwrap_or(v).to_owned());
                        }
                    }
                    if data.is_empty() && id.is_none() {
                        continue; // a keep-alive comment
                    }
                    return Some(Sse { id, event, data: data.join("\n") });
                }
                if !self.fill().await {
                    return None;
                }
            }
        })
        .await
        .expect("no event within 30 s")
    }

    /// Events until (and with) the first of type `kind`.
    pub async fn until(&mut self, kind: &str) -> Vec<Sse> {
        let mut out = Vec::new();
        while let Some(e) = self.next().await {
            let stop = e.event == kind;
            out.push(e);
            if stop {
                return out;
            }
        }
        panic!("the stream ended without a `{kind}` event: {out:?}");
    }

    /// Every event to the end of the stream.
    pub async fn rest(&mut self) -> Vec<Sse> {
        let mut out = Vec::new();
        while let Some(e) = self.next().await {
            out.push(e);
        }
        out
    }
}

pub fn records_of(audit: &MemorySink, call_id: &str) -> Vec<AuditRecord> {
    audit.records().into_iter().filter(|r| r.call_id.as_deref() == Some(call_id)).collect()
}
