//! A run that needs one approval, end to end over the service's HTTP API, on three state
//! stores: in memory (the baseline), SQLite (one node: state store and audit log in SQLite
//! files) and PostgreSQL (state store and hash-chained audit log in a throwaway cluster).
//!
//! Per run: `POST /v1/runs` → the proposal listed by `GET /v1/decisions` → `POST
//! /v1/decisions/{id}` (approve) → `GET /v1/runs/{id}` no longer `running`. Every request is
//! a new loopback connection, as a browser without keep-alive would make. Printed: the mean
//! round trip and, for the decision, p50/p99 of the time from sending `POST
//! /v1/decisions/{id}` to the `executed` record reaching the audit log, each against the
//! in-memory baseline of the same run.
//!
//! `cargo bench -p agents-service --bench service` (add `-- --no-postgres` to skip the
//! cluster).

#[path = "../tests/common/mod.rs"]
mod common;

use agents_runtime::Runtime;
use agents_runtime::audit::{AuditRecord, AuditSink, AuditStatus, MemorySink, SqliteSink};
use agents_runtime::store::{Store, StoreAuditSink};
use agents_service::{AuditReader, DevAuthenticator, Service, ServiceLimits, SqliteReader};
use common::{AGENT, Desk, alice, get, post, roles, test_model};
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const RUNS: usize = 120;
const WARMUP: usize = 10;

/// An audit sink that notes when each call's `executed` record became durable.
struct Timed {
    inner: Arc<dyn AuditSink>,
    executed: Arc<Mutex<HashMap<String, Instant>>>,
}

impl AuditSink for Timed {
    fn append(&self, record: AuditRecord) -> agents_runtime::audit::Appended<'_> {
        let executed = (record.status == AuditStatus::Executed).then(|| record.call_id.clone()).flatten();
        let inner = self.inner.append(record);
        let map = self.executed.clone();
        agents_runtime::audit::Appended::pending(async move {
            let r = inner.await;
            if let (Ok(_), Some(call)) = (&r, executed) {
                map.lock().unwrap().insert(call.to_string(), Instant::now());
            }
            r
        })
    }
}

struct Figures {
    round_trip_mean: Duration,
    decision_p50: Duration,
    decision_p99: Duration,
}

fn pct(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

async fn serve(sink: Arc<dyn AuditSink>, reader: Arc<dyn AuditReader>, store: Option<Arc<dyn Store>>) -> SocketAddr {
    let mut builder = Runtime::builder(sink.clone(), Arc::new(test_model())).roles(roles());
    if let Some(store) = store {
        builder = builder.store(store);
    }
    let runtime = builder.build();
    let service = Service::builder(Arc::new(DevAuthenticator::enabled()), sink, reader)
        .agent::<Desk>(runtime)
        .limits(ServiceLimits::default())
        .build();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let router = service.router();
    tokio::spawn(async move { agents_service::axum::serve(listener, router).await.unwrap() });
    addr
}

/// One run with one approved action; its round trip and decision latency.
async fn one(base: SocketAddr, executed: &Mutex<HashMap<String, Instant>>, i: usize) -> (Duration, Duration) {
    let who = alice();
    let started = Instant::now();
    let body = serde_json::json!({"agent": AGENT, "input": "submit a request", "session_id": format!("bench-{i}")});
    let r = post(base, "/v1/runs", &who, &body.to_string()).await;
    assert_eq!(r.status, 201, "{}", r.body);
    let run = r.json()["run_id"].as_str().unwrap().to_owned();
    let call = loop {
        let r = get(base, "/v1/decisions", &who).await;
        if let Some(c) = r.json()["decisions"][0]["call_id"].as_str() {
            break c.to_owned();
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    };
    let decided = Instant::now();
    let r = post(base, &format!("/v1/decisions/{call}"), &who, r#"{"verdict": "approve"}"#).await;
    assert_eq!(r.status, 200, "{}", r.body);
    loop {
        let v = get(base, &format!("/v1/runs/{run}"), &who).await.json();
        if v["status"] != "running" {
            assert_eq!(v["status"], "completed", "{v}");
            break;
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    let round_trip = started.elapsed();
    let at = loop {
        if let Some(at) = executed.lock().unwrap().get(&call).copied() {
            break at;
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    };
    (round_trip, at.saturating_duration_since(decided))
}

async fn measure(
    name: &str,
    sink: Arc<dyn AuditSink>,
    reader: Arc<dyn AuditReader>,
    store: Option<Arc<dyn Store>>,
) -> Figures {
    let executed = Arc::new(Mutex::new(HashMap::new()));
    let timed: Arc<dyn AuditSink> = Arc::new(Timed { inner: sink, executed: executed.clone() });
    let base = serve(timed, reader, store).await;
    for i in 0..WARMUP {
        one(base, &executed, 1_000_000 + i).await;
    }
    let (mut trips, mut decisions) = (Vec::new(), Vec::new());
    for i in 0..RUNS {
        let (t, d) = one(base, &executed, i).await;
        trips.push(t);
        decisions.push(d);
    }
    decisions.sort();
    let f = Figures {
        round_trip_mean: trips.iter().sum::<Duration>() / RUNS as u32,
        decision_p50: pct(&decisions, 0.5),
        decision_p99: pct(&decisions, 0.99),
    };
    println!(
        "  {name:<11} round trip {:8.2} ms   decision p50 {:7.2} ms   p99 {:7.2} ms",
        ms(f.round_trip_mean),
        ms(f.decision_p50),
        ms(f.decision_p99)
    );
    f
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn ratios(name: &str, f: &Figures, base: &Figures) {
    let r = |a: Duration, b: Duration| a.as_secs_f64() / b.as_secs_f64();
    println!(
        "  {name:<11} / memory: round trip {:5.2}x   decision p50 {:5.2}x   p99 {:5.2}x",
        r(f.round_trip_mean, base.round_trip_mean),
        r(f.decision_p50, base.decision_p50),
        r(f.decision_p99, base.decision_p99)
    );
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let skip_pg = std::env::args().any(|a| a == "--no-postgres");
    println!("a run with one approved action over the HTTP API, {RUNS} runs (after {WARMUP} warm-up):");
    let memory = Arc::new(MemorySink::new());
    let base = measure("memory", memory.clone(), memory, None).await;

    let dir = tempfile::tempdir().unwrap();
    let sqlite_sink = Arc::new(SqliteSink::open(dir.path().join("audit.db")).unwrap());
    let sqlite_store = agents_store::SqliteStore::open(dir.path().join("state.db")).unwrap();
    let sqlite = measure(
        "sqlite",
        sqlite_sink,
        Arc::new(SqliteReader::new(dir.path().join("audit.db"))),
        Some(Arc::new(sqlite_store)),
    )
    .await;

    let pg = if skip_pg {
        None
    } else {
        let cluster = agents_store::postgres::TempCluster::start().unwrap_or_else(|e| panic!("{e}"));
        let url = cluster.create_database("bench").await.unwrap();
        let store: Arc<dyn Store> = Arc::new(agents_store::PostgresStore::connect(&url, 16).await.unwrap());
        let sink: Arc<dyn AuditSink> = Arc::new(StoreAuditSink::new(store.clone(), "service-bench"));
        // The bench reads no audit records back; the reader is never asked.
        let f = measure("postgresql", sink, Arc::new(MemorySink::new()), Some(store)).await;
        Some((f, cluster))
    };
    ratios("sqlite", &sqlite, &base);
    if let Some((f, _cluster)) = &pg {
        ratios("postgresql", f, &base);
    }
}
