//! The SQLite sink: the table is append-only for every connection, and the chain verifies.
#![cfg(feature = "sqlite")]

use crate::audit_common;

use agents_runtime::audit::{
    AuditSink, AuditStatus, ChainError, ChainSummary, SqliteAuditError, SqliteSink, verify_sqlite, verify_sqlite_with,
};
use audit_common::{MANIFEST, record};
use rusqlite::Connection;
use std::sync::Arc;

async fn filled(path: &std::path::Path, n: usize) -> ChainSummary {
    let sink = SqliteSink::open(path).unwrap();
    let mut last = None;
    for i in 0..n {
        last = Some(sink.append(record(i, AuditStatus::Proposed)).await.unwrap());
    }
    let last = last.unwrap();
    ChainSummary::plain(last.seq as usize, last.hash)
}

fn refused(conn: &Connection, sql: &str) -> String {
    match conn.execute_batch(sql) {
        Err(e) => e.to_string(),
        Ok(()) => panic!("`{sql}` was accepted"),
    }
}

#[tokio::test]
async fn update_and_delete_are_refused_by_the_triggers() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.db");
    let head = filled(&path, 3).await;
    let conn = Connection::open(&path).unwrap();

    assert!(
        refused(&conn, "UPDATE audit_log SET status = 'executed' WHERE seq = 2")
            .contains("append-only: UPDATE is refused")
    );
    assert!(refused(&conn, "UPDATE audit_log SET args = NULL").contains("append-only"));
    assert!(refused(&conn, "DELETE FROM audit_log WHERE seq = 3").contains("append-only: DELETE is refused"));
    // Without a WHERE clause SQLite would truncate the table without running row triggers,
    // unless the table has triggers, which turns that shortcut off.
    assert!(refused(&conn, "DELETE FROM audit_log").contains("append-only"));
    // REPLACE deletes the old row without firing delete triggers; the insert trigger stops it.
    let replace = "INSERT OR REPLACE INTO audit_log SELECT * FROM audit_log WHERE seq = 1";
    assert!(refused(&conn, replace).contains("hash chain"));
    // A row that does not continue the chain is refused.
    let fork = format!(
        "INSERT INTO audit_log SELECT 4, ts, run_id, session_id, request_id, call_id, user_id, org_id, role, agent, tool, \
         tier, status, reason, title, args, args_hash, result, manifest_sha256, '{}', hash || 'x', epoch, import, node FROM audit_log WHERE seq = 1",
        "0".repeat(64)
    );
    assert!(refused(&conn, &fork).contains("hash chain"));
    // A row that continues the chain but carries a stored record's hash: REPLACE would delete
    // that record (the unique hash collides) without firing the DELETE trigger.
    let last: String = conn.query_row("SELECT hash FROM audit_log WHERE seq = 3", [], |r| r.get(0)).unwrap();
    let swap = format!(
        "INSERT OR REPLACE INTO audit_log SELECT 4, ts, run_id, session_id, request_id, call_id, user_id, org_id, role, agent, \
         tool, tier, status, reason, title, args, args_hash, result, manifest_sha256, '{last}', hash, epoch, import, node FROM audit_log WHERE seq = 1"
    );
    assert!(refused(&conn, &swap).contains("append-only"));

    let count: i64 = conn.query_row("SELECT COUNT(*) FROM audit_log", [], |r| r.get(0)).unwrap();
    assert_eq!(count, 3);
    assert_eq!(verify_sqlite(&path, Some(MANIFEST)).unwrap(), head);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_appends_chain_and_verify_and_reopening_continues() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.db");
    let sink = Arc::new(SqliteSink::open(&path).unwrap());
    let mut tasks = Vec::new();
    for p in 0..8 {
        let sink = Arc::clone(&sink);
        tasks.push(tokio::spawn(async move {
            let mut seqs = Vec::new();
            for i in 0..25 {
                seqs.push(sink.append(record(p * 25 + i, AuditStatus::Proposed)).await.unwrap().seq);
            }
            seqs
        }));
    }
    let mut all = Vec::new();
    for task in tasks {
        all.extend(task.await.unwrap());
    }
    all.sort_unstable();
    assert_eq!(all, (1..=200).collect::<Vec<u64>>());
    let summary = verify_sqlite(&path, Some(MANIFEST)).unwrap();
    assert_eq!(summary.records, 200);
    drop(sink);

    let sink = SqliteSink::open(&path).unwrap();
    let next = sink.append(record(200, AuditStatus::Executed)).await.unwrap();
    assert_eq!((next.seq, next.prev_hash), (201, summary.last_hash));
    drop(sink);
    assert_eq!(verify_sqlite(&path, None).unwrap().records, 201);
}

#[tokio::test]
async fn rows_changed_behind_the_triggers_are_found_by_the_verifier() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.db");
    filled(&path, 4).await;
    let conn = Connection::open(&path).unwrap();
    conn.execute_batch(
        "DROP TRIGGER audit_log_no_update;
         UPDATE audit_log SET user_id = 'u-mallory' WHERE seq = 3;",
    )
    .unwrap();
    drop(conn);
    match verify_sqlite(&path, None) {
        Err(e @ SqliteAuditError::Broken { source: ChainError::HashMismatch { line: 3 }, .. }) => {
            assert!(e.to_string().contains("row 3"), "{e}");
        }
        other => panic!("{other:?}"),
    }
    // One pass with a visitor: the same verdict, and every row, the ones after the break too.
    let mut seen = Vec::new();
    let verdict = verify_sqlite_with(&path, None, &mut |r| seen.push((r.seq, r.user_id.to_string())));
    assert!(matches!(verdict, Err(SqliteAuditError::Broken { source: ChainError::HashMismatch { line: 3 }, .. })));
    assert_eq!(seen.iter().map(|(seq, _)| *seq).collect::<Vec<_>>(), [1, 2, 3, 4]);
    assert_eq!(seen[2].1, "u-mallory", "the changed row as it reads now");
    // The sink refuses to continue a broken chain, and leaves the file byte for byte as it was,
    // in the journal mode it found (nothing is switched to WAL before the chain verifies).
    Connection::open(&path).unwrap().execute_batch("PRAGMA journal_mode = DELETE").unwrap();
    let before = std::fs::read(&path).unwrap();
    assert!(matches!(SqliteSink::open(&path), Err(SqliteAuditError::Broken { .. })));
    assert!(std::fs::read(&path).unwrap() == before, "the refused file was changed");
    assert!(!path.with_file_name("audit.db-wal").exists(), "a WAL file was created");

    let path = dir.path().join("audit-2.db");
    filled(&path, 4).await;
    let conn = Connection::open(&path).unwrap();
    conn.execute_batch("DROP TRIGGER audit_log_no_delete; DELETE FROM audit_log WHERE seq = 2;").unwrap();
    drop(conn);
    assert!(matches!(
        verify_sqlite(&path, None),
        Err(SqliteAuditError::Broken { source: ChainError::BrokenLink { line: 2 }, .. })
    ));
}

#[tokio::test]
async fn stored_rows_keep_every_field() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.db");
    let sink = SqliteSink::open(&path).unwrap();
    let sealed = sink.append(record(1, AuditStatus::Executed)).await.unwrap();
    drop(sink);
    let conn = Connection::open(&path).unwrap();
    let (tier, status, args, title): (String, String, String, String) = conn
        .query_row("SELECT tier, status, args, title FROM audit_log WHERE seq = 1", [], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
        })
        .unwrap();
    assert_eq!((tier.as_str(), status.as_str()), ("action", "executed"));
    assert_eq!(args, agents_core::canonical::to_string(sealed.args.as_ref().unwrap()));
    assert_eq!(Some(title.as_str()), sealed.title.as_deref());
}

#[test]
fn verifying_a_file_without_the_table_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("other.db");
    Connection::open(&path).unwrap().execute_batch("CREATE TABLE t (x)").unwrap();
    match verify_sqlite(&path, None) {
        Err(e @ SqliteAuditError::Sqlite { .. }) => assert!(e.to_string().contains("audit_log"), "{e}"),
        other => panic!("{other:?}"),
    }
}

/// A resumption asks the log whether a call's final record is in it.
#[tokio::test]
async fn the_sink_finds_a_calls_final_record() {
    let dir = tempfile::tempdir().unwrap();
    let sink = SqliteSink::open(dir.path().join("audit.db")).unwrap();
    sink.append(record(1, AuditStatus::Proposed)).await.unwrap();
    sink.append(record(1, AuditStatus::Executed)).await.unwrap();
    sink.append(record(2, AuditStatus::Proposed)).await.unwrap();
    assert_eq!(sink.holds_final("call-1").await.unwrap(), Some(true));
    assert_eq!(sink.holds_final("call-2").await.unwrap(), Some(false), "only proposed");
    assert_eq!(sink.holds_final("call-").await.unwrap(), Some(false), "the whole id");
}

/// The database deleted, replaced or moved while the sink has it open: the batch written after
/// is not acknowledged (it went into a file nobody will read), and the sink refuses every later
/// record, saying why.
#[tokio::test]
async fn a_database_deleted_replaced_or_moved_while_open_stops_acknowledging() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.db");
    let other = dir.path().join("other.db");
    for fault in ["deleted", "replaced", "moved"] {
        let _ = std::fs::remove_file(&path);
        let sink = SqliteSink::open(&path).unwrap();
        sink.append(record(0, AuditStatus::Proposed)).await.expect("the file is in place");
        match fault {
            "deleted" => std::fs::remove_file(&path).unwrap(),
            "replaced" => {
                drop(SqliteSink::open(&other).unwrap());
                std::fs::rename(&other, &path).unwrap();
            }
            _ => std::fs::rename(&path, dir.path().join("moved.db")).unwrap(),
        }
        let e = sink.append(record(1, AuditStatus::Executed)).await.expect_err("not acknowledged");
        let what = if fault == "replaced" { "replaced by another file" } else { "deleted or moved" };
        assert!(e.to_string().contains(what), "{fault}: {e}");
        assert!(sink.is_poisoned(), "{fault}: the sink stops");
        assert!(sink.append(record(2, AuditStatus::Executed)).await.is_err(), "{fault}: and refuses what follows");
    }
}
