//! Round trips of the durable stores and the audit chain's throughput, in one run:
//!
//! - confirmation token mint + redeem, and run slot acquire + release, on SQLite and on
//!   PostgreSQL (sequential: each figure is one caller's latency);
//! - audit appends per second on PostgreSQL with 16 producers through the chained,
//!   group-committed sink, against a bare batched `INSERT` of the same records (same
//!   producers, same batching, no chain, no lock) on the same server; and the chain with the
//!   16 producers split over two nodes (two pools) contending for the stream's lock.
//!
//! `cargo bench -p agents-store --bench store` (PostgreSQL from Debian's `postgresql`
//! package: the bench starts a throwaway cluster).

use agents_runtime::audit::{Appended, AuditError, AuditRecord, AuditSink};
use agents_runtime::store::{SlotOwner, Store, StoreAuditSink, TokenGrant};
use agents_store::postgres::TempCluster;
use agents_store::testing::sample_record;
use agents_store::{PostgresStore, SqliteStore};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::{mpsc, oneshot};

const ROUND_TRIPS: usize = 2000;
const PRODUCERS: usize = 16;
const PER_PRODUCER: usize = 1000;

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

/// Records per second that `PRODUCERS` tasks append, each waiting for its record to be
/// durable before the next, spread over `sinks`.
async fn appends_per_second(sinks: Vec<Arc<dyn AuditSink>>) -> f64 {
    let t = Instant::now();
    let tasks: Vec<_> = (0..PRODUCERS)
        .map(|p| {
            let sink = sinks[p % sinks.len()].clone();
            tokio::spawn(async move {
                for i in 0..PER_PRODUCER {
                    sink.append(sample_record(p * PER_PRODUCER + i, "bench")).await.unwrap();
                }
            })
        })
        .collect();
    for task in tasks {
        task.await.unwrap();
    }
    (PRODUCERS * PER_PRODUCER) as f64 / t.elapsed().as_secs_f64()
}

#[tokio::main(flavor = "multi_thread")]
async fn main() {
    let dir = tempfile::tempdir().unwrap();
    let sqlite = SqliteStore::open(dir.path().join("state.db")).unwrap();
    round_trips("sqlite", &sqlite).await;

    let cluster = TempCluster::start().unwrap_or_else(|e| panic!("{e}"));
    let url = cluster.create_database("bench").await.unwrap();
    let pg = Arc::new(PostgresStore::connect(&url, 32).await.unwrap());
    round_trips("postgresql", pg.as_ref()).await;

    let n = PRODUCERS * PER_PRODUCER;
    // Warm both paths once (connections, prepared statements, table files).
    let warm: Arc<dyn AuditSink> = Arc::new(StoreAuditSink::new(pg.clone(), "warm"));
    warm.append(sample_record(0, "warm")).await.unwrap();
    let bare: Arc<dyn AuditSink> = Arc::new(BareSink::new(&url).await);
    bare.append(sample_record(0, "warm")).await.unwrap();

    let bare_rate = appends_per_second(vec![bare]).await;
    let chained: Arc<dyn AuditSink> = Arc::new(StoreAuditSink::new(pg.clone(), "one-node"));
    let chain_rate = appends_per_second(vec![chained]).await;
    let pg_b: Arc<dyn Store> = Arc::new(PostgresStore::connect(&url, 32).await.unwrap());
    let two: Vec<Arc<dyn AuditSink>> =
        vec![Arc::new(StoreAuditSink::new(pg.clone(), "two-nodes")), Arc::new(StoreAuditSink::new(pg_b, "two-nodes"))];
    let two_rate = appends_per_second(two).await;
    assert_eq!(pg.verify_audit("one-node").await.unwrap().records as usize, n);
    assert_eq!(pg.verify_audit("two-nodes").await.unwrap().records as usize, n);

    println!(
        "audit appends on PostgreSQL, {PRODUCERS} producers x {PER_PRODUCER} records, each awaited until durable:"
    );
    println!("  bare batched INSERT (no chain)      {bare_rate:9.0} records/s");
    println!(
        "  hash chain, one node                {chain_rate:9.0} records/s   {:.2}x the bare INSERT (target >= 0.8x)",
        chain_rate / bare_rate
    );
    println!(
        "  hash chain, two nodes (two pools)   {two_rate:9.0} records/s   {:.2}x the bare INSERT; both chains verify",
        two_rate / bare_rate
    );
}
