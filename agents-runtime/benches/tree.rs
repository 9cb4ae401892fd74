//! A composite's overhead per node against the same agents run one after another by hand.
//!
//! Four agents, each with one read tool, each answering a `String` with a `String`; their
//! model is scripted (one call of the read tool, then an answer that passes the input on).
//!
//! - `by hand` (the baseline): `Runtime::start` of the first agent, its events read to the
//!   end, its output given to `Runtime::start` of the second, and so on: what an application
//!   that chains agents itself writes.
//! - `composite`: `Runtime::start_composite` of `then(A, B, C, D)` and its events read to the
//!   end: the tree's root run and its records, each node's run with the tree's run id and its
//!   path in every record, each node's events wrapped with its path.
//!
//! Both use the same runtime, the same principal and the same audit sink, in one process;
//! the two sides alternate, run by run, in one run of the bench (`--rounds`, 400, of one
//! chain each), so a change in the machine's load touches both alike. Printed: the machine,
//! its load and the build; per sink (in memory; SQLite in a temporary file, each record
//! committed before the call goes on), the mean and median time per node of each side, the
//! records and events per chain, and the ratio composite / by hand (the target is 1.1 or
//! less): the median of the rounds' paired ratios (each composite chain against the by-hand
//! chain run next to it), with the ratios of the means and of the medians beside it. The
//! events counted are those read until the tree's `done`.
//!
//! `cargo bench -p agents-runtime --no-default-features --features sqlite --bench tree`
//! (`-- --rounds=100` for a shorter run).
#![allow(missing_docs)]

use agents_runtime::audit::{AuditSink, MemorySink, SqliteSink};
use agents_runtime::events::Event;
use agents_runtime::provider::scripted::{RuleProvider, reply, tool_call, tool_outcomes};
use agents_runtime::provider::{ChatMessage, ChatRequest};
use agents_runtime::{Principal, RoleMap, Runtime, agent, composite, permissions, tool};
use std::sync::Arc;
use std::time::{Duration, Instant};

permissions! {
    pub mod perms { ledger.read }
}

/// Looks an entry up.
///
/// # Arguments
///
/// * `id` - the entry
#[tool(permission = perms::ledger::read)]
async fn lookup(id: u64) -> Result<String, String> {
    Ok(format!("entry {id}: 3 lines, balanced"))
}

agent! {
    /// The first node.
    pub struct First;
    input: String,
    output: String,
    tools: [lookup],
}
agent! {
    /// The second node.
    pub struct Second;
    input: String,
    output: String,
    tools: [lookup],
}
agent! {
    /// The third node.
    pub struct Third;
    input: String,
    output: String,
    tools: [lookup],
}
agent! {
    /// The fourth node.
    pub struct Fourth;
    input: String,
    output: String,
    tools: [lookup],
}

composite! {
    /// The four agents, one after another.
    pub struct Chain: String -> String = then(First, Second, Third, Fourth);
}

/// Nodes in the chain.
const NODES: u32 = 4;

/// The scripted model: one lookup, then the input passed on with the entry it read.
fn model() -> RuleProvider {
    RuleProvider::new().when(|request: &ChatRequest| {
        let outcomes = tool_outcomes(request);
        Some(match outcomes.first() {
            None => tool_call("lookup", r#"{"id": 7}"#),
            Some(found) => {
                let input = request.messages.iter().find_map(|m| match m {
                    ChatMessage::User { content } => Some(content.as_str()),
                    _ => None,
                });
                reply(format!("{} / {}", input.unwrap_or(""), found.content))
            }
        })
    })
}

fn runtime(sink: Arc<dyn AuditSink>) -> Runtime {
    Runtime::builder(sink, Arc::new(model())).roles(RoleMap::new().role("clerk", [perms::ledger::read::NAME])).build()
}

fn clerk() -> Principal {
    Principal::new("u-ann", "org-ledger", "clerk")
}

/// Reads a handle's events to its end; how many there were.
async fn drain<O>(handle: &mut agents_runtime::RunHandle<O>) -> usize {
    let mut seen = 0;
    while let Some(event) = handle.events().recv().await {
        seen += 1;
        if matches!(event, Event::Done { .. }) {
            break;
        }
    }
    seen
}

/// One agent of the chain by hand: started, its events read, its output.
async fn one<A>(rt: &Runtime, input: String, events: &mut usize) -> String
where
    A: agents_runtime::Registry<Input = String, Output = String>,
{
    let mut handle = rt.start::<A>(clerk(), "bench", input).expect("the node starts");
    *events += drain(&mut handle).await;
    handle.wait().await.expect("the node completes").output.expect("the node answers")
}

/// The chain by hand; the events read.
async fn by_hand(rt: &Runtime) -> usize {
    let mut events = 0;
    let out = one::<First>(rt, "close the month".into(), &mut events).await;
    let out = one::<Second>(rt, out, &mut events).await;
    let out = one::<Third>(rt, out, &mut events).await;
    let out = one::<Fourth>(rt, out, &mut events).await;
    assert!(out.starts_with("close the month"), "{out}");
    events
}

/// The chain as one run tree; the events read.
async fn as_tree(rt: &Runtime) -> usize {
    let mut handle = rt.start_composite::<Chain>(clerk(), "bench", "close the month".into()).expect("the tree starts");
    let events = drain(&mut handle).await;
    let out = handle.wait().await.expect("the tree completes").output.expect("the tree answers");
    assert!(out.starts_with("close the month"), "{out}");
    events
}

/// One side's times and counts.
#[derive(Default)]
struct Side {
    times: Vec<Duration>,
    records: usize,
    events: usize,
}

impl Side {
    fn per_node_mean(&self) -> f64 {
        let total: Duration = self.times.iter().sum();
        total.as_secs_f64() * 1e6 / f64::from(NODES) / self.times.len() as f64
    }

    fn per_node_median(&self) -> f64 {
        let mut sorted = self.times.clone();
        sorted.sort();
        sorted[sorted.len() / 2].as_secs_f64() * 1e6 / f64::from(NODES)
    }
}

/// `rounds` chains of each side on `sink`, alternating which side goes first; `count` says
/// how many records the sink holds (read once per side, outside the timed chains).
async fn measure(sink: Arc<dyn AuditSink>, count: impl Fn() -> usize, rounds: usize) -> (Side, Side) {
    let rt = runtime(sink);
    // Warm both paths (allocations, the registry's first use) before timing.
    for _ in 0..20 {
        by_hand(&rt).await;
        as_tree(&rt).await;
    }
    let (mut hand, mut tree) = (Side::default(), Side::default());
    for (side, s) in [&mut hand, &mut tree].into_iter().enumerate() {
        let before = count();
        s.events = if side == 0 { by_hand(&rt).await } else { as_tree(&rt).await };
        s.records = count() - before;
    }
    for round in 0..rounds {
        for side in if round % 2 == 0 { [0, 1] } else { [1, 0] } {
            let started = Instant::now();
            if side == 0 {
                by_hand(&rt).await;
            } else {
                as_tree(&rt).await;
            }
            let took = started.elapsed();
            if side == 0 { &mut hand } else { &mut tree }.times.push(took);
        }
    }
    (hand, tree)
}

/// The median of the rounds' own ratios (each round's composite against the by-hand chain
/// run next to it): a drift of the machine's load touches both halves of a pair alike.
fn paired_ratio(hand: &Side, tree: &Side) -> f64 {
    let mut ratios: Vec<f64> =
        hand.times.iter().zip(&tree.times).map(|(h, t)| t.as_secs_f64() / h.as_secs_f64()).collect();
    ratios.sort_by(f64::total_cmp);
    ratios[ratios.len() / 2]
}

fn report(name: &str, hand: &Side, tree: &Side) {
    let ratio = paired_ratio(hand, tree);
    println!("{name}:");
    println!(
        "  by hand:   {:8.1} µs per node (median {:8.1}), {} records and {} events per chain",
        hand.per_node_mean(),
        hand.per_node_median(),
        hand.records,
        hand.events
    );
    println!(
        "  composite: {:8.1} µs per node (median {:8.1}), {} records and {} events per chain",
        tree.per_node_mean(),
        tree.per_node_median(),
        tree.records,
        tree.events
    );
    let verdict = if ratio <= 1.1 { "within" } else { "over" };
    println!(
        "  ratio composite / by hand: {ratio:.3} (median of the rounds' paired ratios), {verdict} the target of 1.1; \
         of the means {:.3}, of the medians {:.3}",
        tree.per_node_mean() / hand.per_node_mean(),
        tree.per_node_median() / hand.per_node_median()
    );
}

/// A line about the machine, its load and the build.
fn machine() -> String {
    let cpus = std::thread::available_parallelism().map_or(0, usize::from);
    let model = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|c| {
            c.lines().find(|l| l.starts_with("model name")).and_then(|l| l.split(':').nth(1)).map(str::to_owned)
        })
        .unwrap_or_else(|| "unknown CPU".into());
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    let load = load.split_whitespace().take(3).collect::<Vec<_>>().join(" ");
    let build = if cfg!(debug_assertions) { "debug build" } else { "optimised build" };
    format!("{cpus} CPUs ({}), load average {load}, {build}", model.trim())
}

fn rounds() -> usize {
    let arg = std::env::args().find_map(|a| a.strip_prefix("--rounds=").map(str::to_owned));
    arg.map_or(400, |v| v.parse().unwrap_or_else(|_| panic!("--rounds={v}: not a number; give e.g. --rounds=100")))
}

fn main() {
    let rounds = rounds();
    println!("{}", machine());
    println!("{NODES} nodes per chain, {rounds} chains per side, the sides alternating");
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().expect("tokio");
    rt.block_on(async {
        let memory = Arc::new(MemorySink::new());
        let count = {
            let memory = memory.clone();
            move || memory.records().len()
        };
        let (hand, tree) = measure(memory, count, rounds).await;
        report("in-memory audit", &hand, &tree);
        let dir = tempfile::tempdir().expect("a temporary directory");
        let path = dir.path().join("audit.db");
        let sqlite = Arc::new(SqliteSink::open(&path).expect("the SQLite sink opens"));
        let count = move || {
            let db = rusqlite::Connection::open(&path).expect("the audit database opens");
            db.query_row("SELECT count(*) FROM audit_log", [], |r| r.get::<_, i64>(0)).expect("a count") as usize
        };
        let (hand, tree) = measure(sqlite, count, rounds).await;
        report("SQLite audit (durable)", &hand, &tree);
    });
}
