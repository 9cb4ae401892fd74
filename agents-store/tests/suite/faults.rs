//! Connection faults between a node and its database, injected for real: a TCP relay on
//! loopback in front of a throwaway PostgreSQL cluster cuts a connection at a chosen point of
//! the server's answers (after the server carried out a COMMIT or an INSERT, before its reply
//! reaches the store), an open transaction of another connection holds a lock, a caller gives
//! up half way, every connection is terminated again and again. Each test states what must
//! hold: an answer says what the database holds, a retry never doubles a record, every wait
//! ends, and every `proposed` record ends with exactly one final record (a model-based test
//! plays random schedules of calls, resumptions and faults on two nodes).

use crate::common;

use agents_runtime::audit::{AuditRecord, AuditStatus};
use agents_runtime::budget::BudgetStore;
use agents_runtime::provider::scripted::reply;
use agents_runtime::provider::{ChatResponse, ScriptedProvider, ToolCallRequest};
use agents_runtime::store::{Store, StoreAuditSink, StoreError};
use agents_runtime::{Runtime, Verdict};
use agents_store::postgres::TempCluster;
use agents_store::testing::leave::{Hr, SERVER_KEY, employee, executions, roles};
use agents_store::testing::sample_record;
use agents_store::{PostgresSettings, PostgresStore};
use std::sync::atomic::Ordering::SeqCst;
use std::sync::atomic::{AtomicBool, AtomicUsize};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

fn cluster() -> TempCluster {
    TempCluster::start().unwrap_or_else(|e| panic!("{e}"))
}

/// How long a test waits for something that must end well before: a hang detector, not a
/// measure of speed.
const HANG: Duration = Duration::from_secs(120);

/// A TCP relay on 127.0.0.1 in front of the cluster. Armed with a pattern, it forwards the
/// server's answers until one holds the pattern (say `COMMIT\0`, the tag of a carried-out
/// COMMIT), then closes both sides of that connection without forwarding that answer: the
/// server did the work, the client never hears of it.
struct Relay {
    port: u16,
    cut: Arc<Mutex<Cut>>,
    cuts: Arc<AtomicUsize>,
    /// How many of the next new connections are refused (closed at once).
    refuse: Arc<AtomicUsize>,
    /// Every byte the clients sent since [`Relay::watch_sent`], in the order the relay read
    /// them (none kept before).
    sent: Arc<Mutex<Option<Vec<u8>>>>,
}

/// The armed cut, if any.
#[derive(Default)]
struct Cut {
    /// Cut the first connection whose server answer holds this.
    reply: Option<Vec<u8>>,
    /// Only on a connection whose client sent this first (none: any connection).
    after_sending: Option<Vec<u8>>,
    /// Refuse this many new connections once cut.
    then_refuse: usize,
    /// Cut the first connection whose client sends this, before the server reads it (a
    /// transaction cut half way: the server rolls back what it began).
    sending: Option<Vec<u8>>,
    /// Close the client's side of the first connection whose client sends this at once, and
    /// hand what it sent to the server only after this delay (a lost connection whose
    /// statements reach the server late).
    holding: Option<(Vec<u8>, Duration)>,
}

impl Relay {
    async fn start(upstream: u16) -> Relay {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let relay =
            Relay { port, cut: Arc::default(), cuts: Arc::default(), refuse: Arc::default(), sent: Arc::default() };
        let (cut, cuts, refuse, sent) =
            (relay.cut.clone(), relay.cuts.clone(), relay.refuse.clone(), relay.sent.clone());
        tokio::spawn(async move {
            loop {
                let Ok((client, _)) = listener.accept().await else { return };
                if refuse.fetch_update(SeqCst, SeqCst, |n| n.checked_sub(1)).is_ok() {
                    drop(client);
                    continue;
                }
                let server = TcpStream::connect(("127.0.0.1", upstream)).await.unwrap();
                let link = Link { cut: cut.clone(), cuts: cuts.clone(), refuse: refuse.clone(), log: sent.clone() };
                tokio::spawn(link.pump(client, server));
            }
        });
        relay
    }

    fn conninfo(&self, dbname: &str) -> String {
        format!("host=127.0.0.1 port={} user=postgres dbname={dbname}", self.port)
    }

    /// Cuts the next connection whose server answer holds `reply`.
    fn cut_reply_holding(&self, reply: &[u8]) {
        *self.cut.lock().unwrap() = Cut { reply: Some(reply.to_vec()), ..Cut::default() };
    }

    /// Cuts the connection that sends `statement` at its next server answer holding `reply`,
    /// then refuses the next `refused` new connections.
    fn cut_after_sending(&self, statement: &[u8], reply: &[u8], refused: usize) {
        *self.cut.lock().unwrap() = Cut {
            reply: Some(reply.to_vec()),
            after_sending: Some(statement.to_vec()),
            then_refuse: refused,
            ..Cut::default()
        };
    }

    /// Cuts the connection whose client sends `statement`, without forwarding it.
    fn cut_when_sending(&self, statement: &[u8]) {
        *self.cut.lock().unwrap() = Cut { sending: Some(statement.to_vec()), ..Cut::default() };
    }

    /// Closes the client's side of the connection that sends `statement` at once, and hands
    /// the statement to the server after `delay`.
    fn hold_when_sending(&self, statement: &[u8], delay: Duration) {
        *self.cut.lock().unwrap() = Cut { holding: Some((statement.to_vec(), delay)), ..Cut::default() };
    }

    fn disarm(&self) {
        *self.cut.lock().unwrap() = Cut::default();
    }

    fn cuts(&self) -> usize {
        self.cuts.load(SeqCst)
    }

    /// Keeps what the clients send from now on, for [`Relay::has_sent`].
    fn watch_sent(&self) {
        *self.sent.lock().unwrap() = Some(Vec::new());
    }

    /// Whether a client has sent `pattern` through the relay since [`Relay::watch_sent`].
    fn has_sent(&self, pattern: &[u8]) -> bool {
        self.sent.lock().unwrap().as_deref().is_some_and(|sent| holds(sent, pattern))
    }

    /// Whether the armed cut is still waiting for its pattern.
    fn still_armed(&self) -> bool {
        self.cut.lock().unwrap().reply.is_some()
    }
}

fn holds(seen: &[u8], pattern: &[u8]) -> bool {
    seen.windows(pattern.len()).any(|w| w == pattern)
}

/// One relayed connection.
struct Link {
    cut: Arc<Mutex<Cut>>,
    cuts: Arc<AtomicUsize>,
    refuse: Arc<AtomicUsize>,
    log: Arc<Mutex<Option<Vec<u8>>>>,
}

impl Link {
    async fn pump(self, client: TcpStream, server: TcpStream) {
        let (mut client_read, mut client_write) = client.into_split();
        let (mut server_read, mut server_write) = server.into_split();
        // Whether this connection's client sent what the cut waits for.
        let sent = Arc::new(AtomicBool::new(false));
        let drop_client = Arc::new(tokio::sync::Notify::new());
        let upstream = {
            let (cut, cuts, sent, drop_client, log) =
                (self.cut.clone(), self.cuts.clone(), sent.clone(), drop_client.clone(), self.log.clone());
            tokio::spawn(async move {
                let mut buf = vec![0u8; 64 * 1024];
                loop {
                    let n = match client_read.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => n,
                    };
                    if let Some(log) = log.lock().unwrap().as_mut() {
                        log.extend_from_slice(&buf[..n]);
                    }
                    {
                        let mut cut = cut.lock().unwrap();
                        if cut.sending.as_deref().is_some_and(|p| holds(&buf[..n], p)) {
                            // Closing the server's side: it reads the end and rolls back.
                            *cut = Cut::default();
                            cuts.fetch_add(1, SeqCst);
                            return;
                        }
                        if cut.after_sending.as_deref().is_some_and(|p| holds(&buf[..n], p)) {
                            sent.store(true, SeqCst);
                        }
                        if let Some((_, delay)) = cut.holding.clone().filter(|(p, _)| holds(&buf[..n], p)) {
                            *cut = Cut::default();
                            cuts.fetch_add(1, SeqCst);
                            drop_client.notify_one();
                            let held = buf[..n].to_vec();
                            tokio::spawn(async move {
                                tokio::time::sleep(delay).await;
                                let _ = server_write.write_all(&held).await;
                                // The server reads what it was sent, then the end.
                                tokio::time::sleep(Duration::from_secs(1)).await;
                                drop(server_write);
                            });
                            return;
                        }
                    }
                    if server_write.write_all(&buf[..n]).await.is_err() {
                        return;
                    }
                }
            })
        };
        let mut seen: Vec<u8> = Vec::new();
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            let read = tokio::select! {
                read = server_read.read(&mut buf) => read,
                () = drop_client.notified() => break,
            };
            let n = match read {
                Ok(0) | Err(_) => break,
                Ok(n) => n,
            };
            let hit = {
                let mut cut = self.cut.lock().unwrap();
                let here = cut.after_sending.is_none() || sent.load(SeqCst);
                match cut.reply.clone() {
                    // The answers of this connection since the cut was armed here (a pattern
                    // may straddle two reads); none from before.
                    Some(p) if here => {
                        seen.extend_from_slice(&buf[..n]);
                        let hit = holds(&seen, &p);
                        if hit {
                            self.refuse.store(cut.then_refuse, SeqCst);
                            *cut = Cut::default();
                        }
                        hit
                    }
                    _ => {
                        seen.clear();
                        false
                    }
                }
            };
            if hit {
                self.cuts.fetch_add(1, SeqCst);
                break;
            }
            if seen.len() > 4096 {
                seen.drain(..seen.len() - 64);
            }
            if client_write.write_all(&buf[..n]).await.is_err() {
                break;
            }
        }
        upstream.abort();
    }
}

/// A database of its own on `cluster` (its direct address, for an operator's view), the relay
/// in front of the cluster, and a store of `pool` connections through the relay.
async fn relayed(cluster: &TempCluster, db: &str, pool: usize) -> (String, Relay, PostgresStore) {
    let direct = cluster.create_database(db).await.unwrap();
    let relay = Relay::start(cluster.port()).await;
    let store = PostgresStore::connect(&relay.conninfo(db), pool).await.unwrap();
    (direct, relay, store)
}

/// A plain connection of its own (an operator's session, another node's transaction).
async fn raw(conninfo: &str) -> tokio_postgres::Client {
    let (client, connection) = tokio_postgres::connect(conninfo, tokio_postgres::NoTls).await.unwrap();
    tokio::spawn(connection);
    client
}

async fn stored_records(conninfo: &str, stream: &str) -> Vec<String> {
    let client = raw(conninfo).await;
    let rows = client.query("SELECT line FROM agents_audit WHERE stream = $1 ORDER BY seq", &[&stream]).await.unwrap();
    rows.iter().map(|r| r.get(0)).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_append_whose_commit_reply_is_lost_is_read_back_and_acknowledged_once() {
    let cluster = cluster();
    let (direct, relay, store) = relayed(&cluster, "lost_commit", 4).await;
    // The first append of a stream reads the head under its lock (two round trips, the second
    // ends with COMMIT), the next ones send one statement after the head they left, its own
    // transaction, whose one answer (`SELECT 1`) follows its commit: both lose that reply.
    for (i, tag) in [b"COMMIT\0".as_slice(), b"SELECT 1\0"].into_iter().enumerate() {
        relay.cut_reply_holding(tag);
        let sealed = tokio::time::timeout(HANG, store.append_audit("s", vec![sample_record(i, "a")]))
            .await
            .expect("the append ends");
        assert!(!relay.still_armed() && relay.cuts() == i + 1, "the relay cut the COMMIT's reply");
        let sealed = sealed.expect("a COMMIT carried out is acknowledged, though its reply was lost");
        assert_eq!(sealed[0].seq, i as u64 + 1);
        let lines = stored_records(&direct, "s").await;
        assert_eq!(lines.len(), i + 1, "stored once, never twice");
        assert_eq!(lines[i], sealed[0].to_line(), "the acknowledged record is the stored one");
    }
    // The chain goes on from the record read back.
    store.append_audit("s", vec![sample_record(9, "a")]).await.unwrap();
    assert_eq!(store.verify_audit("s").await.unwrap().records, 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_append_cut_at_any_answer_is_acknowledged_exactly_when_stored() {
    let cluster = cluster();
    let (direct, relay, store) = relayed(&cluster, "cut_anywhere", 4).await;
    let other = PostgresStore::connect(&direct, 2).await.unwrap();
    store.append_audit("s", vec![sample_record(0, "a")]).await.unwrap();
    // An append after the head this node left is one statement, whose one answer (`SELECT 1`)
    // follows its commit. When another node appended first, that statement is refused and
    // the head is read under its lock: the answers are then BEGIN, the head's read (`INSERT 0
    // 1`), the append (`SELECT 1`) and COMMIT. Cut at each, twice.
    let cases = [
        (false, b"SELECT 1\0".as_slice()),
        (true, b"BEGIN\0"),
        (true, b"INSERT 0 1\0"),
        (true, b"SELECT 1\0"),
        (true, b"COMMIT\0"),
    ];
    let (mut acknowledged, mut elsewhere) = (1, 0);
    for (i, &(other_first, tag)) in cases.iter().cycle().take(10).enumerate() {
        if other_first {
            other.append_audit("s", vec![sample_record(100 + i, "b")]).await.unwrap();
            elsewhere += 1;
        }
        relay.cut_reply_holding(tag);
        let answer = tokio::time::timeout(HANG, store.append_audit("s", vec![sample_record(i + 1, "a")]))
            .await
            .expect("the append ends");
        relay.disarm();
        let lines = stored_records(&direct, "s").await;
        match answer {
            Ok(sealed) => {
                acknowledged += 1;
                assert_eq!(lines.last(), Some(&sealed[0].to_line()), "acknowledged: stored (cut at {tag:?})");
            }
            Err(e) => assert!(
                !lines.iter().any(|l| l.contains(&format!("req-a-{}", i + 1))),
                "refused ({e}): not stored (cut at {tag:?})"
            ),
        }
        assert_eq!(
            lines.len(),
            acknowledged + elsewhere,
            "every stored record was acknowledged, once (cut at {tag:?})"
        );
    }
    assert_eq!(relay.cuts(), 10, "the relay cut every case's connection");
    assert_eq!(store.verify_audit("s").await.unwrap().records, acknowledged + elsewhere);
}

/// The race a read-back alone loses: the lost connection's pipeline reaches the server only
/// after the read-back found nothing and the append was answered as not stored. The read-back
/// moved the stream's fence on first, so the late pipeline fails on it and stores nothing: an
/// append refused is never stored later.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_append_that_reaches_the_server_after_its_read_back_stores_nothing() {
    let cluster = cluster();
    let (direct, relay, store) = relayed(&cluster, "late_pipeline", 4).await;
    store.append_audit("s", vec![sample_record(1, "a")]).await.unwrap();
    relay.hold_when_sending(b"req-a-2", Duration::from_secs(1));
    let answer = tokio::time::timeout(HANG, store.append_audit("s", vec![sample_record(2, "a")]))
        .await
        .expect("the append ends");
    assert_eq!(relay.cuts(), 1, "the relay held the append's pipeline");
    let e = answer.expect_err("read back before the pipeline reached the server: not stored");
    // The held pipeline reaches the server now.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let lines = stored_records(&direct, "s").await;
    assert_eq!(lines.len(), 1, "refused ({e}), and never stored later");
    store.append_audit("s", vec![sample_record(3, "a")]).await.expect("the chain goes on");
    assert_eq!(store.verify_audit("s").await.unwrap().records, 2);
}

/// Two appends called one after the other without waiting: the second is sealed after the
/// head the first leaves and sent on the same connection while the first is still waiting for
/// the head's lock (held here by an operator's transaction); the server runs them in that
/// order. Were the second sent only once the first was answered, it would not reach the relay
/// while the lock is held; were it sent on a connection of its own, it would wait for one
/// (the pool holds one connection) and never leave, or (with more) two statements would wait
/// for the lock.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_next_batch_is_sent_behind_the_last_one_before_its_answer() {
    let cluster = cluster();
    let (direct, relay, store) = relayed(&cluster, "pipelined", 1).await;
    store.append_audit("s", vec![sample_record(0, "first")]).await.unwrap();
    relay.watch_sent();
    let operator = raw(&direct).await;
    operator.batch_execute("BEGIN; SELECT 1 FROM agents_audit_heads WHERE stream = 's' FOR UPDATE").await.unwrap();
    let first = store.append_audit("s", vec![sample_record(1, "first")]);
    let second = store.append_audit("s", vec![sample_record(2, "second")]);
    let watch = async {
        tokio::time::timeout(HANG, async {
            while !relay.has_sent(b"call-second-2") {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        })
        .await
        .expect("the second batch leaves while the first waits for the head's lock");
        let waiting: i64 = operator
            .query_one(
                "SELECT count(*) FROM pg_stat_activity WHERE query LIKE 'SELECT agents_audit_append%' \
                 AND state = 'active'",
                &[],
            )
            .await
            .unwrap()
            .get(0);
        assert_eq!(waiting, 1, "both batches on one connection, the second behind the first");
        operator.batch_execute("COMMIT").await.unwrap();
    };
    let ((), first, second) = tokio::time::timeout(HANG, async { tokio::join!(watch, first, second) })
        .await
        .expect("both appends end once the lock is released");
    let (first, second) = (first.unwrap(), second.unwrap());
    assert_eq!((first[0].seq, second[0].seq), (2, 3), "sealed in the order of the calls");
    assert_eq!(second[0].prev_hash, first[0].hash);
    let lines = stored_records(&direct, "s").await;
    assert_eq!(lines[1..], [first[0].to_line(), second[0].to_line()], "stored as acknowledged");
    assert_eq!(store.verify_audit("s").await.unwrap().records, 3);
}

/// The reply to the first of two batches in flight is lost, which loses the connection and
/// the second's reply with it: each is read back, and acknowledged exactly when it is stored.
/// The second may have reached the server before the first's read-back moved the stream's
/// fence on (then it is stored) or after (then it is refused and never stored later); either
/// way the answer says what the database holds, and the chain goes on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_batches_in_flight_whose_replies_are_lost_are_acknowledged_exactly_when_stored() {
    let cluster = cluster();
    let (direct, relay, store) = relayed(&cluster, "pipelined_lost", 4).await;
    for round in 0..3 {
        // The head is known after an append that went through, so the next two are sent one
        // behind the other (after a failure the head is read under its lock, one at a time).
        store.append_audit("s", vec![sample_record(10 * round, "a")]).await.unwrap();
        relay.cut_reply_holding(b"SELECT 1\0");
        let (first, second) = tokio::time::timeout(HANG, async {
            tokio::join!(
                store.append_audit("s", vec![sample_record(10 * round + 1, "a")]),
                store.append_audit("s", vec![sample_record(10 * round + 2, "a")])
            )
        })
        .await
        .expect("both appends end");
        assert!(!relay.still_armed(), "the relay cut the first batch's reply");
        let lines = stored_records(&direct, "s").await;
        let first = first.expect("the first batch's statement was carried out: read back and acknowledged");
        assert!(lines.contains(&first[0].to_line()), "acknowledged and stored");
        match second {
            Ok(sealed) => assert!(lines.contains(&sealed[0].to_line()), "acknowledged and stored"),
            Err(e) => assert!(
                !lines.iter().any(|l| l.contains(&format!("req-a-{}\"", 10 * round + 2))),
                "refused ({e}) and not stored"
            ),
        }
        tokio::time::sleep(Duration::from_millis(1500)).await;
        let later = stored_records(&direct, "s").await;
        assert_eq!(later, lines, "nothing refused is stored later");
    }
    store.append_audit("s", vec![sample_record(99, "a")]).await.expect("the chain goes on");
    store.verify_audit("s").await.unwrap();
}

/// The audit sink keeps two batches in flight, never three: while an operator's transaction
/// holds the stream's head, the sink's first batch waits for the lock, its second is sent
/// behind it, and a third record waits in the sink. Once the lock is released, all three are
/// acknowledged in the order they were appended, in one chain.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_audit_sink_sends_a_second_batch_before_the_first_is_answered_and_no_third() {
    let cluster = cluster();
    let (direct, relay, store) = relayed(&cluster, "sink_in_flight", 4).await;
    let store: Arc<dyn Store> = Arc::new(store);
    let sink = StoreAuditSink::new(store.clone(), "s");
    use agents_runtime::audit::AuditSink;
    sink.append(sample_record(0, "warm")).await.unwrap();
    relay.watch_sent();
    let operator = raw(&direct).await;
    operator.batch_execute("BEGIN; SELECT 1 FROM agents_audit_heads WHERE stream = 's' FOR UPDATE").await.unwrap();
    let sent = |marker: &'static [u8]| {
        let relay = &relay;
        async move {
            tokio::time::timeout(HANG, async {
                while !relay.has_sent(marker) {
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
            })
            .await
            .is_ok()
        }
    };
    let first = sink.append(sample_record(1, "first"));
    let watch = async {
        assert!(sent(b"call-first-1").await, "the first batch is sent");
        let second = sink.append(sample_record(2, "second"));
        assert!(sent(b"call-second-2").await, "the second batch is sent while the first waits for the lock");
        let third = sink.append(sample_record(3, "third"));
        tokio::time::sleep(Duration::from_millis(500)).await;
        assert!(!relay.has_sent(b"call-third-3"), "a third batch waits until one of the two is answered");
        operator.batch_execute("COMMIT").await.unwrap();
        tokio::try_join!(second, third)
    };
    let (first, rest) = tokio::time::timeout(HANG, async { tokio::join!(first, watch) }).await.expect("all end");
    let (first, (second, third)) = (first.unwrap(), rest.unwrap());
    assert_eq!([first.seq, second.seq, third.seq], [2, 3, 4], "acknowledged in the order appended");
    assert_eq!(store.verify_audit("s").await.unwrap().records, 4);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_proposal_whose_insert_reply_is_lost_is_stored_once_and_acknowledged() {
    let cluster = cluster();
    let (direct, relay, store) = relayed(&cluster, "lost_insert", 4).await;
    let p = common::proposal("call-lost", "ann");
    relay.cut_reply_holding(b"INSERT 0 1\0");
    let put = tokio::time::timeout(HANG, store.put_proposal(&p)).await.expect("the insert ends");
    assert_eq!(relay.cuts(), 1, "the relay cut the insert's reply");
    put.expect("an insert carried out is acknowledged, though its reply was lost");
    let client = raw(&direct).await;
    let n: i64 = client
        .query_one("SELECT count(*) FROM agents_proposals WHERE call_id = 'call-lost'", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(n, 1);
    assert_eq!(store.proposal("call-lost").await.unwrap().map(|s| s.proposal), Some(p.clone()));
    // Another proposal under the taken id is still refused (identity decides, not a retry).
    let other = common::proposal("call-lost", "bob");
    relay.cut_reply_holding(b"INSERT 0 1\0");
    assert!(matches!(store.put_proposal(&other).await, Err(StoreError::Invalid(_))), "the id is taken");
    relay.disarm();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_budget_reservation_given_up_half_way_leaves_no_transaction_open() {
    let cluster = cluster();
    let url = cluster.create_database("given_up").await.unwrap();
    // One pooled connection, so the next write takes the one the reservation used.
    let store = PostgresStore::connect(&url, 1).await.unwrap();
    store.set_budget_cap("org1", Some("u1"), 100.0).await.unwrap();
    store.record("org1", "u1", 1.0).await.unwrap();
    // Another transaction holds the user's account row: the reservation waits on it.
    let mut operator = raw(&url).await;
    let holding = operator.transaction().await.unwrap();
    holding
        .execute("SELECT 1 FROM agents_budget_accounts WHERE org_id = 'org1' AND user_id = 'u1' FOR UPDATE", &[])
        .await
        .unwrap();
    let gave_up = tokio::time::timeout(Duration::from_millis(500), store.reserve("org1", "u1", 1.0)).await;
    assert!(gave_up.is_err(), "the reservation waited on the lock and its caller gave up");
    holding.commit().await.unwrap();
    // The next write on the pooled connection is stored for everyone to see.
    tokio::time::timeout(HANG, store.set_budget_cap("org1", None, 55.0)).await.expect("ends").unwrap();
    let other = raw(&url).await;
    let cap: Option<f64> = other
        .query_opt("SELECT cap_usd FROM agents_budget_caps WHERE org_id = 'org1' AND user_id = ''", &[])
        .await
        .unwrap()
        .map(|r| r.get(0));
    assert_eq!(cap, Some(55.0), "the write after a given-up reservation is committed, not left in its transaction");
}

fn quick() -> PostgresSettings {
    PostgresSettings {
        max_connections: 1,
        acquire_timeout: Duration::from_millis(500),
        lock_timeout: Duration::from_secs(2),
        statement_timeout: Duration::from_secs(4),
        ..PostgresSettings::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_held_lock_and_a_busy_pool_end_the_wait_with_an_error() {
    let cluster = cluster();
    let url = cluster.create_database("waits_end").await.unwrap();
    let store = Arc::new(PostgresStore::connect_with(&url, quick()).await.unwrap());
    store.append_audit("s", vec![sample_record(0, "a")]).await.unwrap();
    // An operator's open transaction holds the stream's head.
    let mut operator = raw(&url).await;
    let holding = operator.transaction().await.unwrap();
    holding.execute("SELECT 1 FROM agents_audit_heads WHERE stream = 's' FOR UPDATE", &[]).await.unwrap();
    let waited = tokio::time::timeout(HANG, store.append_audit("s", vec![sample_record(1, "a")]))
        .await
        .expect("a wait on a held lock ends");
    let e = waited.expect_err("the append fails closed");
    assert!(matches!(e, StoreError::Unavailable(_)) && e.to_string().contains("lock"), "{e}");
    // The pool's one connection busy on a held lock: another operation gets none in time.
    let blocked = {
        let store = store.clone();
        tokio::spawn(async move { store.append_audit("s", vec![sample_record(2, "a")]).await })
    };
    tokio::time::sleep(Duration::from_millis(200)).await;
    let e = tokio::time::timeout(HANG, store.prune_tokens()).await.expect("a wait for a connection ends").unwrap_err();
    assert!(e.to_string().contains("acquire timeout"), "{e}");
    assert!(blocked.await.unwrap().is_err());
    holding.rollback().await.unwrap();
    store.append_audit("s", vec![sample_record(3, "a")]).await.expect("once the lock is free, appends go on");
    assert_eq!(store.verify_audit("s").await.unwrap().records, 2, "the refused appends stored nothing");
}

#[tokio::test]
async fn a_zero_timeout_is_refused_before_connecting() {
    let zero = PostgresSettings { lock_timeout: Duration::ZERO, ..PostgresSettings::default() };
    let e = PostgresStore::connect_with("host=127.0.0.1 port=1 user=postgres", zero).await.unwrap_err();
    assert!(matches!(e, StoreError::Invalid(_)) && e.to_string().contains("lock_timeout"), "{e}");
}

fn leave(days: u32) -> ChatResponse {
    ChatResponse {
        content: String::new(),
        tool_calls: vec![ToolCallRequest {
            id: "call_1".into(),
            name: "submit_leave".into(),
            arguments: format!(r#"{{"days": {days}}}"#),
        }],
        usage: Default::default(),
    }
}

/// A node whose state is in `store` and whose audit log is stream `audit` of `log`.
fn node(store: Arc<dyn Store>, log: Arc<dyn Store>, script: Vec<ChatResponse>) -> Runtime {
    Runtime::builder(Arc::new(StoreAuditSink::new(log, "audit")), Arc::new(ScriptedProvider::new(script)))
        .roles(roles())
        .server_key(SERVER_KEY)
        .store(store)
        .decision_poll(Duration::from_millis(20))
        .run_slot_lease(Duration::from_millis(300))
        .settle_lease(Duration::ZERO)
        .build()
}

/// A dialog proposal whose insert went through while its reply was lost, and whose read-back
/// failed too (the node could not reconnect): the call ends `skipped` ("nothing ran"), and the
/// stored row is withdrawn, so it is not listed for a decision and a late approval runs
/// nothing, on any node.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_proposal_stored_behind_a_lost_reply_is_withdrawn_not_left_runnable() {
    withdrawn_behind_a_lost_reply(1).await;
}

/// The same, with the database unreachable for the withdrawal too: it is tried again in the
/// background until the database answers.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_proposal_the_store_cannot_withdraw_at_once_is_withdrawn_once_it_answers() {
    withdrawn_behind_a_lost_reply(2).await;
}

/// A dialog proposal's insert carried out, its reply lost, and the next `refused` connections
/// refused (the read-back's, then the withdrawal's).
async fn withdrawn_behind_a_lost_reply(refused: usize) {
    let cluster = cluster();
    let direct = cluster.create_database("unkept").await.unwrap();
    let relay = Relay::start(cluster.port()).await;
    let settings = PostgresSettings { max_connections: 1, ..PostgresSettings::default() };
    let through_relay: Arc<dyn Store> =
        Arc::new(PostgresStore::connect_with(&relay.conninfo("unkept"), settings).await.unwrap());
    let log: Arc<dyn Store> = Arc::new(PostgresStore::connect(&direct, 4).await.unwrap());
    let session = format!("unkept-{}", uuid::Uuid::new_v4().simple());
    let node_a = node(through_relay, log.clone(), vec![leave(4), reply("done")]);
    // The proposal's insert is carried out, its reply lost; reading it back finds no connection.
    relay.cut_after_sending(b"INSERT INTO agents_proposals", b"INSERT 0 1\0", refused);
    let run = node_a.start::<Hr>(employee(), &session, "four days".into()).unwrap();
    tokio::time::timeout(HANG, run.wait()).await.expect("the run ends").expect("the run goes on after the call");
    assert_eq!(relay.cuts(), 1, "the relay cut the insert's reply");
    let lines = stored_records(&direct, "audit").await;
    let records: Vec<AuditRecord> = lines.iter().map(|l| serde_json::from_str(l).unwrap()).collect();
    let statuses: Vec<AuditStatus> = records.iter().filter(|r| r.tool.is_some()).map(|r| r.status).collect();
    assert_eq!(statuses, [AuditStatus::Proposed, AuditStatus::Skipped], "one final record: nothing ran");
    let call_id = records.iter().find_map(|r| r.call_id.as_deref()).unwrap().to_owned();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    let row = loop {
        let row = log.proposal(&call_id).await.unwrap().expect("the insert went through");
        if row.verdict.is_some() || tokio::time::Instant::now() > deadline {
            break row;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert!(row.verdict.is_some() && row.settled_by.is_some(), "withdrawn, not left undecided: {row:?}");
    let node_b = node(log.clone(), log.clone(), vec![]);
    assert!(node_b.pending_decisions(&employee()).await.unwrap().is_empty(), "not listed for a decision");
    assert!(node_b.decide_async(&call_id, &employee(), Verdict::Approve, None).await.is_err(), "nor decidable");
    tokio::time::sleep(Duration::from_millis(700)).await;
    assert!(node_b.resume_orphaned::<Hr>().await.unwrap().is_empty(), "nothing to carry out");
    assert_eq!(executions(&session), 0, "nothing ran");
    assert_eq!(stored_records(&direct, "audit").await.len(), lines.len(), "still one final record");
    log.verify_audit("audit").await.expect("the chain verifies");
}

/// An agent with one read tool, for the debts of read calls.
mod lookup {
    use agents_runtime::{ToolContext, agent, permissions, tool};

    permissions! {
        pub mod perms { leave.read }
    }

    static EXECUTIONS: crate::common::ExecutionCount = crate::common::ExecutionCount::new();

    /// How often the tool ran in `session`.
    pub fn executions(session: &str) -> usize {
        EXECUTIONS.of(session)
    }

    /// Reads the leave balance.
    ///
    /// # Arguments
    ///
    /// * `year` - the year asked about
    #[tool(permission = perms::leave::read)]
    async fn leave_balance(cx: &ToolContext<'_>, year: u32) -> Result<String, String> {
        EXECUTIONS.ran(cx.session_id());
        Ok(format!("{} has 12 days left in {year}", cx.principal().user_id))
    }

    agent! {
        /// Answers questions about leave.
        pub struct Lookup;
        tools: [leave_balance],
    }
}

/// A node of the lookup agent whose state and audit log (stream `audit`) are in `store`.
fn lookup_node(store: Arc<dyn Store>, script: Vec<ChatResponse>) -> Runtime {
    Runtime::builder(Arc::new(StoreAuditSink::new(store.clone(), "audit")), Arc::new(ScriptedProvider::new(script)))
        .roles(agents_runtime::RoleMap::new().role("employee", ["leave.read"]))
        .store(store)
        .run_slot_lease(Duration::from_millis(300))
        .settle_lease(Duration::ZERO)
        .build()
}

fn balance() -> ChatResponse {
    ChatResponse {
        content: String::new(),
        tool_calls: vec![ToolCallRequest {
            id: "call_1".into(),
            name: "leave_balance".into(),
            arguments: r#"{"year": 2026}"#.into(),
        }],
        usage: Default::default(),
    }
}

/// The records of stream `audit` with a call id, in chain order.
async fn call_records(conninfo: &str) -> Vec<AuditRecord> {
    let lines = stored_records(conninfo, "audit").await;
    lines.iter().map(|l| serde_json::from_str::<AuditRecord>(l).unwrap()).filter(|r| r.call_id.is_some()).collect()
}

/// A read call's `proposed` record is acknowledged, then its connection is cut half way
/// through the transaction of its `executed` record (nothing of it stored): the debt of the
/// `proposed` record is in the database, kept by the transaction that appended it, so a
/// resumption on another node writes the one final record (`failed`, `abandoned: ...`, the
/// tool may have run), once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_final_record_whose_write_failed_is_owed_and_written_once_by_a_resumption() {
    let cluster = cluster();
    let direct = cluster.create_database("owed").await.unwrap();
    let relay = Relay::start(cluster.port()).await;
    let through_relay: Arc<dyn Store> = Arc::new(PostgresStore::connect(&relay.conninfo("owed"), 4).await.unwrap());
    let node_a = lookup_node(through_relay, vec![balance(), reply("done")]);
    relay.cut_when_sending(br#""status":"executed""#);
    let run = node_a.start::<lookup::Lookup>(employee(), "owed-session", "my balance?".into()).unwrap();
    let _ = tokio::time::timeout(HANG, run.wait()).await.expect("the run ends");
    assert_eq!(relay.cuts(), 1, "the executed record's transaction was cut");
    let records = call_records(&direct).await;
    assert_eq!(
        records.iter().map(|r| r.status).collect::<Vec<_>>(),
        [AuditStatus::Proposed],
        "its final record failed"
    );

    let log: Arc<dyn Store> = Arc::new(PostgresStore::connect(&direct, 4).await.unwrap());
    let node_b = lookup_node(log.clone(), vec![]);
    let resumed = node_b.resume_orphaned::<lookup::Lookup>().await.unwrap();
    assert_eq!(resumed.len(), 1, "{resumed:?}");
    assert!(resumed[0].recorded && resumed[0].status == AuditStatus::Failed, "{resumed:?}");
    let node_c = lookup_node(log.clone(), vec![]);
    assert!(node_c.resume_orphaned::<lookup::Lookup>().await.unwrap().is_empty(), "paid: owed no more, on any node");
    assert!(node_b.resume_orphaned::<lookup::Lookup>().await.unwrap().is_empty());
    let records = call_records(&direct).await;
    let statuses: Vec<AuditStatus> = records.iter().map(|r| r.status).collect();
    assert_eq!(statuses, [AuditStatus::Proposed, AuditStatus::Failed], "exactly one final record");
    assert_eq!(records[1].call_id, records[0].call_id);
    assert!(records[1].reason.as_deref().unwrap_or_default().starts_with("abandoned:"), "{:?}", records[1].reason);
    log.verify_audit("audit").await.expect("the chain verifies");
}

/// The debts of a stream, on both stores: opened by a `proposed` record, paid by its final
/// record, each in the transaction that appends it; a call with a kept proposal is left to the
/// proposal's claims; a debt is claimed by one claimer per lease.
async fn debts_follow_the_records(store: &dyn Store) {
    let read = |i: usize| agents_runtime::audit::AuditRecord {
        tier: Some(agents_runtime::Tier::Read),
        ..sample_record(i, "a")
    };
    let mut proposed = read(1);
    proposed.call_id = Some("read-1".into());
    store.append_audit("s", vec![proposed.clone()]).await.unwrap();
    let mut kept = sample_record(2, "a");
    kept.call_id = Some("action-2".into());
    store.put_proposal(&common::proposal("action-2", "ann")).await.unwrap();
    store.append_audit("s", vec![kept]).await.unwrap();
    let owed = store.owed_finals("s", Duration::ZERO, 10).await.unwrap();
    assert_eq!(owed.iter().map(|r| r.call_id.as_deref().unwrap()).collect::<Vec<_>>(), ["read-1"]);
    assert_eq!(owed[0].seq, 1, "the stored `proposed` record itself");
    assert!(store.owed_finals("other", Duration::ZERO, 10).await.unwrap().is_empty(), "per stream");
    assert!(store.owed_finals("s", common::LONG, 10).await.unwrap().is_empty(), "owed for less than that");
    let run = proposed.run_id.to_string();
    assert!(!store.claim_owed("s", "read-1", "another-run", "node-a", common::LONG).await.unwrap(), "per run");
    assert!(store.claim_owed("s", "read-1", &run, "node-a", common::LONG).await.unwrap());
    assert!(!store.claim_owed("s", "read-1", &run, "node-b", common::LONG).await.unwrap(), "one claimer per lease");
    assert!(store.owed_finals("s", common::SHORT, 10).await.unwrap().is_empty(), "claimed within the lease");
    // A read call's id is the provider's, which another run reuses: only its own run's final
    // record pays it.
    let mut other_run = read(3);
    other_run.call_id = Some("read-1".into());
    other_run.run_id = "another-run".into();
    other_run.status = AuditStatus::Executed;
    store.append_audit("s", vec![other_run]).await.unwrap();
    assert_eq!(store.owed_finals("s", Duration::ZERO, 10).await.unwrap().len(), 1, "another run's record pays nothing");
    let mut last = read(4);
    last.call_id = Some("read-1".into());
    last.run_id = run.as_str().into();
    last.status = AuditStatus::Executed;
    store.append_audit("s", vec![last]).await.unwrap();
    assert!(store.owed_finals("s", Duration::ZERO, 10).await.unwrap().is_empty(), "paid by its final record");
    assert!(!store.claim_owed("s", "read-1", &run, "node-b", Duration::ZERO).await.unwrap(), "nothing left to claim");
    // An action's final record pays its call's debt whatever run writes it (a later turn of
    // the session carries out a conversational approval).
    let mut action = sample_record(5, "a");
    action.call_id = Some("action-5".into());
    store.append_audit("s", vec![action]).await.unwrap();
    assert_eq!(store.owed_finals("s", Duration::ZERO, 10).await.unwrap().len(), 1);
    let mut done = sample_record(6, "a");
    done.call_id = Some("action-5".into());
    done.run_id = "a-later-turn".into();
    done.status = AuditStatus::Executed;
    store.append_audit("s", vec![done]).await.unwrap();
    assert!(store.owed_finals("s", Duration::ZERO, 10).await.unwrap().is_empty(), "paid by the call id");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn debts_follow_the_records_on_sqlite_and_postgres() {
    let dir = tempfile::tempdir().unwrap();
    debts_follow_the_records(&agents_store::SqliteStore::open(dir.path().join("state.db")).unwrap()).await;
    let cluster = cluster();
    let url = cluster.create_database("debts").await.unwrap();
    debts_follow_the_records(&PostgresStore::connect(&url, 4).await.unwrap()).await;
}

/// Runs of a read call while another session terminates every connection of the node
/// (`pg_terminate_backend`) again and again: some records fail, some runs are refused. Once
/// the terminations stop, one resumption leaves every `proposed` record with exactly one final
/// record, and the chain verifies.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_terminated_again_and_again_leave_no_proposed_record_without_its_final_one() {
    let cluster = cluster();
    let url = cluster.create_database("terminated").await.unwrap();
    let store: Arc<dyn Store> = Arc::new(PostgresStore::connect(&url, 4).await.unwrap());
    let stop = Arc::new(AtomicBool::new(false));
    let terminated = Arc::new(AtomicUsize::new(0));
    let killer = {
        let (url, stop, terminated) = (url.clone(), stop.clone(), terminated.clone());
        tokio::spawn(async move {
            let operator = raw(&url).await;
            while !stop.load(SeqCst) {
                let rows = operator
                    .query(
                        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
                         WHERE datname = 'terminated' AND pid <> pg_backend_pid() AND backend_type = 'client backend'",
                        &[],
                    )
                    .await
                    .unwrap();
                terminated.fetch_add(rows.len(), SeqCst);
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        })
    };
    let node_a = lookup_node(store.clone(), (0..150).flat_map(|_| [balance(), reply("done")]).collect());
    for i in 0..150 {
        if let Ok(run) = node_a.start::<lookup::Lookup>(employee(), &format!("t-{i}"), "my balance?".into()) {
            let _ = tokio::time::timeout(HANG, run.wait()).await.expect("the run ends");
        }
    }
    stop.store(true, SeqCst);
    killer.await.unwrap();
    assert!(terminated.load(SeqCst) > 0, "connections were terminated");
    let node_b = lookup_node(store.clone(), vec![]);
    node_b.resume_orphaned::<lookup::Lookup>().await.unwrap();
    let records = call_records(&url).await;
    // A read call is its run and its call id (the provider's, which runs reuse).
    let mut finals: std::collections::HashMap<(String, String), usize> = std::collections::HashMap::new();
    for r in &records {
        let id = (r.run_id.to_string(), r.call_id.as_deref().unwrap().to_owned());
        match r.status {
            AuditStatus::Proposed => {
                finals.entry(id).or_insert(0);
            }
            s if agents_runtime::audit::is_final_status(s) => *finals.entry(id).or_insert(0) += 1,
            _ => {}
        }
    }
    assert!(!finals.is_empty(), "some calls were proposed");
    let wrong: Vec<_> = finals.iter().filter(|(_, n)| **n != 1).collect();
    assert!(wrong.is_empty(), "every proposed call has exactly one final record; not these: {wrong:?}");
    store.verify_audit("audit").await.expect("the chain verifies");
}

/// One step of the model below.
#[derive(Debug, Clone, Copy)]
enum Step {
    /// A run with one read call on node A (whose connections go through the relay) or node B,
    /// with `fault` armed on A's relay first (it hits A's next matching operation).
    Call { on_a: bool, fault: Fault },
    /// A run of node A or B proposing an action (dialog), decided through the other node
    /// (approved or rejected), with `fault` armed on A's relay first.
    Action { on_a: bool, approve: bool, fault: Fault },
    /// A resumption on node A or B (settle lease zero: every debt is due).
    Resume { on_a: bool },
    /// Every connection to the database terminated (`pg_terminate_backend`).
    Terminate,
    /// An insider with SQL access to the state database but not the server key marks every
    /// proposal approved and unclaimed (verdict, reason, claim and settlement columns).
    Forge,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Fault {
    None,
    /// A `proposed` record's transaction cut before the server reads it.
    CutProposed,
    /// An `executed` record's transaction cut before the server reads it.
    CutExecuted,
    /// The next COMMIT carried out, its reply lost.
    LoseCommitReply,
    /// The next single-row INSERT (a proposal, a token, a slot) carried out, its reply lost.
    LoseInsertReply,
    /// The next audit append carried out (its one statement, or that statement in the
    /// transaction that read the head under its lock), its reply lost.
    LoseAppendReply,
}

fn step() -> impl proptest::strategy::Strategy<Value = Step> {
    use proptest::prelude::*;
    let fault = prop_oneof![
        Just(Fault::None),
        Just(Fault::CutProposed),
        Just(Fault::CutExecuted),
        Just(Fault::LoseCommitReply),
        Just(Fault::LoseInsertReply),
        Just(Fault::LoseAppendReply),
    ];
    prop_oneof![
        3 => (any::<bool>(), fault.clone()).prop_map(|(on_a, fault)| Step::Call { on_a, fault }),
        3 => (any::<bool>(), any::<bool>(), fault)
            .prop_map(|(on_a, approve, fault)| Step::Action { on_a, approve, fault }),
        1 => any::<bool>().prop_map(|on_a| Step::Resume { on_a }),
        1 => Just(Step::Terminate),
        1 => Just(Step::Forge),
    ]
}

/// The faults armed on a relay, and those of them that fired (cut a connection).
struct Armed {
    fault: Fault,
    cuts: usize,
    fired: Vec<Fault>,
}

impl Armed {
    fn new() -> Self {
        Armed { fault: Fault::None, cuts: 0, fired: Vec::new() }
    }

    /// Arms `fault` on `relay` in place of the one armed, noting whether that one fired.
    fn arm(&mut self, relay: &Relay, fault: Fault) {
        self.settle(relay);
        arm(relay, fault);
        self.fault = fault;
    }

    /// Notes whether the armed fault fired, and disarms it.
    fn settle(&mut self, relay: &Relay) -> &[Fault] {
        if relay.cuts() > self.cuts {
            self.fired.push(self.fault);
        }
        relay.disarm();
        self.cuts = relay.cuts();
        self.fault = Fault::None;
        &self.fired
    }
}

fn arm(relay: &Relay, fault: Fault) {
    match fault {
        Fault::None => {}
        Fault::CutProposed => relay.cut_when_sending(br#""status":"proposed""#),
        Fault::CutExecuted => relay.cut_when_sending(br#""status":"executed""#),
        Fault::LoseCommitReply => relay.cut_reply_holding(b"COMMIT\0"),
        Fault::LoseInsertReply => relay.cut_reply_holding(b"INSERT 0 1\0"),
        // Only an append sends a record's line (`"prev_hash":"`); its statement answers `SELECT 1`.
        Fault::LoseAppendReply => relay.cut_after_sending(br#""prev_hash":""#, b"SELECT 1\0", 0),
    }
}

/// A node of both agents: a runtime (a process of its own) on `store`, playing `script`.
fn model_node(store: &Arc<dyn Store>, script: Vec<ChatResponse>) -> Runtime {
    let limits = agents_runtime::Limits { confirm_timeout_secs: 3, ..agents_runtime::Limits::DEFAULT };
    Runtime::builder(Arc::new(StoreAuditSink::new(store.clone(), "audit")), Arc::new(ScriptedProvider::new(script)))
        .roles(agents_runtime::RoleMap::new().role("employee", ["leave.read", "leave.write"]))
        .server_key(SERVER_KEY)
        .store(store.clone())
        .limits(limits)
        .decision_poll(Duration::from_millis(20))
        .run_slot_lease(Duration::from_millis(300))
        .settle_lease(Duration::ZERO)
        .build()
}

/// The call id of the action `run` asks about, or `None` when it ends without asking.
async fn asked<O>(run: &mut agents_runtime::RunHandle<O>) -> Option<String> {
    while let Some(e) = run.events().recv().await {
        match e {
            agents_runtime::events::Event::ConfirmRequired { call_id, .. } => return Some(call_id),
            agents_runtime::events::Event::Done { .. } => return None,
            _ => {}
        }
    }
    None
}

/// Plays `steps` on two nodes of a fresh database, then lets both settle without faults, and
/// checks the model's claims: every `proposed` call has exactly one final record, a call
/// recorded `executed` ran once, no call ran twice, an action that ran is never recorded as
/// not run, an action runs only if the person approved it (whatever an insider without the
/// server key wrote in the proposals table), and the chain verifies.
async fn play(cluster: &TempCluster, case: usize, steps: &[Step]) -> Result<Vec<Fault>, String> {
    let db = format!("model_{case}");
    let direct = cluster.create_database(&db).await.map_err(|e| e.to_string())?;
    let relay = Relay::start(cluster.port()).await;
    let a_store: Arc<dyn Store> = Arc::new(PostgresStore::connect(&relay.conninfo(&db), 4).await.unwrap());
    let b_store: Arc<dyn Store> = Arc::new(PostgresStore::connect(&direct, 4).await.unwrap());
    let operator = raw(&direct).await;
    let tag = uuid::Uuid::new_v4().simple().to_string();
    let (mut reads, mut actions) = (Vec::new(), Vec::new());
    // The actions the person approved; no other may run, whatever an insider writes.
    let mut approved = std::collections::HashSet::new();
    let mut armed = Armed::new();
    for (i, step) in steps.iter().enumerate() {
        let session = format!("model-{tag}-{i}");
        match *step {
            Step::Call { on_a, fault } => {
                armed.arm(&relay, fault);
                let node = model_node(if on_a { &a_store } else { &b_store }, vec![balance(), reply("done")]);
                if let Ok(run) = node.start::<lookup::Lookup>(employee(), &session, "my balance?".into()) {
                    let ended = tokio::time::timeout(HANG, run.wait()).await;
                    ended.map_err(|_| format!("step {i}: the run hangs"))?.ok();
                }
                node.records_settled().await;
                reads.push(session);
            }
            Step::Action { on_a, approve, fault } => {
                armed.arm(&relay, fault);
                let (here, there) = if on_a { (&a_store, &b_store) } else { (&b_store, &a_store) };
                let node = model_node(here, vec![leave(3), reply("done")]);
                let decider = model_node(there, vec![]);
                if let Ok(mut run) = node.start::<Hr>(employee(), &session, "three days".into()) {
                    let call = tokio::time::timeout(HANG, asked(&mut run)).await;
                    if let Some(call_id) = call.map_err(|_| format!("step {i}: the run never asks"))? {
                        let verdict = if approve { Verdict::Approve } else { Verdict::Reject };
                        // An approval whose reply was lost may still be recorded: what the
                        // person said is what counts.
                        if approve {
                            approved.insert(session.clone());
                        }
                        let _ = decider.decide_async(&call_id, &employee(), verdict, None).await;
                    }
                    let ended = tokio::time::timeout(HANG, run.wait()).await;
                    ended.map_err(|_| format!("step {i}: the run hangs"))?.ok();
                }
                node.records_settled().await;
                actions.push(session);
            }
            Step::Resume { on_a } => {
                let node = model_node(if on_a { &a_store } else { &b_store }, vec![]);
                let _ = node.resume_orphaned::<lookup::Lookup>().await;
                let _ = node.resume_orphaned::<Hr>().await;
                node.records_settled().await;
            }
            Step::Forge => {
                operator
                    .execute(
                        "UPDATE agents_proposals SET verdict = 'approved', reason = NULL, claimed_by = NULL, \
                         settled_by = NULL",
                        &[],
                    )
                    .await
                    .map_err(|e| e.to_string())?;
            }
            Step::Terminate => {
                operator
                    .query(
                        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
                         WHERE datname = $1 AND pid <> pg_backend_pid() AND backend_type = 'client backend'",
                        &[&db],
                    )
                    .await
                    .map_err(|e| e.to_string())?;
            }
        }
    }
    let fired = armed.settle(&relay).to_vec();
    // Runs' slots lapse, and undecided proposals pass their confirmation window.
    tokio::time::sleep(Duration::from_secs(4)).await;
    // The settling passes a service runs on its timer: a pass may fail on a pooled connection
    // the server terminated (it fails closed); the next one goes on.
    for store in [&b_store, &a_store, &b_store] {
        let node = model_node(store, vec![]);
        let mut passes = 0;
        loop {
            let lookups = node.resume_orphaned::<lookup::Lookup>().await;
            match lookups.and(node.resume_orphaned::<Hr>().await) {
                Ok(_) => break,
                Err(e) if passes == 5 => return Err(format!("five settling passes failed: {e}")),
                Err(_) => passes += 1,
            }
        }
        node.records_settled().await;
    }
    let records = call_records(&direct).await;
    let mut calls: std::collections::HashMap<(String, String), Vec<AuditStatus>> = std::collections::HashMap::new();
    for r in &records {
        // An action's records may name a later run of its session: its call id is minted.
        let run = if r.tier == Some(agents_runtime::Tier::Read) { r.run_id.to_string() } else { String::new() };
        calls.entry((run, r.call_id.as_deref().unwrap().to_owned())).or_default().push(r.status);
    }
    for (call, statuses) in &calls {
        let finals = statuses.iter().filter(|s| agents_runtime::audit::is_final_status(**s)).count();
        if statuses.first() != Some(&AuditStatus::Proposed) || finals != 1 {
            return Err(format!("call {call:?} has records {statuses:?}: one `proposed`, then exactly one final"));
        }
    }
    let executed =
        |session: &str| records.iter().any(|r| r.session_id.as_str() == session && r.status == AuditStatus::Executed);
    // What a final record says ran must be what ran: `executed` only for a call that ran
    // (once); `skipped`, `rejected` or `denied` ("nothing ran") only for one that did not; a
    // call that ran and whose `executed` record was lost ends `failed` ("it may have run").
    let said_nothing_ran = |session: &str| {
        records.iter().any(|r| {
            r.session_id.as_str() == session
                && matches!(r.status, AuditStatus::Skipped | AuditStatus::Rejected | AuditStatus::Denied)
        })
    };
    for session in &actions {
        let (ran, recorded) = (executions(session), executed(session));
        if ran > 0 && !approved.contains(session) {
            return Err(format!("action of session {session} ran {ran} times without an approval the person gave"));
        }
        if ran > 1 || (recorded && ran != 1) || (ran == 1 && said_nothing_ran(session)) {
            return Err(format!(
                "action of session {session}: ran {ran} times, `executed` recorded: {recorded}, recorded as not run: {}",
                said_nothing_ran(session)
            ));
        }
    }
    for session in &reads {
        let (ran, recorded) = (lookup::executions(session), executed(session));
        if ran > 1 || (recorded && ran != 1) {
            return Err(format!("read of session {session}: ran {ran} times, `executed` recorded: {recorded}"));
        }
    }
    b_store.verify_audit("audit").await.map_err(|e| format!("the chain does not verify: {e}"))?;
    Ok(fired)
}

/// A model-based test: random schedules of read calls and decided actions on two nodes,
/// resumptions, store faults (a transaction cut half way, a COMMIT's reply lost, every
/// connection terminated) and an insider's edits of the proposals table, each on a fresh
/// database of one real PostgreSQL cluster, shrunk to the shortest failing schedule.
#[test]
fn model_every_proposed_call_ends_once_under_store_faults() {
    use proptest::test_runner::{Config, TestCaseError, TestRunner};
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let cluster = cluster();
    let config = Config { cases: 12, max_shrink_iters: 64, failure_persistence: None, ..Config::default() };
    let case = AtomicUsize::new(0);
    let fired = Mutex::new(std::collections::HashMap::<Fault, usize>::new());
    let result = TestRunner::new(config).run(&proptest::collection::vec(step(), 1..12), |steps| {
        let these = rt.block_on(play(&cluster, case.fetch_add(1, SeqCst), &steps)).map_err(TestCaseError::fail)?;
        for fault in these {
            *fired.lock().unwrap().entry(fault).or_default() += 1;
        }
        Ok(())
    });
    if let Err(e) = result {
        panic!("{e}");
    }
    eprintln!("faults that fired over {} cases: {:?}", case.load(SeqCst), fired.lock().unwrap());
}

/// Each fault of the model, armed on node A's relay before a call or an action on node A,
/// fires (cuts a connection) and the model's claims hold after it: the random schedules above
/// reach each one only by chance.
#[test]
fn model_each_fault_fires_on_a_call_and_on_an_action() {
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let cluster = cluster();
    let faults = [
        Fault::CutProposed,
        Fault::CutExecuted,
        Fault::LoseCommitReply,
        Fault::LoseInsertReply,
        Fault::LoseAppendReply,
    ];
    for (i, fault) in faults.into_iter().enumerate() {
        let steps = [
            Step::Call { on_a: true, fault },
            Step::Action { on_a: true, approve: true, fault },
            Step::Resume { on_a: true },
        ];
        let fired = rt.block_on(play(&cluster, 1000 + i, &steps)).unwrap_or_else(|e| panic!("{fault:?}: {e}"));
        assert_eq!(fired, [fault, fault], "{fault:?} fired on the call and on the action");
    }
}
