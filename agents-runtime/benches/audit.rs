//! Durable audit throughput against bare writers that do only the I/O.
//!
//! - 16 concurrent producers: [`JsonlSink`] against a bare group-commit writer (a thread that
//!   drains a channel of ready-made lines, writes the batch, `fdatasync`s once, and answers each
//!   producer), both fed by 16 tokio tasks.
//! - 1 producer: [`JsonlSink`] against a bare loop that writes one ready-made line and
//!   `fdatasync`s it.
//!
//! One iteration is one record made durable. The baselines write lines of the same size but do
//! not seal, hash or serialize. At the end the ratios (our throughput / baseline throughput)
//! are printed. Run with `cargo bench -p agents-runtime --bench audit`.

use agents_runtime::Tier;
use agents_runtime::audit::{AuditRecord, AuditSink, AuditStatus, GENESIS_HASH, JsonlSink};
use criterion::{Criterion, criterion_group};
use serde_json::json;
use std::collections::BTreeMap;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::Path;
use std::sync::{Arc, Mutex, mpsc};
use std::time::{Duration, Instant};
use tokio::sync::oneshot;

const PRODUCERS: u64 = 16;

/// Total records and time per benchmark, to print the ratios at the end.
static TOTALS: Mutex<BTreeMap<&'static str, (u64, Duration)>> = Mutex::new(BTreeMap::new());

fn account(name: &'static str, records: u64, elapsed: Duration) {
    let mut totals = TOTALS.lock().unwrap();
    let entry = totals.entry(name).or_default();
    entry.0 += records;
    entry.1 += elapsed;
}

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

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap()
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

fn concurrent(c: &mut Criterion) {
    let rt = runtime();
    let dir = tempfile::tempdir().unwrap();
    let mut group = c.benchmark_group("16 producers");
    group.sample_size(10).warm_up_time(Duration::from_secs(1)).measurement_time(Duration::from_secs(8));

    let sink = Arc::new(JsonlSink::open(dir.path().join("sink.jsonl")).unwrap());
    group.bench_function("JsonlSink", |b| {
        b.iter_custom(|iters| {
            let per_producer = iters.div_ceil(PRODUCERS);
            let start = Instant::now();
            rt.block_on(async {
                let tasks: Vec<_> = (0..PRODUCERS)
                    .map(|p| {
                        let sink = Arc::clone(&sink);
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
            let elapsed = start.elapsed();
            account("16 producers: JsonlSink", per_producer * PRODUCERS, elapsed);
            elapsed.mul_f64(iters as f64 / (per_producer * PRODUCERS) as f64)
        });
    });

    let bare = Arc::new(BareGroupCommit::new(&dir.path().join("bare.jsonl")));
    let line = Arc::new(sample_line());
    group.bench_function("bare group commit", |b| {
        b.iter_custom(|iters| {
            let per_producer = iters.div_ceil(PRODUCERS);
            let start = Instant::now();
            rt.block_on(async {
                let tasks: Vec<_> = (0..PRODUCERS)
                    .map(|_| {
                        let (bare, line) = (Arc::clone(&bare), Arc::clone(&line));
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
            let elapsed = start.elapsed();
            account("16 producers: bare group commit", per_producer * PRODUCERS, elapsed);
            elapsed.mul_f64(iters as f64 / (per_producer * PRODUCERS) as f64)
        });
    });
    group.finish();
}

fn single(c: &mut Criterion) {
    let rt = runtime();
    let dir = tempfile::tempdir().unwrap();
    let mut group = c.benchmark_group("1 producer");
    group.sample_size(10).warm_up_time(Duration::from_secs(1)).measurement_time(Duration::from_secs(8));

    let sink = JsonlSink::open(dir.path().join("sink.jsonl")).unwrap();
    group.bench_function("JsonlSink", |b| {
        b.iter_custom(|iters| {
            let start = Instant::now();
            rt.block_on(async {
                for i in 0..iters {
                    sink.append(record(i)).await.unwrap();
                }
            });
            let elapsed = start.elapsed();
            account("1 producer: JsonlSink", iters, elapsed);
            elapsed
        });
    });

    let mut file = append_file(&dir.path().join("bare.jsonl"));
    let line = sample_line();
    group.bench_function("bare fdatasync per line", |b| {
        b.iter_custom(|iters| {
            let start = Instant::now();
            for _ in 0..iters {
                file.write_all(&line).unwrap();
                file.sync_data().unwrap();
            }
            let elapsed = start.elapsed();
            account("1 producer: bare fdatasync per line", iters, elapsed);
            elapsed
        });
    });
    group.finish();
}

fn report() {
    let totals = TOTALS.lock().unwrap();
    let throughput = |name: &str| totals.get(name).map(|(records, elapsed)| *records as f64 / elapsed.as_secs_f64());
    println!();
    for (name, (records, elapsed)) in totals.iter() {
        println!(
            "{name}: {records} records in {elapsed:.2?} = {:.0} records/s",
            *records as f64 / elapsed.as_secs_f64()
        );
    }
    let pairs = [
        ("16 producers", "16 producers: JsonlSink", "16 producers: bare group commit", 0.8),
        ("1 producer", "1 producer: JsonlSink", "1 producer: bare fdatasync per line", 0.7),
    ];
    for (label, ours, baseline, target) in pairs {
        if let (Some(ours), Some(baseline)) = (throughput(ours), throughput(baseline)) {
            println!("ratio, {label}, JsonlSink / bare writer: {:.2} (target >= {target:.2})", ours / baseline);
        }
    }
}

criterion_group!(benches, concurrent, single);

fn main() {
    benches();
    Criterion::default().configure_from_args().final_summary();
    report();
}
