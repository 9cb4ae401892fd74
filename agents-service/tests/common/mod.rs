//! A test agent, a service on a loopback port, and the suite's one HTTP client: hyper's, on
//! plain loopback HTTP (no TLS, so no crypto provider to install first), one connection a
//! request. An event stream's body is read only when the test asks, so a test controls
//! exactly when it reads a stream, or does not.
#![allow(dead_code, unreachable_pub, missing_docs)]

use agents_runtime::audit::{AuditRecord, MemorySink};
use agents_runtime::provider::scripted::{RuleProvider, last_user_message, reply, tool_calls, tool_outcomes};
use agents_runtime::{Principal, RoleMap, Runtime, ToolContext, agent, permissions, tool};
use agents_service::{Authenticator, DevAuthenticator, Service, ServiceLimits};
use http_body_util::{BodyExt, Full};
use hyper::body::{Bytes, Incoming};
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use serde_json::Value;
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

pub mod postgres;

permissions! {
    pub mod perms { items.read, items.write }
}

fn executions() -> &'static Mutex<HashMap<String, usize>> {
    static E: OnceLock<Mutex<HashMap<String, usize>>> = OnceLock::new();
    E.get_or_init(Default::default)
}

/// How often `submit_item` ran in a session: the id a client gave (the tool sees it as the
/// state store holds it, scoped to its principal: `<scope>.<id>`) or a stored id.
pub fn executed(session: &str) -> usize {
    let scoped = format!(".{session}");
    executions().lock().unwrap().iter().filter(|(k, _)| *k == session || k.ends_with(&scoped)).map(|(_, n)| n).sum()
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
    let base = listen(&service).await;
    Served { base, audit, service, runtime }
}

/// Serves `service` on a free loopback port with its own listener (connection limits, the
/// bound port in the `Host` allowlist); its address. Dropping the server leaves it running.
pub async fn listen(service: &Service) -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = listener.local_addr().unwrap();
    service.serve(listener, service.router(), agents_service::ConnectionLimits::default()).unwrap();
    base
}

/// A response: status, headers (lower-case names; the last of a repeated one), body.
#[derive(Debug)]
pub struct Reply {
    pub status: u16,
    pub headers: HashMap<String, String>,
    /// Every header as `name: value` lines, names lower-case, repeated ones each on its line.
    pub head: String,
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

/// Sends one request (`headers` as given, repeated names kept; a body as JSON) on a new
/// connection; the response with its body unread.
async fn send(
    base: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(String, String)],
    body: Option<&str>,
) -> hyper::Response<Incoming> {
    let client = Client::builder(TokioExecutor::new()).pool_max_idle_per_host(0).build_http();
    let mut req = hyper::Request::builder().method(method).uri(format!("http://{base}{path}"));
    for (k, v) in headers {
        req = req.header(k.as_str(), v.as_str());
    }
    if body.is_some() {
        req = req.header("content-type", "application/json");
    }
    let req = req.body(Full::new(Bytes::from(body.unwrap_or("").to_owned()))).expect("a well-formed request");
    client.request(req).await.unwrap_or_else(|e| panic!("{method} {path}: no response ({e:?})"))
}

/// The status and headers of `response`.
fn status_and_headers(response: &hyper::Response<Incoming>) -> (u16, HashMap<String, String>, String) {
    let mut map = HashMap::new();
    let mut head = String::new();
    for (k, v) in response.headers() {
        let v = String::from_utf8_lossy(v.as_bytes()).into_owned();
        head.push_str(&format!("{k}: {v}\n"));
        map.insert(k.as_str().to_owned(), v);
    }
    (response.status().as_u16(), map, head)
}

/// The rest of `body`, as text.
async fn text_of(body: Incoming) -> String {
    let bytes = body.collect().await.map(|b| b.to_bytes()).unwrap_or_default();
    String::from_utf8_lossy(&bytes).into_owned()
}

/// One request on a new connection, the whole response read.
pub async fn call(
    base: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(String, String)],
    body: Option<&str>,
) -> Reply {
    let response = send(base, method, path, headers, body).await;
    let (status, headers, head) = status_and_headers(&response);
    Reply { status, headers, head, body: text_of(response.into_body()).await }
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
    /// The body still to read (none once a refusal's body was read).
    body: Option<Incoming>,
    /// What has been read and not yet taken as events.
    read: Vec<u8>,
    pub body_if_refused: String,
}

pub async fn open(base: SocketAddr, run_id: &str, who: &Principal, last_id: Option<u64>) -> Stream {
    let mut headers = vec![dev(who), ("Accept".into(), "text/event-stream".into())];
    if let Some(id) = last_id {
        headers.push(("Last-Event-ID".into(), id.to_string()));
    }
    let response = send(base, "GET", &format!("/v1/runs/{run_id}/events"), &headers, None).await;
    let (status, headers, _) = status_and_headers(&response);
    let (body, body_if_refused) = match response.into_body() {
        body if status == 200 => (Some(body), String::new()),
        refused => (None, text_of(refused).await),
    };
    Stream { status, headers, body, read: Vec::new(), body_if_refused }
}

impl Stream {
    /// More of the body; false at its end.
    async fn fill(&mut self) -> bool {
        let Some(body) = &mut self.body else { return false };
        while let Some(Ok(frame)) = body.frame().await {
            if let Ok(data) = frame.into_data() {
                self.read.extend_from_slice(&data);
                return true;
            }
        }
        false
    }

    /// The next event (comments skipped), or `None` at the end of the stream. Panics after 30 s.
    pub async fn next(&mut self) -> Option<Sse> {
        tokio::time::timeout(Duration::from_secs(30), async {
            loop {
                if let Some(end) = self.read.windows(2).position(|w| w == b"\n\n") {
                    let block: Vec<u8> = self.read.drain(..end + 2).collect();
                    let block = String::from_utf8(block).expect("an event is UTF-8");
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
