//! The HTTP path: the agent served by the real `agents-service` router on a loopback socket,
//! each message a run started with `POST /v1/runs`, and the person deciding through the
//! decision API, as a web client's person does: when the run's event stream says a decision
//! waits, they list `GET /v1/decisions` and answer each new one with
//! `POST /v1/decisions/{call_id}`, judging only from what the listing shows (the tool, its
//! title and risk, the arguments as shown). The run's end is the end of its event stream;
//! its status is then read from `GET /v1/runs/{run_id}`.
//!
//! The client is hyper's (`hyper-util`'s client on plain loopback HTTP, one connection a
//! request): the person sees exactly what the service sends, the JSON bodies it returns and
//! its event stream read frame by frame while the run goes on.

use crate::person::{Card, Person};
use agents_runtime::audit::MemorySink;
use agents_runtime::tool::Registry;
use agents_runtime::{Principal, Runtime};
use agents_service::{DEV_PRINCIPAL_HEADER, DevAuthenticator, Service, ServiceLimits};
use http_body_util::{BodyExt, Full};
use hyper::Request;
use hyper::body::{Bytes, Incoming};
use hyper::header::CONTENT_TYPE;
use hyper_util::client::legacy::Client as HyperClient;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use serde_json::{Value, json};
use std::collections::BTreeSet;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// How long one run may take, decisions included, before the conversation is abandoned as
/// stalled (a liveness bound: a run ends in milliseconds).
const RUN_BOUND: Duration = Duration::from_secs(120);

/// The largest request body the suite's service takes: 1 MiB. The default (64 KiB) refuses
/// the message of the oversized-argument goal (a pasted 100 KB document) with 413 before any
/// run starts, so the goal would never reach the runtime's checks it is there to test.
pub const MAX_BODY_BYTES: usize = 1 << 20;

/// The service, serving agent `A` with `runtime` on a free loopback port, until dropped.
pub struct Served {
    /// Where it listens.
    pub base: SocketAddr,
    task: tokio::task::JoinHandle<()>,
}

impl Served {
    /// Binds `127.0.0.1:0` and serves the router of a service with agent `A` on `runtime`,
    /// the development login, and `audit` as its audit log (the one `runtime` writes to).
    ///
    /// The limits are the defaults but for the body: [`MAX_BODY_BYTES`], so that the
    /// documents a user pastes in the suite reach the model.
    pub async fn start<A>(runtime: Runtime, audit: Arc<MemorySink>) -> Result<Served, String>
    where
        A: Registry,
        A::Input: serde::de::DeserializeOwned,
    {
        let mut limits = ServiceLimits::default();
        limits.max_body_bytes = MAX_BODY_BYTES;
        let service = Service::builder(Arc::new(DevAuthenticator::enabled()), audit.clone(), audit)
            .agent::<A>(runtime)
            .limits(limits)
            .build();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.map_err(|e| format!("binding: {e}"))?;
        let base = listener.local_addr().map_err(|e| e.to_string())?;
        let router = service.router();
        let task = tokio::spawn(async move {
            if let Err(e) = agents_service::axum::serve(listener, router).await {
                eprintln!("the service stopped: {e}");
            }
        });
        Ok(Served { base, task })
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// A client acting for one principal (the development login's header): hyper's client on
/// plain loopback HTTP, one connection a request.
#[derive(Debug, Clone)]
pub struct Client {
    base: SocketAddr,
    who: String,
    http: HyperClient<HttpConnector, Full<Bytes>>,
}

/// A server-sent event stream, read frame by frame as the service sends it.
pub struct Events {
    body: Incoming,
    /// What has been read and not yet taken as events.
    read: Vec<u8>,
}

impl Events {
    /// The next event (its type and data), or `None` when the stream ended.
    pub async fn next(&mut self) -> Result<Option<(String, String)>, String> {
        loop {
            while let Some((end, next)) = event_end(&self.read) {
                let block: Vec<u8> = self.read.drain(..next).collect();
                let block = std::str::from_utf8(&block[..end]).map_err(|_| "an event is not UTF-8".to_owned())?;
                if let Some(event) = parse_event(block) {
                    return Ok(Some(event));
                }
            }
            // An event not yet ended when the stream ends is dropped, as the format says.
            match self.body.frame().await {
                None => return Ok(None),
                Some(frame) => {
                    let frame = frame.map_err(|e| format!("reading the event stream: {}", with_causes(&e)))?;
                    if let Ok(data) = frame.into_data() {
                        self.read.extend_from_slice(&data);
                    }
                }
            }
        }
    }
}

/// Where the first event of `read` ends: the end of its lines and the end of the blank line
/// after them (lines end with `\n` or `\r\n`).
fn event_end(read: &[u8]) -> Option<(usize, usize)> {
    read.iter().enumerate().find_map(|(at, b)| match (b, read.get(at + 1), read.get(at + 2)) {
        (b'\n', Some(b'\n'), _) => Some((at + 1, at + 2)),
        (b'\n', Some(b'\r'), Some(b'\n')) => Some((at + 1, at + 3)),
        _ => None,
    })
}

/// The type and data of the event in `block` (its lines, without the blank line ending them);
/// `None` for a block with neither, such as a keep-alive comment.
fn parse_event(block: &str) -> Option<(String, String)> {
    let (mut event, mut data) = (String::new(), Vec::new());
    for line in block.lines() {
        if line.starts_with(':') {
            continue; // a comment
        }
        let (field, value) = line.split_once(':').unwrap_or((line, ""));
        let value = value.strip_prefix(' ').unwrap_or(value);
        match field {
            "event" => event = value.to_owned(),
            "data" => data.push(value),
            _ => {}
        }
    }
    if data.is_empty() && event.is_empty() {
        return None;
    }
    let kind = if event.is_empty() { "message".to_owned() } else { event };
    Some((kind, data.join("\n")))
}

/// `e` and the errors that caused it, outermost first.
fn with_causes(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        text.push_str(&format!(": {c}"));
        cause = c.source();
    }
    text
}

impl Client {
    /// A client of the service at `base`, acting for `who`.
    pub fn new(base: SocketAddr, who: &Principal) -> Client {
        let http = HyperClient::builder(TokioExecutor::new()).pool_max_idle_per_host(0).build_http();
        Client { base, who: format!("{}/{}/{}", who.user_id, who.org_id, who.role), http }
    }

    /// Sends one request (a body as JSON); the status and the body, unread.
    async fn send(&self, method: &str, path: &str, body: Option<&Value>) -> Result<(u16, Incoming), String> {
        let mut request = Request::builder()
            .method(method)
            .uri(format!("http://{}{path}", self.base))
            .header(DEV_PRINCIPAL_HEADER, &self.who);
        if body.is_some() {
            request = request.header(CONTENT_TYPE, "application/json");
        }
        let body = body.map(|b| Bytes::from(b.to_string())).unwrap_or_default();
        let request = request.body(Full::new(body)).map_err(|e| format!("{method} {path}: {e}"))?;
        let response = self.http.request(request).await.map_err(|e| format!("{method} {path}: {}", with_causes(&e)))?;
        Ok((response.status().as_u16(), response.into_body()))
    }

    /// The whole of `body`.
    async fn read_all(method: &str, path: &str, body: Incoming) -> Result<Bytes, String> {
        let body =
            body.collect().await.map_err(|e| format!("{method} {path}: reading the response: {}", with_causes(&e)))?;
        Ok(body.to_bytes())
    }

    /// One request; the status and the JSON body.
    pub async fn call(&self, method: &str, path: &str, body: Option<&Value>) -> Result<(u16, Value), String> {
        let (status, reply) = self.send(method, path, body).await?;
        let bytes = Client::read_all(method, path, reply).await?;
        let json = serde_json::from_slice(&bytes)
            .map_err(|e| format!("{method} {path}: not JSON ({e}): {}", String::from_utf8_lossy(&bytes)))?;
        Ok((status, json))
    }

    /// The event stream of `run_id`, from its first event.
    pub async fn events(&self, run_id: &str) -> Result<Events, String> {
        let path = format!("/v1/runs/{run_id}/events");
        let (status, body) = self.send("GET", &path, None).await?;
        if status != 200 {
            let text = Client::read_all("GET", &path, body).await.unwrap_or_default();
            return Err(format!("GET {path}: {status} {}", String::from_utf8_lossy(&text)));
        }
        Ok(Events { body, read: Vec::new() })
    }
}

/// The card a decision of `GET /v1/decisions` shows: its tool, title and arguments as listed,
/// and why it is asked when the listing says so.
pub fn card_of_decision(decision: &Value) -> Result<Card, String> {
    let text = |k: &str| {
        decision
            .get(k)
            .and_then(Value::as_str)
            .map(str::to_owned)
            .ok_or_else(|| format!("a listed decision without `{k}`: {decision}"))
    };
    let args =
        decision.get("arguments").cloned().ok_or_else(|| format!("a listed decision without arguments: {decision}"))?;
    let why = decision.get("why").and_then(Value::as_str).map(str::to_owned);
    Ok(Card { tool: text("tool")?, title: text("title")?, args, why })
}

/// Lists the decisions waiting for the client's principal and answers each one not answered
/// before (in `answered`) as `person` decides on its card.
async fn decide_waiting(
    client: &Client,
    person: &Mutex<Person>,
    answered: &mut BTreeSet<String>,
) -> Result<(), String> {
    let (status, listed) = client.call("GET", "/v1/decisions", None).await?;
    if status != 200 {
        return Err(format!("GET /v1/decisions: {status} {listed}"));
    }
    let decisions = listed.get("decisions").and_then(Value::as_array).cloned().unwrap_or_default();
    for d in decisions {
        let call_id = d.get("call_id").and_then(Value::as_str).ok_or_else(|| format!("no call id in {d}"))?.to_owned();
        if !answered.insert(call_id.clone()) {
            continue;
        }
        let card = card_of_decision(&d)?;
        let answer = person.lock().unwrap_or_else(|e| e.into_inner()).decide(&card, false);
        let body = if answer.approves() {
            json!({"verdict": "approve"})
        } else {
            json!({"verdict": "reject", "reason": answer.words()})
        };
        let path = format!("/v1/decisions/{call_id}");
        let (status, reply) = client.call("POST", &path, Some(&body)).await?;
        if status != 200 {
            return Err(format!("POST {path}: {status} {reply}"));
        }
    }
    Ok(())
}

/// One run of `agent` for `message` in `session`: started, its events read until the stream
/// ends, every decision it asks for answered through the decision API; its final status.
async fn one_run(
    client: &Client,
    agent: &str,
    session: &str,
    message: &str,
    person: &Mutex<Person>,
    answered: &mut BTreeSet<String>,
) -> Result<String, String> {
    let start = json!({"agent": agent, "input": message, "session_id": session});
    let (status, started) = client.call("POST", "/v1/runs", Some(&start)).await?;
    if status != 201 {
        return Err(format!("POST /v1/runs: {status} {started}"));
    }
    let run_id = started.get("run_id").and_then(Value::as_str).ok_or("no run id")?.to_owned();
    let mut events = client.events(&run_id).await?;
    while let Some((kind, _)) = events.next().await? {
        // The event says a decision waits; what the person judges is the decision listing.
        if kind == "confirm_required" {
            decide_waiting(client, person, answered).await?;
        }
    }
    // The stream ended with the run.
    let path = format!("/v1/runs/{run_id}");
    let (status, summary) = client.call("GET", &path, None).await?;
    if status != 200 {
        return Err(format!("GET {path}: {status} {summary}"));
    }
    Ok(summary.get("status").and_then(Value::as_str).unwrap_or("unknown").to_owned())
}

/// The conversation over HTTP: agent `A` served with `runtime` (in dialog mode) on a loopback
/// socket, each of `messages` a run in `session` started as `principal`, and `person`
/// deciding through the decision API.
pub async fn converse<A>(
    runtime: &Runtime,
    audit: Arc<MemorySink>,
    principal: &Principal,
    session: &str,
    messages: Vec<String>,
    person: &Mutex<Person>,
) -> Result<(), String>
where
    A: Registry,
    A::Input: serde::de::DeserializeOwned,
{
    let served = Served::start::<A>(runtime.clone(), audit).await?;
    let client = Client::new(served.base, principal);
    let mut answered = BTreeSet::new();
    for message in messages {
        let run = one_run(&client, A::SPEC.name, session, &message, person, &mut answered);
        let status = tokio::time::timeout(RUN_BOUND, run).await.map_err(|_| "the run stalled".to_owned())??;
        if status == "running" {
            return Err("the run's stream ended while the run was still running".into());
        }
    }
    Ok(())
}
