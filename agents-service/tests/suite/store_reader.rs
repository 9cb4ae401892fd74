//! The reader of a state store's audit stream ([`StoreReader`]): it reads every page of a long
//! stream in order, and a row someone edited, deleted or moved in the database (the insider who
//! can write it but does not hold the chain) makes the verdict fail.

use agents_runtime::audit::{AuditRecord, ChainError, ChainSummary};
use agents_runtime::store::{MemoryStore, Store};
use agents_service::{AuditReader, StoreReader};
use agents_store::testing::sample_record;
use std::ops::ControlFlow;
use std::sync::Arc;

/// Appends `n` records to `stream`, in batches of 100.
async fn fill(store: &dyn Store, stream: &str, n: usize) {
    for start in (0..n).step_by(100) {
        let batch = (start..n.min(start + 100)).map(|i| sample_record(i, "a")).collect();
        store.append_audit(stream, batch).await.expect("the records are appended");
    }
}

/// The reader's verdict and the `seq` of every record it handed over, read on the blocking pool
/// as the service reads.
async fn verified(reader: StoreReader) -> (Result<ChainSummary, ChainError>, Vec<u64>) {
    tokio::task::spawn_blocking(move || {
        let mut seqs = Vec::new();
        let verdict = reader.verify_each(&mut |r: &AuditRecord| seqs.push(r.seq)).expect("the stream reads");
        (verdict, seqs)
    })
    .await
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_page_of_a_long_stream_is_read_in_order_and_verified() {
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    // More than two pages, beside another stream that must not leak in.
    fill(&*store, "audit", 1_203).await;
    fill(&*store, "other", 7).await;
    let (verdict, seqs) = verified(StoreReader::new(store.clone(), "audit")).await;
    assert_eq!(seqs, (1..=1_203).collect::<Vec<u64>>(), "every record once, in order");
    assert_eq!(verdict.expect("the chain verifies").records, 1_203);

    // A scan stops where its visitor breaks, a page boundary or not.
    let reader = StoreReader::new(store.clone(), "audit");
    let seen = tokio::task::spawn_blocking(move || {
        let mut seen = Vec::new();
        reader
            .scan(&mut |r| {
                seen.push(r.seq);
                if seen.len() == 600 { ControlFlow::Break(()) } else { ControlFlow::Continue(()) }
            })
            .expect("the stream reads");
        seen
    })
    .await
    .unwrap();
    assert_eq!(seen, (1..=600).collect::<Vec<u64>>());

    // A stream nobody wrote is an empty chain, not an error.
    let (verdict, seqs) = verified(StoreReader::new(store, "nobody")).await;
    assert!(seqs.is_empty());
    assert_eq!(verdict.expect("an empty chain verifies").records, 0);
}

/// Edits the SQLite store's audit table as its file's owner can: the append-only triggers
/// dropped first.
fn insider(path: &std::path::Path, sql: &str) {
    let conn = rusqlite::Connection::open(path).unwrap();
    conn.execute_batch("DROP TRIGGER IF EXISTS agents_audit_no_update; DROP TRIGGER IF EXISTS agents_audit_no_delete;")
        .unwrap();
    assert_eq!(conn.execute(sql, []).unwrap(), 1, "one row changed: {sql}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_row_edited_deleted_or_moved_in_the_database_fails_the_verdict() {
    for (edit, at) in [
        // A line's content, on the second page.
        ("UPDATE agents_audit SET line = replace(line, '\"proposed\"', '\"confirmed\"') WHERE seq = 650", 650),
        // A record removed: the next one no longer links.
        ("DELETE FROM agents_audit WHERE seq = 10", 10),
        // A record moved to the end: the stream is read in the order the rows say.
        ("UPDATE agents_audit SET seq = 2000 WHERE seq = 100", 100),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state.db");
        let store: Arc<dyn Store> = Arc::new(agents_store::SqliteStore::open(&path).unwrap());
        fill(&*store, "audit", 700).await;
        let (verdict, _) = verified(StoreReader::new(store.clone(), "audit")).await;
        assert_eq!(verdict.expect("the untouched chain verifies").records, 700);

        insider(&path, edit);
        let (verdict, seqs) = verified(StoreReader::new(store.clone(), "audit")).await;
        let err = verdict.expect_err(edit);
        assert!(err.to_string().starts_with(&format!("line {at}: ")), "{edit}: {err}");
        // The records that still read are handed over past the break.
        assert!(seqs.len() >= 699, "{edit}: {} records handed over", seqs.len());
    }
}
