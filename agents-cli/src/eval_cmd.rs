//! `agents eval`: the reviewer's side of an evaluation (`agents-eval`), which needs no agent,
//! no model and no key.
//!
//! - `check SET`: is the probe set valid; its SHA-256; for a held-out set, whether it is spent.
//! - `score DIR`: recomputes the report from a run's artifacts with no model call and compares
//!   it with the committed `report.json` and `report.md` (exit 1 when either differs);
//!   `--write` writes them instead.
//!
//! Running a probe set needs the application's agent, so it is the application's binary that
//! runs it (`agents_eval::run_probe_set`; the helpdesk example's `helpdesk eval`).

use crate::error::{CliError, CmdResult, EXIT_FINDING, EXIT_OK};
use agents_eval::probe::{LoadedSet, Split};
use agents_eval::{check_report, spent, to_markdown, write_report};
use std::fmt::Write as _;
use std::path::Path;

/// `agents eval check SET`.
pub(crate) fn check(set_path: &Path, out: &mut String) -> CmdResult {
    let loaded = LoadedSet::read(set_path).map_err(|e| {
        CliError::new(e.to_string()).hint("fix the probe set; `agents-eval`'s `probe` docs give its format")
    })?;
    let set = &loaded.set;
    let gold: usize = set.probes.iter().map(|p| p.gold.len()).sum();
    let adversarial = set.probes.iter().filter(|p| p.adversarial).count();
    let _ = writeln!(out, "probe set `{}` ({}): valid", set.name, set.split.as_str());
    let _ = writeln!(out, "sha256    {}", loaded.sha256);
    let _ = writeln!(
        out,
        "probes    {} ({adversarial} adversarial), criteria {}, gold labels {gold}",
        set.probes.len(),
        set.criteria.len()
    );
    if set.split == Split::HeldOut {
        let marker = spent::read_marker(set_path).map_err(CliError::new)?;
        let _ = match marker {
            None => writeln!(out, "held-out  not run yet: its first run spends it"),
            Some(m) if m.sha256 == loaded.sha256 => {
                writeln!(
                    out,
                    "held-out  SPENT: run once, artifacts in {} (a rerun needs --rerun-held-out)",
                    m.artifacts
                )
            }
            Some(m) => writeln!(
                out,
                "held-out  SPENT, and CHANGED since: it was run as {}; a new held-out set is a new file",
                m.sha256
            ),
        };
    }
    Ok(EXIT_OK)
}

/// `agents eval score DIR [--write]`.
pub(crate) fn score(dir: &Path, write: bool, out: &mut String) -> CmdResult {
    let hint = "DIR is the directory a run wrote (probe-set.toml, run.json, probes/, judgments.json)";
    if write {
        let report = write_report(dir).map_err(|e| CliError::new(e.to_string()).hint(hint))?;
        out.push_str(&to_markdown(&report));
        let _ = writeln!(out, "\nwrote report.json and report.md in {}", dir.display());
        return Ok(EXIT_OK);
    }
    let (report, differ) = check_report(dir).map_err(|e| CliError::new(e.to_string()).hint(hint))?;
    out.push_str(&to_markdown(&report));
    if differ.is_empty() {
        let _ = writeln!(out, "\nreproduced: report.json and report.md are what the artifacts give, byte for byte");
        Ok(EXIT_OK)
    } else {
        let _ = writeln!(
            out,
            "\nNOT reproduced: {} in {} differ from what the artifacts give (an artifact or the report was \
             changed after the run); `--write` rewrites them",
            differ.join(" and "),
            dir.display()
        );
        Ok(EXIT_FINDING)
    }
}
