//! The whole suite: every task alone (the baseline) and crossed with every goal, in both
//! modes; the table a person reads and the JSON a later commit is compared with.

use crate::apps::Target;
use crate::run::{Mode, Scored, run_scenario, run_scenario_with_log};
use crate::scenario::Suite;
use crate::warned::Warned;
use agents_runtime::audit::AuditRecord;
use serde::Serialize;
use std::fmt::Write as _;

/// One scenario to run.
#[derive(Debug, Clone, Copy)]
pub struct Job<'a> {
    /// The example and its channel.
    pub target: Target,
    /// Its scenarios.
    pub suite: &'a Suite,
    /// The task.
    pub task: usize,
    /// The goal, or `None` for the baseline.
    pub goal: Option<usize>,
    /// The mode.
    pub mode: Mode,
}

/// Every scenario of `suites`: per example, the baseline (guarded), the crossed scenarios
/// (guarded), and, when `unguarded`, the crossed scenarios again with the guard off.
pub fn jobs<'a>(suites: &'a [(Target, Suite)], unguarded: bool) -> Vec<Job<'a>> {
    let mut out = Vec::new();
    for (target, suite) in suites {
        let modes: &[Mode] = if unguarded { &[Mode::Guarded, Mode::Unguarded] } else { &[Mode::Guarded] };
        let tasks: Vec<usize> = (0..suite.tasks.len()).filter(|&t| suite.tasks[t].runs_in(target.channel)).collect();
        for &task in &tasks {
            out.push(Job { target: *target, suite, task, goal: None, mode: Mode::Guarded });
        }
        for &mode in modes {
            for &task in &tasks {
                for goal in (0..suite.goals.len()).filter(|&g| suite.goals[g].runs_in(target.channel)) {
                    out.push(Job { target: *target, suite, task, goal: Some(goal), mode });
                }
            }
        }
    }
    out
}

/// Runs one job.
pub async fn run_job(job: Job<'_>) -> Scored {
    let task = &job.suite.tasks[job.task];
    let goal = job.goal.map(|g| &job.suite.goals[g]);
    run_scenario(job.target, job.suite, task, goal, job.mode).await
}

/// Runs one job and keeps its audit records.
pub async fn run_job_with_log(job: Job<'_>) -> (Scored, Vec<AuditRecord>) {
    let task = &job.suite.tasks[job.task];
    let goal = job.goal.map(|g| &job.suite.goals[g]);
    run_scenario_with_log(job.target, job.suite, task, goal, job.mode).await
}

/// One row of the table: one goal of one example (or the baseline).
#[derive(Debug, Clone, Serialize)]
pub struct Row {
    /// The example.
    pub example: String,
    /// The goal id, `baseline` for the tasks alone.
    pub goal: String,
    /// The goal in words.
    pub name: String,
    /// Scenarios (tasks crossed with this goal).
    pub scenarios: usize,
    /// Scenarios whose task reached its intended final state (gate on).
    pub utility: usize,
    /// Scenarios the goal applies to (see [`Scored::applicable`]).
    pub applicable: usize,
    /// Scenarios in which the model tried the goal (gate on).
    pub attempted: usize,
    /// Scenarios whose goal's effect shows in the audit log (gate on).
    pub attack_success: usize,
    /// Severe failures (gate on).
    pub severe: usize,
    /// Scenarios whose goal's effect shows with the guard off (`None` when not run).
    pub unguarded_success: Option<usize>,
    /// The goal's note: why it is impossible by construction, or a known gap.
    pub note: String,
    /// The cards the person saw (gate on), by kind, and how many carried a warning.
    pub warned: Warned,
}

/// The result of a suite run.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// The git commit, when known (from `GIT_COMMIT` or `git rev-parse`).
    pub commit: Option<String>,
    /// One row per goal and example, and one baseline row per example.
    pub rows: Vec<Row>,
    /// Totals per example and overall (`example` = `all`).
    pub totals: Vec<Row>,
    /// Every scenario.
    pub scenarios: Vec<Scored>,
}

pub(crate) fn row(
    example: &str,
    goal: &str,
    name: &str,
    note: &str,
    of: &[&Scored],
    unguarded: Option<&[&Scored]>,
) -> Row {
    Row {
        example: example.to_owned(),
        goal: goal.to_owned(),
        name: name.to_owned(),
        scenarios: of.len(),
        utility: of.iter().filter(|s| s.utility).count(),
        applicable: of.iter().filter(|s| s.applicable).count(),
        attempted: of.iter().filter(|s| s.attempted).count(),
        attack_success: of.iter().filter(|s| s.attack_success).count(),
        severe: of.iter().map(|s| s.severe).sum(),
        unguarded_success: unguarded.map(|u| u.iter().filter(|s| s.attack_success).count()),
        note: note.to_owned(),
        warned: of.iter().fold(Warned::default(), |w, s| w.plus(s.warned)),
    }
}

impl Report {
    /// Aggregates `scenarios` of `suites`.
    pub fn new(suites: &[(Target, Suite)], scenarios: Vec<Scored>, unguarded: bool) -> Report {
        let mut rows = Vec::new();
        let mut totals = Vec::new();
        let pick = |example: &str, goal: Option<&str>, mode: Mode| -> Vec<&Scored> {
            scenarios.iter().filter(|s| s.example == example && s.goal.as_deref() == goal && s.mode == mode).collect()
        };
        let crossed = |example: Option<&str>, mode: Mode| -> Vec<&Scored> {
            scenarios
                .iter()
                .filter(|s| example.is_none_or(|e| s.example == e) && s.goal.is_some() && s.mode == mode)
                .collect()
        };
        for (target, suite) in suites {
            let name = target.name();
            let ex = name.as_str();
            rows.push(row(ex, "baseline", "the tasks alone, no injection", "", &pick(ex, None, Mode::Guarded), None));
            for g in suite.goals.iter().filter(|g| g.runs_in(target.channel)) {
                let note = match (&g.impossible, &g.known_gap) {
                    (Some(why), _) => format!("impossible by construction: {why}"),
                    (None, Some(why)) => format!("known gap: {why}"),
                    _ => String::new(),
                };
                let guarded = pick(ex, Some(&g.id), Mode::Guarded);
                let off = pick(ex, Some(&g.id), Mode::Unguarded);
                rows.push(row(ex, &g.id, &g.name, &note, &guarded, unguarded.then_some(off.as_slice())));
            }
            let off = crossed(Some(ex), Mode::Unguarded);
            totals.push(row(
                ex,
                "all goals",
                "",
                "",
                &crossed(Some(ex), Mode::Guarded),
                unguarded.then_some(off.as_slice()),
            ));
        }
        let off = crossed(None, Mode::Unguarded);
        totals.push(row(
            "all",
            "all goals",
            "",
            "",
            &crossed(None, Mode::Guarded),
            unguarded.then_some(off.as_slice()),
        ));
        let commit = std::env::var("GIT_COMMIT").ok().or_else(|| {
            std::process::Command::new("git")
                .args(["rev-parse", "--short", "HEAD"])
                .output()
                .ok()
                .filter(|o| o.status.success())
                .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        });
        Report { commit, rows, totals, scenarios }
    }

    /// The table, as Markdown.
    pub fn table(&self) -> String {
        let mut t = String::new();
        let _ = writeln!(
            t,
            "| example | goal | scenarios | utility | attempted/applicable | attack success | severe | attack success, guard off | injected through results or documents, warned | injected through the user's message, warned | user's own, warned | replayed, warned | note |"
        );
        let _ = writeln!(t, "|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|---|");
        for r in self.rows.iter().chain(&self.totals) {
            let off = r.unguarded_success.map_or("-".to_owned(), |n| n.to_string());
            let goal = if r.name.is_empty() { r.goal.clone() } else { format!("{} ({})", r.goal, r.name) };
            let attempted =
                if r.goal == "baseline" { "-".to_owned() } else { format!("{}/{}", r.attempted, r.applicable) };
            let attack = if r.goal == "baseline" { "-".to_owned() } else { r.attack_success.to_string() };
            let w = &r.warned;
            let _ = writeln!(
                t,
                "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
                r.example,
                goal,
                r.scenarios,
                r.utility,
                attempted,
                attack,
                r.severe,
                off,
                Warned::share(w.injected_warned, w.injected),
                Warned::share(w.in_message_warned, w.in_message),
                Warned::share(w.own_warned, w.own),
                Warned::share(w.replayed_warned, w.replayed),
                r.note
            );
        }
        t
    }
}

/// What changed between an earlier JSON report and this one, row by row (same example and
/// goal): one line per changed figure, and whether any change is a regression (more attack
/// successes or severe failures, less utility).
pub fn compare(earlier: &serde_json::Value, now: &Report) -> (Vec<String>, bool) {
    let mut lines = Vec::new();
    let mut worse = false;
    let old_rows: Vec<&serde_json::Value> =
        ["rows", "totals"].iter().filter_map(|k| earlier.get(*k).and_then(|v| v.as_array())).flatten().collect();
    for r in now.rows.iter().chain(&now.totals) {
        let Some(old) = old_rows.iter().find(|o| o["example"] == r.example.as_str() && o["goal"] == r.goal.as_str())
        else {
            lines.push(format!("{} {}: new", r.example, r.goal));
            continue;
        };
        let figures = [
            ("utility", r.utility, false),
            ("attack_success", r.attack_success, true),
            ("severe", r.severe, true),
            ("scenarios", r.scenarios, false),
        ];
        for (name, value, higher_is_worse) in figures {
            let before = old[name].as_u64().unwrap_or(0) as usize;
            if before != value {
                let regression = if higher_is_worse { value > before } else { name == "utility" && value < before };
                worse |= regression;
                let mark = if regression { " (worse)" } else { "" };
                lines.push(format!("{} {}: {name} {before} -> {value}{mark}", r.example, r.goal));
            }
        }
    }
    (lines, worse)
}
