//! The report's two renderings: JSON (pretty, fields in a fixed order, a final newline) and
//! Markdown, and the check that committed renderings are what the artifacts give.

use crate::artifacts::{self, ModelInfo};
use crate::report::{Report, ScoreError, score};
use crate::stats::Agreement;
use crate::stats::Kappa;
use std::fmt::Write as _;
use std::path::Path;

/// The report as `report.json` holds it.
pub fn to_json(report: &Report) -> Vec<u8> {
    artifacts::to_json_bytes(report)
}

fn percent(x: Option<f64>) -> String {
    x.map_or_else(|| "n/a".to_owned(), |x| format!("{:.1}%", x * 100.0))
}

fn kappa_text(k: &Kappa) -> String {
    match (k.value, k.ci95) {
        (Some(v), Some([lo, hi])) => format!("{v:.2} (95% CI {lo:.2} to {hi:.2})"),
        _ => format!("undefined: {}", k.undefined.as_deref().unwrap_or("no value")),
    }
}

/// Text from a file or a model, safe inside a Markdown table cell or code span.
fn cell(text: &str) -> String {
    text.replace(['|', '`', '\n', '\r'], " ")
}

fn model(m: &ModelInfo) -> String {
    let how = if m.family.declared { "declared" } else { "from the model's name" };
    format!("`{}:{}` (family {}, {how})", cell(&m.provider), cell(&m.model), cell(&m.family.name))
}

fn agreement_row(out: &mut String, name: &str, a: &Agreement) {
    let _ =
        writeln!(out, "| {name} | {} | {} | {} | {} |", a.items, a.judged, percent(a.accuracy), kappa_text(&a.kappa));
}

/// The report as `report.md` holds it.
pub fn to_markdown(r: &Report) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "# Evaluation report: {} ({})\n", cell(&r.set.name), r.set.split);
    let _ = writeln!(
        out,
        "Probe set SHA-256 `{}`, {} probes, criteria: {}.  \nAgent `{}` (manifest `{}`), model {}.  \nBlind judge: model {}.\n",
        r.set.sha256,
        r.set.probes,
        if r.set.criteria.is_empty() { "none".to_owned() } else { r.set.criteria.join(", ") },
        cell(&r.agent),
        r.manifest_sha256,
        model(&r.agent_model),
        model(&r.judge_model)
    );
    out.push_str(split_note(r));
    out.push_str("\n\n");
    summary_table(&mut out, r);
    details(&mut out, r);
    out
}

fn split_note(r: &Report) -> &'static str {
    match (r.set.split, r.set.held_out_rerun) {
        ("held-out", true) => {
            "> **Rerun of a spent held-out set.** This set had already been run once; it was run again with \
             `--rerun-held-out`. These figures are not a held-out measurement."
        }
        ("held-out", false) => "> A held-out set, run once: this run spent it.",
        _ => "> A dev set, used for tuning: its figures describe shape, not a score.",
    }
}

fn summary_table(out: &mut String, r: &Report) {
    let m = &r.mechanical;
    let j = &r.judge.overall;
    let c = &r.cost;
    let _ = writeln!(out, "| measure | value |\n| --- | --- |");
    let _ = writeln!(out, "| Severe failures (from the audit logs) | {} |", r.severe_failures.total);
    let _ = writeln!(
        out,
        "| Mechanical expectations met | {}/{} probes ({}/{} checks) |",
        m.probes_met, m.probes, m.checks_met, m.checks
    );
    let _ = writeln!(
        out,
        "| Adversarial probes that executed a change | {}/{} |",
        r.adversarial.executed_changes.len(),
        r.adversarial.probes
    );
    let _ = writeln!(
        out,
        "| Gold labels vs blind judge | {} ({}/{} agree; {} of {} labels judged) |",
        percent(j.accuracy),
        j.agree,
        j.judged,
        j.judged,
        j.items
    );
    let _ = writeln!(out, "| Binary Cohen's kappa | {} |", kappa_text(&j.kappa));
    let _ = writeln!(
        out,
        "| Cost | agent {:.4} USD ({} + {} tokens), judge {:.4} USD ({} calls; budget {} calls, {} USD) |",
        c.agent_usd,
        c.agent_input_tokens,
        c.agent_output_tokens,
        c.judge_usd,
        c.judge_calls,
        c.judge_budget.max_calls,
        c.judge_budget.max_usd
    );
    let _ = writeln!(out, "| Audit chains intact | {}/{} |", r.audit_chains.intact, r.audit_chains.logs);
    let _ = writeln!(out, "\nKappa's interval: {}.", r.judge.kappa_ci_method);
}

fn details(out: &mut String, r: &Report) {
    out.push_str("\n## Severe failures per probe\n\n| probe | severe failures |\n| --- | --- |\n");
    for p in &r.severe_failures.per_probe {
        let _ = writeln!(out, "| {} | {} |", p.probe, p.count);
        for f in &p.failures {
            let _ = writeln!(out, "| ↳ line {} | {}: {} |", f.line, f.kind, cell(&f.detail));
        }
    }
    out.push_str("\n## Mechanical expectations not met\n\n");
    if r.mechanical.missed.is_empty() {
        out.push_str("None.\n");
    }
    for m in &r.mechanical.missed {
        let _ = writeln!(out, "- `{}`: {}", m.probe, cell(&m.expectation));
    }
    out.push_str("\n## Adversarial probes that executed a change\n\n");
    if r.adversarial.executed_changes.is_empty() {
        out.push_str("None.\n");
    }
    for e in &r.adversarial.executed_changes {
        let _ = writeln!(out, "- `{}` executed: {}", e.probe, cell(&e.tools.join(", ")));
    }
    out.push_str("\n## Judge against gold, per criterion\n\n| criterion | gold labels | judged | accuracy | kappa |\n| --- | --- | --- | --- | --- |\n");
    for (id, a) in &r.judge.per_criterion {
        agreement_row(out, id, a);
    }
    agreement_row(out, "all", &r.judge.overall);
    out.push_str("\n## Disagreements\n\n");
    if r.judge.disagreements.is_empty() {
        out.push_str("None.\n");
    }
    for d in &r.judge.disagreements {
        let judge = d.judge.as_deref().map_or_else(|| "no label".to_owned(), |l| format!("`{}`", cell(l)));
        let _ = writeln!(out, "- `{}` / `{}`: gold `{}`, judge {judge}", d.probe, d.criterion, cell(&d.gold));
    }
    for b in &r.audit_chains.broken {
        let _ = writeln!(out, "\n**Broken audit chain** in `{}`: {}", b.probe, cell(&b.error));
    }
}

/// Scores `dir` and writes `report.json` and `report.md` there.
pub fn write_report(dir: &Path) -> Result<Report, ScoreError> {
    let report = score(dir)?;
    let io = |e: std::io::Error| ScoreError { dir: dir.display().to_string(), message: e.to_string() };
    std::fs::write(dir.join(artifacts::REPORT_JSON), to_json(&report)).map_err(io)?;
    std::fs::write(dir.join(artifacts::REPORT_MD), to_markdown(&report)).map_err(io)?;
    Ok(report)
}

/// The committed renderings that differ from what the artifacts give now (empty: both are
/// reproduced byte for byte).
pub fn check_report(dir: &Path) -> Result<(Report, Vec<&'static str>), ScoreError> {
    let report = score(dir)?;
    let mut differ = Vec::new();
    let fresh = [(artifacts::REPORT_JSON, to_json(&report)), (artifacts::REPORT_MD, to_markdown(&report).into_bytes())];
    for (name, bytes) in fresh {
        if std::fs::read(dir.join(name)).ok().as_deref() != Some(bytes.as_slice()) {
            differ.push(name);
        }
    }
    Ok((report, differ))
}
