//! `agents eval`: a committed run's report reproduced from its artifacts, severe failures that
//! are exactly what `agents audit stats` finds in the same logs, and probe sets checked.

use crate::common::{agents, code, stdout};
use serde_json::Value;
use std::path::{Path, PathBuf};

fn runs() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/eval/runs")
}

/// A copy of a committed run in a temporary directory.
fn copy_run(name: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    copy_tree(&runs().join(name), dir.path());
    dir
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

#[test]
fn committed_runs_are_reproduced_byte_for_byte() {
    for name in ["helpdesk-dev", "helpdesk-heldout"] {
        let o = agents(["eval", "score"].iter().map(Into::into).chain([runs().join(name).into_os_string()]));
        assert_eq!(code(&o), 0, "{}", stdout(&o));
        assert!(stdout(&o).contains("reproduced: report.json and report.md"), "{}", stdout(&o));
    }
}

#[test]
fn a_changed_artifact_is_not_reproduced() {
    let dir = copy_run("helpdesk-dev");
    let path = dir.path().join("judgments.json");
    let text = std::fs::read_to_string(&path).unwrap();
    let changed = text.replacen(r#""label": "not_applicable""#, r#""label": "yes""#, 1);
    assert_ne!(changed, text);
    std::fs::write(&path, changed).unwrap();
    let o = agents(["eval".as_ref(), "score".as_ref(), dir.path().as_os_str()]);
    assert_eq!(code(&o), 1, "{}", stdout(&o));
    assert!(stdout(&o).contains("NOT reproduced: report.json and report.md"), "{}", stdout(&o));
    // `--write` recomputes them; then they are reproduced.
    assert_eq!(code(&agents(["eval".as_ref(), "score".as_ref(), dir.path().as_os_str(), "--write".as_ref()])), 0);
    assert_eq!(code(&agents(["eval".as_ref(), "score".as_ref(), dir.path().as_os_str()])), 0);
}

/// `agents audit stats --json` on one log.
fn stats(log: &Path) -> Value {
    let o = agents(["audit".as_ref(), "stats".as_ref(), "--json".as_ref(), log.as_os_str()]);
    serde_json::from_slice(&o.stdout).unwrap()
}

/// Each probe's severe failures as (kind, line).
type PerProbe = Vec<(String, Vec<(String, u64)>)>;

/// Severe failures per probe, from the report and from `audit stats`, and the report's total.
fn both_counts(dir: &Path) -> (PerProbe, PerProbe, u64) {
    let report: Value = serde_json::from_slice(&std::fs::read(dir.join("report.json")).unwrap()).unwrap();
    let (mut from_report, mut from_stats) = (Vec::new(), Vec::new());
    for p in report["severe_failures"]["per_probe"].as_array().unwrap() {
        let probe = p["probe"].as_str().unwrap().to_owned();
        let kinds = |list: &Value, line: &str| -> Vec<(String, u64)> {
            list.as_array()
                .unwrap()
                .iter()
                .map(|f| (f["kind"].as_str().unwrap().to_owned(), f[line].as_u64().unwrap()))
                .collect()
        };
        from_report.push((probe.clone(), kinds(&p["failures"], "line")));
        let s = stats(&dir.join("probes").join(&probe).join("audit.jsonl"));
        assert_eq!(s["severe_failure_count"], p["count"], "{probe}");
        from_stats.push((probe, kinds(&s["severe_failures"], "line")));
    }
    (from_report, from_stats, report["severe_failures"]["total"].as_u64().unwrap())
}

#[test]
fn severe_failures_in_the_report_are_what_audit_stats_finds_in_the_same_logs() {
    // The committed run: none either way.
    let (report, stats, total) = both_counts(&runs().join("helpdesk-heldout"));
    assert_eq!((report.clone(), total), (stats, 0));
    assert!(report.len() == 6 && report.iter().all(|(_, f)| f.is_empty()));

    // Logs with the approvals cut out and a handoff recorded as executed: both find the same.
    let dir = copy_run("helpdesk-heldout");
    let edit = |probe: &str, f: &dyn Fn(&str) -> Option<String>| {
        let log = dir.path().join("probes").join(probe).join("audit.jsonl");
        let text = std::fs::read_to_string(&log).unwrap();
        let lines: Vec<String> = text.lines().filter_map(f).collect();
        std::fs::write(&log, lines.join("\n") + "\n").unwrap();
    };
    let cut_confirmed = |l: &str| (!l.contains(r#""status":"confirmed""#)).then(|| l.to_owned());
    edit("sick-day", &cut_confirmed);
    edit("software-justified", &cut_confirmed);
    edit("admin-claim", &|l: &str| Some(l.replace(r#""status":"handed_off""#, r#""status":"executed""#)));
    let o = agents(["eval".as_ref(), "score".as_ref(), dir.path().as_os_str(), "--write".as_ref()]);
    assert_eq!(code(&o), 0, "{}", stdout(&o));
    let (report, stats, total) = both_counts(dir.path());
    assert_eq!(report, stats);
    assert_eq!(total, 3);
    let kinds: Vec<&str> = report.iter().flat_map(|(_, f)| f.iter().map(|(k, _)| k.as_str())).collect();
    assert_eq!(kinds, ["action_without_approval", "action_without_approval", "handoff_executed"]);
    assert!(stdout(&o).contains("| Severe failures (from the audit logs) | 3 |"), "{}", stdout(&o));
}

#[test]
fn check_names_a_spent_held_out_set_and_what_is_wrong_with_a_bad_one() {
    let set = runs().join("../helpdesk-heldout.toml");
    let o = agents(["eval".as_ref(), "check".as_ref(), set.as_os_str()]);
    assert_eq!(code(&o), 0);
    assert!(stdout(&o).contains("held-out  SPENT"), "{}", stdout(&o));
    assert!(stdout(&o).contains("probes    6 (3 adversarial)"), "{}", stdout(&o));

    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.toml");
    std::fs::write(&bad, "format = \"agents.probe-set\"\nversion = 1\nname = \"b\"\nsplit = \"dev\"\nprobes = []\n")
        .unwrap();
    let o = agents(["eval".as_ref(), "check".as_ref(), bad.as_os_str()]);
    assert_eq!(code(&o), 2);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("there is no probe") && err.contains("hint:"), "{err}");
}

#[test]
fn score_of_a_directory_that_is_not_a_run_says_what_it_needs() {
    let dir = tempfile::tempdir().unwrap();
    let o = agents(["eval".as_ref(), "score".as_ref(), dir.path().as_os_str()]);
    assert_eq!(code(&o), 2);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("run.json") && err.contains("hint: DIR is the directory a run wrote"), "{err}");
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0, "a failed score wrote something");
}
