//! The HTTP path: the agent served by the real `agents-service` router on a loopback socket,
//! each message a run started with `POST /v1/runs`, and the person deciding through the
//! decision API, as a web client's person does: when the run's event stream says a decision
//! waits, they list `GET /v1/decisions` and answer each new one with
//! `POST /v1/decisions/{call_id}`, judging only from what the listing shows (the tool, its
//! title and risk, the arguments as shown). The run's end is the end of its event stream;
//! its status is then read from `GET /v1/runs/{run_id}`.
//!
//! The client is a small HTTP/1.1 client over a TCP stream (one request per connection), so
//! what the person sees is exactly the bytes the service sends.

use crate::person::{Card, Person};
use agents_runtime::audit::MemorySink;
use agents_runtime::tool::Registry;
use agents_runtime::{Principal, Runtime};
use agents_service::{DEV_PRINCIPAL_HEADER, DevAuthenticator, Service, ServiceLimits};
use serde_json::{Value, json};
use std::collections::{BTreeSet, HashMap};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;

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

/// A client acting for one principal (the development login's header).
#[derive(Debug, Clone)]
pub struct Client {
    base: SocketAddr,
    who: String,
}

/// A response body being read: chunked, or up to the connection's end.
struct Body {
    reader: BufReader<TcpStream>,
    chunked: bool,
    buf: Vec<u8>,
    ended: bool,
}

impl Body {
    /// Reads more of the body into `buf`; `false` at its end.
    async fn more(&mut self) -> Result<bool, String> {
        if self.ended {
            return Ok(false);
        }
        let io = |e: std::io::Error| format!("reading the response: {e}");
        if self.chunked {
            let mut line = String::new();
            if self.reader.read_line(&mut line).await.map_err(io)? == 0 {
                self.ended = true;
                return Ok(false);
            }
            let size = line.trim().split(';').next().unwrap_or_default();
            let size = usize::from_str_radix(size, 16).map_err(|_| format!("a bad chunk size {line:?}"))?;
            if size == 0 {
                self.ended = true;
                return Ok(false);
            }
            let mut chunk = vec![0; size + 2];
            self.reader.read_exact(&mut chunk).await.map_err(io)?;
            chunk.truncate(size);
            self.buf.extend_from_slice(&chunk);
        } else {
            let mut part = [0u8; 8192];
            let n = self.reader.read(&mut part).await.map_err(io)?;
            if n == 0 {
                self.ended = true;
                return Ok(false);
            }
            self.buf.extend_from_slice(&part[..n]);
        }
        Ok(true)
    }

    /// The whole body.
    async fn text(mut self) -> Result<String, String> {
        while self.more().await? {}
        String::from_utf8(self.buf).map_err(|_| "the body is not UTF-8".to_owned())
    }

    /// The next line (without its line end), or `None` at the end.
    async fn line(&mut self) -> Result<Option<String>, String> {
        loop {
            if let Some(at) = self.buf.iter().position(|b| *b == b'\n') {
                let mut line: Vec<u8> = self.buf.drain(..=at).collect();
                line.pop();
                if line.last() == Some(&b'\r') {
                    line.pop();
                }
                return String::from_utf8(line).map(Some).map_err(|_| "an event line is not UTF-8".to_owned());
            }
            if !self.more().await? {
                return Ok(None);
            }
        }
    }
}

/// A server-sent event stream.
pub struct Events(Body);

impl Events {
    /// The next event (its type and data), or `None` when the stream ended.
    pub async fn next(&mut self) -> Result<Option<(String, String)>, String> {
        let (mut event, mut data) = (String::new(), Vec::new());
        while let Some(line) = self.0.line().await? {
            if line.is_empty() {
                if !data.is_empty() || !event.is_empty() {
                    let kind = if event.is_empty() { "message".to_owned() } else { event };
                    return Ok(Some((kind, data.join("\n"))));
                }
                continue;
            }
            if line.starts_with(':') {
                continue; // a keep-alive comment
            }
            let (field, value) = line.split_once(':').unwrap_or((line.as_str(), ""));
            let value = value.strip_prefix(' ').unwrap_or(value);
            match field {
                "event" => event = value.to_owned(),
                "data" => data.push(value.to_owned()),
                _ => {}
            }
        }
        Ok(None)
    }
}

impl Client {
    /// A client of the service at `base`, acting for `who`.
    pub fn new(base: SocketAddr, who: &Principal) -> Client {
        Client { base, who: format!("{}/{}/{}", who.user_id, who.org_id, who.role) }
    }

    async fn send(&self, method: &str, path: &str, body: Option<&Value>) -> Result<(u16, Body), String> {
        let io = |e: std::io::Error| format!("{method} {path}: {e}");
        let stream = TcpStream::connect(self.base).await.map_err(io)?;
        let mut head = format!(
            "{method} {path} HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n{DEV_PRINCIPAL_HEADER}: {}\r\n",
            self.base, self.who
        );
        let body = body.map(Value::to_string);
        if let Some(b) = &body {
            head.push_str(&format!("Content-Type: application/json\r\nContent-Length: {}\r\n", b.len()));
        }
        head.push_str("\r\n");
        // One write: a body sent after its head would wait for the head's acknowledgement.
        let mut request = head.into_bytes();
        request.extend_from_slice(body.as_deref().unwrap_or_default().as_bytes());
        stream.set_nodelay(true).map_err(io)?;
        let mut reader = BufReader::new(stream);
        reader.get_mut().write_all(&request).await.map_err(io)?;
        let mut line = String::new();
        reader.read_line(&mut line).await.map_err(io)?;
        let status: u16 = line
            .split(' ')
            .nth(1)
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| format!("{method} {path}: a bad status line {line:?}"))?;
        let mut headers = HashMap::new();
        loop {
            line.clear();
            reader.read_line(&mut line).await.map_err(io)?;
            let l = line.trim_end();
            if l.is_empty() {
                break;
            }
            if let Some((k, v)) = l.split_once(':') {
                headers.insert(k.trim().to_ascii_lowercase(), v.trim().to_ascii_lowercase());
            }
        }
        let chunked = headers.get("transfer-encoding").is_some_and(|v| v.contains("chunked"));
        Ok((status, Body { reader, chunked, buf: Vec::new(), ended: false }))
    }

    /// One request; the status and the JSON body.
    pub async fn call(&self, method: &str, path: &str, body: Option<&Value>) -> Result<(u16, Value), String> {
        let (status, reply) = self.send(method, path, body).await?;
        let text = reply.text().await?;
        let json = serde_json::from_str(&text).map_err(|e| format!("{method} {path}: not JSON ({e}): {text}"))?;
        Ok((status, json))
    }

    /// The event stream of `run_id`, from its first event.
    pub async fn events(&self, run_id: &str) -> Result<Events, String> {
        let path = format!("/v1/runs/{run_id}/events");
        let (status, body) = self.send("GET", &path, None).await?;
        if status != 200 {
            return Err(format!("GET {path}: {status} {}", body.text().await.unwrap_or_default()));
        }
        Ok(Events(body))
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
