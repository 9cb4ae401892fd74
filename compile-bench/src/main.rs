//! `compile-bench`: what do `#[tool]` and `agent!` cost at compile time?
//!
//! Generates one cargo workspace with two crates, `bench_agents` (N tools declared with
//! `#[tool]`, one per module, and one `agent!` granting them all) and `bench_baseline` (the
//! same functions with plain serde + schemars derives, a hand-written `match` dispatch and a
//! `OnceLock`-cached schema per tool), builds every dependency once, then times builds of
//! each crate alone, alternating A/B each round, and prints the medians and ratios.
//!
//! ```text
//! cargo run -p compile-bench --release -- [--rounds N] [--tools N] [--out DIR] [--live] [--only LIST]
//! ```
//!
//! See `compile-bench/README.md`.

mod generate;
mod measure;

use generate::{AGENTS, BASELINE, Workspace};
use measure::{Cargo, Profile};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

const USAGE: &str = "usage: compile-bench [--rounds N] [--tools N] [--out DIR] [--live] [--only LIST]
  --rounds N   rounds of A/B measurements; the median is reported (default 5)
  --tools N    tools per generated crate (default 60)
  --out DIR    work directory for the generated workspace (default <project>/target/compile-bench)
  --live       depend on the project's working tree instead of a snapshot copied at start
  --only LIST  measure only these scenarios (comma-separated: clean-dev, clean-release,
               edit-dev, touch-release; the no-op build is always measured)";

/// Command-line options.
#[derive(Debug)]
struct Options {
    rounds: usize,
    tools: usize,
    out: PathBuf,
    live: bool,
    /// The scenarios to measure (always including [`Scenario::Noop`]).
    only: Vec<Scenario>,
}

fn project_root() -> PathBuf {
    let here = Path::new(env!("CARGO_MANIFEST_DIR"));
    here.parent().unwrap_or(here).to_path_buf()
}

fn parse_options(args: impl IntoIterator<Item = String>) -> Result<Options, String> {
    let mut opts = Options {
        rounds: 5,
        tools: 60,
        out: project_root().join("target").join("compile-bench"),
        live: false,
        only: Scenario::ALL.to_vec(),
    };
    let mut args = args.into_iter();
    while let Some(arg) = args.next() {
        let mut value = |name: &str| args.next().ok_or_else(|| format!("`{name}` needs a value"));
        match arg.as_str() {
            "--rounds" => opts.rounds = value("--rounds")?.parse().map_err(|e| format!("--rounds: {e}"))?,
            "--tools" => opts.tools = value("--tools")?.parse().map_err(|e| format!("--tools: {e}"))?,
            "--out" => opts.out = PathBuf::from(value("--out")?),
            "--live" => opts.live = true,
            "--only" => {
                let list = value("--only")?;
                let mut only = vec![Scenario::Noop];
                for name in list.split(',').map(str::trim).filter(|n| !n.is_empty()) {
                    let scenario = Scenario::ALL.into_iter().find(|s| s.name() == name).ok_or_else(|| {
                        let names: Vec<&str> = Scenario::ALL.iter().map(|s| s.name()).collect();
                        format!("--only: unknown scenario `{name}`; the scenarios are {}", names.join(", "))
                    })?;
                    if !only.contains(&scenario) {
                        only.push(scenario);
                    }
                }
                only.sort_by_key(|s| Scenario::ALL.iter().position(|a| a == s));
                opts.only = only;
            }
            "-h" | "--help" => return Err(String::new()),
            other => return Err(format!("unknown argument `{other}`")),
        }
    }
    if opts.rounds == 0 {
        return Err("--rounds must be at least 1".into());
    }
    if !(1..=500).contains(&opts.tools) {
        return Err("--tools must be from 1 to 500".into());
    }
    Ok(opts)
}

/// A measured situation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Scenario {
    /// A dev build with nothing to do: cargo's start-up and fingerprint checks.
    Noop,
    /// `cargo clean -p` then a dev build.
    CleanDev,
    /// `cargo clean -p --release` then a release build.
    CleanRelease,
    /// A dev rebuild after rewriting a literal in one tool's module.
    EditDev,
    /// A release rebuild after touching the crate root.
    TouchRelease,
}

impl Scenario {
    const ALL: [Scenario; 5] =
        [Scenario::Noop, Scenario::CleanDev, Scenario::CleanRelease, Scenario::EditDev, Scenario::TouchRelease];

    /// The name `--only` takes.
    fn name(self) -> &'static str {
        match self {
            Scenario::Noop => "noop",
            Scenario::CleanDev => "clean-dev",
            Scenario::CleanRelease => "clean-release",
            Scenario::EditDev => "edit-dev",
            Scenario::TouchRelease => "touch-release",
        }
    }

    fn label(self) -> &'static str {
        match self {
            Scenario::Noop => "no-op dev build",
            Scenario::CleanDev => "clean dev build",
            Scenario::CleanRelease => "clean release build",
            Scenario::EditDev => "dev rebuild, one-line edit",
            Scenario::TouchRelease => "release rebuild, lib.rs touched",
        }
    }

    /// The largest acceptable agents/baseline ratio, where the issue sets one.
    fn target(self) -> Option<f64> {
        match self {
            Scenario::CleanDev => Some(1.15),
            Scenario::Noop | Scenario::CleanRelease => None,
            Scenario::EditDev => Some(1.20),
            Scenario::TouchRelease => Some(1.10),
        }
    }

    fn profile(self) -> Profile {
        match self {
            Scenario::Noop | Scenario::CleanDev | Scenario::EditDev => Profile::Dev,
            Scenario::CleanRelease | Scenario::TouchRelease => Profile::Release,
        }
    }
}

/// Prepares `scenario` for `krate`, then times the build.
fn measure(cargo: &Cargo, ws: &Workspace, scenario: Scenario, krate: &str, round: usize) -> Result<Duration, String> {
    let profile = scenario.profile();
    match scenario {
        Scenario::Noop => {
            // The previous round's edits and touches leave the crate stale: settle it first.
            cargo.build(krate, profile)?;
            let build = cargo.build(krate, profile)?;
            if !build.compiled.is_empty() {
                return Err(format!(
                    "a no-op build of `{krate}` compiled {:?}; the workspace is not stable",
                    build.compiled
                ));
            }
            return Ok(build.elapsed);
        }
        Scenario::CleanDev | Scenario::CleanRelease => cargo.clean(krate, profile)?,
        Scenario::EditDev => {
            cargo.build(krate, profile)?;
            let salt = 1000 + round as u64;
            generate::edit_literal(&ws.edited_module(krate), salt).map_err(|e| format!("edit: {e}"))?;
        }
        Scenario::TouchRelease => {
            cargo.build(krate, profile)?;
            generate::touch(&ws.lib_rs(krate)).map_err(|e| format!("touch: {e}"))?;
        }
    }
    let build = cargo.build(krate, profile)?;
    if !build.compiled.iter().any(|t| t == krate) {
        return Err(format!("{}: cargo found `{krate}` fresh, so nothing was measured", scenario.label()));
    }
    let others: Vec<&String> = build.compiled.iter().filter(|t| *t != krate).collect();
    if !others.is_empty() {
        eprintln!(
            "compile-bench: warning: a timed build of `{krate}` also compiled {others:?}; that round is inflated"
        );
    }
    Ok(build.elapsed)
}

fn median(values: &[Duration]) -> Duration {
    let mut v = values.to_vec();
    v.sort();
    let n = v.len();
    if n % 2 == 1 { v[n / 2] } else { (v[n / 2 - 1] + v[n / 2]) / 2 }
}

fn secs(d: Duration) -> String {
    format!("{:.2}s", d.as_secs_f64())
}

fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "unknown".into())
}

/// Each scenario's times, by round: `[agents, baseline]`.
type Times = Vec<[Vec<Duration>; 2]>;

fn run(opts: &Options) -> Result<(), String> {
    let project = project_root();
    let crates = if opts.live {
        project.clone()
    } else {
        generate::snapshot_project(&project, &opts.out).map_err(|e| format!("cannot copy the project's crates: {e}"))?
    };
    let ws = generate::write_workspace(&opts.out, &project, &crates, opts.tools)
        .map_err(|e| format!("cannot write the workspace: {e}"))?;
    introduce(opts, &ws, &crates);
    let mut cargo = Cargo::new(ws.clone());
    eprintln!("compile-bench: building dependencies (dev and release); this is not timed");
    for profile in [Profile::Dev, Profile::Release] {
        for krate in [AGENTS, BASELINE] {
            cargo.build_first(krate, profile)?;
        }
    }
    let times = time_rounds(&cargo, &ws, opts)?;
    println!("load average at end: {}", load_average());
    println!();
    print_medians(&opts.only, &times);
    if cargo.fetched() {
        println!("(a dependency was fetched online once before timing)");
    }
    println!();
    print_rounds(opts, &times);
    Ok(())
}

/// What is measured, where, and how busy the machine is at the start.
fn introduce(opts: &Options, ws: &Workspace, crates: &Path) {
    println!("compile-bench: {} tools per crate, {} round(s), A/B alternating each round", opts.tools, opts.rounds);
    println!("work dir: {}", ws.root.display());
    println!("agents-runtime from: {}", crates.display());
    println!(
        "generated source: {AGENTS} {} KiB, {BASELINE} {} KiB",
        ws.source_bytes(AGENTS) / 1024,
        ws.source_bytes(BASELINE) / 1024
    );
    println!("load average at start: {}", load_average());
    println!(
        "Dependencies (agents-runtime, agents-macros, serde, serde_json, schemars, ...) are built once before any timing;\n\
         \"clean\" means `cargo clean -p <crate>` then `cargo build -p <crate>`: only the crate under test compiles."
    );
}

/// Every scenario in every round, the two crates in alternating order each round.
fn time_rounds(cargo: &Cargo, ws: &Workspace, opts: &Options) -> Result<Times, String> {
    // times[scenario][0 = agents, 1 = baseline]
    let scenarios = &opts.only;
    let mut times: Times = scenarios.iter().map(|_| [Vec::new(), Vec::new()]).collect();
    for round in 0..opts.rounds {
        let order: [(usize, &str); 2] =
            if round % 2 == 0 { [(0, AGENTS), (1, BASELINE)] } else { [(1, BASELINE), (0, AGENTS)] };
        for (s, scenario) in scenarios.iter().enumerate() {
            for (slot, krate) in order {
                let t = measure(cargo, ws, *scenario, krate, round)?;
                times[s][slot].push(t);
            }
            eprintln!(
                "round {}/{}: {:<32} agents {:>8}  baseline {:>8}",
                round + 1,
                opts.rounds,
                scenario.label(),
                secs(*times[s][0].last().unwrap_or(&Duration::ZERO)),
                secs(*times[s][1].last().unwrap_or(&Duration::ZERO)),
            );
        }
    }
    Ok(times)
}

/// The table of medians: each scenario's ratio against its target, and its ratio once the
/// no-op time is taken off.
fn print_medians(scenarios: &[Scenario], times: &Times) {
    println!(
        "{:<32} {:>9} {:>9} {:>7} {:>8}  {:<11} {:>9}",
        "scenario", "agents", "baseline", "ratio", "target", "verdict", "net ratio"
    );
    let noop = [median(&times[0][0]), median(&times[0][1])];
    for (s, scenario) in scenarios.iter().enumerate() {
        let a = median(&times[s][0]);
        let b = median(&times[s][1]);
        let ratio = a.as_secs_f64() / b.as_secs_f64().max(f64::EPSILON);
        let (target, verdict) = match scenario.target() {
            Some(t) => (format!("≤{t:.2}×"), if ratio <= t { "ok" } else { "over" }),
            None => ("-".to_owned(), "(no target)"),
        };
        // The ratio once each crate's no-op time (cargo start-up) is taken off.
        let net = match scenario {
            Scenario::Noop => "-".to_owned(),
            _ => {
                let (na, nb) = (a.saturating_sub(noop[0]), b.saturating_sub(noop[1]));
                format!("{:.2}×", na.as_secs_f64() / nb.as_secs_f64().max(f64::EPSILON))
            }
        };
        println!(
            "{:<32} {:>9} {:>9} {:>6.2}× {:>8}  {verdict:<11} {net:>9}",
            scenario.label(),
            secs(a),
            secs(b),
            ratio,
            target
        );
    }
}

/// Every round's times, scenario by scenario.
fn print_rounds(opts: &Options, times: &Times) {
    let scenarios = &opts.only;
    println!("medians of {} round(s); every round, in seconds (agents / baseline):", opts.rounds);
    for (s, scenario) in scenarios.iter().enumerate() {
        let rounds: Vec<String> = times[s][0]
            .iter()
            .zip(&times[s][1])
            .map(|(a, b)| format!("{:.2}/{:.2}", a.as_secs_f64(), b.as_secs_f64()))
            .collect();
        println!("  {:<32} {}", scenario.label(), rounds.join("  "));
    }
}

fn main() -> ExitCode {
    let opts = match parse_options(std::env::args().skip(1)) {
        Ok(o) => o,
        Err(e) if e.is_empty() => {
            println!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!("compile-bench: {e}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    match run(&opts) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("compile-bench: {e}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(s: &str) -> Vec<String> {
        s.split_whitespace().map(str::to_owned).collect()
    }

    #[test]
    fn options() {
        let o = parse_options(args("--rounds 3 --tools 10 --out /tmp/x")).unwrap();
        assert_eq!((o.rounds, o.tools, o.out), (3, 10, PathBuf::from("/tmp/x")));
        assert!(parse_options(args("--rounds 0")).is_err());
        assert!(parse_options(args("--bogus")).is_err());
        assert_eq!(parse_options(args("--help")).unwrap_err(), "");
        assert_eq!(parse_options(args("")).unwrap().only, Scenario::ALL.to_vec());
    }

    #[test]
    fn only_keeps_the_no_op_build_and_the_order() {
        let o = parse_options(args("--only touch-release,edit-dev")).unwrap();
        assert_eq!(o.only, vec![Scenario::Noop, Scenario::EditDev, Scenario::TouchRelease]);
        let err = parse_options(args("--only edit")).unwrap_err();
        assert!(err.contains("unknown scenario `edit`") && err.contains("edit-dev"), "{err}");
    }

    #[test]
    fn medians() {
        let d = |s| Duration::from_secs(s);
        assert_eq!(median(&[d(3), d(1), d(2)]), d(2));
        assert_eq!(median(&[d(4), d(1), d(2), d(3)]), Duration::from_millis(2500));
    }
}
