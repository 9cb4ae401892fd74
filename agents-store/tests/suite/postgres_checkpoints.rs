//! Signed checkpoints of a keyed audit log published to PostgreSQL, against a real server (a
//! throwaway cluster; the test fails, saying what to install, without Debian's `postgresql`):
//! the writer publishes them, a log cut below the last one is detected through them, and a row
//! someone without the signing key wrote is refused.

use agents_runtime::audit::{
    AuditSink, ChainError, ChainKey, ChainOptions, ChainSummary, ChainVerifier, Checkpoint, CheckpointSigningKey,
    Checkpoints, EpochPolicy, JsonlSink, SealCheck, SealingKey,
};
use agents_store::PostgresStore;
use agents_store::postgres::{CheckpointReadError, PostgresCheckpoints, TempCluster};
use agents_store::testing::sample_record;

const RECORDS: usize = 12;
const EVERY: u64 = 4;
const POLICY: EpochPolicy = EpochPolicy { records: 4, seconds: 3600 };
const STREAM: &str = "node-1";

fn now() -> String {
    time::OffsetDateTime::now_utc().format(&time::format_description::well_known::Rfc3339).unwrap()
}

/// What `agents audit verify --key --checkpoints` does with the lines of a log.
fn verify(lines: &[String], key: &ChainKey, checkpoints: &[Checkpoint]) -> Result<ChainSummary, ChainError> {
    let mut v = ChainVerifier::new().epochs(POLICY).key(key).checkpoints(checkpoints.iter().cloned());
    for (i, line) in lines.iter().enumerate() {
        v.line(line, i + 1)?;
    }
    v.finish()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn checkpoints_in_postgres_catch_a_cut_log_and_refuse_forged_rows() {
    let cluster = TempCluster::start().unwrap_or_else(|e| panic!("{e}"));
    let url = cluster.create_database("checkpoints").await.unwrap_or_else(|e| panic!("{e}"));
    let chain_key = ChainKey::from_bytes([21; 32]);
    let signer = CheckpointSigningKey::from_bytes([22; 32]);
    let trusted = signer.verifying_key();

    // A keyed JSONL log whose writer publishes a checkpoint every four records to PostgreSQL.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.jsonl");
    let publisher_url = url.clone();
    let published = tokio::task::spawn_blocking(move || PostgresCheckpoints::connect(&publisher_url, STREAM))
        .await
        .unwrap()
        .unwrap();
    let options = ChainOptions {
        key: Some(SealingKey::in_memory(chain_key.epoch_key(), POLICY)),
        checkpoints: Some(Checkpoints::new(CheckpointSigningKey::from_bytes([22; 32]), published, EVERY)),
    };
    let sink = JsonlSink::open_with(&path, options).unwrap();
    for i in 0..RECORDS {
        let mut r = sample_record(i, "n1");
        r.ts = now();
        sink.append(r).await.unwrap();
    }
    drop(sink);
    let lines: Vec<String> = std::fs::read_to_string(&path).unwrap().lines().map(str::to_owned).collect();
    assert_eq!(lines.len(), RECORDS);

    // Published: one checkpoint every four records, each verifying under the writer's key.
    let store = PostgresStore::connect(&url, 2).await.unwrap();
    let checkpoints = store.trusted_checkpoints(STREAM, &trusted).await.unwrap();
    assert_eq!(checkpoints.iter().map(|c| c.seq).collect::<Vec<_>>(), [4, 8, 12]);
    let summary = verify(&lines, &chain_key, &checkpoints).unwrap();
    assert_eq!(summary.seals, SealCheck::Keyed { last_epoch: 2 });
    assert_eq!(summary.checkpoints, Some((3, 12)));
    assert!(summary.guarantee().contains("matches checkpoint 3 (record 12)"), "{}", summary.guarantee());
    // The exported lines are the same checkpoints (what `agents audit verify --checkpoints` reads).
    let exported = store.checkpoint_lines(STREAM).await.unwrap();
    assert_eq!(exported.iter().map(|l| Checkpoint::parse(l).unwrap()).collect::<Vec<_>>(), checkpoints);

    // The log cut anywhere below the last checkpoint: detected through PostgreSQL's checkpoints.
    for keep in 0..RECORDS {
        let err = verify(&lines[..keep], &chain_key, &checkpoints).unwrap_err();
        let ChainError::Truncated { records, seq, .. } = err else { panic!("{err}") };
        // The first checkpoint the cut log does not reach.
        assert_eq!((records, seq), (keep as u64, (keep as u64 / EVERY + 1) * EVERY));
    }
    // Control: without the checkpoints the cut log verifies (the chain alone cannot see it).
    assert!(verify(&lines[..9], &chain_key, &[]).is_ok());

    // The table is append-only: neither edited nor emptied.
    let (client, connection) = tokio_postgres::connect(&url, tokio_postgres::NoTls).await.unwrap();
    tokio::spawn(connection);
    for sql in [
        "UPDATE agents_audit_checkpoints SET seq = 1 WHERE seq = 12",
        "DELETE FROM agents_audit_checkpoints WHERE seq = 12",
        "TRUNCATE agents_audit_checkpoints",
    ] {
        let err = client.batch_execute(sql).await.unwrap_err();
        assert!(format!("{err:?}").contains("append-only"), "{sql}: {err:?}");
    }
    assert_eq!(store.checkpoint_lines(STREAM).await.unwrap(), exported);

    // Publishing a checkpoint again changes nothing; one naming another hash for a record that
    // has one is refused.
    store.publish_checkpoint(STREAM, &checkpoints[2]).await.unwrap();
    let rewritten = Checkpoint::sign(12, &"ab".repeat(32), Some(2), &now(), &signer);
    let err = store.publish_checkpoint(STREAM, &rewritten).await.unwrap_err();
    assert!(err.to_string().contains("rewritten"), "{err}");

    // A forged row: the last checkpoint's line with a later record and another hash, its
    // signature kept. Inserting works (the table cannot know), reading it as trusted does not.
    let mut forged = checkpoints[2].clone();
    forged.seq = 40;
    forged.hash = "cd".repeat(32);
    insert_row(&client, 40, &forged).await;
    match store.trusted_checkpoints(STREAM, &trusted).await {
        Err(CheckpointReadError::Refused { seq: 40, error, .. }) => {
            assert_eq!(error, agents_core::audit::CheckpointError::BadSignature)
        }
        other => panic!("a forged checkpoint row was not refused: {other:?}"),
    }
    // Another stream with a row signed by a key the verifier does not trust: refused too.
    let other = Checkpoint::sign(3, &"ef".repeat(32), None, &now(), &CheckpointSigningKey::from_bytes([1; 32]));
    insert_row_in(&client, "node-2", 3, &other).await;
    let err = store.trusted_checkpoints("node-2", &trusted).await.unwrap_err();
    assert!(matches!(err, CheckpointReadError::Refused { seq: 3, .. }), "{err}");
    // A row whose columns disagree with its signed line: refused.
    insert_row_in(&client, "node-3", 5, &checkpoints[0]).await;
    let err = store.trusted_checkpoints("node-3", &trusted).await.unwrap_err();
    assert!(err.to_string().contains("the row says record 5"), "{err}");
}

async fn insert_row(client: &tokio_postgres::Client, seq: i64, c: &Checkpoint) {
    insert_row_in(client, STREAM, seq, c).await;
}

async fn insert_row_in(client: &tokio_postgres::Client, stream: &str, seq: i64, c: &Checkpoint) {
    client
        .execute(
            "INSERT INTO agents_audit_checkpoints (stream, seq, hash, line) VALUES ($1, $2, $3, $4)",
            &[&stream, &seq, &c.hash, &c.to_line()],
        )
        .await
        .unwrap();
}

#[test]
fn a_publisher_that_cannot_connect_says_so() {
    // Port 1 on loopback: nothing listens there.
    let err =
        PostgresCheckpoints::connect("host=127.0.0.1 port=1 user=postgres connect_timeout=2", STREAM).unwrap_err();
    assert!(err.to_string().contains("unavailable"), "{err}");
    let err = PostgresCheckpoints::connect("host=127.0.0.1", "").unwrap_err();
    assert!(err.to_string().contains("stream name is empty"), "{err}");
}
