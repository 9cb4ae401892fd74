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
    common::race_slots(a.clone(), b.clone()).await;
    common::race_session_saves(a.clone(), b.clone()).await;
    common::proposal_across(a.clone(), b.clone()).await;
    common::take_over_across(a.clone(), b.clone()).await;
    common::audit_across(a, b).await;
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
