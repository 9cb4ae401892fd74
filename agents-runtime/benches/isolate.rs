//! The cost of isolation: one tool called through a direct session in-process, and its
//! isolated twin with a worker started per call and with warm workers. Prints p50 and p99.
//!
//! `cargo bench -p agents-runtime --bench isolate --profile dev` (or without `--profile` for
//! an optimised build). Each isolated mode runs in a fresh process of this binary, since the
//! isolation settings are fixed per process by `isolate::init_with`.

use agents_runtime::audit::MemorySink;
use agents_runtime::isolate::{self, Settings};
use agents_runtime::provider::ScriptedProvider;
use agents_runtime::{Principal, RoleMap, Runtime, agent, tool};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Returns its text (in-process).
#[tool(permission = public)]
async fn echo_in_process(text: String) -> Result<String, String> {
    Ok(text)
}

/// Returns its text (isolated).
#[tool(permission = public, isolated)]
async fn echo_isolated(text: String) -> Result<String, String> {
    Ok(text)
}

agent! {
    /// Echoes.
    pub struct Echo;
    tools: [echo_in_process, echo_isolated],
}

const MODE: &str = "AGENTS_ISOLATE_BENCH_MODE";

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

fn measure(tool: &str, n: usize, pause: Duration) -> (Duration, Duration) {
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    runtime.block_on(async {
        let audit = Arc::new(MemorySink::new());
        let rt = Runtime::builder(audit, Arc::new(ScriptedProvider::new(vec![])))
            .roles(RoleMap::new().role("analyst", Vec::<&str>::new()))
            .build();
        let session = rt.direct::<Echo>(Principal::new("u1", "org1", "analyst"), "bench", None).await.unwrap();
        let mut times = Vec::with_capacity(n);
        // Warm-up (and, for warm workers, the first fill of the pool).
        for i in 0..5 {
            let r = session.call(&format!("w{i}"), tool, r#"{"text":"hello"}"#).await;
            assert!(!r.is_error, "{:?}", r.content);
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        for i in 0..n {
            let started = Instant::now();
            let r = session.call(&format!("c{i}"), tool, r#"{"text":"hello"}"#).await;
            times.push(started.elapsed());
            assert!(!r.is_error, "{:?}", r.content);
            if !pause.is_zero() {
                tokio::time::sleep(pause).await;
            }
        }
        times.sort();
        (percentile(&times, 0.5), percentile(&times, 0.99))
    })
}

fn report(label: &str, (p50, p99): (Duration, Duration)) {
    println!("{label:<58} p50 {:>9.3} ms   p99 {:>9.3} ms", p50.as_secs_f64() * 1e3, p99.as_secs_f64() * 1e3);
}

fn main() {
    let mode = std::env::var(MODE).unwrap_or_default();
    let settings = match mode.as_str() {
        "warm" => Settings::default().warm_workers(4),
        _ => Settings::default(),
    };
    // First: a worker serves here and exits.
    isolate::init_with(settings);
    match mode.as_str() {
        "spawn" => report("isolated, a worker started per call", measure("echo_isolated", 200, Duration::ZERO)),
        "warm" => {
            // The baseline in this same process, with the same pacing.
            let base = measure("echo_in_process", 200, Duration::from_millis(20));
            report("in-process, 20 ms between calls (this run's baseline)", base);
            let warm = measure("echo_isolated", 200, Duration::from_millis(20));
            report("isolated, warm workers (4), 20 ms between calls", warm);
            println!(
                "warm-pool overhead at p50: {:.3} ms ({:.1}x the in-process p50; target <= 1 ms)",
                (warm.0.as_secs_f64() - base.0.as_secs_f64()) * 1e3,
                warm.0.as_secs_f64() / base.0.as_secs_f64()
            );
            report("isolated, warm workers (4), back to back", measure("echo_isolated", 200, Duration::ZERO));
        }
        _ => {
            report("in-process", measure("echo_in_process", 2000, Duration::ZERO));
            report("in-process, 20 ms between calls", measure("echo_in_process", 200, Duration::from_millis(20)));
            for m in ["spawn", "warm"] {
                let status = std::process::Command::new(std::env::current_exe().unwrap())
                    .env(MODE, m)
                    .status()
                    .expect("run the isolated modes");
                assert!(status.success());
            }
        }
    }
}
