//! The gate's cost per call against a hand-written baseline, and its growth with the number
//! of tools.
//!
//! - `baseline`: `serde_json::from_value` of the same arguments (already a JSON value) into a
//!   struct of the same fields with serde's derived `Deserialize` (unknown fields denied), as a
//!   hand-written tool would have, plus a direct call of the same body, result converted to JSON. The ratios are against it.
//!   `baseline_from_str` (the same from the JSON text) is printed for context.
//! - `gate_audit_built`: `DirectSession::call` (lookup, strict parse, availability, one
//!   interceptor, typed deserialize, the `proposed` and `executed` records built, sealed and
//!   hashed by a sink that does no I/O, events, digest).
//! - `gate_audit_sealed` / `gate_audit_keyed`: the same, with each record sealed as a durable
//!   sink seals it before it writes (rendered once, hashed or MACed, its line written once), in
//!   the plain and the keyed chain.
//! - `gate_no_audit`: the same steps without audit records and events, composed from the
//!   registry (`Registry::entry`, strict parse, snapshot check, interceptor, typed parse, body).
//!
//! 60-tool and 600-tool agents are stamped out by `macro_rules!`; the called tool is the last
//! one each agent lists. Run: `cargo bench -p agents-runtime --bench gate`.
#![recursion_limit = "1024"]
#![allow(missing_docs)]

use agents_runtime::audit::{
    Appended, AuditRecord, AuditSink, AuditStatus, ChainKey, EpochKey, GENESIS_HASH, MemorySink, PreparedRecord,
};
use agents_runtime::interceptor::{Decision, Interception, Interceptor};
use agents_runtime::provider::ScriptedProvider;
use agents_runtime::run::DirectSession;
use agents_runtime::{Principal, Registry, RoleMap, Runtime, Tool, agent, permissions, tool};
use criterion::{Criterion, criterion_group};
use std::hint::black_box;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

permissions! {
    pub mod perms { bench.read }
}

/// What every stamped tool returns.
#[derive(serde::Serialize)]
pub struct Found {
    id: u64,
    name: String,
    tags: usize,
}

/// The body shared by the tools and the baseline.
fn body(id: u64, name: &str, tags: &[String]) -> Found {
    Found { id, name: name.to_owned(), tags: tags.len() }
}

macro_rules! stamp_tools {
    ($($t:ident)*) => {$(
        /// Looks a record up.
        #[tool(permission = perms::bench::read)]
        async fn $t(id: u64, name: String, tags: Vec<String>) -> Result<Found, String> {
            Ok(body(id, &name, &tags))
        }
    )*};
}

macro_rules! stamp_agent {
    ($agent:ident; $($t:ident)*) => {
        agent! {
            /// A benchmark agent.
            pub struct $agent;
            tools: [$($t),*],
        }
    };
}

stamp_tools! {
        t000 t001 t002 t003 t004 t005 t006 t007 t008 t009 t010 t011 t012 t013 t014 t015 t016 t017 t018 t019
        t020 t021 t022 t023 t024 t025 t026 t027 t028 t029 t030 t031 t032 t033 t034 t035 t036 t037 t038 t039
        t040 t041 t042 t043 t044 t045 t046 t047 t048 t049 t050 t051 t052 t053 t054 t055 t056 t057 t058 t059
        t060 t061 t062 t063 t064 t065 t066 t067 t068 t069 t070 t071 t072 t073 t074 t075 t076 t077 t078 t079
        t080 t081 t082 t083 t084 t085 t086 t087 t088 t089 t090 t091 t092 t093 t094 t095 t096 t097 t098 t099
        t100 t101 t102 t103 t104 t105 t106 t107 t108 t109 t110 t111 t112 t113 t114 t115 t116 t117 t118 t119
        t120 t121 t122 t123 t124 t125 t126 t127 t128 t129 t130 t131 t132 t133 t134 t135 t136 t137 t138 t139
        t140 t141 t142 t143 t144 t145 t146 t147 t148 t149 t150 t151 t152 t153 t154 t155 t156 t157 t158 t159
        t160 t161 t162 t163 t164 t165 t166 t167 t168 t169 t170 t171 t172 t173 t174 t175 t176 t177 t178 t179
        t180 t181 t182 t183 t184 t185 t186 t187 t188 t189 t190 t191 t192 t193 t194 t195 t196 t197 t198 t199
        t200 t201 t202 t203 t204 t205 t206 t207 t208 t209 t210 t211 t212 t213 t214 t215 t216 t217 t218 t219
        t220 t221 t222 t223 t224 t225 t226 t227 t228 t229 t230 t231 t232 t233 t234 t235 t236 t237 t238 t239
        t240 t241 t242 t243 t244 t245 t246 t247 t248 t249 t250 t251 t252 t253 t254 t255 t256 t257 t258 t259
        t260 t261 t262 t263 t264 t265 t266 t267 t268 t269 t270 t271 t272 t273 t274 t275 t276 t277 t278 t279
        t280 t281 t282 t283 t284 t285 t286 t287 t288 t289 t290 t291 t292 t293 t294 t295 t296 t297 t298 t299
        t300 t301 t302 t303 t304 t305 t306 t307 t308 t309 t310 t311 t312 t313 t314 t315 t316 t317 t318 t319
        t320 t321 t322 t323 t324 t325 t326 t327 t328 t329 t330 t331 t332 t333 t334 t335 t336 t337 t338 t339
        t340 t341 t342 t343 t344 t345 t346 t347 t348 t349 t350 t351 t352 t353 t354 t355 t356 t357 t358 t359
        t360 t361 t362 t363 t364 t365 t366 t367 t368 t369 t370 t371 t372 t373 t374 t375 t376 t377 t378 t379
        t380 t381 t382 t383 t384 t385 t386 t387 t388 t389 t390 t391 t392 t393 t394 t395 t396 t397 t398 t399
        t400 t401 t402 t403 t404 t405 t406 t407 t408 t409 t410 t411 t412 t413 t414 t415 t416 t417 t418 t419
        t420 t421 t422 t423 t424 t425 t426 t427 t428 t429 t430 t431 t432 t433 t434 t435 t436 t437 t438 t439
        t440 t441 t442 t443 t444 t445 t446 t447 t448 t449 t450 t451 t452 t453 t454 t455 t456 t457 t458 t459
        t460 t461 t462 t463 t464 t465 t466 t467 t468 t469 t470 t471 t472 t473 t474 t475 t476 t477 t478 t479
        t480 t481 t482 t483 t484 t485 t486 t487 t488 t489 t490 t491 t492 t493 t494 t495 t496 t497 t498 t499
        t500 t501 t502 t503 t504 t505 t506 t507 t508 t509 t510 t511 t512 t513 t514 t515 t516 t517 t518 t519
        t520 t521 t522 t523 t524 t525 t526 t527 t528 t529 t530 t531 t532 t533 t534 t535 t536 t537 t538 t539
        t540 t541 t542 t543 t544 t545 t546 t547 t548 t549 t550 t551 t552 t553 t554 t555 t556 t557 t558 t559
        t560 t561 t562 t563 t564 t565 t566 t567 t568 t569 t570 t571 t572 t573 t574 t575 t576 t577 t578 t579
        t580 t581 t582 t583 t584 t585 t586 t587 t588 t589 t590 t591 t592 t593 t594 t595 t596 t597 t598 t599
}

stamp_agent! { Small;
        t000 t001 t002 t003 t004 t005 t006 t007 t008 t009 t010 t011 t012 t013 t014 t015 t016 t017 t018 t019
        t020 t021 t022 t023 t024 t025 t026 t027 t028 t029 t030 t031 t032 t033 t034 t035 t036 t037 t038 t039
        t040 t041 t042 t043 t044 t045 t046 t047 t048 t049 t050 t051 t052 t053 t054 t055 t056 t057 t058 t059
}

stamp_agent! { Big;
        t000 t001 t002 t003 t004 t005 t006 t007 t008 t009 t010 t011 t012 t013 t014 t015 t016 t017 t018 t019
        t020 t021 t022 t023 t024 t025 t026 t027 t028 t029 t030 t031 t032 t033 t034 t035 t036 t037 t038 t039
        t040 t041 t042 t043 t044 t045 t046 t047 t048 t049 t050 t051 t052 t053 t054 t055 t056 t057 t058 t059
        t060 t061 t062 t063 t064 t065 t066 t067 t068 t069 t070 t071 t072 t073 t074 t075 t076 t077 t078 t079
        t080 t081 t082 t083 t084 t085 t086 t087 t088 t089 t090 t091 t092 t093 t094 t095 t096 t097 t098 t099
        t100 t101 t102 t103 t104 t105 t106 t107 t108 t109 t110 t111 t112 t113 t114 t115 t116 t117 t118 t119
        t120 t121 t122 t123 t124 t125 t126 t127 t128 t129 t130 t131 t132 t133 t134 t135 t136 t137 t138 t139
        t140 t141 t142 t143 t144 t145 t146 t147 t148 t149 t150 t151 t152 t153 t154 t155 t156 t157 t158 t159
        t160 t161 t162 t163 t164 t165 t166 t167 t168 t169 t170 t171 t172 t173 t174 t175 t176 t177 t178 t179
        t180 t181 t182 t183 t184 t185 t186 t187 t188 t189 t190 t191 t192 t193 t194 t195 t196 t197 t198 t199
        t200 t201 t202 t203 t204 t205 t206 t207 t208 t209 t210 t211 t212 t213 t214 t215 t216 t217 t218 t219
        t220 t221 t222 t223 t224 t225 t226 t227 t228 t229 t230 t231 t232 t233 t234 t235 t236 t237 t238 t239
        t240 t241 t242 t243 t244 t245 t246 t247 t248 t249 t250 t251 t252 t253 t254 t255 t256 t257 t258 t259
        t260 t261 t262 t263 t264 t265 t266 t267 t268 t269 t270 t271 t272 t273 t274 t275 t276 t277 t278 t279
        t280 t281 t282 t283 t284 t285 t286 t287 t288 t289 t290 t291 t292 t293 t294 t295 t296 t297 t298 t299
        t300 t301 t302 t303 t304 t305 t306 t307 t308 t309 t310 t311 t312 t313 t314 t315 t316 t317 t318 t319
        t320 t321 t322 t323 t324 t325 t326 t327 t328 t329 t330 t331 t332 t333 t334 t335 t336 t337 t338 t339
        t340 t341 t342 t343 t344 t345 t346 t347 t348 t349 t350 t351 t352 t353 t354 t355 t356 t357 t358 t359
        t360 t361 t362 t363 t364 t365 t366 t367 t368 t369 t370 t371 t372 t373 t374 t375 t376 t377 t378 t379
        t380 t381 t382 t383 t384 t385 t386 t387 t388 t389 t390 t391 t392 t393 t394 t395 t396 t397 t398 t399
        t400 t401 t402 t403 t404 t405 t406 t407 t408 t409 t410 t411 t412 t413 t414 t415 t416 t417 t418 t419
        t420 t421 t422 t423 t424 t425 t426 t427 t428 t429 t430 t431 t432 t433 t434 t435 t436 t437 t438 t439
        t440 t441 t442 t443 t444 t445 t446 t447 t448 t449 t450 t451 t452 t453 t454 t455 t456 t457 t458 t459
        t460 t461 t462 t463 t464 t465 t466 t467 t468 t469 t470 t471 t472 t473 t474 t475 t476 t477 t478 t479
        t480 t481 t482 t483 t484 t485 t486 t487 t488 t489 t490 t491 t492 t493 t494 t495 t496 t497 t498 t499
        t500 t501 t502 t503 t504 t505 t506 t507 t508 t509 t510 t511 t512 t513 t514 t515 t516 t517 t518 t519
        t520 t521 t522 t523 t524 t525 t526 t527 t528 t529 t530 t531 t532 t533 t534 t535 t536 t537 t538 t539
        t540 t541 t542 t543 t544 t545 t546 t547 t548 t549 t550 t551 t552 t553 t554 t555 t556 t557 t558 t559
        t560 t561 t562 t563 t564 t565 t566 t567 t568 t569 t570 t571 t572 t573 t574 t575 t576 t577 t578 t579
        t580 t581 t582 t583 t584 t585 t586 t587 t588 t589 t590 t591 t592 t593 t594 t595 t596 t597 t598 t599
}

const ARGS: &str = r#"{"id": 4711, "name": "Ann Example", "tags": ["ankle", "rehab", "u19"]}"#;

/// Receives every built record and keeps nothing: the cost of building the audit records
/// (the spec's "audit record built, no I/O"), not of chaining or storing them.
#[derive(Default)]
struct BuiltOnlySink;

impl AuditSink for BuiltOnlySink {
    fn append(&self, record: AuditRecord) -> Appended<'_> {
        Appended::ready(Ok(record))
    }
}

/// Seals every record onto a chain and returns it without any I/O: building plus what a
/// durable sink adds before it writes (render once, hash or MAC, the line written once), in the
/// plain mode or the keyed one (HMAC-SHA-256 under an epoch key).
struct NoIoSink {
    chain: Mutex<(u64, String)>,
    key: Option<EpochKey>,
}

impl NoIoSink {
    fn plain() -> Self {
        NoIoSink { chain: Mutex::new((0, GENESIS_HASH.to_owned())), key: None }
    }

    fn keyed() -> Self {
        NoIoSink { chain: Mutex::new((0, GENESIS_HASH.to_owned())), key: Some(ChainKey::from_bytes([7; 32]).key_at(3)) }
    }
}

impl AuditSink for NoIoSink {
    fn append(&self, record: AuditRecord) -> Appended<'_> {
        // Rendered on the producer's side, as `GroupCommitSink` does.
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

fn principal() -> Principal {
    Principal::new("u1", "org1", "analyst")
}

fn runtime(sink: Arc<dyn AuditSink>) -> Runtime {
    Runtime::builder(sink, Arc::new(ScriptedProvider::new([])))
        .roles(RoleMap::new().role("analyst", ["bench.read"]))
        .interceptor(Arc::new(proceed))
        .build()
}

fn args_value() -> serde_json::Value {
    serde_json::from_str(ARGS).unwrap()
}

/// The baseline's arguments: the tool's fields, with serde's derive.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct BaselineArgs {
    id: u64,
    name: String,
    tags: Vec<String>,
}

/// `from_value` takes the value by ownership, so the baseline clones it (as a caller holding
/// the arguments would).
fn baseline(value: &serde_json::Value) -> serde_json::Value {
    let args: BaselineArgs = serde_json::from_value(black_box(value).clone()).unwrap();
    serde_json::to_value(args.body()).unwrap()
}

fn baseline_from_str() -> serde_json::Value {
    let args: BaselineArgs = serde_json::from_str(black_box(ARGS)).unwrap();
    serde_json::to_value(args.body()).unwrap()
}

/// The body called with a tool's typed arguments.
trait Body {
    fn body(self) -> Found;
}

macro_rules! body_for {
    ($($args:ident)*) => {$(
        impl Body for $args {
            fn body(self) -> Found {
                body(self.id, &self.name, &self.tags)
            }
        }
    )*};
}
body_for!(BaselineArgs T059Args T599Args);

/// The gate's checks without audit records or events, from the registry the macros generate.
struct Bare<A: Registry, T: Tool> {
    /// Availability by position in `A::tools()`, as the runtime keeps it.
    snapshot: Vec<bool>,
    interceptors: Vec<Arc<dyn Interceptor>>,
    principal: Principal,
    _agent: std::marker::PhantomData<(A, T)>,
}

impl<A: Registry, T: Tool> Bare<A, T>
where
    T::Args: Body,
{
    fn new() -> Self {
        let roles = RoleMap::new().role("analyst", ["bench.read"]);
        let principal = principal();
        let snapshot = A::tools().iter().map(|t| roles.has_permission(&principal.role, t.permission)).collect();
        Bare { snapshot, interceptors: vec![Arc::new(proceed)], principal, _agent: std::marker::PhantomData }
    }

    async fn call(&self, name: &str, text: &str) -> serde_json::Value {
        let index = A::tool_index(name).filter(|&i| self.snapshot[i]);
        let entry = index.and_then(A::entry_at).expect("available");
        let value = agents_runtime::agents_core::strict::parse_args(text).unwrap();
        let typed = entry.parse(&value).unwrap();
        for i in &self.interceptors {
            let d = i
                .before_call(Interception {
                    principal: &self.principal,
                    spec: entry.spec(),
                    args: &value,
                    run_id: "bench",
                    provenance: None,
                })
                .await;
            assert_eq!(d, Decision::Proceed);
        }
        let args = typed.take::<T::Args>().expect("the registry parses to the tool's args");
        serde_json::to_value(args.body()).unwrap()
    }
}

struct Fixture {
    rt: tokio::runtime::Runtime,
    small: DirectSession<Small>,
    big: DirectSession<Big>,
    sealed: DirectSession<Small>,
    keyed: DirectSession<Small>,
    bare_small: Bare<Small, t059>,
    bare_big: Bare<Big, t599>,
}

fn fixture() -> Fixture {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let built = runtime(Arc::new(BuiltOnlySink));
    let small = rt.block_on(built.direct::<Small>(principal(), "bench-small", None)).unwrap();
    let big = rt.block_on(built.direct::<Big>(principal(), "bench-big", None)).unwrap();
    let chained = runtime(Arc::new(NoIoSink::plain()));
    let sealed = rt.block_on(chained.direct::<Small>(principal(), "bench-sealed", None)).unwrap();
    let keyed_rt = runtime(Arc::new(NoIoSink::keyed()));
    let keyed = rt.block_on(keyed_rt.direct::<Small>(principal(), "bench-keyed", None)).unwrap();
    let f = Fixture { rt, small, big, sealed, keyed, bare_small: Bare::new(), bare_big: Bare::new() };
    // Every path answers the same thing.
    let want = baseline(&args_value());
    assert_eq!(baseline_from_str(), want);
    assert_eq!(f.rt.block_on(f.small.call("c", SMALL_TOOL, ARGS)).content, want);
    assert_eq!(f.rt.block_on(f.big.call("c", BIG_TOOL, ARGS)).content, want);
    assert_eq!(f.rt.block_on(f.sealed.call("c", SMALL_TOOL, ARGS)).content, want);
    assert_eq!(f.rt.block_on(f.keyed.call("c", SMALL_TOOL, ARGS)).content, want);
    assert_eq!(f.rt.block_on(f.bare_small.call(SMALL_TOOL, ARGS)), want);
    assert_eq!(f.rt.block_on(f.bare_big.call(BIG_TOOL, ARGS)), want);
    f
}

const SMALL_TOOL: &str = "t059";
const BIG_TOOL: &str = "t599";

fn bench(c: &mut Criterion) {
    let f = fixture();
    let value = args_value();
    let mut g = c.benchmark_group("gate");
    g.sample_size(20).warm_up_time(Duration::from_millis(500)).measurement_time(Duration::from_secs(2));
    g.bench_function("baseline", |b| b.iter(|| baseline(&value)));
    g.bench_function("baseline_from_str", |b| b.iter(baseline_from_str));
    g.bench_function("gate_audit_built_60", |b| b.to_async(&f.rt).iter(|| f.small.call("c", SMALL_TOOL, ARGS)));
    g.bench_function("gate_audit_built_600", |b| b.to_async(&f.rt).iter(|| f.big.call("c", BIG_TOOL, ARGS)));
    g.bench_function("gate_audit_sealed_60", |b| b.to_async(&f.rt).iter(|| f.sealed.call("c", SMALL_TOOL, ARGS)));
    g.bench_function("gate_audit_keyed_60", |b| b.to_async(&f.rt).iter(|| f.keyed.call("c", SMALL_TOOL, ARGS)));
    g.bench_function("gate_no_audit_60", |b| b.to_async(&f.rt).iter(|| f.bare_small.call(SMALL_TOOL, ARGS)));
    g.bench_function("gate_no_audit_600", |b| b.to_async(&f.rt).iter(|| f.bare_big.call(BIG_TOOL, ARGS)));
    g.finish();
}

/// A labelled path: one call of it `N` times.
type Path<'a> = (&'static str, Box<dyn Fn() + 'a>);

/// Nanoseconds per call: the best of several rounds, rounds of each path interleaved.
fn ratios() {
    let f = fixture();
    let value = args_value();
    const N: u32 = 20_000;
    let rounds = |body: &dyn Fn()| {
        let t = Instant::now();
        body();
        t.elapsed().as_nanos() as f64 / f64::from(N)
    };
    let paths: Vec<Path<'_>> = vec![
        ("baseline (from_value + body)", Box::new(|| (0..N).for_each(|_| drop(black_box(baseline(&value)))))),
        ("the same from text (from_str)", Box::new(|| (0..N).for_each(|_| drop(black_box(baseline_from_str()))))),
        (
            "gate, no audit record, 60",
            Box::new(|| {
                f.rt.block_on(async {
                    for _ in 0..N {
                        black_box(f.bare_small.call(SMALL_TOOL, ARGS).await);
                    }
                })
            }),
        ),
        (
            "gate, no audit record, 600",
            Box::new(|| {
                f.rt.block_on(async {
                    for _ in 0..N {
                        black_box(f.bare_big.call(BIG_TOOL, ARGS).await);
                    }
                })
            }),
        ),
        (
            "gate, audit records built, 60",
            Box::new(|| {
                f.rt.block_on(async {
                    for _ in 0..N {
                        black_box(f.small.call("c", SMALL_TOOL, ARGS).await);
                    }
                })
            }),
        ),
        (
            "gate, audit records built, 600",
            Box::new(|| {
                f.rt.block_on(async {
                    for _ in 0..N {
                        black_box(f.big.call("c", BIG_TOOL, ARGS).await);
                    }
                })
            }),
        ),
        (
            "gate, records built and sealed, 60",
            Box::new(|| {
                f.rt.block_on(async {
                    for _ in 0..N {
                        black_box(f.sealed.call("c", SMALL_TOOL, ARGS).await);
                    }
                })
            }),
        ),
        (
            "gate, records sealed keyed, 60",
            Box::new(|| {
                f.rt.block_on(async {
                    for _ in 0..N {
                        black_box(f.keyed.call("c", SMALL_TOOL, ARGS).await);
                    }
                })
            }),
        ),
    ];
    // `GATE_BENCH_ONLY=<part of a label>`: run that one path once (N calls) and nothing else,
    // for instruction counts under `valgrind --tool=callgrind`, which do not depend on the load.
    if let Ok(only) = std::env::var("GATE_BENCH_ONLY") {
        let (label, p) = paths.iter().find(|(l, _)| l.contains(only.as_str())).expect("no path has that label");
        p();
        println!("ran `{label}` {N} times");
        // The state a direct call keeps across its waits, moved with it on every call.
        println!("future of one direct call: {} bytes", std::mem::size_of_val(&f.small.call("c", SMALL_TOOL, ARGS)));
        return;
    }
    let mut best = vec![f64::INFINITY; paths.len()];
    for _ in 0..7 {
        for (i, (_, p)) in paths.iter().enumerate() {
            best[i] = best[i].min(rounds(p.as_ref()));
        }
    }
    let seal = seal_cost();
    println!();
    println!("per call (best of 7 rounds of {N}):");
    for ((label, _), ns) in paths.iter().zip(&best) {
        println!("  {label:<36} {ns:>9.0} ns");
    }
    println!(
        "  {:<36} {seal:>9.0} ns  (a read call seals two: `proposed`, `executed`)",
        "sealing one record (render + SHA-256)"
    );
    let [base, _, bare60, bare600, built60, built600, sealed60, keyed60] = best[..] else { unreachable!() };
    println!("ratios:");
    println!("  gate (no audit) / baseline           {:>6.2}x  (target <= 2.0x)", bare60 / base);
    println!("  gate (audit built) / baseline        {:>6.2}x  (target <= 4.0x)", built60 / base);
    println!("  600 / 60 tools, no audit             {:>6.2}x  (target <= 1.10x)", bare600 / bare60);
    println!("  600 / 60 tools, audit built          {:>6.2}x  (target <= 1.10x)", built600 / built60);
    println!("  gate (built and sealed) / baseline   {:>6.2}x  (plain chain; target <= 6.0x)", sealed60 / base);
    println!("  gate (sealed, keyed) / baseline      {:>6.2}x  (keyed chain; target <= 6.0x)", keyed60 / base);
}

/// Nanoseconds to seal one `proposed` record as the gate builds it for the benchmark call.
fn seal_cost() -> f64 {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let sink = Arc::new(MemorySink::new());
    let runtime = runtime(sink.clone());
    let session = rt.block_on(runtime.direct::<Small>(principal(), "bench-seal", None)).unwrap();
    rt.block_on(session.call("c", SMALL_TOOL, ARGS));
    let records = sink.records();
    let mut record = records.iter().find(|r| r.status == AuditStatus::Proposed).unwrap().clone();
    const N: u32 = 20_000;
    let mut best = f64::INFINITY;
    for _ in 0..7 {
        let t = Instant::now();
        for _ in 0..N {
            // Sealing again with the same link gives the same hash; no clone is timed.
            black_box(&mut record).seal(2, &records[0].hash);
        }
        best = best.min(t.elapsed().as_nanos() as f64 / f64::from(N));
    }
    best
}

criterion_group!(benches, bench);

fn main() {
    if std::env::var_os("GATE_BENCH_ONLY").is_some() {
        return ratios();
    }
    benches();
    Criterion::default().configure_from_args().final_summary();
    ratios();
}
