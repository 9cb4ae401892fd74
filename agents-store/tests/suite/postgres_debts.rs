//! The PostgreSQL store's audit debts against a real server: a debt points at its `proposed`
//! record (`seq` in the debt's own stream) instead of repeating its line, and is derived from
//! the stored records by whoever reads the debts rather than written by every append. Debts
//! opened by the schemas before keep pointing at their records after the migrations; a debt is
//! opened only from a record the stream's chain holds, once per call and run; a call proposed
//! and settled between two reads never writes a debt; and a pointer at any other record
//! (another stream's, another call's, none) is refused when read, naming the debt.

use agents_runtime::audit::{AuditRecord, AuditStatus, GENESIS_HASH};
use agents_runtime::store::{Debts, Store, StoreError, seal_after};
use agents_store::postgres::TempCluster;
use agents_store::testing::sample_record;
use agents_store::{POSTGRES_MIGRATIONS, PostgresStore};
use std::time::Duration;
use tokio_postgres::types::ToSql;

fn cluster() -> TempCluster {
    TempCluster::start().unwrap_or_else(|e| panic!("{e}"))
}

async fn raw(url: &str) -> tokio_postgres::Client {
    let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls).await.unwrap();
    tokio::spawn(connection);
    client
}

/// A read call's `proposed` record (its debt is keyed by call and run).
fn proposed(i: usize, call_id: &str) -> AuditRecord {
    AuditRecord { tier: Some(agents_runtime::Tier::Read), call_id: Some(call_id.into()), ..sample_record(i, "a") }
}

/// The final record of `of` (same call, same run).
fn executed(i: usize, of: &AuditRecord) -> AuditRecord {
    AuditRecord {
        status: AuditStatus::Executed,
        run_id: of.run_id.clone(),
        ..proposed(i, of.call_id.as_deref().unwrap())
    }
}

/// The call ids and `seq`s `store` owes in `stream` now.
async fn owed(store: &dyn Store, stream: &str) -> Vec<(String, u64)> {
    let owed = store.owed_finals(stream, Duration::ZERO, 100).await.unwrap();
    owed.iter().map(|r| (r.call_id.as_deref().unwrap().to_owned(), r.seq)).collect()
}

/// A database migrated up to `version` only (what a build before left).
async fn database_at(cluster: &TempCluster, name: &str, version: i64) -> (String, tokio_postgres::Client) {
    let url = cluster.create_database(name).await.unwrap();
    let client = raw(&url).await;
    client
        .batch_execute(
            "CREATE TABLE agents_schema_migrations (version BIGINT PRIMARY KEY, name TEXT NOT NULL, \
             applied_at TIMESTAMPTZ NOT NULL DEFAULT now())",
        )
        .await
        .unwrap();
    for m in POSTGRES_MIGRATIONS.iter().filter(|m| m.version <= version) {
        client.batch_execute(m.sql).await.unwrap();
        client
            .execute("INSERT INTO agents_schema_migrations (version, name) VALUES ($1, $2)", &[&m.version, &m.name])
            .await
            .unwrap();
    }
    (url, client)
}

/// Appends `records` to the new stream `stream` the way the build before did: migration 10's
/// `agents_audit_append`, each debt holding its record's line.
async fn append_as_before(
    client: &tokio_postgres::Client,
    stream: &str,
    records: Vec<AuditRecord>,
) -> Vec<AuditRecord> {
    client
        .execute("INSERT INTO agents_audit_heads (stream, seq, hash) VALUES ($1, 0, $2)", &[&stream, &GENESIS_HASH])
        .await
        .unwrap();
    append_with_debts(client, stream, (0, GENESIS_HASH), records).await.unwrap()
}

/// Seals `records` after the record `from` (its `seq` and `hash`) and sends them, with their
/// debts, to the sixteen-argument `agents_audit_append` of the schemas before migration 14
/// (migration 10's form: each debt holding its record's line).
async fn append_with_debts(
    client: &tokio_postgres::Client,
    stream: &str,
    from: (i64, &str),
    records: Vec<AuditRecord>,
) -> Result<Vec<AuditRecord>, tokio_postgres::Error> {
    let (sealed, lines, to, to_hash) = seal_after(from.0 as u64, from.1, records);
    let debts = Debts::of(&sealed, &lines);
    let seqs: Vec<i64> = sealed.iter().map(|r| r.seq as i64).collect();
    let prevs: Vec<&str> = sealed.iter().map(|r| r.prev_hash.as_str()).collect();
    let hashes: Vec<&str> = sealed.iter().map(|r| r.hash.as_str()).collect();
    let args: [&(dyn ToSql + Sync); 16] = [
        &stream,
        &from.0,
        &from.1,
        &0_i64,
        &(to as i64),
        &to_hash,
        &seqs,
        &prevs,
        &hashes,
        &lines,
        &debts.owed,
        &debts.owed_runs,
        &debts.owed_lines,
        &debts.paid_calls,
        &debts.paid,
        &debts.paid_runs,
    ];
    client
        .execute(
            "SELECT agents_audit_append($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16)",
            &args,
        )
        .await?;
    Ok(sealed)
}

/// A database of the build before, holding open debts (their lines) and a paid one: after the
/// migration each open debt points at its record, is read back as that record, is claimed and
/// is paid by its final record as before; the chain verifies.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn open_debts_of_the_schema_before_point_at_their_records_after_the_migration() {
    let cluster = cluster();
    let (url, client) = database_at(&cluster, "before", 10).await;
    let (first, second, paid) = (proposed(1, "read-1"), proposed(2, "read-2"), proposed(3, "read-3"));
    let records = vec![first, sample_record(9, "a"), second, paid.clone(), executed(4, &paid)];
    let sealed = append_as_before(&client, "s", records).await;
    let held: i64 = client.query_one("SELECT count(*) FROM agents_audit_debts", &[]).await.unwrap().get(0);
    assert_eq!(held, 3, "read-1, read-2 and the sample action are owed before the migration");

    let store = PostgresStore::connect(&url, 4).await.unwrap();
    assert_eq!(store.schema_version().await.unwrap(), POSTGRES_MIGRATIONS.last().unwrap().version);
    let mut now = owed(&store, "s").await;
    now.sort();
    assert_eq!(now, [("call-a-9".to_owned(), 2), ("read-1".to_owned(), 1), ("read-2".to_owned(), 3)]);
    let read_back = store.owed_finals("s", Duration::ZERO, 100).await.unwrap();
    let one = read_back.iter().find(|r| r.seq == 1).unwrap();
    assert_eq!(one.hash, sealed[0].hash, "the stored `proposed` record itself");
    let run = sealed[0].run_id.to_string();
    assert!(store.claim_owed("s", "read-1", &run, "node-a", Duration::from_secs(600)).await.unwrap());
    store.append_audit("s", vec![executed(5, &sealed[0])]).await.unwrap();
    let mut now = owed(&store, "s").await;
    now.sort();
    assert_eq!(now, [("call-a-9".to_owned(), 2), ("read-2".to_owned(), 3)], "read-1 paid");
    assert_eq!(store.verify_audit("s").await.unwrap().records, 6);
}

/// A debt of the build before whose line matches no record of its stream (a broken store):
/// the migration refuses it, naming the debt and what to do, and changes nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_debt_of_the_schema_before_that_matches_no_record_stops_the_migration() {
    let cluster = cluster();
    let (url, client) = database_at(&cluster, "lost", 10).await;
    let sealed = append_as_before(&client, "s", vec![proposed(1, "read-1")]).await;
    // The line of a record that was never stored.
    let (_, lines, _, _) = seal_after(1, &sealed[0].hash, vec![proposed(2, "read-2")]);
    client
        .execute(
            "INSERT INTO agents_audit_debts (stream, call_id, run_id, line) VALUES ('s', 'read-2', 'r', $1)",
            &[&lines[0]],
        )
        .await
        .unwrap();
    let Err(refused) = PostgresStore::connect(&url, 4).await else { panic!("the migration is refused") };
    let refused = refused.to_string();
    assert!(refused.contains("read-2") && refused.contains("delete the debt"), "{refused}");
    let version: i64 = client.query_one("SELECT max(version) FROM agents_schema_migrations", &[]).await.unwrap().get(0);
    assert_eq!(version, 10, "nothing migrated");
    let lines: i64 = client.query_one("SELECT count(line) FROM agents_audit_debts", &[]).await.unwrap().get(0);
    assert_eq!(lines, 2, "the debts are as they were");
}

/// A call proposed twice in its run (in one batch, then again in a later one) owes one final
/// record: its first `proposed` record keeps the debt, and one final record pays it. A call
/// proposed again after its final record (a model may repeat a call id within its run) is owed
/// again, whether the three records come in one batch or in three. The same on SQLite.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_proposed_twice_owes_one_final_record_and_again_after_it() {
    let cluster = cluster();
    let url = cluster.create_database("twice").await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let sqlite = agents_store::SqliteStore::open(dir.path().join("state.db")).unwrap();
    let postgres = PostgresStore::connect(&url, 4).await.unwrap();
    for store in [&sqlite as &dyn Store, &postgres] {
        let call = proposed(1, "read-1");
        store.append_audit("s", vec![call.clone(), call.clone()]).await.unwrap();
        store.append_audit("s", vec![call.clone()]).await.unwrap();
        assert_eq!(owed(store, "s").await, [("read-1".to_owned(), 1)], "one debt, at the first record");
        store.append_audit("s", vec![executed(2, &call)]).await.unwrap();
        assert!(owed(store, "s").await.is_empty(), "paid once, by one final record");
        assert_eq!(store.verify_audit("s").await.unwrap().records, 4);

        store.append_audit("one", vec![call.clone(), executed(2, &call), call.clone()]).await.unwrap();
        assert_eq!(owed(store, "one").await, [("read-1".to_owned(), 3)], "again after its final record, one batch");
        for record in [call.clone(), executed(2, &call), call.clone()] {
            store.append_audit("three", vec![record]).await.unwrap();
            let _ = owed(store, "three").await;
        }
        assert_eq!(
            owed(store, "three").await,
            [("read-1".to_owned(), 3)],
            "again after its final record, three batches"
        );
    }
}

/// The append takes no debts: a writer of the build before, which sends them with its records
/// (migration 13's sixteen arguments), is refused and stores nothing. The debts are derived
/// from the stored records when read: a call proposed and settled between two reads never
/// writes a debt row, one still owed is written once, at its `proposed` record, and the
/// stream's mark moves to its head.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn debts_are_derived_from_the_stored_records_and_the_append_takes_none() {
    let cluster = cluster();
    let url = cluster.create_database("derived").await.unwrap();
    let store = PostgresStore::connect(&url, 4).await.unwrap();
    let first = store.append_audit("s", vec![proposed(1, "read-1")]).await.unwrap();
    let client = raw(&url).await;
    let refused = append_with_debts(&client, "s", (1, &first[0].hash), vec![proposed(2, "read-2")])
        .await
        .expect_err("the append of the build before is gone");
    assert_eq!(refused.as_db_error().expect("the server's refusal").code().code(), "42883", "{refused}");
    assert_eq!(store.verify_audit("s").await.unwrap().records, 1, "nothing stored");

    let rows = async |sql: &str| client.query_one(sql, &[]).await.unwrap().get::<_, i64>(0);
    assert_eq!(rows("SELECT count(*) FROM agents_audit_debts").await, 0, "the append wrote no debt");
    let settled = proposed(3, "read-3");
    store.append_audit("s", vec![settled.clone()]).await.unwrap();
    store.append_audit("s", vec![executed(4, &settled)]).await.unwrap();
    assert_eq!(owed(&store, "s").await, [("read-1".to_owned(), 1)], "read-3 was settled before the debts were read");
    assert_eq!(rows("SELECT count(*) FROM agents_audit_debts").await, 1, "one debt row: read-1's");
    assert_eq!(rows("SELECT seq FROM agents_audit_debt_marks WHERE stream = 's'").await, 3, "accounted up to the head");
    assert_eq!(owed(&store, "s").await, [("read-1".to_owned(), 1)], "read again: the same");
}

/// More records than one accounting transaction takes are all accounted for, in order; a mark
/// wound back (someone who can write the marks) accounts for the same records again and leaves
/// the same debts; a row beyond the chain's head is not read; a stored line that does not
/// parse, within the head, is refused, naming the record, and changes neither the debts nor
/// the mark.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn accounting_goes_in_order_again_and_refuses_a_broken_line() {
    let cluster = cluster();
    let url = cluster.create_database("accounting").await.unwrap();
    let store = PostgresStore::connect(&url, 4).await.unwrap();
    // 1,300 records: 650 read calls, every third left owed.
    let mut open = Vec::new();
    for batch in 0..13 {
        let mut records = Vec::new();
        for i in 0..50 {
            let n = batch * 50 + i;
            let call = proposed(2 * n, &format!("read-{n}"));
            if n.is_multiple_of(3) {
                open.push(format!("read-{n}"));
                records.push(call);
                records.push(sample_record(2 * n + 1, "noise"));
            } else {
                records.push(executed(2 * n + 1, &call));
                records.insert(records.len() - 1, call);
            }
        }
        store.append_audit("s", records).await.unwrap();
    }
    let owed_now = async || {
        let mut calls: Vec<String> = store
            .owed_finals("s", Duration::ZERO, 2000)
            .await
            .unwrap()
            .iter()
            .map(|r| r.call_id.as_deref().unwrap().to_owned())
            .filter(|c| c.starts_with("read-"))
            .collect();
        calls.sort();
        calls
    };
    open.sort();
    assert_eq!(owed_now().await, open);
    let client = raw(&url).await;
    let count = async |sql: &str| client.query_one(sql, &[]).await.unwrap().get::<_, i64>(0);
    let debts = count("SELECT count(*) FROM agents_audit_debts").await;
    client.execute("UPDATE agents_audit_debt_marks SET seq = 0", &[]).await.unwrap();
    assert_eq!(owed_now().await, open, "accounted again: the same debts");
    assert_eq!(count("SELECT count(*) FROM agents_audit_debts").await, debts);
    assert_eq!(count("SELECT seq FROM agents_audit_debt_marks").await, 1300);

    // One more record (the head at 1301), and a line that is no record stored at 1302: beyond
    // the head it is no record of the chain and is not read; once the head is moved onto it,
    // it is refused.
    store.append_audit("s", vec![executed(2600, &proposed(2600, "read-x"))]).await.unwrap();
    client
        .execute(
            "INSERT INTO agents_audit (stream, seq, prev_hash, hash, line) VALUES ('s', 1302, 'x', 'y', 'not a record')",
            &[],
        )
        .await
        .unwrap();
    assert_eq!(owed_now().await, open, "the row beyond the head is not read");
    assert_eq!(count("SELECT seq FROM agents_audit_debt_marks").await, 1301);
    client.execute("UPDATE agents_audit_heads SET seq = 1302, hash = 'y' WHERE stream = 's'", &[]).await.unwrap();
    match store.owed_finals("s", Duration::ZERO, 10).await {
        Err(StoreError::Invalid(m)) => assert!(m.contains("1302") && m.contains("broken"), "{m}"),
        other => panic!("a broken line is refused: {other:?}"),
    }
    assert_eq!(count("SELECT seq FROM agents_audit_debt_marks").await, 1301, "the mark did not move");
    assert_eq!(count("SELECT count(*) FROM agents_audit_debts").await, debts, "the debts are as they were");
}

/// A debt read as owed whose call's final record is appended before the claim (its writer was
/// slow, not dead) cannot be claimed: the claim accounts for the new record first, so a
/// resumption does not write a second final record. The same on SQLite, where the append
/// pays the debt itself.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_debt_paid_after_it_was_read_is_not_claimed() {
    let cluster = cluster();
    let url = cluster.create_database("late").await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let sqlite = agents_store::SqliteStore::open(dir.path().join("state.db")).unwrap();
    let postgres = PostgresStore::connect(&url, 4).await.unwrap();
    for store in [&sqlite as &dyn Store, &postgres] {
        let call = proposed(1, "read-1");
        store.append_audit("s", vec![call.clone()]).await.unwrap();
        assert_eq!(owed(store, "s").await, [("read-1".to_owned(), 1)]);
        store.append_audit("s", vec![executed(2, &call)]).await.unwrap();
        let lease = Duration::from_secs(600);
        assert!(!store.claim_owed("s", "read-1", &call.run_id, "node-b", lease).await.unwrap(), "paid: no claim");
        assert!(owed(store, "s").await.is_empty());
    }
}

/// Someone who can write the debts table points a debt elsewhere: at another call's record, at
/// a record that is not stored, or moves it to another stream (where its `seq` is another
/// stream's record). Reading what is owed refuses each, naming the debt, rather than handing a
/// resumption a record that is not the call's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_debt_pointing_at_any_other_record_is_refused_when_read() {
    let cluster = cluster();
    let url = cluster.create_database("elsewhere").await.unwrap();
    let store = PostgresStore::connect(&url, 4).await.unwrap();
    store.append_audit("s", vec![proposed(1, "read-1"), sample_record(2, "a")]).await.unwrap();
    store.append_audit("t", vec![proposed(3, "read-3")]).await.unwrap();
    // The debts are derived from the records when first read.
    assert_eq!(owed(&store, "t").await, [("read-3".to_owned(), 1)]);
    assert_eq!(owed(&store, "s").await.len(), 2);
    let client = raw(&url).await;
    let expect_refused = async |sql: &str, stream: &str| {
        client.execute(sql, &[]).await.unwrap();
        match store.owed_finals(stream, Duration::ZERO, 100).await {
            Err(StoreError::Invalid(m)) => assert!(m.contains("read-1") && m.contains("broken"), "{m}"),
            other => panic!("after `{sql}`: {other:?}"),
        }
    };
    expect_refused("UPDATE agents_audit_debts SET seq = 2 WHERE call_id = 'read-1'", "s").await;
    expect_refused("UPDATE agents_audit_debts SET seq = 99 WHERE call_id = 'read-1'", "s").await;
    expect_refused("UPDATE agents_audit_debts SET seq = 1, stream = 't' WHERE call_id = 'read-1'", "t").await;
    client.execute("UPDATE agents_audit_debts SET stream = 's' WHERE call_id = 'read-1'", &[]).await.unwrap();
    let mut now = owed(&store, "s").await;
    now.sort();
    assert_eq!(now, [("call-a-2".to_owned(), 2), ("read-1".to_owned(), 1)], "put back, read as before");
}
