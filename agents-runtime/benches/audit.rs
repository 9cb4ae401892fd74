//! Durable audit throughput against bare writers that do only the I/O.
//!
//! - 16 concurrent producers: [`JsonlSink`] against a bare group-commit writer (a thread that
//!   drains a channel of ready-made lines, writes the batch, `fdatasync`s once, and answers each
//!   producer), both fed by 16 tokio tasks.
//! - 1 producer: [`JsonlSink`] against a bare loop that writes one ready-made line and
//!   `fdatasync`s it.
//!
//! One iteration is one record made durable. The baselines write lines of the same size but do
//! not seal, hash or serialize records (for both sides, records are built before timing). After
//! the criterion runs, the ratios (our throughput / baseline throughput) are measured in
//! interleaved rounds (ours, baseline, ours, ...), so a change in machine load or disk latency
//! during the run affects both sides alike, and printed. Run with
//! `cargo bench -p agents-runtime --bench audit`.

use agents_runtime::Tier;
use agents_runtime::audit::{AuditRecord, AuditSink, AuditStatus, GENESIS_HASH, JsonlSink};
use criterion::Criterion;
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
        run_id: format!("run-{}", i % 16).into(),
        session_id: "session-1".into(),
        request_id: format!("req-{i}").into(),
        call_id: Some(format!("call-{i}").into()),
        epoch: None,
        user_id: "u-ann".into(),
        org_id: "org-clinic".into(),
        role: "nurse".into(),
        agent: "clinic".into(),
        tool: Some("orders.place".into()),
        tier: Some(Tier::Action),
        status: AuditStatus::Proposed,
        reason: None,
        title: Some("Place an order".into()),
        args: Some(json!({"patient": format!("p-{i}"), "items": [{"sku": "a-1", "qty": 2}], "password": "•••"}).into()),
        args_hash: Some("ab".repeat(32)),
        result: None,
        import: None,
        manifest_sha256: "cd".repeat(32).into(),
        prev_hash: String::new(),
        hash: String::new(),
        node: None,
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

/// A ready-made line and the channel that says it is durable.
type BareRequest = (Arc<Vec<u8>>, oneshot::Sender<()>);

/// The bare group-commit writer: no sealing, no hashing, lines made in advance.
struct BareGroupCommit {
    sender: Option<mpsc::Sender<BareRequest>>,
    writer: Option<std::thread::JoinHandle<()>>,
}

impl BareGroupCommit {
    fn new(path: &Path) -> Self {
        let mut file = append_file(path);
        let (sender, receiver) = mpsc::channel::<BareRequest>();
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
    // Records are built before the clock starts: building them is the caller's work.
    let batches: Vec<Vec<AuditRecord>> =
        (0..PRODUCERS).map(|p| (0..per_producer).map(|i| record(p * 1_000_000 + i)).collect()).collect();
    let start = Instant::now();
    rt.block_on(async {
        let tasks: Vec<_> = batches
            .into_iter()
            .map(|records| {
                let sink = Arc::clone(sink);
                tokio::spawn(async move {
                    for record in records {
                        sink.append(record).await.unwrap();
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
    let records: Vec<AuditRecord> = (0..records).map(record).collect();
    let start = Instant::now();
    rt.block_on(async {
        for record in records {
            sink.append(record).await.unwrap();
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

/// Throughput ratios from paired rounds: each round times ours and the baseline back to back
/// (alternating which goes first), and the median of the per-round ratios is reported, so a
/// burst of load from other processes skews one round, not the result.
fn ratios(rounds: usize) {
    let mut setup = Setup::new();
    let per_producer = 50;
    let pairs: Vec<(Duration, Duration)> = (0..rounds)
        .map(|round| {
            let ours = |s: &mut Setup| sink_concurrent(&s.rt, &s.sink, per_producer);
            let bare = |s: &mut Setup| bare_concurrent(&s.rt, &s.bare, &s.line, per_producer);
            paired(&mut setup, round, ours, bare)
        })
        .collect();
    print_ratio("16 producers", "bare group commit", per_producer * PRODUCERS, &pairs, 0.8);

    let per_round = 50;
    let pairs: Vec<(Duration, Duration)> = (0..rounds)
        .map(|round| {
            let ours = |s: &mut Setup| sink_single(&s.rt, &s.sink, per_round);
            let bare = |s: &mut Setup| bare_single(&mut s.bare_file, &s.line, per_round);
            paired(&mut setup, round, ours, bare)
        })
        .collect();
    print_ratio("1 producer", "bare fdatasync per line", per_round, &pairs, 0.7);
}

fn paired(
    setup: &mut Setup,
    round: usize,
    ours: impl Fn(&mut Setup) -> Duration,
    bare: impl Fn(&mut Setup) -> Duration,
) -> (Duration, Duration) {
    if round.is_multiple_of(2) {
        let o = ours(setup);
        (o, bare(setup))
    } else {
        let b = bare(setup);
        (ours(setup), b)
    }
}

fn print_ratio(label: &str, baseline: &str, per_round: u64, pairs: &[(Duration, Duration)], target: f64) {
    let mut ratios: Vec<f64> = pairs.iter().map(|(ours, bare)| bare.as_secs_f64() / ours.as_secs_f64()).collect();
    ratios.sort_by(f64::total_cmp);
    let median = ratios[ratios.len() / 2];
    let records = per_round * pairs.len() as u64;
    let (ours, bare): (Duration, Duration) =
        pairs.iter().fold((Duration::ZERO, Duration::ZERO), |acc, p| (acc.0 + p.0, acc.1 + p.1));
    let rate = |d: Duration| records as f64 / d.as_secs_f64();
    println!(
        "{label}: JsonlSink {:.0} records/s, {baseline} {:.0} records/s ({} paired rounds of {per_round} records): \
         ratio median {median:.2}, range {:.2}..{:.2}, pooled {:.2} (target >= {target:.2})",
        rate(ours),
        rate(bare),
        pairs.len(),
        ratios[0],
        ratios[ratios.len() - 1],
        bare.as_secs_f64() / ours.as_secs_f64(),
    );
}

fn main() {
    let mut criterion = Criterion::default().configure_from_args();
    concurrent(&mut criterion);
    single(&mut criterion);
    criterion.final_summary();
    // `cargo bench` passes `--bench`; under `cargo test` (a debug build, each benchmark run
    // once as a smoke test) the ratios would mean nothing.
    if std::env::args().any(|a| a == "--bench") {
        println!();
        ratios(21);
    }
}
