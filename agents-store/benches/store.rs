//! Round trips of the durable stores and the audit chain's throughput, in one run:
//!
//! - confirmation token mint + redeem, and run slot acquire + release, on SQLite and on
//!   PostgreSQL (sequential: each figure is one caller's latency);
//! - one conversational turn's cost on the store: the session loaded when the turn starts and
//!   saved over the revision read when it ends, for a short and a long replayed history, on
//!   the in-memory store, SQLite and PostgreSQL (p50 and p99 per turn, one caller, and each
//!   against the in-memory store);
//! - audit appends per second on PostgreSQL with one producer, then 16, through the chained,
//!   group-committed sink, against a bare batched `INSERT` of the same records (same
//!   producers, same batching, no chain, no lock) on the same server, in rounds that alternate
//!   the two; and the chain with the 16 producers split over two nodes (two pools) contending
//!   for the stream's lock. The records are read calls' (a `proposed` record, then its
//!   `executed` one), and each round ends by asking each sink what its stream owes, as a
//!   node's resumption does, inside the time measured. The machine's load is printed: a
//!   commit waits for the disk;
//! - the time to read a stream's debts once after 100,000 records were appended (on
//!   PostgreSQL the debts are derived from the records then).
//!
//! `cargo bench -p agents-store --bench store` (PostgreSQL from Debian's `postgresql`
//! package: the bench starts a throwaway cluster).

use agents_runtime::Tier;
use agents_runtime::audit::{Appended, AuditError, AuditRecord, AuditSink, AuditStatus};
use agents_runtime::store::{MemoryStore, SessionRecord, SessionSaved, SlotOwner, Store, StoreAuditSink, TokenGrant};
use agents_store::postgres::TempCluster;
use agents_store::testing::sample_record;
use agents_store::{PostgresStore, SqliteStore};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::{mpsc, oneshot};

const ROUND_TRIPS: usize = 2000;
const PRODUCERS: usize = 16;
const PER_PRODUCER: usize = 1000;
/// The records appended before a stream's debts are first read, for the accounting's figure.
const ACCOUNTED: usize = 100_000;

async fn round_trips(name: &str, store: &dyn Store) {
    let ttl = Duration::from_secs(600);
    let t = Instant::now();
    for i in 0..ROUND_TRIPS {
        let grant = TokenGrant {
            id: format!("{name}-{i:08}"),
            session_id: "s".into(),
            tool: "submit_leave".into(),
            args_mac: "m".into(),
        };
        store.mint_token(&grant, ttl).await.unwrap();
        store.redeem_token(&grant.id).await.unwrap();
    }
    let tokens = t.elapsed();
    let owner = SlotOwner { org_id: "org".into(), user_id: format!("{name}-user") };
    let t = Instant::now();
    for _ in 0..ROUND_TRIPS {
        let slot = store.acquire_slot(&owner, 3, ttl).await.unwrap().unwrap();
        store.release_slot(&slot).await.unwrap();
    }
    let slots = t.elapsed();
    let per = |d: Duration| d.as_secs_f64() * 1e6 / ROUND_TRIPS as f64;
    println!(
        "{name:>10}: token mint+redeem {:8.1} us   slot acquire+release {:8.1} us   ({ROUND_TRIPS} each, one caller)",
        per(tokens),
        per(slots)
    );
}

/// Turns measured per session, after [`WARM_TURNS`] unmeasured ones.
const TURNS: usize = 400;
const WARM_TURNS: usize = 20;
/// The replayed histories measured: a session just begun, and a long one (what a session keeps
/// at `history_messages` 50: four times the replayed count).
const HISTORIES: [usize; 2] = [4, 200];

/// A message of about 240 bytes, as a turn's input or answer.
fn message(role: &str, turn: usize, i: usize) -> serde_json::Value {
    let text = format!(
        "{role} message {i} of turn {turn}: I would like to take the second week of March off, from Monday to \
         Friday, and I have checked with my team that the release planned for that week is covered by someone else."
    );
    serde_json::json!([role, text])
}

/// p50 and p99 of one turn's load + save of a session whose history holds `messages` messages
/// (each turn adds its input and answer and drops the two oldest, so the size stays).
async fn session_turns(name: &str, store: &dyn Store, messages: usize) -> (Duration, Duration, usize) {
    let idle = Duration::from_secs(1800);
    let history: Vec<_> = (0..messages).map(|i| message(if i % 2 == 0 { "user" } else { "assistant" }, 0, i)).collect();
    let digest: Vec<_> =
        (0..8).map(|i| serde_json::json!(["submit_leave", format!("{{\"submitted\":{i},\"days\":5}}")])).collect();
    let first = SessionRecord {
        session_id: format!("bench-{name}-{messages}"),
        org_id: "org-hr".into(),
        user_id: "ann".into(),
        role: "employee".into(),
        history: serde_json::Value::Array(history),
        digest: serde_json::Value::Array(digest),
        pending: serde_json::Value::Null,
        version: 0,
    };
    let bytes = first.history.to_string().len() + first.digest.to_string().len();
    assert!(matches!(store.save_session(&first, idle).await.unwrap(), SessionSaved::Stored { .. }));
    let mut times = Vec::with_capacity(TURNS);
    for turn in 1..=WARM_TURNS + TURNS {
        let t = Instant::now();
        let mut session = store.load_session(&first.session_id, idle).await.unwrap().expect("the session is held");
        if let serde_json::Value::Array(history) = &mut session.history {
            history.drain(..2);
            history.push(message("user", turn, 0));
            history.push(message("assistant", turn, 1));
        }
        let saved = store.save_session(&session, idle).await.unwrap();
        assert!(matches!(saved, SessionSaved::Stored { .. }), "{saved:?}");
        if turn > WARM_TURNS {
            times.push(t.elapsed());
        }
    }
    times.sort();
    (times[TURNS / 2], times[TURNS * 99 / 100], bytes)
}

async fn session_costs(stores: &[(&str, &dyn Store)]) {
    println!("session turn: load + save over the revision read, {TURNS} turns each, one caller:");
    let us = |d: Duration| d.as_secs_f64() * 1e6;
    for messages in HISTORIES {
        let mut base = None;
        for (name, store) in stores {
            let (p50, p99, bytes) = session_turns(name, *store, messages).await;
            let (b50, b99) = *base.get_or_insert((p50, p99));
            println!(
                "  {messages:>3} messages ({:>3} KB)  {name:>10}: p50 {:9.1} us  p99 {:9.1} us   {:7.1}x / {:7.1}x memory",
                bytes / 1024,
                us(p50),
                us(p99),
                us(p50) / us(b50),
                us(p99) / us(b99)
            );
        }
    }
}

/// The baseline: the same batching as `StoreAuditSink`, one multi-row `INSERT` per batch in
/// its own (autocommit) transaction, into a table with no chain and no lock.
struct BareSink {
    sender: mpsc::UnboundedSender<(AuditRecord, oneshot::Sender<()>)>,
}

impl BareSink {
    async fn new(url: &str) -> Self {
        let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls).await.unwrap();
        tokio::spawn(connection);
        client
            .batch_execute(
                "CREATE TABLE bare_audit (id BIGSERIAL PRIMARY KEY, stream TEXT NOT NULL, line TEXT NOT NULL)",
            )
            .await
            .unwrap();
        let insert =
            client.prepare("INSERT INTO bare_audit (stream, line) SELECT $1, * FROM unnest($2::TEXT[])").await.unwrap();
        let (sender, mut receiver) = mpsc::unbounded_channel::<(AuditRecord, oneshot::Sender<()>)>();
        tokio::spawn(async move {
            let mut batch = Vec::new();
            while receiver.recv_many(&mut batch, agents_runtime::store::STORE_MAX_BATCH).await > 0 {
                let (records, replies): (Vec<_>, Vec<_>) = batch.drain(..).unzip();
                let lines: Vec<String> = records.iter().map(AuditRecord::to_line).collect();
                client.execute(&insert, &[&"bare", &lines]).await.unwrap();
                for reply in replies {
                    let _ = reply.send(());
                }
            }
        });
        BareSink { sender }
    }
}

impl AuditSink for BareSink {
    fn append(&self, record: AuditRecord) -> Appended<'_> {
        let (reply, answer) = oneshot::channel();
        self.sender.send((record, reply)).unwrap();
        Appended::pending(async move {
            answer.await.map_err(|_| AuditError::Refused("stopped".into()))?;
            Ok(sample_record(0, "bare"))
        })
    }
}

/// Record `n` of the bench: the records of read calls, two each, as a run writes them: an even
/// `n` the `proposed` record of call `n / 2`, an odd one its `executed` record (same run).
fn read_call_record(n: usize, node: &str) -> AuditRecord {
    let status = if n.is_multiple_of(2) { AuditStatus::Proposed } else { AuditStatus::Executed };
    AuditRecord { tier: Some(Tier::Read), status, ts: sample_record(n, node).ts, ..sample_record(n / 2, node) }
}

/// Records per second that `producers` tasks append, `per_producer` records each (numbered
/// from `first` on; see [`read_call_record`]), each waiting for its record to be durable
/// before the next, spread over `sinks`; then each sink is asked what its stream owes, as a
/// node's resumption does (the chained sink accounts for the records' debts then), inside the
/// time measured.
async fn appends_per_second(sinks: &[Arc<dyn AuditSink>], producers: usize, per_producer: usize, first: usize) -> f64 {
    let t = Instant::now();
    let tasks: Vec<_> = (0..producers)
        .map(|p| {
            let sink = sinks[p % sinks.len()].clone();
            tokio::spawn(async move {
                for i in 0..per_producer {
                    sink.append(read_call_record(first + p * PER_PRODUCER + i, "bench")).await.unwrap();
                }
            })
        })
        .collect();
    for task in tasks {
        task.await.unwrap();
    }
    for sink in sinks {
        sink.owed_finals(Duration::from_secs(900), 100).await.unwrap();
    }
    (producers * per_producer) as f64 / t.elapsed().as_secs_f64()
}

/// Rounds that alternate the baseline and the measured path, so a change of the machine's
/// load (a commit waits for a disk other work shares) reaches both alike.
const ROUNDS: usize = 5;

/// The baseline's and the measured path's records per second, `producers` tasks appending
/// [`PER_PRODUCER`] records each, over [`ROUNDS`] rounds that alternate the two (which goes
/// first alternates too); and the median of the rounds' ratios.
async fn interleaved(base: &[Arc<dyn AuditSink>], path: &[Arc<dyn AuditSink>], producers: usize) -> (f64, f64, f64) {
    let per_round = PER_PRODUCER / ROUNDS;
    let (mut base_time, mut path_time, mut ratios) = (0.0, 0.0, Vec::with_capacity(ROUNDS));
    for round in 0..ROUNDS {
        let first = round * per_round;
        let (b, p) = if round % 2 == 0 {
            let b = appends_per_second(base, producers, per_round, first).await;
            (b, appends_per_second(path, producers, per_round, first).await)
        } else {
            let p = appends_per_second(path, producers, per_round, first).await;
            (appends_per_second(base, producers, per_round, first).await, p)
        };
        base_time += 1.0 / b;
        path_time += 1.0 / p;
        ratios.push(p / b);
    }
    ratios.sort_by(f64::total_cmp);
    (ROUNDS as f64 / base_time, ROUNDS as f64 / path_time, ratios[ROUNDS / 2])
}

/// WAL bytes per record the server writes while `producers` tasks append `per_producer`
/// records each through `sink` (its WAL insert position before and after; nothing else writes
/// meanwhile, though a checkpoint's full-page images may fall in either run).
async fn wal_per_record(url: &str, sink: &Arc<dyn AuditSink>, producers: usize, per_producer: usize) -> f64 {
    let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls).await.unwrap();
    tokio::spawn(connection);
    let start: String = client.query_one("SELECT pg_current_wal_insert_lsn()::TEXT", &[]).await.unwrap().get(0);
    appends_per_second(std::slice::from_ref(sink), producers, per_producer, 0).await;
    let bytes: f64 = client
        .query_one("SELECT pg_wal_lsn_diff(pg_current_wal_insert_lsn(), $1::TEXT::pg_lsn)::FLOAT8", &[&start])
        .await
        .unwrap()
        .get(0);
    bytes / (producers * per_producer) as f64
}

/// The machine's load averages (`/proc/loadavg`), which the figures depend on: a commit
/// waits for the disk, which other work shares.
fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "unknown".to_owned())
}

/// Set (to anything) to measure with `synchronous_commit` off on both paths: what a batch
/// costs besides its wait for the disk, which a busy disk hides. Not the durable figures.
const UNAWAITED: &str = "STORE_BENCH_UNAWAITED_COMMITS";

/// Whether [`UNAWAITED`] is set; if so, the bench database's sessions stop waiting for their
/// commits to reach the disk (set before any session opens).
async fn unawaited_commits(url: &str) -> bool {
    if std::env::var_os(UNAWAITED).is_none() {
        return false;
    }
    let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls).await.unwrap();
    tokio::spawn(connection);
    client.batch_execute("ALTER DATABASE bench SET synchronous_commit = off").await.unwrap();
    true
}

#[tokio::main(flavor = "multi_thread")]
async fn main() {
    let dir = tempfile::tempdir().unwrap();
    let sqlite = SqliteStore::open(dir.path().join("state.db")).unwrap();
    round_trips("sqlite", &sqlite).await;

    let cluster = TempCluster::start().unwrap_or_else(|e| panic!("{e}"));
    let url = cluster.create_database("bench").await.unwrap();
    let unawaited = unawaited_commits(&url).await;
    let pg = Arc::new(PostgresStore::connect(&url, 32).await.unwrap());
    round_trips("postgresql", pg.as_ref()).await;
    let memory = MemoryStore::new();
    session_costs(&[("memory", &memory), ("sqlite", &sqlite), ("postgresql", pg.as_ref())]).await;

    let n = PRODUCERS * PER_PRODUCER;
    let load_before = load_average();
    // Warm both paths once (connections, prepared statements, table files).
    let warm: Arc<dyn AuditSink> = Arc::new(StoreAuditSink::new(pg.clone(), "warm"));
    warm.append(sample_record(0, "warm")).await.unwrap();
    let bare: Arc<dyn AuditSink> = Arc::new(BareSink::new(&url).await);
    bare.append(sample_record(0, "warm")).await.unwrap();

    // One producer: each record its own batch, so each append is one commit on each path.
    let chained: Arc<dyn AuditSink> = Arc::new(StoreAuditSink::new(pg.clone(), "one-node"));
    let (bare, chained) = ([bare], [chained]);
    let (bare_one, chain_one, median_one) = interleaved(&bare, &chained, 1).await;
    let (bare_rate, chain_rate, median_rate) = interleaved(&bare, &chained, PRODUCERS).await;
    let pg_b: Arc<dyn Store> = Arc::new(PostgresStore::connect(&url, 32).await.unwrap());
    let two: Vec<Arc<dyn AuditSink>> =
        vec![Arc::new(StoreAuditSink::new(pg.clone(), "two-nodes")), Arc::new(StoreAuditSink::new(pg_b, "two-nodes"))];
    let two_rate = appends_per_second(&two, PRODUCERS, PER_PRODUCER, 0).await;
    assert_eq!(pg.verify_audit("one-node").await.unwrap().records as usize, n + PER_PRODUCER);
    assert_eq!(pg.verify_audit("two-nodes").await.unwrap().records as usize, n);
    let wal_bare = wal_per_record(&url, &bare[0], PRODUCERS, 100).await;
    let wal_sink: Arc<dyn AuditSink> = Arc::new(StoreAuditSink::new(pg.clone(), "wal"));
    let wal_chain = wal_per_record(&url, &wal_sink, PRODUCERS, 100).await;

    // What a node's resumption pays when a stream's debts are read after many appends: the
    // accounting of 100,000 read calls' records (PostgreSQL derives the debts when read).
    for batch in 0..ACCOUNTED / 1000 {
        let records = (0..1000).map(|i| read_call_record(batch * 1000 + i, "accounted")).collect();
        pg.append_audit("accounted", records).await.unwrap();
    }
    let t = Instant::now();
    pg.owed_finals("accounted", Duration::from_secs(900), 100).await.unwrap();
    let accounted = t.elapsed();

    println!("machine load (1, 5, 15 min) before the audit runs: {load_before}; after: {}", load_average());
    if unawaited {
        println!("commits NOT awaited on disk ({UNAWAITED}): the work besides the disk's, not durable appends");
    }
    println!("audit appends on PostgreSQL, one producer x {PER_PRODUCER} records, each awaited until durable:");
    println!("  bare INSERT (no chain)              {bare_one:9.0} records/s");
    println!(
        "  hash chain, one node                {chain_one:9.0} records/s   {:.2}x the bare INSERT (target >= 0.7x; \
         median of {ROUNDS} alternating rounds {median_one:.2}x)",
        chain_one / bare_one
    );
    println!(
        "audit appends on PostgreSQL, {PRODUCERS} producers x {PER_PRODUCER} records, each awaited until durable:"
    );
    println!("  bare batched INSERT (no chain)      {bare_rate:9.0} records/s");
    println!(
        "  hash chain, one node                {chain_rate:9.0} records/s   {:.2}x the bare INSERT (target >= 0.8x; \
         median of {ROUNDS} alternating rounds {median_rate:.2}x)",
        chain_rate / bare_rate
    );
    println!(
        "  hash chain, two nodes (two pools)   {two_rate:9.0} records/s   {:.2}x the bare INSERT; both chains verify",
        two_rate / bare_rate
    );
    println!(
        "WAL per record ({PRODUCERS} producers x 100, read calls' `proposed` and `executed` records): bare \
         {:.2} KB, hash chain {:.2} KB",
        wal_bare / 1024.0,
        wal_chain / 1024.0
    );
    println!(
        "the debts of {ACCOUNTED} read calls' records read once after their appends (accounted for then): {:.2} s, \
         {:.1} µs a record",
        accounted.as_secs_f64(),
        accounted.as_secs_f64() * 1e6 / ACCOUNTED as f64
    );
}
