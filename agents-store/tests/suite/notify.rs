//! Decisions heard as they are committed (PostgreSQL `NOTIFY`), on a real cluster:
//!
//! - a decision made through node B reaches a run waiting on node A at once, though A looks
//!   in the store only once an hour (without the notification the run would wait that hour:
//!   the test's bound fails first);
//! - A's listening connection killed on the server, the decision made while it is down: A
//!   listens again and looks up what it missed, and a later decision is heard again;
//! - notifications sent by hand (the waiting call's own id while undecided, an unknown id,
//!   garbage) change nothing: the run goes on waiting and its row stays undecided, and the
//!   person's real decision then runs the action once;
//! - a decision refused (another user, an unknown call, one decided already) or rolled back
//!   at commit notifies nobody; a decision and the closing of an undecided proposal notify
//!   their call id.

use crate::common::proposal;
use agents_runtime::RunResultExt as _;
use agents_runtime::audit::MemorySink;
use agents_runtime::events::Event;
use agents_runtime::provider::scripted::{reply, tool_call};
use agents_runtime::provider::{ChatResponse, ScriptedProvider};
use agents_runtime::store::{DecideOutcome, Store, StoredVerdict};
use agents_runtime::{RunHandle, RunStatus, Runtime, Verdict};
use agents_store::postgres::{DECISIONS_CHANNEL, DECISIONS_LISTENER, TempCluster};
use agents_store::testing::leave::{Hr, SERVER_KEY, employee, executions, roles};
use agents_store::{PostgresSettings, PostgresStore};
use futures::StreamExt as _;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;

/// How often node A looks in the store by itself: never within a test.
const HOUR: Duration = Duration::from_secs(3600);

/// The longest a step that is heard at once may take on a loaded machine before the test
/// fails (a liveness bound, not a measure: without the notification it takes an hour).
const BOUND: Duration = Duration::from_secs(30);

fn cluster() -> TempCluster {
    TempCluster::start().unwrap_or_else(|e| panic!("{e}"))
}

/// A model that proposes the action in each of `runs` runs, and answers once it ran: one run
/// after the other, or (`overlapping`) all proposing first, then all answering.
fn script(runs: usize, overlapping: bool) -> Vec<ChatResponse> {
    let propose = || tool_call("submit_leave", r#"{"days": 2}"#);
    if overlapping {
        let mut script: Vec<_> = std::iter::repeat_with(propose).take(runs).collect();
        script.extend(std::iter::repeat_with(|| reply("done")).take(runs));
        script
    } else {
        std::iter::repeat_with(|| [propose(), reply("done")]).take(runs).flatten().collect()
    }
}

/// A node on `store` that looks for decisions made elsewhere only every `poll`.
fn node(store: Arc<dyn Store>, poll: Duration, script: Vec<ChatResponse>) -> Runtime {
    Runtime::builder(Arc::new(MemorySink::new()), Arc::new(ScriptedProvider::new(script)))
        .roles(roles())
        .server_key(SERVER_KEY)
        .store(store)
        .decision_poll(poll)
        .build()
}

fn session(prefix: &str) -> String {
    format!("{prefix}-{}", uuid::Uuid::new_v4().simple())
}

/// Starts a run on `node` in `session` and returns it waiting for a decision, with its call id.
async fn waiting(node: &Runtime, session: &str) -> (RunHandle<String>, String) {
    let mut run = node.start::<Hr>(employee(), session, "two days off".into()).unwrap();
    while let Some(e) = run.events().recv().await {
        if let Event::ConfirmRequired { call_id, .. } = e {
            return (run, call_id);
        }
    }
    panic!("the run ended without asking for a decision");
}

/// The run ends within [`BOUND`], completed, having run the action once.
async fn completes(run: RunHandle<String>, session: &str, what: &str) {
    let outcome = tokio::time::timeout(BOUND, run.wait())
        .await
        .unwrap_or_else(|_| panic!("{what}: the run did not hear the decision"));
    assert_eq!(outcome.status(), RunStatus::Completed, "{what}: {:?}", outcome.error_text());
    assert_eq!(executions(session), 1, "{what}: the action ran once");
}

async fn raw(conninfo: &str) -> tokio_postgres::Client {
    let (client, connection) = tokio_postgres::connect(conninfo, tokio_postgres::NoTls).await.unwrap();
    tokio::spawn(connection);
    client
}

/// Waits until `sql` (counting rows of this database's `pg_stat_activity`) answers `want`.
async fn until_count(db: &tokio_postgres::Client, sql: &str, want: i64, what: &str) {
    let deadline = tokio::time::Instant::now() + BOUND;
    loop {
        let n: i64 = db.query_one(sql, &[&DECISIONS_LISTENER]).await.unwrap().get(0);
        if n == want {
            return;
        }
        assert!(tokio::time::Instant::now() < deadline, "{what}: {n} connections, not {want}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The listening connections of this database (`$1`: their application name).
const LISTENERS: &str =
    "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND application_name = $1";

/// Those of them idle after their `LISTEN` (listening).
const LISTENING: &str = "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() \
                         AND application_name = $1 AND state = 'idle' AND query LIKE 'LISTEN%'";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_decision_at_another_node_reaches_the_waiting_run_at_once() {
    let cluster = cluster();
    let url = cluster.create_database("notify_wakes").await.unwrap();
    let a = node(Arc::new(PostgresStore::connect(&url, 4).await.unwrap()), HOUR, script(3, false));
    let b = node(Arc::new(PostgresStore::connect(&url, 4).await.unwrap()), HOUR, Vec::new());
    for decided in 0..3 {
        let session = session("wake");
        let (run, call_id) = waiting(&a, &session).await;
        b.decide_async(&call_id, &employee(), Verdict::Approve, None).await.unwrap();
        completes(run, &session, &format!("decision {decided} at node B")).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_listener_listens_again_and_looks_up_what_it_missed() {
    let cluster = cluster();
    let url = cluster.create_database("notify_lost").await.unwrap();
    // Down for two seconds once lost: the decision below is made while nothing listens.
    let settings = PostgresSettings { max_connections: 4, listen_retry: Duration::from_secs(2), ..Default::default() };
    let a = node(Arc::new(PostgresStore::connect_with(&url, settings).await.unwrap()), HOUR, script(2, false));
    let b = node(Arc::new(PostgresStore::connect(&url, 4).await.unwrap()), HOUR, Vec::new());
    let db = raw(&url).await;

    let first = session("lost");
    let (run, call_id) = waiting(&a, &first).await;
    until_count(&db, LISTENING, 1, "node A listens").await;
    db.execute(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() \
         AND application_name = $1",
        &[&DECISIONS_LISTENER],
    )
    .await
    .unwrap();
    until_count(&db, LISTENERS, 0, "the listening connection is gone").await;
    b.decide_async(&call_id, &employee(), Verdict::Approve, None).await.unwrap();
    completes(run, &first, "a decision made while node A did not listen").await;

    until_count(&db, LISTENING, 1, "node A listens again").await;
    let second = session("lost");
    let (run, call_id) = waiting(&a, &second).await;
    b.decide_async(&call_id, &employee(), Verdict::Approve, None).await.unwrap();
    completes(run, &second, "a decision made once node A listened again").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn notifications_sent_by_hand_decide_nothing() {
    let cluster = cluster();
    let url = cluster.create_database("notify_forged").await.unwrap();
    let store: Arc<dyn Store> = Arc::new(PostgresStore::connect(&url, 4).await.unwrap());
    let a = node(store.clone(), HOUR, script(2, true));
    let b = node(Arc::new(PostgresStore::connect(&url, 4).await.unwrap()), HOUR, Vec::new());
    let db = raw(&url).await;

    let forged = session("forged");
    let (mut held, held_call) = waiting(&a, &forged).await;
    until_count(&db, LISTENING, 1, "node A listens").await;
    // What the run said as it began to wait (its status); from here on it says nothing.
    while held.events().try_recv().is_ok() {}
    let garbage = "x".repeat(7000);
    for payload in [held_call.as_str(), "call-00000000000000000000000000000000", "", "'); DROP TABLE x; --", &garbage] {
        db.execute("SELECT pg_notify($1, $2)", &[&DECISIONS_CHANNEL, &payload]).await.unwrap();
    }
    // A real decision of another run on node A, notified after the forged ones: once it is
    // heard, so were they.
    let other = session("forged");
    let (run, call_id) = waiting(&a, &other).await;
    b.decide_async(&call_id, &employee(), Verdict::Approve, None).await.unwrap();
    completes(run, &other, "the real decision after the forged ones").await;

    let row = store.proposal(&held_call).await.unwrap().expect("the proposal is stored");
    assert_eq!(row.verdict, None, "the forged notifications decided nothing");
    if let Ok(said) = tokio::time::timeout(Duration::from_millis(300), held.events().recv()).await {
        panic!("the run named by a forged notification is still waiting, silent; it said {said:?}");
    }
    assert_eq!(executions(&forged), 0, "nothing ran");
    b.decide_async(&held_call, &employee(), Verdict::Approve, None).await.unwrap();
    completes(held, &forged, "the person's decision after the forged notifications").await;
}

/// A connection listening to the decisions' channel, and what it hears.
async fn listener(conninfo: &str) -> (tokio_postgres::Client, mpsc::UnboundedReceiver<String>) {
    let (client, mut connection) = tokio_postgres::connect(conninfo, tokio_postgres::NoTls).await.unwrap();
    let (tx, rx) = mpsc::unbounded_channel();
    tokio::spawn(async move {
        let mut messages = futures::stream::poll_fn(move |cx| connection.poll_message(cx));
        while let Some(Ok(message)) = messages.next().await {
            if let tokio_postgres::AsyncMessage::Notification(n) = message {
                let _ = tx.send(n.payload().to_owned());
            }
        }
    });
    client.batch_execute(&format!("LISTEN {DECISIONS_CHANNEL}")).await.unwrap();
    (client, rx)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_a_committed_decision_notifies() {
    let cluster = cluster();
    let url = cluster.create_database("notify_commit").await.unwrap();
    let store = PostgresStore::connect(&url, 4).await.unwrap();
    let (_listening, mut heard) = listener(&url).await;
    let db = raw(&url).await;
    // A decision of `rb-1` fails at its commit, after its statement ran.
    db.batch_execute(
        "CREATE FUNCTION refuse() RETURNS trigger LANGUAGE plpgsql AS \
         $$ BEGIN RAISE EXCEPTION 'refused at commit'; END $$; \
         CREATE CONSTRAINT TRIGGER refuse_at_commit AFTER UPDATE ON agents_proposals \
         DEFERRABLE INITIALLY DEFERRED FOR EACH ROW WHEN (NEW.call_id = 'rb-1') EXECUTE FUNCTION refuse();",
    )
    .await
    .unwrap();
    for id in ["n-1", "n-2", "n-3", "rb-1"] {
        store.put_proposal(&proposal(id, "ann")).await.unwrap();
    }
    let decide = |id, user| store.decide(id, "org-a", user, StoredVerdict::Approved, None, "sealed");
    assert_eq!(decide("n-1", "bob").await.unwrap(), DecideOutcome::NotYours);
    assert_eq!(decide("nobody", "ann").await.unwrap(), DecideOutcome::Unknown);
    assert!(decide("rb-1", "ann").await.is_err(), "the decision's commit failed");
    assert_eq!(store.proposal("rb-1").await.unwrap().unwrap().verdict, None, "and was rolled back");
    assert_eq!(decide("n-1", "ann").await.unwrap(), DecideOutcome::Recorded);
    assert_eq!(decide("n-1", "ann").await.unwrap(), DecideOutcome::AlreadyDecided);
    assert!(!store.close_undecided("n-1", "node-a", "stopped").await.unwrap(), "decided already");
    assert!(store.close_undecided("n-2", "node-a", "stopped").await.unwrap());
    assert_eq!(decide("n-3", "ann").await.unwrap(), DecideOutcome::Recorded);
    // Notifications arrive in commit order: had a refused or rolled-back decision notified,
    // its id would come before these.
    let mut got = Vec::new();
    while got.len() < 3 {
        let next = tokio::time::timeout(BOUND, heard.recv()).await.expect("a committed decision notifies");
        got.push(next.expect("the listener is up"));
    }
    assert_eq!(got, ["n-1", "n-2", "n-3"], "one notification per committed decision, nothing else");
}
