//! Durable audit throughput against bare writers that do only the I/O.
//!
//! - 16 concurrent producers: [`JsonlSink`] against a bare group-commit writer (a thread that
//!   drains a channel of ready-made lines, writes the batch, `fdatasync`s once, and answers each
//!   producer), both fed by 16 tokio tasks.
//! - 1 producer: [`JsonlSink`] against a bare loop that writes one ready-made line and
//!   `fdatasync`s it.
//!
//! One iteration is one record made durable. The baselines write lines of the same size but do
//! not build, seal, hash or serialize records. After the criterion runs, the ratios (our
//! throughput / baseline throughput) are measured in interleaved rounds (ours, baseline, ours,
//! ...), so a change in machine load or disk latency during the run affects both sides alike,
//! and printed. Run with `cargo bench -p agents-runtime --bench audit`.

use agents_runtime::Tier;
use agents_runtime::audit::{AuditRecord, AuditSink, AuditStatus, GENESIS_HASH, JsonlSink};
use criterion::{Criterion, criterion_group};
use serde_json::json;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::Path;
use std::sync::{Arc, mpsc};
use std::time::{Duration, Instant};
use tokio::sync::oneshot;

const PRODUCERS: u64 = 16;

fn record(i: u64) -> AuditRecord {
    AuditRecord {
        seq: 0,
        ts: "2026-01-01T00:00:00Z".to_owned(),
        run_id: format!("run-{}", i % 16),
        session_id: "session-1".to_owned(),
        request_id: format!("req-{i}"),
        call_id: Some(format!("call-{i}")),
        user_id: "u-ann".to_owned(),
        org_id: "org-clinic".to_owned(),
        role: "nurse".to_owned(),
        agent: "clinic".to_owned(),
        tool: Some("orders.place".to_owned()),
        tier: Some(Tier::Action),
        status: AuditStatus::Proposed,
        reason: None,
        title: Some("Place an order".to_owned()),
        args: Some(json!({"patient": format!("p-{i}"), "items": [{"sku": "a-1", "qty": 2}], "password": "•••"})),
        args_hash: Some("ab".repeat(32)),
        result: None,
        manifest_sha256: "cd".repeat(32),
        prev_hash: String::new(),
        hash: String::new(),
    }
}

/// A line of the size the sink writes, for the baselines.
fn sample_line() -> Vec<u8> {
    let mut r = record(123_456);
    r.seal(123_456, GENESIS_HASH);
    let mut line = r.to_line().into_bytes();
    line.push(b'\n');
    line
}

fn append_file(path: &Path) -> File {
    OpenOptions::new().create(true).append(true).open(path).unwrap()
}

/// The bare group-commit writer: no sealing, no hashing, lines made in advance.
struct BareGroupCommit {
    sender: Option<mpsc::Sender<(Arc<Vec<u8>>, oneshot::Sender<()>)>>,
    writer: Option<std::thread::JoinHandle<()>>,
}

impl BareGroupCommit {
    fn new(path: &Path) -> Self {
        let mut file = append_file(path);
        let (sender, receiver) = mpsc::channel::<(Arc<Vec<u8>>, oneshot::Sender<()>)>();
        let writer = std::thread::spawn(move || {
            let mut buffer = Vec::new();
            let mut replies = Vec::new();
            while let Ok((line, reply)) = receiver.recv() {
                buffer.clear();
                buffer.extend_from_slice(&line);
                replies.push(reply);
                while let Ok((line, reply)) = receiver.try_recv() {
                    buffer.extend_from_slice(&line);
                    replies.push(reply);
                }
                file.write_all(&buffer).unwrap();
                file.sync_data().unwrap();
                for reply in replies.drain(..) {
                    let _ = reply.send(());
                }
            }
        });
        BareGroupCommit { sender: Some(sender), writer: Some(writer) }
    }

    async fn append(&self, line: Arc<Vec<u8>>) {
        let (reply, done) = oneshot::channel();
        self.sender.as_ref().unwrap().send((line, reply)).unwrap();
        done.await.unwrap();
    }
}

impl Drop for BareGroupCommit {
    fn drop(&mut self) {
        drop(self.sender.take());
        self.writer.take().unwrap().join().unwrap();
    }
}

/// Appends `per_producer` records from each of 16 tasks through the sink.
fn sink_concurrent(rt: &tokio::runtime::Runtime, sink: &Arc<JsonlSink>, per_producer: u64) -> Duration {
    let start = Instant::now();
    rt.block_on(async {
        let tasks: Vec<_> = (0..PRODUCERS)
            .map(|p| {
                let sink = Arc::clone(sink);
                tokio::spawn(async move {
                    for i in 0..per_producer {
                        sink.append(record(p * 1_000_000 + i)).await.unwrap();
                    }
                })
            })
            .collect();
        for task in tasks {
            task.await.unwrap();
        }
    });
    start.elapsed()
}

/// Appends `per_producer` ready-made lines from each of 16 tasks through the bare writer.
fn bare_concurrent(
    rt: &tokio::runtime::Runtime,
    bare: &Arc<BareGroupCommit>,
    line: &Arc<Vec<u8>>,
    per_producer: u64,
) -> Duration {
    let start = Instant::now();
    rt.block_on(async {
        let tasks: Vec<_> = (0..PRODUCERS)
            .map(|_| {
                let (bare, line) = (Arc::clone(bare), Arc::clone(line));
                tokio::spawn(async move {
                    for _ in 0..per_producer {
                        bare.append(Arc::clone(&line)).await;
                    }
                })
            })
            .collect();
        for task in tasks {
            task.await.unwrap();
        }
    });
    start.elapsed()
}

fn sink_single(rt: &tokio::runtime::Runtime, sink: &JsonlSink, records: u64) -> Duration {
    let start = Instant::now();
    rt.block_on(async {
        for i in 0..records {
            sink.append(record(i)).await.unwrap();
        }
    });
    start.elapsed()
}

fn bare_single(file: &mut File, line: &[u8], records: u64) -> Duration {
    let start = Instant::now();
    for _ in 0..records {
        file.write_all(line).unwrap();
        file.sync_data().unwrap();
    }
    start.elapsed()
}

/// Everything one comparison needs, opened once in a temporary directory.
struct Setup {
    rt: tokio::runtime::Runtime,
    _dir: tempfile::TempDir,
    sink: Arc<JsonlSink>,
    bare: Arc<BareGroupCommit>,
    bare_file: File,
    line: Arc<Vec<u8>>,
}

impl Setup {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        Setup {
            rt: tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap(),
            sink: Arc::new(JsonlSink::open(dir.path().join("sink.jsonl")).unwrap()),
            bare: Arc::new(BareGroupCommit::new(&dir.path().join("bare-group.jsonl"))),
            bare_file: append_file(&dir.path().join("bare-line.jsonl")),
            line: Arc::new(sample_line()),
            _dir: dir,
        }
    }
}

/// Scales a run of `done` records to the `iters` criterion asked for.
fn scaled(elapsed: Duration, iters: u64, done: u64) -> Duration {
    elapsed.mul_f64(iters as f64 / done as f64)
}

fn concurrent(c: &mut Criterion) {
    let setup = Setup::new();
    let mut group = c.benchmark_group("16 producers");
    group.sample_size(10).warm_up_time(Duration::from_secs(1)).measurement_time(Duration::from_secs(6));
    group.bench_function("JsonlSink", |b| {
        b.iter_custom(|iters| {
            let per_producer = iters.div_ceil(PRODUCERS);
            scaled(sink_concurrent(&setup.rt, &setup.sink, per_producer), iters, per_producer * PRODUCERS)
        });
    });
    group.bench_function("bare group commit", |b| {
        b.iter_custom(|iters| {
            let per_producer = iters.div_ceil(PRODUCERS);
            scaled(bare_concurrent(&setup.rt, &setup.bare, &setup.line, per_producer), iters, per_producer * PRODUCERS)
        });
    });
    group.finish();
}

fn single(c: &mut Criterion) {
    let mut setup = Setup::new();
    let mut group = c.benchmark_group("1 producer");
    group.sample_size(10).warm_up_time(Duration::from_secs(1)).measurement_time(Duration::from_secs(6));
    group.bench_function("JsonlSink", |b| b.iter_custom(|iters| sink_single(&setup.rt, &setup.sink, iters)));
    let line = Arc::clone(&setup.line);
    group.bench_function("bare fdatasync per line", |b| {
        b.iter_custom(|iters| bare_single(&mut setup.bare_file, &line, iters));
    });
    group.finish();
}

/// Throughput ratios from interleaved rounds.
fn ratios(rounds: u32) {
    let mut setup = Setup::new();
    let (mut ours, mut bare) = (Duration::ZERO, Duration::ZERO);
    let per_producer = 100;
    for _ in 0..rounds {
        ours += sink_concurrent(&setup.rt, &setup.sink, per_producer);
        bare += bare_concurrent(&setup.rt, &setup.bare, &setup.line, per_producer);
    }
    let records = u64::from(rounds) * per_producer * PRODUCERS;
    print_ratio("16 producers", "bare group commit", records, ours, bare, 0.8);

    let (mut ours, mut bare) = (Duration::ZERO, Duration::ZERO);
    let per_round = 200;
    for _ in 0..rounds {
        ours += sink_single(&setup.rt, &setup.sink, per_round);
        bare += bare_single(&mut setup.bare_file, &setup.line, per_round);
    }
    print_ratio("1 producer", "bare fdatasync per line", u64::from(rounds) * per_round, ours, bare, 0.7);
}

fn print_ratio(label: &str, baseline: &str, records: u64, ours: Duration, bare: Duration, target: f64) {
    let rate = |d: Duration| records as f64 / d.as_secs_f64();
    println!(
        "{label}: JsonlSink {:.0} records/s, {baseline} {:.0} records/s ({records} records each, interleaved): \
         ratio {:.2} (target >= {target:.2})",
        rate(ours),
        rate(bare),
        bare.as_secs_f64() / ours.as_secs_f64()
    );
}

criterion_group!(benches, concurrent, single);

fn main() {
    benches();
    Criterion::default().configure_from_args().final_summary();
    // `cargo test --benches` runs each benchmark once as a smoke test; the ratios need real runs.
    if !std::env::args().any(|a| a == "--test") {
        println!();
        ratios(5);
    }
}
