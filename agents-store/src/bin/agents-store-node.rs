//! A second node for the PostgreSQL store's multi-process tests and benchmark: connects to a
//! database, waits for `go` on standard input where a race needs a common start, does one
//! thing many times concurrently, and prints what it got.
//!
//! ```text
//! agents-store-node CONNINFO redeem TOKEN_ID N          -> taken K
//! agents-store-node CONNINFO acquire ORG USER CAP N MS  -> acquired K
//! agents-store-node CONNINFO hold ORG USER CAP MS       -> held ID   (then renews until killed)
//! agents-store-node CONNINFO decide CALL_ID ORG USER    -> decided OUTCOME
//! agents-store-node CONNINFO claim CALL_ID N            -> claimed K
//! agents-store-node CONNINFO audit STREAM PRODUCERS PER -> appended K
//! agents-store-node STORE propose SESSION LEASE_MS      -> waiting CALL_ID, then finished STATUS
//! agents-store-node STORE propose-tree SESSION LEASE_MS -> waiting CALL_ID TREE_RUN_ID, then finished STATUS
//! ```
//!
//! `propose` runs the test agent (`agents_store::testing::leave::Hr`) on a runtime whose state
//! and audit log (stream `audit`) are in STORE (a PostgreSQL CONNINFO, or `sqlite:PATH`): its
//! model proposes one action, the process says which call waits for a decision, and the run
//! goes on once the decision arrives through the store (or the process is killed).
//! `propose-tree` runs the run tree `agents_store::testing::leave::LeaveDesk` the same way: its
//! second node, the agent above, proposes the action.

use agents_runtime::RunResultExt as _;
use agents_runtime::store::{SlotOwner, Store, StoreAuditSink, StoredVerdict};
use agents_store::PostgresStore;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::AsyncBufReadExt;

type Failure = Box<dyn std::error::Error + Send + Sync>;

#[tokio::main]
async fn main() -> Result<(), Failure> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [conninfo, command, rest @ ..] = args.as_slice() else {
        return Err("usage: agents-store-node CONNINFO COMMAND ARGS...".into());
    };
    if command == "propose" || command == "propose-tree" {
        return propose(conninfo, rest, command == "propose-tree").await;
    }
    let store = Arc::new(PostgresStore::connect(conninfo, 32).await?);
    let args = Args { command, rest };
    match command.as_str() {
        "redeem" => redeem(store, args).await,
        "acquire" => acquire(store, args).await,
        "hold" => hold(store, args).await,
        "decide" => {
            let outcome =
                store.decide(&args.arg(0)?, &args.arg(1)?, &args.arg(2)?, StoredVerdict::Approved, None, "").await?;
            println!("decided {outcome:?}");
            Ok(())
        }
        "claim" => claim(store, args).await,
        "audit" => audit(store, args).await,
        other => Err(format!("unknown command `{other}`").into()),
    }
}

/// A command's arguments.
#[derive(Clone, Copy)]
struct Args<'a> {
    command: &'a str,
    rest: &'a [String],
}

impl Args<'_> {
    /// Argument `i`.
    fn arg(self, i: usize) -> Result<String, Failure> {
        Ok(self.rest.get(i).cloned().ok_or_else(|| format!("`{}` needs argument {}", self.command, i + 1))?)
    }

    /// Argument `i`, a number.
    fn num(self, i: usize) -> Result<usize, Failure> {
        Ok(self.arg(i)?.parse()?)
    }
}

/// `redeem TOKEN_ID N`: N concurrent redemptions of one token; how many took it.
async fn redeem(store: Arc<PostgresStore>, args: Args<'_>) -> Result<(), Failure> {
    let (id, n) = (args.arg(0)?, args.num(1)?);
    go().await?;
    let tasks: Vec<_> = (0..n)
        .map(|_| {
            let (store, id) = (store.clone(), id.clone());
            tokio::spawn(async move { store.redeem_token(&id).await })
        })
        .collect();
    let mut taken = 0;
    for t in tasks {
        if let agents_runtime::store::Redeemed::Taken { .. } = t.await?? {
            taken += 1;
        }
    }
    println!("taken {taken}");
    Ok(())
}

/// `acquire ORG USER CAP N MS`: N concurrent acquisitions of a slot; how many got one.
async fn acquire(store: Arc<PostgresStore>, args: Args<'_>) -> Result<(), Failure> {
    let owner = SlotOwner { org_id: args.arg(0)?, user_id: args.arg(1)? };
    let (cap, n, ms) = (args.num(2)? as u32, args.num(3)?, args.num(4)? as u64);
    go().await?;
    let tasks: Vec<_> = (0..n)
        .map(|_| {
            let (store, owner) = (store.clone(), owner.clone());
            tokio::spawn(async move { store.acquire_slot(&owner, cap, Duration::from_millis(ms)).await })
        })
        .collect();
    let mut acquired = 0;
    for t in tasks {
        acquired += usize::from(t.await??.is_some());
    }
    println!("acquired {acquired}");
    Ok(())
}

/// `hold ORG USER CAP MS`: holds a slot, renewing its lease until the process is killed.
async fn hold(store: Arc<PostgresStore>, args: Args<'_>) -> Result<(), Failure> {
    let owner = SlotOwner { org_id: args.arg(0)?, user_id: args.arg(1)? };
    let (cap, ms) = (args.num(2)? as u32, args.num(3)? as u64);
    let lease = Duration::from_millis(ms);
    let Some(slot) = store.acquire_slot(&owner, cap, lease).await? else {
        println!("refused");
        return Ok(());
    };
    println!("held {}", slot.0);
    // A live holder renews its lease; only a dead one lets it lapse.
    loop {
        tokio::time::sleep(lease / 4).await;
        if !store.renew_slot(&slot, lease).await? {
            return Err("the held slot lapsed while renewing".into());
        }
    }
}

/// `claim CALL_ID N`: N concurrent claims of one call's execution; how many took it.
async fn claim(store: Arc<PostgresStore>, args: Args<'_>) -> Result<(), Failure> {
    let (call_id, n) = (args.arg(0)?, args.num(1)?);
    go().await?;
    let tasks: Vec<_> = (0..n)
        .map(|i| {
            let (store, call_id) = (store.clone(), call_id.clone());
            tokio::spawn(async move { store.claim_execution(&call_id, &format!("node-b-{i}"), "").await })
        })
        .collect();
    let mut claimed = 0;
    for t in tasks {
        claimed += usize::from(t.await??);
    }
    println!("claimed {claimed}");
    Ok(())
}

/// `audit STREAM PRODUCERS PER`: PRODUCERS concurrent writers append PER records each to one
/// stream; how many were appended.
async fn audit(store: Arc<PostgresStore>, args: Args<'_>) -> Result<(), Failure> {
    let (stream, producers, per) = (args.arg(0)?, args.num(1)?, args.num(2)?);
    let sink = StoreAuditSink::new(store, stream);
    go().await?;
    let tasks: Vec<_> = (0..producers)
        .map(|p| {
            let sink = sink.clone();
            tokio::spawn(async move {
                for i in 0..per {
                    use agents_runtime::audit::AuditSink;
                    sink.append(agents_store::testing::sample_record(p * per + i, "b")).await?;
                }
                Ok::<_, agents_runtime::audit::AuditError>(per)
            })
        })
        .collect();
    let mut appended = 0;
    for t in tasks {
        appended += t.await??;
    }
    println!("appended {appended}");
    Ok(())
}

/// Runs the test agent (or, `tree`, the run tree whose node it is) until its action waits for
/// a decision, says so, and waits for the run's end.
async fn propose(spec: &str, rest: &[String], tree: bool) -> Result<(), Failure> {
    use agents_runtime::events::Event;
    use agents_runtime::provider::ScriptedProvider;
    use agents_runtime::provider::scripted::{reply, tool_call};
    use agents_store::testing::leave::{Hr, LeaveDesk, SERVER_KEY, employee, roles};
    let [session, lease_ms] = rest else {
        return Err("usage: agents-store-node STORE propose SESSION LEASE_MS".into());
    };
    let store: Arc<dyn Store> = match spec.strip_prefix("sqlite:") {
        Some(path) => Arc::new(agents_store::SqliteStore::open(path)?),
        None => Arc::new(PostgresStore::connect(spec, 4).await?),
    };
    let mut script = vec![tool_call("submit_leave", r#"{"days": 3}"#), reply("done")];
    if tree {
        script.insert(0, reply("three days of leave"));
    }
    let provider = ScriptedProvider::new(script);
    let runtime =
        agents_runtime::Runtime::builder(Arc::new(StoreAuditSink::new(store.clone(), "audit")), Arc::new(provider))
            .roles(roles())
            .server_key(SERVER_KEY)
            .store(store)
            .run_slot_lease(Duration::from_millis(lease_ms.parse()?))
            .decision_poll(Duration::from_millis(20))
            .build();
    let mut run = if tree {
        runtime.start_composite::<LeaveDesk>(employee(), session, "three days off".into())?
    } else {
        runtime.start::<Hr>(employee(), session, "three days off".into())?
    };
    let tree_id = run.run_id().to_owned();
    while let Some(event) = run.events().recv().await {
        let event = match event {
            Event::Node { event, .. } => *event,
            other => other,
        };
        if let Event::ConfirmRequired { call_id, .. } = event {
            if tree {
                println!("waiting {call_id} {tree_id}")
            } else {
                println!("waiting {call_id}")
            }
            break;
        }
    }
    let outcome = run.wait().await;
    println!("finished {:?}", outcome.status());
    Ok(())
}

/// Says `ready` and waits for a `go` line.
async fn go() -> Result<(), Failure> {
    println!("ready");
    let mut line = String::new();
    tokio::io::BufReader::new(tokio::io::stdin()).read_line(&mut line).await?;
    if line.trim() == "go" { Ok(()) } else { Err(format!("expected `go`, read {line:?}").into()) }
}
