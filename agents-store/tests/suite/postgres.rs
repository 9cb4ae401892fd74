//! The PostgreSQL store against a real server: a throwaway cluster this test starts (Debian's
//! `postgresql` package must be installed; the tests fail, saying so, when it is not). The
//! second node is a separate process (`agents-store-node`) with its own connection pool.

use crate::common;

use agents_runtime::store::{DecideOutcome, Store, StoreError, StoredVerdict};
use agents_store::postgres::TempCluster;
use agents_store::{POSTGRES_MIGRATIONS, PostgresStore};
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, Command};

fn cluster() -> TempCluster {
    TempCluster::start().unwrap_or_else(|e| panic!("{e}"))
}

async fn store(cluster: &TempCluster, db: &str) -> (String, Arc<PostgresStore>) {
    let url = cluster.create_database(db).await.unwrap_or_else(|e| panic!("{e}"));
    let store = PostgresStore::connect(&url, 32).await.unwrap();
    (url, Arc::new(store))
}

/// The second node: a child process with its own pool.
struct Node {
    child: Child,
    lines: tokio::io::Lines<BufReader<tokio::process::ChildStdout>>,
}

impl Node {
    fn spawn(url: &str, args: &[&str]) -> Node {
        let mut child = Command::new(env!("CARGO_BIN_EXE_agents-store-node"))
            .arg(url)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("start agents-store-node");
        let lines = BufReader::new(child.stdout.take().unwrap()).lines();
        Node { child, lines }
    }

    async fn line(&mut self) -> String {
        self.lines.next_line().await.unwrap().expect("the node stopped early; see its stderr above")
    }

    async fn expect_ready(&mut self) {
        assert_eq!(self.line().await, "ready");
    }

    async fn go(&mut self) {
        let stdin = self.child.stdin.as_mut().unwrap();
        stdin.write_all(b"go\n").await.unwrap();
        stdin.flush().await.unwrap();
    }

    /// The number after `word` on the node's next line.
    async fn count(&mut self, word: &str) -> usize {
        let line = self.line().await;
        line.strip_prefix(word).and_then(|n| n.trim().parse().ok()).unwrap_or_else(|| panic!("node said {line:?}"))
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_store_keeps_the_contract() {
    let cluster = cluster();
    let (_, store) = store(&cluster, "contract").await;
    common::conformance(store.as_ref()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_pools_in_one_process_race_correctly() {
    let cluster = cluster();
    let (url, a) = store(&cluster, "pools").await;
    let b: Arc<dyn Store> = Arc::new(PostgresStore::connect(&url, 32).await.unwrap());
    common::race_redemptions(a.clone(), b.clone()).await;
    common::race_tree_closes(a.clone(), b.clone()).await;
    common::race_slots(a.clone(), b.clone()).await;
    common::race_session_saves(a.clone(), b.clone()).await;
    common::proposal_across(a.clone(), b.clone()).await;
    common::take_over_across(a.clone(), b.clone()).await;
    common::audit_across(a, b).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_processes_share_tokens_slots_decisions_and_the_chain() {
    let cluster = cluster();
    let (url, a) = store(&cluster, "nodes").await;

    // 1,000 concurrent redemptions of one token, 500 from each process.
    a.mint_token(&common::grant("shared", "s1"), common::LONG).await.unwrap();
    let mut b = Node::spawn(&url, &["redeem", "shared", "500"]);
    b.expect_ready().await;
    b.go().await;
    let tasks: Vec<_> = (0..500)
        .map(|_| {
            let a = a.clone();
            tokio::spawn(async move { a.redeem_token("shared").await.unwrap() })
        })
        .collect();
    let mut here = 0;
    for t in tasks {
        here += usize::from(matches!(t.await.unwrap(), agents_runtime::store::Redeemed::Taken { .. }));
    }
    let there = b.count("taken").await;
    assert_eq!(here + there, 1, "exactly one of 1,000 redemptions over two processes ({here} here, {there} there)");

    // A cap of 3 under 40 concurrent acquisitions, 20 from each process.
    let user = common::owner("capped");
    let mut b = Node::spawn(&url, &["acquire", "org-a", "capped", "3", "20", "600000"]);
    b.expect_ready().await;
    b.go().await;
    let tasks: Vec<_> = (0..20)
        .map(|_| {
            let (a, user) = (a.clone(), user.clone());
            tokio::spawn(async move { a.acquire_slot(&user, 3, common::LONG).await.unwrap() })
        })
        .collect();
    let mut here = 0;
    for t in tasks {
        here += usize::from(t.await.unwrap().is_some());
    }
    let there = b.count("acquired").await;
    assert_eq!(here + there, 3, "the cap of 3 held across processes ({here} here, {there} there)");
    assert_eq!(a.active_slots(&user).await.unwrap(), 3);

    // Proposed here, decided there, claimed concurrently by both: one claim.
    a.put_proposal(&common::proposal("cross", "ann")).await.unwrap();
    let mut b = Node::spawn(&url, &["decide", "cross", "org-b", "ann"]);
    assert_eq!(b.line().await, "decided NotYours", "another organisation cannot decide");
    let mut b = Node::spawn(&url, &["decide", "cross", "org-a", "ann"]);
    assert_eq!(b.line().await, "decided Recorded");
    assert_eq!(
        a.decide("cross", "org-a", "ann", StoredVerdict::Rejected, None, "").await.unwrap(),
        DecideOutcome::AlreadyDecided
    );
    let mut b = Node::spawn(&url, &["claim", "cross", "100"]);
    b.expect_ready().await;
    b.go().await;
    let tasks: Vec<_> = (0..100)
        .map(|i| {
            let a = a.clone();
            tokio::spawn(async move { a.claim_execution("cross", &format!("node-a-{i}"), "").await.unwrap() })
        })
        .collect();
    let mut here = 0;
    for t in tasks {
        here += usize::from(t.await.unwrap());
    }
    let there = b.count("claimed").await;
    assert_eq!(here + there, 1, "exactly one claim to execute ({here} here, {there} there)");

    // Concurrent appends from both processes (8 producers each, group-committed per node).
    let mut b = Node::spawn(&url, &["audit", "clinic", "8", "100"]);
    b.expect_ready().await;
    let sink = agents_runtime::store::StoreAuditSink::new(a.clone(), "clinic");
    b.go().await;
    let tasks: Vec<_> = (0..8)
        .map(|p| {
            let sink = sink.clone();
            tokio::spawn(async move {
                for i in 0..100 {
                    use agents_runtime::audit::AuditSink;
                    sink.append(agents_store::testing::sample_record(p * 100 + i, "a")).await.unwrap();
                }
            })
        })
        .collect();
    for t in tasks {
        t.await.unwrap();
    }
    assert_eq!(b.count("appended").await, 800);
    let summary = a.verify_audit("clinic").await.unwrap();
    assert_eq!(summary.records, 1600, "one chain holds every record of both processes");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_nodes_slot_comes_back_after_its_lease() {
    let cluster = cluster();
    let (url, a) = store(&cluster, "killed").await;
    let user = common::owner("solo");
    let lease = Duration::from_secs(3);
    let mut b = Node::spawn(&url, &["hold", "org-a", "solo", "1", &lease.as_millis().to_string()]);
    assert!(b.line().await.starts_with("held "));
    // While the node lives it renews: its slot outlasts several leases.
    tokio::time::sleep(lease * 3).await;
    assert_eq!(a.acquire_slot(&user, 1, common::LONG).await.unwrap(), None, "the live node still holds it");
    let pid = b.child.id().unwrap().to_string();
    let killed = std::process::Command::new("kill").args(["-9", &pid]).status().unwrap();
    assert!(killed.success());
    b.child.wait().await.unwrap();
    assert_eq!(a.acquire_slot(&user, 1, common::LONG).await.unwrap(), None, "the lease has not run out yet");
    tokio::time::sleep(lease * 2).await;
    assert!(a.acquire_slot(&user, 1, common::LONG).await.unwrap().is_some(), "the dead node's slot came back");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn migrations_apply_once_and_a_newer_schema_is_refused() {
    let cluster = cluster();
    let (url, a) = store(&cluster, "migrations").await;
    let newest = POSTGRES_MIGRATIONS.last().unwrap().version;
    assert_eq!(a.schema_version().await.unwrap(), newest);
    // Nodes starting together migrate once.
    let (b, c) = tokio::join!(PostgresStore::connect(&url, 2), PostgresStore::connect(&url, 2));
    assert_eq!(b.unwrap().schema_version().await.unwrap(), newest);
    assert_eq!(c.unwrap().schema_version().await.unwrap(), newest);

    let (client, conn) = tokio_postgres::connect(&url, tokio_postgres::NoTls).await.unwrap();
    tokio::spawn(conn);
    client
        .execute("INSERT INTO agents_schema_migrations (version, name) VALUES ($1, 'future')", &[&(newest + 1)])
        .await
        .unwrap();
    let tables = "SELECT count(*) FROM pg_tables WHERE schemaname = 'public'";
    let before: i64 = client.query_one(tables, &[]).await.unwrap().get(0);
    match PostgresStore::connect(&url, 2).await {
        Err(StoreError::NewerSchema { found, known }) => assert_eq!((found, known), (newest + 1, newest)),
        other => panic!("a newer schema must be refused, got {other:?}"),
    }
    let after: i64 = client.query_one(tables, &[]).await.unwrap().get(0);
    assert_eq!(before, after, "the refusal changed nothing");
}

/// The audit append is planned once per connection: its statements take arrays, for which
/// the server would otherwise plan every call afresh (about a quarter of its time for a batch
/// of one record, measured by the store bench). The plan mode is the function's own setting,
/// so it holds only while the append runs: the session's other statements keep the server's
/// choice. The head's advance is the append's own first statement (the function it called
/// before is gone), and a stale head is still refused, its batch sealed again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_audit_append_is_planned_once_and_still_refuses_a_stale_head() {
    use agents_store::testing::sample_record;
    let cluster = cluster();
    let (url, store) = store(&cluster, "planned").await;
    let sealed = store.append_audit("clinic", vec![sample_record(0, "a")]).await.unwrap();
    let (client, connection) = tokio_postgres::connect(&url, tokio_postgres::NoTls).await.unwrap();
    tokio::spawn(connection);
    let config: Vec<Option<Vec<String>>> = client
        .query("SELECT proconfig FROM pg_proc WHERE proname = 'agents_audit_append'", &[])
        .await
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    assert_eq!(config, [Some(vec!["plan_cache_mode=force_generic_plan".to_owned()])], "one append, planned once");
    let gone: i64 = client
        .query_one("SELECT count(*) FROM pg_proc WHERE proname = 'agents_audit_advance_fenced'", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(gone, 0, "the advance is the append's own statement");
    let mode: String = client.query_one("SHOW plan_cache_mode", &[]).await.unwrap().get(0);
    assert_eq!(mode, "auto", "the session's own mode is untouched");

    // A second node appends, so the first node's head is stale: its next append is refused
    // by the advance (SQLSTATE 40001, nothing stored), sealed again after the head read under
    // its lock, and stored after the second node's record. Were a stale head not refused, the
    // append would fail instead (its record on a taken `seq`, the head moved back).
    let other = PostgresStore::connect(&url, 2).await.unwrap();
    let theirs = other.append_audit("clinic", vec![sample_record(1, "b")]).await.unwrap();
    assert!(store.pipelines_audit("clinic"), "the head it left is known: the next batch may go behind the last");
    let ours = store.append_audit("clinic", vec![sample_record(2, "a")]).await.unwrap();
    assert_eq!((theirs[0].seq, ours[0].seq), (2, 3), "sealed again after the other node's record");
    assert!(
        !store.pipelines_audit("clinic"),
        "after a refusal (another node appends too) the next appends go one at a time"
    );
    assert_eq!(ours[0].prev_hash, theirs[0].hash);
    assert_eq!(sealed[0].seq, 1);
    let summary = store.verify_audit("clinic").await.unwrap();
    assert_eq!((summary.records, summary.last_hash.as_str()), (3, ours[0].hash.as_str()), "one chain");

    // A third node that has appended once sends its next two appends one behind the other;
    // the other node appends in between. The first is refused for its stale head, and the
    // second, sealed after the first, with it: both are sealed again after the head read
    // under its lock, and stored once each.
    let third = PostgresStore::connect(&url, 2).await.unwrap();
    assert!(!third.pipelines_audit("clinic"), "a head not yet read is read under its lock, one append at a time");
    third.append_audit("clinic", vec![sample_record(3, "c")]).await.unwrap();
    assert!(third.pipelines_audit("clinic"));
    other.append_audit("clinic", vec![sample_record(4, "b")]).await.unwrap();
    let (x, y) = tokio::join!(
        third.append_audit("clinic", vec![sample_record(5, "c")]),
        third.append_audit("clinic", vec![sample_record(6, "c")])
    );
    let mut seqs = [x.unwrap()[0].seq, y.unwrap()[0].seq];
    seqs.sort_unstable();
    assert_eq!(seqs, [6, 7], "both after the other node's record, once each");
    assert_eq!(store.verify_audit("clinic").await.unwrap().records, 7, "one chain");
}

/// Someone who can write the database, with plain SQL on the tables (not dropping triggers):
/// replacing an acknowledged record (an upsert on its key, an insert on its key, UPDATE,
/// DELETE, TRUNCATE) or moving the stream's head back, deleting or truncating it, is refused;
/// the chain verifies as it was, and appending continues it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_audit_tables_refuse_replacement_by_any_statement() {
    use agents_store::testing::sample_record;
    let cluster = cluster();
    let (url, store) = store(&cluster, "replace").await;
    let sealed = store.append_audit("clinic", (0..3).map(|i| sample_record(i, "a")).collect()).await.unwrap();
    let head = store.verify_audit("clinic").await.unwrap();
    let (client, connection) = tokio_postgres::connect(&url, tokio_postgres::NoTls).await.unwrap();
    tokio::spawn(connection);
    // A record that continues the plain chain after record 2 as well as record 3 does.
    let (forged, lines, _, _) = agents_runtime::store::seal_after(2, &sealed[1].hash, vec![sample_record(99, "x")]);
    let (prev, hash, line) = (&forged[0].prev_hash, &forged[0].hash, &lines[0]);
    let refused = async |sql: &str, params: &[&(dyn tokio_postgres::types::ToSql + Sync)]| match client
        .execute(sql, params)
        .await
    {
        Err(e) => e.as_db_error().map(|d| d.message().to_owned()).unwrap_or_else(|| e.to_string()),
        Ok(n) => panic!("`{sql}` was accepted ({n} rows)"),
    };
    let upsert = "INSERT INTO agents_audit (stream, seq, prev_hash, hash, line) VALUES ('clinic', 3, $1, $2, $3) \
                  ON CONFLICT (stream, seq) DO UPDATE SET prev_hash = excluded.prev_hash, hash = excluded.hash, line = excluded.line";
    assert!(refused(upsert, &[prev, hash, line]).await.contains("append-only"));
    let insert = "INSERT INTO agents_audit (stream, seq, prev_hash, hash, line) VALUES ('clinic', 3, $1, $2, $3)";
    assert!(refused(insert, &[prev, hash, line]).await.contains("duplicate key"));
    assert!(refused("UPDATE agents_audit SET line = $1 WHERE seq = 3", &[line]).await.contains("append-only"));
    assert!(refused("DELETE FROM agents_audit WHERE seq = 3", &[]).await.contains("append-only"));
    assert!(refused("TRUNCATE agents_audit", &[]).await.contains("append-only"));
    let rewind = "UPDATE agents_audit_heads SET seq = 2, hash = $1 WHERE stream = 'clinic'";
    assert!(refused(rewind, &[&sealed[1].hash]).await.contains("only moves forward"));
    let upsert_head = "INSERT INTO agents_audit_heads (stream, seq, hash) VALUES ('clinic', 2, $1) \
                       ON CONFLICT (stream) DO UPDATE SET seq = excluded.seq, hash = excluded.hash";
    assert!(refused(upsert_head, &[&sealed[1].hash]).await.contains("only moves forward"));
    assert!(refused("DELETE FROM agents_audit_heads", &[]).await.contains("only moves forward"));
    assert!(refused("TRUNCATE agents_audit_heads", &[]).await.contains("only moves forward"));

    let kept: String = client
        .query_one("SELECT hash FROM agents_audit WHERE stream = 'clinic' AND seq = 3", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(kept, sealed[2].hash, "the acknowledged record 3 is in place");
    assert_eq!(store.verify_audit("clinic").await.unwrap(), head, "the chain is the acknowledged one");
    store.append_audit("clinic", vec![sample_record(3, "a")]).await.unwrap();
    assert_eq!(store.verify_audit("clinic").await.unwrap().records, 4, "appending continues it");
}
