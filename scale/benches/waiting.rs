//! Runs waiting for a person's decision, held by one service node on PostgreSQL, decided at a
//! second node.
//!
//! Two service nodes (two `Runtime`s and two service `Router`s, each with its own connection
//! pool, one server key) share one PostgreSQL database of a throwaway cluster, in this one
//! process, each on its own loopback port. `--runs` runs (10,000) are started at node A over
//! HTTP, one user each (a user may hold three runs at once), each proposing an action and
//! waiting. Printed:
//!
//! - the resident set of the process before the runs and once all of them wait, and its
//!   growth per waiting run (everything the process holds for one: the run's task and
//!   context, its event journal in the service, its proposal in the live book, the client's
//!   side of the finished request);
//! - the heap the allocator counts as held per waiting run then, and again after `--idle-secs`
//!   (by then no start is still storing its proposal: what waiting alone holds);
//! - the database transactions per second the waiting runs cost while nobody decides
//!   (`pg_stat_database.xact_commit` over `--idle-secs`, 5);
//! - for 2 × `--decide` of them (10 each; runs spread over the start order, each decision
//!   sent at a spread moment of the poll period), one after the other: the decision sent to node B (`POST
//!   /v1/decisions/{id}`, as the run's person, who first lists it at B) to the action's
//!   `executed` record durable (written by node A, whose waiting run hears of the decision
//!   through the store: its notification, or node A's lookup of all its waiting calls),
//!   p50/p99/max, against the same decision sent to node A itself (the baseline: the waiting
//!   run hears it at once), alternating; each node looks up its waiting calls' decisions in
//!   one query every `--poll-ms` (the runtime's default, 500).
//!
//! `--exit-while-waiting`: the process exits once the waiting runs' figures are printed,
//! freeing nothing and deciding nothing; run under `heaptrack`, its leak report lists what the
//! waiting runs hold by allocation site.
//!
//! `--direct`: the runs are started on node A's runtime itself (`Runtime::start`, their
//! handles kept), not through the service, to split the service's share of a waiting run
//! from the runtime's.
//!
//! The runs are started 1,000 at a time (32 requests in flight), with a line of progress
//! after each thousand; when `--start-secs` (150) are spent, no more are started and the
//! figures are those of the runs waiting then (the bench says so).
//!
//! `cargo bench -p scale --bench waiting` (`-- --runs=2000` for a shorter run).

use agents_runtime::Runtime;
use agents_runtime::audit::{AuditSink, MemorySink};
use agents_runtime::store::{Store, StoreAuditSink};
use agents_runtime::{Principal, RunHandle};
use agents_service::{DevAuthenticator, Service, ServiceLimits};
use agents_store::PostgresStore;
use agents_store::postgres::TempCluster;
use futures::StreamExt;
use scale::desk::{AGENT, Desk, ORG, ROLE, model, roles};
use scale::figures::{arg, flag, machine, ms, percentile, rss_bytes};
use scale::http::{Client, serve, user};
use scale::timed::{Seen, Timed};
use stats_alloc::{INSTRUMENTED_SYSTEM, Region, StatsAlloc};
use std::alloc::System;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

const SERVER_KEY: [u8; 32] = [42; 32];

/// How long a decision may take to be carried out before the bench stops waiting for it.
const GIVE_UP: Duration = Duration::from_secs(60);

/// Runs started between two progress lines.
const STEP: usize = 1000;

#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

/// One node: a runtime on its own pool of the shared database, behind the service's router;
/// its address and its runtime.
async fn node(url: &str, stream: &str, seen: &Arc<Seen>, poll: Duration) -> (SocketAddr, Runtime) {
    let store: Arc<dyn Store> = Arc::new(PostgresStore::connect(url, 16).await.expect("the database answers"));
    let sink: Arc<dyn AuditSink> =
        Arc::new(Timed::new(Arc::new(StoreAuditSink::new(store.clone(), stream)), seen.clone()));
    let runtime = Runtime::builder(sink.clone(), Arc::new(model()))
        .roles(roles())
        .store(store)
        .server_key(SERVER_KEY)
        .decision_poll(poll)
        .build();
    let mut limits = ServiceLimits::default();
    limits.max_retained_runs = 1_000_000;
    // The bench reads no audit records back through the service; its reader is never asked.
    let service = Service::builder(Arc::new(DevAuthenticator::enabled()), sink, Arc::new(MemorySink::new()))
        .agent::<Desk>(runtime.clone())
        .limits(limits)
        .build();
    (serve(service.router()).await, runtime)
}

/// Starts a waiting run for user `i` on `runtime` itself, without the service; its handle.
fn start_direct(runtime: &Runtime, i: usize) -> RunHandle<String> {
    let who = Principal::new(format!("u{i}"), ORG, ROLE);
    runtime.start::<Desk>(who, &format!("w-{i}"), "submit a request".into()).expect("the run starts")
}

/// Starts a waiting run for user `i` at `a`.
async fn start(client: &Client, a: SocketAddr, i: usize) {
    let body = serde_json::json!({"agent": AGENT, "input": "submit a request", "session_id": format!("w-{i}")});
    let r = client.post(a, "/v1/runs", &user(i), &body.to_string()).await;
    assert_eq!(r.status, 201, "{}", r.body);
}

/// Database transactions committed so far.
async fn commits(db: &tokio_postgres::Client) -> i64 {
    let row = db
        .query_one("SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()", &[])
        .await
        .expect("the statistics view answers");
    row.get(0)
}

/// User `i` lists their decision at `b`, approves it there; the time from sending the
/// decision to the `executed` record, or `None` when there is none after [`GIVE_UP`].
async fn decide(client: &Client, b: SocketAddr, seen: &Seen, i: usize) -> Option<Duration> {
    let who = user(i);
    let call = loop {
        let r = client.get(b, "/v1/decisions", &who).await;
        if let Some(c) = r.json()["decisions"][0]["call_id"].as_str() {
            break c.to_owned();
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    };
    let sent = Instant::now();
    let r = client.post(b, &format!("/v1/decisions/{call}"), &who, r#"{"verdict": "approve"}"#).await;
    assert_eq!(r.status, 200, "{}", r.body);
    while sent.elapsed() < GIVE_UP {
        if let Some(at) = seen.executed_at(&call) {
            return Some(at.saturating_duration_since(sent));
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    None
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let runs: usize = arg("runs", 10_000);
    let decisions: usize = arg("decide", 10).min(runs / 2);
    let poll = Duration::from_millis(arg("poll-ms", 500));
    let idle = Duration::from_secs(arg("idle-secs", 5));
    let budget = Duration::from_secs(arg("start-secs", 150));
    println!("{}", machine());
    let cluster = TempCluster::start().unwrap_or_else(|e| panic!("{e}"));
    let url = cluster.create_database("scale").await.expect("a database");
    let (db, connection) = tokio_postgres::connect(&url, tokio_postgres::NoTls).await.expect("a connection");
    tokio::spawn(connection);
    let seen = Arc::new(Seen::default());
    let (a, runtime_a) = node(&url, "node-a", &seen, poll).await;
    let (b, _runtime_b) = node(&url, "node-b", &seen, poll).await;
    let direct = flag("direct");
    let mut handles = Vec::new();
    let client = Client::new();
    println!("{runs} runs to wait for a decision on node A (PostgreSQL), decision poll {} ms:", poll.as_millis());
    // Warm both nodes: one run waits, is decided at B and carried out at A.
    start(&client, a, runs).await;
    decide(&client, b, &seen, runs).await.expect("the warm-up decision is carried out");

    let before = rss_bytes();
    let heap = Region::new(GLOBAL);
    let t = Instant::now();
    let mut runs_waiting = 0;
    while runs_waiting < runs {
        if t.elapsed() > budget {
            println!("  start budget ({} s) spent: measuring the {runs_waiting} runs waiting", budget.as_secs());
            break;
        }
        let batch = runs_waiting..(runs_waiting + STEP).min(runs);
        if direct {
            handles.extend(batch.clone().map(|i| start_direct(&runtime_a, i)));
        } else {
            futures::stream::iter(batch.clone()).for_each_concurrent(32, |i| start(&client, a, i)).await;
        }
        while seen.proposed() < batch.end + 1 {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        runs_waiting = batch.end;
        println!(
            "  {runs_waiting:>6} waiting after {:6.1} s, resident set {:7.1} MB",
            t.elapsed().as_secs_f64(),
            rss_bytes() as f64 / 1e6
        );
    }
    let runs = runs_waiting;
    let started = t.elapsed();
    let held = rss_bytes();
    let change = heap.change();
    let heap_held = change.bytes_allocated as f64 - change.bytes_deallocated as f64 + change.bytes_reallocated as f64;
    let c0 = commits(&db).await;
    tokio::time::sleep(idle).await;
    let per_second = (commits(&db).await - c0) as f64 / idle.as_secs_f64();
    // Again once the runs have waited `idle`: by then no start is still in flight (a run whose
    // `proposed` record is written may still be storing its proposal when the first count is
    // taken), so this is what waiting alone holds.
    let settled = heap.change();
    let heap_settled =
        settled.bytes_allocated as f64 - settled.bytes_deallocated as f64 + settled.bytes_reallocated as f64;

    let grown = held.saturating_sub(before);
    println!(
        "  started and waiting in     {:8.1} s ({:.0} runs/s)",
        started.as_secs_f64(),
        runs as f64 / started.as_secs_f64()
    );
    println!(
        "  resident set               {:8.1} MB before, {:.1} MB waiting: {:.1} KB per waiting run (target: at most 1 GB in all, under 200 MB)",
        before as f64 / 1e6,
        held as f64 / 1e6,
        grown as f64 / runs as f64 / 1e3
    );
    println!(
        "  heap held                  {:8.1} KB per waiting run (counted by the allocator)",
        heap_held / runs as f64 / 1e3
    );
    println!(
        "  heap held after {:>2} s idle   {:8.1} KB per waiting run; resident set {:.1} MB",
        idle.as_secs(),
        heap_settled / runs as f64 / 1e3,
        rss_bytes() as f64 / 1e6
    );
    println!(
        "  database while waiting     {per_second:8.0} transactions/s ({:.2} per waiting run a second)",
        per_second / runs as f64
    );
    if flag("exit-while-waiting") {
        // Nothing is freed: under `heaptrack`, what the process still holds at its exit (the
        // leak report) is what the waiting runs hold, allocation site by site. The throwaway
        // cluster is stopped first (its drop), or its server would outlive the process.
        drop(cluster);
        std::process::exit(0);
    }
    // The baseline: decisions at node A itself, where the waiting run hears them at once.
    let mut here = Vec::with_capacity(decisions);
    let mut there = Vec::with_capacity(decisions);
    let shown = |d: Option<Duration>| {
        d.map_or_else(|| format!("none after {} s", GIVE_UP.as_secs()), |d| format!("{:.1} ms", ms(d)))
    };
    // Runs spread over the start order, each decision sent at a spread moment of the poll
    // period, so that the decisions do not fall in step with the polls.
    let spread = (runs / (2 * decisions)).max(1);
    let offset = |i: usize| Duration::from_millis((i as u64 * 7919) % poll.as_millis().max(1) as u64);
    for i in 0..decisions {
        tokio::time::sleep(offset(2 * i)).await;
        let at_b = decide(&client, b, &seen, 2 * i * spread).await;
        tokio::time::sleep(offset(2 * i + 1)).await;
        let at_a = decide(&client, a, &seen, (2 * i + 1) * spread).await;
        println!("    decision {:>3}: at node B {:>16}, at node A {:>16}", i + 1, shown(at_b), shown(at_a));
        if at_b.is_none() || at_a.is_none() {
            println!(
                "  a decision was not carried out within {} s: the node is overloaded; no percentiles",
                GIVE_UP.as_secs()
            );
            return;
        }
        there.extend(at_b);
        here.extend(at_a);
    }
    here.sort();
    there.sort();
    let line = |name: &str, t: &[Duration]| {
        println!(
            "  {name:<38} p50 {:7.1} ms  p99 {:7.1} ms  max {:7.1} ms",
            ms(percentile(t, 0.5)),
            ms(percentile(t, 0.99)),
            ms(percentile(t, 1.0))
        )
    };
    println!("  decision sent -> `executed` durable, {decisions} decisions each, alternating:");
    line("decided at node A (baseline)", &here);
    line("decided at node B", &there);
    println!(
        "  node B / node A: p50 {:.1}x  p99 {:.1}x   (target: p99 at node B <= 50 ms)",
        percentile(&there, 0.5).as_secs_f64() / percentile(&here, 0.5).as_secs_f64(),
        percentile(&there, 0.99).as_secs_f64() / percentile(&here, 0.99).as_secs_f64()
    );
}
