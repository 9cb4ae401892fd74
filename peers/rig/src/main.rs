//! The audited read call against rig-core 0.46's tool dispatch, in one process, on one thread.
//!
//! - rig: 60 tools implementing `rig_core::tool::Tool` in a `rig_agent::tool::ToolSet`; a
//!   call is `ToolSet::execute(name, arguments as JSON text, context)` (lookup, parse, the
//!   body, the output converted). No gate, no audit.
//! - agents, the gate without records: the same checks composed from the registry the macros
//!   generate (as the gate bench's `gate_no_audit` path), no record, no event.
//! - agents: `DirectSession::call` of a 60-tool agent (lookup, strict parse, availability,
//!   permission, one interceptor, typed parse, the body, the `proposed` and `executed`
//!   records), with a sink that does no I/O: records built only; built and sealed on a plain
//!   hash chain; sealed on a keyed chain (HMAC-SHA-256 under an epoch key). The same sinks as
//!   `agents-runtime/benches/gate.rs`.
//!
//! Cold start: a runtime built (roles, an interceptor, the in-process store, a sink that
//! keeps nothing) and a first run of the 60-tool agent started and ended (the registry
//! verified against its manifest, a scripted model answering at once), against rig's
//! `AgentBuilder` with the same 60 tools built and a first prompt answered by rig's scripted
//! model (`MockCompletionModel`); each side's model made inside the timed loop.
//!
//! Every path is checked to answer the same JSON first. Each figure is the best of 7 rounds
//! of `N` calls, the rounds of the paths interleaved; the ratios are against rig's dispatch
//! measured in the same run.
//!
//! `cd peers/rig && cargo run --release --ignore-rust-version` (nightly, see
//! `rust-toolchain.toml`); `PEER_CALLS=<n>` changes `N` (20,000). `PEER_ONLY=<part of a
//! label>` runs that one path once, for `valgrind --tool=callgrind`.
#![recursion_limit = "512"]
#![allow(missing_docs, non_camel_case_types)]

use agents_runtime::audit::{Appended, AuditRecord, AuditSink, ChainKey, EpochKey, GENESIS_HASH, PreparedRecord};
use agents_runtime::interceptor::{Decision, Interception, Interceptor};
use agents_runtime::provider::ScriptedProvider;
use agents_runtime::provider::scripted::reply;
use agents_runtime::run::DirectSession;
use agents_runtime::{Agent, Principal, Registry, RoleMap, Runtime, agent, permissions, tool};
use agents_runtime::{RunResultExt as _, RunStatus};
use rig_agent::AgentBuilder;
use rig_agent::tool::ToolSet;
use rig_core::test_utils::MockCompletionModel;
use rig_core::tool::ToolContext;
use std::hint::black_box;
use std::sync::{Arc, Mutex};
use std::time::Instant;

permissions! {
    pub mod perms { bench.read }
}

/// What every tool returns, on both sides.
#[derive(serde::Serialize)]
pub struct Found {
    id: u64,
    name: String,
    tags: usize,
}

fn body(id: u64, name: &str, tags: &[String]) -> Found {
    Found { id, name: name.to_owned(), tags: tags.len() }
}

/// rig's side: the same arguments, serde's derive.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RigArgs {
    id: u64,
    name: String,
    tags: Vec<String>,
}

macro_rules! stamp {
    ($($t:ident $r:ident)*) => {
        $(
            /// Looks a record up.
            #[tool(permission = perms::bench::read)]
            async fn $t(id: u64, name: String, tags: Vec<String>) -> Result<Found, String> {
                Ok(body(id, &name, &tags))
            }

            /// Looks a record up (rig).
            pub struct $r;

            impl rig_core::tool::Tool for $r {
                const NAME: &'static str = stringify!($t);
                type Args = RigArgs;
                type Output = Found;
                type Error = std::convert::Infallible;

                fn description(&self) -> String {
                    "Looks a record up.".into()
                }

                fn parameters(&self) -> serde_json::Value {
                    serde_json::json!({
                        "type": "object",
                        "properties": {
                            "id": {"type": "integer"}, "name": {"type": "string"},
                            "tags": {"type": "array", "items": {"type": "string"}}
                        },
                        "required": ["id", "name", "tags"]
                    })
                }

                async fn call(
                    &self,
                    _: &mut rig_core::tool::ToolContext,
                    a: RigArgs,
                ) -> Result<Found, Self::Error> {
                    Ok(body(a.id, &a.name, &a.tags))
                }
            }
        )*

        agent! {
            /// A benchmark agent of 60 read tools.
            pub struct Small;
            tools: [$($t),*],
        }

        /// rig's 60 tools.
        fn rig_tools() -> ToolSet {
            let mut set = ToolSet::default();
            $(set.add_tool($r);)*
            set
        }

        /// rig's agent of the same 60 tools.
        fn rig_agent(model: MockCompletionModel) -> rig_agent::Agent {
            AgentBuilder::new(model).preamble("You are an assistant.")$(.tool($r))*.build()
        }
    };
}

stamp! {
    t00 r00 t01 r01 t02 r02 t03 r03 t04 r04 t05 r05 t06 r06 t07 r07 t08 r08 t09 r09
    t10 r10 t11 r11 t12 r12 t13 r13 t14 r14 t15 r15 t16 r16 t17 r17 t18 r18 t19 r19
    t20 r20 t21 r21 t22 r22 t23 r23 t24 r24 t25 r25 t26 r26 t27 r27 t28 r28 t29 r29
    t30 r30 t31 r31 t32 r32 t33 r33 t34 r34 t35 r35 t36 r36 t37 r37 t38 r38 t39 r39
    t40 r40 t41 r41 t42 r42 t43 r43 t44 r44 t45 r45 t46 r46 t47 r47 t48 r48 t49 r49
    t50 r50 t51 r51 t52 r52 t53 r53 t54 r54 t55 r55 t56 r56 t57 r57 t58 r58 t59 r59
}

const TOOL: &str = "t59";
const ARGS: &str = r#"{"id": 4711, "name": "Ann Example", "tags": ["ankle", "rehab", "u19"]}"#;

/// Keeps nothing: the records built, not chained.
struct BuiltOnlySink;

impl AuditSink for BuiltOnlySink {
    fn append(&self, record: AuditRecord) -> Appended<'_> {
        Appended::ready(Ok(record))
    }
}

/// Seals every record onto a chain without I/O, as a durable sink does before it writes.
struct NoIoSink {
    chain: Mutex<(u64, String)>,
    key: Option<EpochKey>,
}

impl NoIoSink {
    fn new(key: Option<EpochKey>) -> Self {
        NoIoSink { chain: Mutex::new((0, GENESIS_HASH.to_owned())), key }
    }
}

impl AuditSink for NoIoSink {
    fn append(&self, record: AuditRecord) -> Appended<'_> {
        let prepared = PreparedRecord::new(record);
        let mut chain = self.chain.lock().unwrap();
        let (record, line) = prepared.seal_with(chain.0 + 1, &chain.1, self.key.as_ref());
        black_box(line);
        chain.0 += 1;
        chain.1.clone_from(&record.hash);
        Appended::ready(Ok(record))
    }
}

fn proceed(_: Interception<'_>) -> Decision {
    Decision::Proceed
}

fn session(rt: &tokio::runtime::Runtime, sink: Arc<dyn AuditSink>) -> DirectSession<Small> {
    let runtime = Runtime::builder(sink, Arc::new(ScriptedProvider::new([])))
        .roles(RoleMap::new().role("analyst", ["bench.read"]))
        .interceptor(Arc::new(proceed))
        .build();
    rt.block_on(runtime.direct::<Small>(Principal::new("u1", "org1", "analyst"), "bench", None)).unwrap()
}

/// The gate's checks without audit records or events, from the registry the macros generate
/// (as `agents-runtime/benches/gate.rs` composes them): lookup in the availability snapshot,
/// strict parse, typed parse, the interceptor, the body, the result as JSON.
struct Bare {
    snapshot: Vec<bool>,
    interceptor: Arc<dyn Interceptor>,
    principal: Principal,
}

impl Bare {
    fn new() -> Self {
        let roles = RoleMap::new().role("analyst", ["bench.read"]);
        let principal = Principal::new("u1", "org1", "analyst");
        let snapshot = Small::tools().iter().map(|t| roles.has_permission(&principal.role, t.permission)).collect();
        Bare { snapshot, interceptor: Arc::new(proceed), principal }
    }

    async fn call(&self) -> serde_json::Value {
        let index = Small::tool_index(TOOL).filter(|&i| self.snapshot[i]);
        let entry = index.and_then(Small::entry_at).expect("available");
        let value = agents_runtime::agents_core::strict::parse_args(ARGS).unwrap();
        let typed = entry.parse(&value).unwrap();
        let seen = Interception {
            principal: &self.principal,
            spec: entry.spec(),
            args: &value,
            run_id: "bench",
            provenance: None,
        };
        assert_eq!(self.interceptor.before_call(seen).await, Decision::Proceed);
        let a = typed.take::<T59Args>().expect("the registry parses to the tool's args");
        serde_json::to_value(body(a.id, &a.name, &a.tags)).unwrap()
    }
}

/// rig's `ToolSet::execute` of one tool call by name.
async fn rig_execute(set: &ToolSet) -> serde_json::Value {
    let result = set.execute(TOOL, ARGS, &mut ToolContext::new()).await;
    result.output().as_json().cloned().expect("a JSON output")
}

/// Our cold start: a runtime built and a first run ended.
async fn our_cold_start() {
    let runtime = Runtime::builder(Arc::new(BuiltOnlySink), Arc::new(ScriptedProvider::new([reply("hello")])))
        .roles(RoleMap::new().role("analyst", ["bench.read"]))
        .interceptor(Arc::new(proceed))
        .sweep_every(None)
        .build();
    let who = Principal::new("u1", "org1", "analyst");
    let out = runtime.start::<Small>(who, "cold", "hello".into()).unwrap().wait().await;
    assert_eq!(out.status(), RunStatus::Completed);
}

/// rig's: an agent built and a first prompt answered.
async fn rig_cold_start() {
    let agent = rig_agent(MockCompletionModel::text("hello"));
    let answer = agent.prompt("hello").await.expect("the scripted model answers");
    black_box(answer);
}

type Path<'a> = (&'static str, Box<dyn Fn(u32) + 'a>);

/// `n` calls of the gate through `s`.
fn gate<'a>(rt: &'a tokio::runtime::Runtime, s: &'a DirectSession<Small>) -> Box<dyn Fn(u32) + 'a> {
    Box::new(move |n| {
        rt.block_on(async {
            for _ in 0..n {
                black_box(s.call("c", TOOL, ARGS).await);
            }
        })
    })
}

fn main() {
    let n: u32 = std::env::var("PEER_CALLS").ok().and_then(|v| v.parse().ok()).unwrap_or(20_000);
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let set = rig_tools();
    let bare = Bare::new();
    let built = session(&rt, Arc::new(BuiltOnlySink));
    let plain = session(&rt, Arc::new(NoIoSink::new(None)));
    let keyed = session(&rt, Arc::new(NoIoSink::new(Some(ChainKey::from_bytes([7; 32]).key_at(3)))));

    // Every path answers the same thing.
    let want = rt.block_on(rig_execute(&set));
    assert_eq!(rt.block_on(bare.call()), want);
    for s in [&built, &plain, &keyed] {
        assert_eq!(rt.block_on(s.call("c", TOOL, ARGS)).content, want);
    }
    rt.block_on(our_cold_start());
    rt.block_on(rig_cold_start());

    let paths: Vec<Path<'_>> = vec![
        (
            "rig 0.46: ToolSet::execute",
            Box::new(|n| {
                rt.block_on(async {
                    for _ in 0..n {
                        black_box(rig_execute(&set).await);
                    }
                })
            }),
        ),
        (
            "agents: gate, no audit record",
            Box::new(|n| {
                rt.block_on(async {
                    for _ in 0..n {
                        black_box(bare.call().await);
                    }
                })
            }),
        ),
        ("agents: gate, records built", gate(&rt, &built)),
        ("agents: gate, records sealed (plain)", gate(&rt, &plain)),
        ("agents: gate, records sealed (keyed)", gate(&rt, &keyed)),
        (
            "rig 0.46: agent built + first prompt",
            Box::new(|n| {
                rt.block_on(async {
                    for _ in 0..n / 20 {
                        rig_cold_start().await
                    }
                })
            }),
        ),
        (
            "agents: runtime built + first run",
            Box::new(|n| {
                rt.block_on(async {
                    for _ in 0..n / 20 {
                        our_cold_start().await
                    }
                })
            }),
        ),
    ];
    // `PEER_ONLY=<part of a label>`: that path once (`n` calls) and nothing else, for
    // instruction counts under `valgrind --tool=callgrind`, which the machine's load does not
    // change.
    if let Ok(only) = std::env::var("PEER_ONLY") {
        let (label, p) = paths.iter().find(|(l, _)| l.contains(only.as_str())).expect("no path has that label");
        p(n);
        println!("ran `{label}` with n = {n}");
        return;
    }
    let mut best = vec![f64::INFINITY; paths.len()];
    for _ in 0..7 {
        for (i, (_, p)) in paths.iter().enumerate() {
            let t = Instant::now();
            p(n);
            let calls = if i >= 5 { n / 20 } else { n };
            best[i] = best[i].min(t.elapsed().as_nanos() as f64 / f64::from(calls));
        }
    }
    println!("one read call of a 60-tool set, best of 7 rounds of {n}, one thread:");
    for ((label, _), ns) in paths.iter().zip(&best).take(5) {
        println!("  {label:<40} {ns:>9.0} ns   {:>5.2}x rig", ns / best[0]);
    }
    println!(
        "  audited call (gate + two sealed records) / rig's ToolSet::execute: {:.2}x plain, {:.2}x keyed (target <= 1.5x)",
        best[3] / best[0],
        best[4] / best[0]
    );
    println!("cold start, best of 7 rounds of {}:", n / 20);
    println!("  {:<40} {:>9.1} us", paths[5].0, best[5] / 1e3);
    println!("  {:<40} {:>9.1} us   {:>5.2}x rig", paths[6].0, best[6] / 1e3, best[6] / best[5]);
}
