//! The SQLite store: the common contract, races between two connections to one file, a
//! restart in the middle of a proposal's life, and migrations.

use crate::common;

use agents_runtime::store::{DecideOutcome, Redeemed, Store, StoreError, StoredVerdict};
use agents_store::{SQLITE_MIGRATIONS, SqliteStore};
use std::sync::Arc;

fn temp() -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state.db");
    (dir, path)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_store_keeps_the_contract() {
    let (_dir, path) = temp();
    common::conformance(&SqliteStore::open(&path).unwrap()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_connections_to_one_file_race_correctly() {
    let (_dir, path) = temp();
    let a: Arc<dyn Store> = Arc::new(SqliteStore::open(&path).unwrap());
    let b: Arc<dyn Store> = Arc::new(SqliteStore::open(&path).unwrap());
    common::race_redemptions(a.clone(), b.clone()).await;
    common::race_tree_closes(a.clone(), b.clone()).await;
    common::race_slots(a.clone(), b.clone()).await;
    common::race_session_saves(a.clone(), b.clone()).await;
    common::proposal_across(a.clone(), b.clone()).await;
    common::take_over_across(a.clone(), b.clone()).await;
    common::audit_across(a, b).await;
}

/// The same races through one store value: the operations that wait for its connection
/// together share one transaction (group commit), each in a savepoint of its own, and each
/// guarantee still holds among them (one redemption, one tree close, the slots' cap, one
/// winner per session revision). Then every answered write is in the file after a reopen.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn races_within_one_store_hold_when_its_operations_commit_together() {
    let (_dir, path) = temp();
    let one: Arc<dyn Store> = Arc::new(SqliteStore::open(&path).unwrap());
    common::race_redemptions(one.clone(), one.clone()).await;
    common::race_tree_closes(one.clone(), one.clone()).await;
    common::race_slots(one.clone(), one.clone()).await;
    common::race_session_saves(one.clone(), one.clone()).await;

    let proposals: Vec<_> = (0..200)
        .map(|i| {
            let store = one.clone();
            tokio::spawn(async move { store.put_proposal(&common::proposal(&format!("batched-{i}"), "bo")).await })
        })
        .collect();
    for p in proposals {
        p.await.unwrap().unwrap();
    }
    drop(one);
    let reopened = SqliteStore::open(&path).unwrap();
    assert_eq!(reopened.pending_for("org-a", "bo").await.unwrap().len(), 200, "every answered write was committed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn state_survives_a_restart() {
    let (_dir, path) = temp();
    let before = SqliteStore::open(&path).unwrap();
    before.mint_token(&common::grant("tok", "s1"), common::LONG).await.unwrap();
    before.put_proposal(&common::proposal("call", "ann")).await.unwrap();
    let slot = before.acquire_slot(&common::owner("ann"), 1, common::SHORT).await.unwrap().unwrap();
    before.append_audit("clinic", vec![agents_store::testing::sample_record(0, "a")]).await.unwrap();
    drop(before);

    let after = SqliteStore::open(&path).unwrap();
    assert_eq!(after.pending_for("org-a", "ann").await.unwrap().len(), 1, "the proposal outlived the process");
    assert_eq!(
        after.decide("call", "org-a", "ann", StoredVerdict::Approved, None, "").await.unwrap(),
        DecideOutcome::Recorded
    );
    assert!(after.claim_execution("call", "restarted", "").await.unwrap());
    assert!(!after.claim_execution("call", "restarted", "").await.unwrap());
    assert!(matches!(after.redeem_token("tok").await.unwrap(), Redeemed::Taken { expired: false, .. }));
    assert_eq!(
        after.acquire_slot(&common::owner("ann"), 1, common::LONG).await.unwrap(),
        None,
        "the slot is still leased"
    );
    tokio::time::sleep(common::SHORT * 2).await;
    let place = after.acquire_slot(&common::owner("ann"), 1, common::LONG).await.unwrap();
    assert!(place.is_some(), "the dead process's slot lapsed");
    assert!(!after.renew_slot(&slot, common::LONG).await.unwrap(), "and stays gone");
    after.append_audit("clinic", vec![agents_store::testing::sample_record(1, "a")]).await.unwrap();
    assert_eq!(after.verify_audit("clinic").await.unwrap().records, 2, "the chain continues across the restart");
}

#[test]
fn migrations_apply_once_and_a_newer_schema_is_refused() {
    let (_dir, path) = temp();
    let newest = SQLITE_MIGRATIONS.last().unwrap().version;
    assert_eq!(SqliteStore::open(&path).unwrap().schema_version().unwrap(), newest);
    assert_eq!(SqliteStore::open(&path).unwrap().schema_version().unwrap(), newest, "re-open applies nothing twice");

    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.execute(
        "INSERT INTO agents_schema_migrations (version, name, applied_at) VALUES (?1, 'future', 0)",
        [newest + 1],
    )
    .unwrap();
    let tables = |c: &rusqlite::Connection| -> i64 {
        c.query_row("SELECT count(*) FROM sqlite_schema", [], |r| r.get(0)).unwrap()
    };
    let before = tables(&conn);
    match SqliteStore::open(&path) {
        Err(StoreError::NewerSchema { found, known }) => assert_eq!((found, known), (newest + 1, newest)),
        other => panic!("a newer schema must be refused, got {other:?}"),
    }
    assert_eq!(tables(&conn), before, "the refusal changed nothing");
}

/// A state file deleted, replaced or moved while the store has it open: nothing more is
/// acknowledged (a write into the file it opened would be lost at close, or land where nobody
/// looks), and the error says what happened.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_state_file_deleted_replaced_or_moved_while_open_stops_answering() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state.db");
    let deleted = SqliteStore::open(&path).unwrap();
    deleted.put_proposal(&common::proposal("call-1", "ann")).await.unwrap();
    std::fs::remove_file(&path).unwrap();
    let e = deleted.put_proposal(&common::proposal("call-2", "ann")).await.unwrap_err();
    assert!(matches!(e, StoreError::Unavailable(_)) && e.to_string().contains("deleted or moved"), "{e}");
    assert!(deleted.proposal("call-1").await.is_err(), "reads are refused too: the store is not the file any more");

    let replaced = SqliteStore::open(&path).unwrap();
    replaced.put_proposal(&common::proposal("call-3", "ann")).await.unwrap();
    let other = dir.path().join("other.db");
    drop(SqliteStore::open(&other).unwrap());
    std::fs::rename(&other, &path).unwrap();
    let e = replaced.put_proposal(&common::proposal("call-4", "ann")).await.unwrap_err();
    assert!(e.to_string().contains("replaced by another file"), "{e}");
    let fresh = SqliteStore::open(&path).unwrap();
    assert!(fresh.proposal("call-4").await.unwrap().is_none(), "the refused write is not in the file at the path");

    let moved = SqliteStore::open(&path).unwrap();
    std::fs::rename(&path, dir.path().join("moved.db")).unwrap();
    let e = moved.mint_token(&common::grant("t", "s"), common::LONG).await.unwrap_err();
    assert!(e.to_string().contains("deleted or moved"), "{e}");

    // A database SQLite keeps in memory has no file to lose: it answers as before.
    let in_memory = SqliteStore::open(":memory:").unwrap();
    in_memory.put_proposal(&common::proposal("call-5", "ann")).await.unwrap();
}

/// A file a newer build migrated (here still in rollback-journal mode, as a copy or a restore
/// leaves it) is refused before anything is written to it: byte for byte as it was, and no
/// `-wal` or `-shm` file beside it.
#[test]
fn a_refused_file_is_left_byte_for_byte_as_it_was() {
    let (_dir, path) = temp();
    let newest = SQLITE_MIGRATIONS.last().unwrap().version;
    {
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.execute_batch(
            "PRAGMA journal_mode = DELETE; \
             CREATE TABLE agents_schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL) STRICT;",
        )
        .unwrap();
        conn.execute("INSERT INTO agents_schema_migrations VALUES (?1, 'future', 0)", [newest + 1]).unwrap();
    }
    let before = std::fs::read(&path).unwrap();
    match SqliteStore::open(&path) {
        Err(StoreError::NewerSchema { found, known }) => assert_eq!((found, known), (newest + 1, newest)),
        other => panic!("a newer schema must be refused, got {other:?}"),
    }
    assert!(std::fs::read(&path).unwrap() == before, "the refused file was changed");
    for beside in ["state.db-wal", "state.db-shm"] {
        assert!(!path.with_file_name(beside).exists(), "{beside} was created");
    }
}

/// Someone who can write the file, with plain SQL on the tables (not dropping triggers):
/// replacing an acknowledged record by `INSERT OR REPLACE` (which deletes the old row without
/// firing DELETE triggers) with another that continues the plain chain, an upsert on its key,
/// or moving the stream's head back, deleting it or replacing it, is refused; the chain
/// verifies as it was, and appending continues it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_audit_tables_refuse_replacement_by_any_statement() {
    use agents_store::testing::sample_record;
    let (_dir, path) = temp();
    let store = SqliteStore::open(&path).unwrap();
    let sealed = store.append_audit("clinic", (0..3).map(|i| sample_record(i, "a")).collect()).await.unwrap();
    let head = store.verify_audit("clinic").await.unwrap();
    let conn = rusqlite::Connection::open(&path).unwrap();
    // A record that continues the plain chain after record 2 as well as record 3 does: no key
    // is needed to make one.
    let (forged, lines, _, _) = agents_runtime::store::seal_after(2, &sealed[1].hash, vec![sample_record(99, "x")]);
    let refused = |sql: &str, params: &[&dyn rusqlite::ToSql]| match conn.execute(sql, params) {
        Err(e) => e.to_string(),
        Ok(n) => panic!("`{sql}` was accepted ({n} rows)"),
    };
    let swap =
        "INSERT OR REPLACE INTO agents_audit (stream, seq, prev_hash, hash, line) VALUES ('clinic', 3, ?1, ?2, ?3)";
    let why = refused(swap, &[&forged[0].prev_hash, &forged[0].hash, &lines[0]]);
    assert!(why.contains("append-only"), "{why}");
    let upsert = "INSERT INTO agents_audit (stream, seq, prev_hash, hash, line) VALUES ('clinic', 3, ?1, ?2, ?3) \
                  ON CONFLICT (stream, seq) DO UPDATE SET prev_hash = excluded.prev_hash, hash = excluded.hash, line = excluded.line";
    assert!(refused(upsert, &[&forged[0].prev_hash, &forged[0].hash, &lines[0]]).contains("append-only"));
    assert!(refused("UPDATE agents_audit SET line = line WHERE seq = 3", &[]).contains("append-only"));
    assert!(refused("DELETE FROM agents_audit WHERE seq = 3", &[]).contains("append-only"));
    // The head: moved back (so the next append would write seq 3 again), deleted, replaced.
    let rewind = "UPDATE agents_audit_heads SET seq = 2, hash = ?1 WHERE stream = 'clinic'";
    assert!(refused(rewind, &[&sealed[1].hash]).contains("only moves forward"));
    assert!(refused("DELETE FROM agents_audit_heads", &[]).contains("append-only"));
    let replace_head = "INSERT OR REPLACE INTO agents_audit_heads (stream, seq, hash) VALUES ('clinic', 2, ?1)";
    assert!(refused(replace_head, &[&sealed[1].hash]).contains("never replaced"));
    let forward_to_nothing = "UPDATE agents_audit_heads SET seq = 9, hash = 'x' WHERE stream = 'clinic'";
    assert!(refused(forward_to_nothing, &[]).contains("only moves forward"));

    let kept: String =
        conn.query_row("SELECT hash FROM agents_audit WHERE stream = 'clinic' AND seq = 3", [], |r| r.get(0)).unwrap();
    assert_eq!(kept, sealed[2].hash, "the acknowledged record 3 is in place");
    assert_eq!(store.verify_audit("clinic").await.unwrap(), head, "the chain is the acknowledged one");
    store.append_audit("clinic", vec![sample_record(3, "a")]).await.unwrap();
    assert_eq!(store.verify_audit("clinic").await.unwrap().records, 4, "appending continues it");
}
