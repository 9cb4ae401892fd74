//! `injection-suite`: runs the scenarios, prints the table, writes the JSON.

use agents_runtime::audit::AuditRecord;
use indicatif::{ProgressBar, ProgressStyle};
use injection_suite::apps::Target;
use injection_suite::report::{Job, Report, compare, jobs, run_job_with_log};
use injection_suite::run::{Mode, Scored};
use injection_suite::scenario::{Suite, default_dir};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

const USAGE: &str =
    "usage: injection-suite [--example clinic|helpdesk|helpdesk-mcp|helpdesk-http]... [--dir DIR] [--json PATH] [--guarded-only]
  runs every task alone (baseline) and crossed with every injection goal, with the guard on and
  (unless --guarded-only) with it off; prints the table and writes the JSON report
  --example NAME   only this example (repeatable; default all four: the clinic's dialog, the
                   helpdesk's chat, the helpdesk served over MCP with elicitation, and the
                   helpdesk served over HTTP with the decision API)
  --dir DIR        the scenarios directory (default examples/scenarios of this checkout)
  --json PATH      where the JSON report goes (default target/injection-report.json)
  --guarded-only   skip the run with the guard switched off
  --compare PATH   compare with an earlier JSON report: print each changed figure, and exit
                   with 1 when attack successes or severe failures rose or utility fell
  --audit-dir DIR  also write each scenario's audit log, as JSONL, under DIR/<example>/<mode>/
                   (for `agents audit verify` / `agents audit stats`)
  --no-trees       skip the composite targets (run trees of the examples' composites: the
                   helpdesk's triage, the KYC pipeline and panel), whose table is printed
                   second and whose JSON goes beside the report (`*-trees.json`)";

fn main() -> ExitCode {
    match run() {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(2)
        }
    }
}

/// What the command line asks for.
struct Options {
    examples: Vec<Target>,
    dir: PathBuf,
    json: Option<PathBuf>,
    unguarded: bool,
    audit_dir: Option<PathBuf>,
    earlier: Option<PathBuf>,
    trees: bool,
}

/// The options of the command line; `None` once the usage is printed (`--help`).
fn options(mut args: impl Iterator<Item = String>) -> Result<Option<Options>, String> {
    let mut o = Options {
        examples: Vec::new(),
        dir: default_dir(),
        json: None,
        unguarded: true,
        audit_dir: None,
        earlier: None,
        trees: true,
    };
    while let Some(a) = args.next() {
        match a.as_str() {
            "--example" => {
                let name = args.next().ok_or("`--example` needs a name")?;
                o.examples.push(Target::from_name(&name).ok_or(format!("unknown example `{name}`\n{USAGE}"))?);
            }
            "--dir" => o.dir = PathBuf::from(args.next().ok_or("`--dir` needs a directory")?),
            "--json" => o.json = Some(PathBuf::from(args.next().ok_or("`--json` needs a path")?)),
            "--guarded-only" => o.unguarded = false,
            "--no-trees" => o.trees = false,
            "--compare" => o.earlier = Some(PathBuf::from(args.next().ok_or("`--compare` needs a path")?)),
            "--audit-dir" => o.audit_dir = Some(PathBuf::from(args.next().ok_or("`--audit-dir` needs a directory")?)),
            "-h" | "--help" => {
                println!("{USAGE}");
                return Ok(None);
            }
            other => return Err(format!("unknown argument `{other}`\n{USAGE}")),
        }
    }
    if o.examples.is_empty() {
        o.examples = Target::ALL.to_vec();
    }
    Ok(Some(o))
}

/// The earlier report at `earlier`, read as JSON.
fn read_earlier(earlier: PathBuf) -> Result<(PathBuf, serde_json::Value), String> {
    let text = std::fs::read_to_string(&earlier).map_err(|e| format!("{}: {e}", earlier.display()))?;
    let old: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| format!("{}: not a JSON report: {e}", earlier.display()))?;
    Ok((earlier, old))
}

fn run() -> Result<ExitCode, String> {
    let Some(o) = options(std::env::args().skip(1))? else { return Ok(ExitCode::SUCCESS) };
    // Read before anything is written: the earlier report may be the path written below.
    let old = o.earlier.map(read_earlier).transpose()?;
    let suites: Vec<(Target, Suite)> = o
        .examples
        .iter()
        .map(|&t| Suite::load(&o.dir, t.app.name()).map(|s| (t, s)).map_err(|e| e.to_string()))
        .collect::<Result<_, _>>()?;
    let scored = run_jobs(&jobs(&suites, o.unguarded), o.audit_dir.as_deref())?;
    let report = Report::new(&suites, scored, o.unguarded);
    println!("{}", report.table());
    let path =
        o.json.unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/injection-report.json"));
    let text = serde_json::to_string_pretty(&report).map_err(|e| e.to_string())?;
    std::fs::write(&path, text).map_err(|e| format!("{}: {e}", path.display()))?;
    println!("JSON report: {}", path.display());
    if o.trees {
        run_trees(o.unguarded, &path)?;
    }
    if let Some((earlier, old)) = old {
        let (lines, worse) = compare(&old, &report);
        println!("compared with {}: {} changed figures", earlier.display(), lines.len());
        for l in &lines {
            println!("  {l}");
        }
        if worse {
            return Ok(ExitCode::FAILURE);
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Runs the composite targets, prints their table and writes their JSON beside `path`.
fn run_trees(unguarded: bool, path: &Path) -> Result<(), String> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    let scenarios = rt.block_on(injection_suite::tree::run_all(unguarded))?;
    let report = injection_suite::tree::report(&scenarios)?;
    println!("\nComposite targets (run trees):\n\n{}", report.table());
    let trees = path.with_file_name(format!(
        "{}-trees.json",
        path.file_stem().map_or("injection-report".into(), |s| s.to_string_lossy())
    ));
    let text = serde_json::to_string_pretty(&report).map_err(|e| e.to_string())?;
    std::fs::write(&trees, text).map_err(|e| format!("{}: {e}", trees.display()))?;
    println!("JSON report of the composite targets: {}", trees.display());
    Ok(())
}

/// Runs every job with a progress bar, writing each one's audit records under `audit_dir`
/// when given; the scores.
fn run_jobs(jobs: &[Job<'_>], audit_dir: Option<&Path>) -> Result<Vec<Scored>, String> {
    let bar = ProgressBar::new(jobs.len() as u64);
    bar.set_style(ProgressStyle::with_template("{bar:40} {pos}/{len} scenarios {msg}").map_err(|e| e.to_string())?);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    let mut scored = Vec::with_capacity(jobs.len());
    for job in jobs {
        bar.set_message(format!("{} {}", job.target.name(), job.suite.tasks[job.task].id));
        let (s, records) = rt.block_on(run_job_with_log(*job));
        if let Some(root) = audit_dir {
            write_audit(root, &s, &records)?;
        }
        scored.push(s);
        bar.inc(1);
    }
    bar.finish_and_clear();
    Ok(scored)
}

/// Writes a scenario's audit records as JSONL under `root`, by example, mode, task and goal.
fn write_audit(root: &Path, s: &Scored, records: &[AuditRecord]) -> Result<(), String> {
    let mode = if s.mode == Mode::Guarded { "guarded" } else { "unguarded" };
    let dir = root.join(&s.example).join(mode);
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let path = dir.join(format!("{}__{}.jsonl", s.task, s.goal.as_deref().unwrap_or("baseline")));
    let text: String = records.iter().map(|r| r.to_line() + "\n").collect();
    std::fs::write(&path, text).map_err(|e| format!("{}: {e}", path.display()))
}
