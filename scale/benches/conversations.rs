//! Concurrent conversations over HTTP: the service (server-sent events, gate, audit log,
//! state store) against a bare axum service making the same model calls.
//!
//! `--conversations` conversations (1,000) at once, `--turns` turns each (3), one user each,
//! all on keep-alive loopback connections. A turn of the service, streamed: `POST /v1/runs`
//! (the session named by the conversation), then its event stream `GET /v1/runs/{id}/events`
//! read until the run ends; answered: one `POST /v1/runs` with `Prefer: wait=20`, whose
//! response carries the ended run's answer. The scripted model makes one `lookup_item` read
//! call, then answers. Each service is measured both ways (streamed first), each way in
//! sessions of its own. A turn of the bare service: one `POST /turn` whose handler makes the same two
//! model calls and runs the same tool body in between, with no gate, audit record, state
//! store, session or event journal, and answers the text. Printed per service: turns per
//! second and p50/p99 of one turn, and the service's cost per turn (the inverse of its
//! throughput) and p99 against the bare service's, on SQLite (state store and audit log in
//! SQLite files) and on PostgreSQL (a throwaway cluster); and, to split the durable writes'
//! share from the rest, the same service on the in-process store and audit log.
//!
//! `cargo bench -p scale --bench conversations` (`-- --conversations=200`, `--turns=2`,
//! `--no-postgres`, `--no-sqlite`: only the bare service and the service in memory;
//! `--answered-first`: each service answered, then streamed). `--features mimalloc`: both
//! services on mimalloc rather than the system's allocator.

/// The process's allocator, for both services: the system's (glibc's `malloc` on Linux), or
/// mimalloc with `--features mimalloc`.
#[cfg(feature = "mimalloc")]
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

const ALLOCATOR: &str = if cfg!(feature = "mimalloc") { "mimalloc" } else { "the system's" };

use agents_runtime::Runtime;
use agents_runtime::audit::{AuditSink, MemorySink, SqliteSink};
use agents_runtime::provider::{ChatMessage, ChatRequest, Provider, RuleProvider, ToolDefinition};
use agents_runtime::store::{MemoryStore, Store, StoreAuditSink};
use agents_service::axum::extract::State;
use agents_service::axum::{Router, routing::post};
use agents_service::{AuditReader, DevAuthenticator, Service, ServiceLimits, SqliteReader};
use agents_store::postgres::TempCluster;
use agents_store::{PostgresStore, SqliteStore};
use futures::{FutureExt, StreamExt};
use scale::desk::{AGENT, Desk, answer, look_up, model, roles};
use scale::figures::{arg, flag, machine, ms, percentile};
use scale::http::{Client, serve, user};
use serde_json::{Value, json};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The bare service's one turn: the model, the tool body, the model again.
async fn bare_turn(State(model): State<Arc<RuleProvider>>, body: String) -> String {
    let v: Value = serde_json::from_str(&body).expect("a JSON body");
    let input = v["input"].as_str().expect("an input").to_owned();
    let tool = ToolDefinition {
        name: "lookup_item".into(),
        description: "Looks an item up.".into(),
        input_schema: json!({"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}),
    };
    let mut request = ChatRequest {
        system: "You are an assistant.".into(),
        messages: vec![ChatMessage::User { content: input }],
        tools: vec![tool],
        response_schema: None,
    };
    loop {
        let answer = model.chat(&request, &|_: &str| {}).await.expect("the scripted model answers");
        if answer.tool_calls.is_empty() {
            return json!({ "text": answer.content }).to_string();
        }
        let calls = answer.tool_calls.clone();
        request.messages.push(ChatMessage::Assistant { content: answer.content, tool_calls: answer.tool_calls });
        for call in calls {
            let args: Value = serde_json::from_str(&call.arguments).expect("JSON arguments");
            let content = look_up(args["name"].as_str().unwrap_or(""));
            request.messages.push(ChatMessage::Tool { call_id: call.id, name: call.name, content, is_error: false });
        }
    }
}

async fn bare() -> SocketAddr {
    serve(Router::new().route("/turn", post(bare_turn)).with_state(Arc::new(model()))).await
}

async fn service(sink: Arc<dyn AuditSink>, reader: Arc<dyn AuditReader>, store: Arc<dyn Store>) -> SocketAddr {
    let runtime = Runtime::builder(sink.clone(), Arc::new(model())).roles(roles()).store(store).build();
    let mut limits = ServiceLimits::default();
    limits.max_retained_runs = 1_000_000;
    let service = Service::builder(Arc::new(DevAuthenticator::enabled()), sink, reader)
        .agent::<Desk>(runtime)
        .limits(limits)
        .build();
    serve(service.router()).await
}

/// How a turn is taken.
#[derive(Clone, Copy, PartialEq)]
enum Way {
    /// The bare service's one `POST /turn`.
    Bare,
    /// `POST /v1/runs`, then the run's event stream.
    Streamed,
    /// `POST /v1/runs` with `Prefer: wait=20`: the answer in its response.
    Answered,
}

/// One turn of conversation `c`; its time.
async fn turn(client: &Client, base: SocketAddr, way: Way, c: usize) -> Duration {
    let t = Instant::now();
    let who = user(c);
    let session = if way == Way::Answered { format!("a-{c}") } else { format!("c-{c}") };
    let body = json!({"agent": AGENT, "input": "lookup the keyboard", "session_id": session}).to_string();
    if way == Way::Bare {
        let r = client.post(base, "/turn", &who, &body).await;
        assert_eq!(r.json()["text"], answer(1), "{}", r.body);
        return t.elapsed();
    }
    if way == Way::Answered {
        let prefer = [("prefer", "wait=20")];
        let r = client.send_with(base, "POST", "/v1/runs", Some(&who), Some(&body), &prefer).await;
        assert_eq!(r.status, 201, "{}", r.body);
        let v = r.json();
        assert_eq!((&v["status"], &v["text"]), (&json!("completed"), &json!(answer(1))), "{}", r.body);
        return t.elapsed();
    }
    let r = client.post(base, "/v1/runs", &who, &body).await;
    assert_eq!(r.status, 201, "{}", r.body);
    let run = r.json()["run_id"].as_str().expect("a run id").to_owned();
    let events = client.get(base, &format!("/v1/runs/{run}/events"), &who).await;
    assert!(events.body.contains(&answer(1)), "the run did not answer: {}", events.body);
    t.elapsed()
}

struct Figures {
    per_second: f64,
    p50: Duration,
    p99: Duration,
}

/// `conversations` at once, `turns` each, after one unmeasured turn each.
async fn measure(name: &str, base: SocketAddr, way: Way, conversations: usize, turns: usize) -> Figures {
    let client = Client::new();
    futures::stream::iter(0..conversations).for_each_concurrent(None, |c| turn(&client, base, way, c).map(drop)).await;
    let t = Instant::now();
    let conversation = |c| {
        let client = &client;
        async move {
            let mut times = Vec::with_capacity(turns);
            for _ in 0..turns {
                times.push(turn(client, base, way, c).await);
            }
            times
        }
    };
    let mut times: Vec<Duration> =
        futures::stream::iter(0..conversations).map(conversation).buffer_unordered(conversations).concat().await;
    let elapsed = t.elapsed();
    times.sort();
    let f = Figures {
        per_second: times.len() as f64 / elapsed.as_secs_f64(),
        p50: percentile(&times, 0.5),
        p99: percentile(&times, 0.99),
    };
    println!("  {name:<38} {:8.0} turns/s   p50 {:8.1} ms   p99 {:8.1} ms", f.per_second, ms(f.p50), ms(f.p99));
    f
}

fn ratio(name: &str, f: &Figures, base: &Figures) {
    println!(
        "  {name:<38} cost per turn {:5.2}x the bare service   p99 {:5.2}x   (target <= 1.5x)",
        base.per_second / f.per_second,
        f.p99.as_secs_f64() / base.p99.as_secs_f64()
    );
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let conversations: usize = arg("conversations", 1000);
    let turns: usize = arg("turns", 3);
    println!("{}, allocator: {ALLOCATOR}", machine());
    println!("{conversations} conversations at once, {turns} turns each (one read call and one answer a turn):");
    let base = measure("bare axum service", bare().await, Way::Bare, conversations, turns).await;
    // Both ways of one service: streamed first (`--answered-first`: the other order, to see
    // what the phase's place costs, e.g. a database that grew during the first).
    let answered_first = flag("answered-first");
    let both = |name: &'static str, at: SocketAddr| async move {
        let answered_name = format!("{name}, answered");
        if answered_first {
            let answered = measure(&answered_name, at, Way::Answered, conversations, turns).await;
            let streamed = measure(name, at, Way::Streamed, conversations, turns).await;
            return [(answered_name, answered), (name.to_owned(), streamed)];
        }
        let streamed = measure(name, at, Way::Streamed, conversations, turns).await;
        let answered = measure(&answered_name, at, Way::Answered, conversations, turns).await;
        [(name.to_owned(), streamed), (answered_name, answered)]
    };
    // The service with nothing durable: what the service, the gate and the journal cost
    // without the database's commits.
    let memory_sink = Arc::new(MemorySink::new());
    let at = service(memory_sink.clone(), memory_sink, Arc::new(MemoryStore::new())).await;
    let mut figures = vec![both("service, in memory", at).await];

    let dir = tempfile::tempdir().expect("a temporary directory");
    if !flag("no-sqlite") {
        let sqlite_sink = Arc::new(SqliteSink::open(dir.path().join("audit.db")).expect("the audit file opens"));
        let sqlite_store = SqliteStore::open(dir.path().join("state.db")).expect("the state file opens");
        let reader = Arc::new(SqliteReader::new(dir.path().join("audit.db")));
        let at = service(sqlite_sink, reader, Arc::new(sqlite_store)).await;
        figures.push(both("service, SQLite", at).await);
    }

    let _cluster = if flag("no-postgres") {
        None
    } else {
        let cluster = TempCluster::start().unwrap_or_else(|e| panic!("{e}"));
        let url = cluster.create_database("scale").await.expect("a database");
        let store: Arc<dyn Store> = Arc::new(PostgresStore::connect(&url, 16).await.expect("the database answers"));
        let sink: Arc<dyn AuditSink> = Arc::new(StoreAuditSink::new(store.clone(), "conversations"));
        // The bench reads no audit records back through the service; its reader is never asked.
        let at = service(sink, Arc::new(MemorySink::new()), store).await;
        figures.push(both("service, PostgreSQL", at).await);
        Some(cluster)
    };
    for (name, f) in figures.iter().flatten() {
        ratio(name, f, &base);
    }
}
