//! `agents manifest ...`: show, diff, verify, hash, render. A composite's graph manifest is
//! handed to [`crate::composite_cmd`].

use crate::composite_cmd::{self, load_if_composite};
use crate::error::{CliError, CmdResult, EXIT_FINDING, EXIT_OK};
use crate::load::{self, LoadedManifest};
use crate::table::{Table, clip};
use crate::term::{self, esc};
use agents_core::diff::{ChangeKind, ManifestDiff, diff_documents};
use agents_core::manifest::{Manifest, ToolEntry};
use agents_core::report::{self, Report, ceiling_text, limits_text, tools_count_text};
use serde_json::json;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// `agents manifest show FILE`.
pub(crate) fn show(file: &Path, out: &mut String) -> CmdResult {
    if let Some(g) = load_if_composite(file)? {
        return composite_cmd::show(&g, out);
    }
    let m = load::manifest(file)?;
    let man = &m.manifest;
    let a = &man.agent;
    let mut head = Table::new(["field", "value"]);
    head.row(["agent".to_owned(), a.name.clone()]);
    head.row(["description".to_owned(), clip(&a.description, 100)]);
    head.row(["input".to_owned(), a.input.clone()]);
    head.row(["output".to_owned(), a.output.clone()]);
    head.row(["format".to_owned(), format!("{} v{}", man.format, man.version)]);
    head.row(["sha256".to_owned(), m.manifest_sha256()]);
    if let Some(sha) = m.reviewed_sha256() {
        head.row(["document".to_owned(), format!("reviewed (manifest and schemas), sha256 {sha}")]);
    }
    head.row([
        "file".to_owned(),
        if m.is_canonical() {
            let which = if m.io.is_some() { "the document's sha256" } else { "the sha256 above" };
            format!("canonical (sha256sum of the file gives {which})")
        } else {
            format!("not canonical: sha256sum of the file gives {}", m.file_sha256())
        },
    ]);
    head.row(["ceiling".to_owned(), ceiling_text(man)]);
    head.row(["limits".to_owned(), limits_text(man)]);
    head.row(["models".to_owned(), agents_core::models::models_text(a.models.as_deref())]);
    head.row(["budget".to_owned(), a.budget.text()]);
    head.row(["skills".to_owned(), skills_text(man)]);
    head.row(["tools".to_owned(), tools_count_text(man)]);
    out.push_str(&head.render());

    out.push_str("\nTOOLS\n");
    let mut tools = Table::new(["name", "tier", "risk", "permission", "mutating", "title", "parameters", "uses"]);
    for t in &man.tools {
        tools.row([
            t.name.clone(),
            t.tier.to_string(),
            t.risk.to_string(),
            t.permission.clone(),
            t.mutating.to_string(),
            t.title.as_deref().map_or_else(|| "-".to_owned(), |s| clip(s, 40)),
            params_text(t),
            if t.uses.is_empty() { "-".to_owned() } else { t.uses.join(", ") },
        ]);
    }
    out.push_str(&tools.render());

    out.push_str("\nPOLICIES (declared capabilities)\n");
    let mut pol = Table::new(["tool", "fs read", "fs write", "net hosts", "env vars"]);
    for t in &man.tools {
        let p = &t.policy;
        pol.row([
            t.name.clone(),
            list_or_none(&p.fs.read),
            list_or_none(&p.fs.write),
            list_or_none(&p.net.hosts),
            list_or_none(&p.env.vars),
        ]);
    }
    out.push_str(&pol.render());

    out.push_str("\nDESCRIPTIONS\n");
    for t in &man.tools {
        let _ = writeln!(out, "{}: {}", esc(&t.name), esc(&clip(&t.description, 200)));
    }
    if let Some(io) = &m.io {
        for (name, schema) in [("INPUT SCHEMA", &io.input), ("OUTPUT SCHEMA", &io.output)] {
            let _ = writeln!(out, "\n{name}\n{}", esc(&serde_json::to_string_pretty(schema).unwrap_or_default()));
        }
    }
    Ok(EXIT_OK)
}

/// The classified changes between two files: of the manifests, and of the schemas when either
/// is a reviewed document.
fn diff_loaded(a: &LoadedManifest, b: &LoadedManifest) -> ManifestDiff {
    diff_documents(&a.document(), &b.document())
}

fn skills_text(m: &Manifest) -> String {
    if m.agent.skills.is_empty() {
        return "none".to_owned();
    }
    m.agent.skills.iter().map(|s| format!("{} [{}]", s.name, s.tools.join(", "))).collect::<Vec<_>>().join("; ")
}

pub(crate) fn params_text(t: &ToolEntry) -> String {
    if t.parameters.is_empty() {
        return "-".to_owned();
    }
    t.parameters
        .iter()
        .map(|p| format!("{}: {}{}", p.name, p.rust_type, if p.secret { " (secret)" } else { "" }))
        .collect::<Vec<_>>()
        .join(", ")
}

fn list_or_none(v: &[String]) -> String {
    if v.is_empty() { "none".to_owned() } else { v.join(", ") }
}

/// `agents manifest diff OLD NEW [--node-manifest FILE]... [--json]`: exit 1 on any widening.
pub(crate) fn diff_cmd(old: &Path, new: &Path, nodes: &[PathBuf], as_json: bool, out: &mut String) -> CmdResult {
    if let Some(g) = load_if_composite(old)? {
        return composite_cmd::diff(g, new, nodes, as_json, out);
    }
    if !nodes.is_empty() {
        return Err(CliError::new("--node-manifest applies to composite manifests; these are an agent's")
            .hint("compare the agent manifests themselves: agents manifest diff OLD NEW"));
    }
    let a = load::manifest(old)?;
    let b = match load_if_composite(new)? {
        Some(_) => {
            return Err(CliError::new(format!(
                "`{}` is a composite manifest, but `{}` is an agent's; an agent is compared with an agent",
                new.display(),
                old.display()
            )));
        }
        None => load::manifest(new)?,
    };
    let d = diff_loaded(&a, &b);
    if as_json {
        out.push_str(&term::json(&diff_json(&a, &b, &d)));
        out.push('\n');
    } else {
        let _ = writeln!(out, "old  {}  sha256 {}", a.display_name(), d.old_sha256);
        let _ = writeln!(out, "new  {}  sha256 {}", b.display_name(), d.new_sha256);
        not_canonical_notes(&[&a, &b], out);
        out.push('\n');
        let _ = write!(out, "{d}");
        out.push('\n');
        if d.has_widening() {
            let _ = writeln!(
                out,
                "result: the new manifest WIDENS what the agent may do ({} widening change(s)); a reviewer must approve it",
                d.count(ChangeKind::Widening)
            );
        } else {
            let _ = writeln!(out, "result: no widening");
        }
    }
    Ok(if d.has_widening() { EXIT_FINDING } else { EXIT_OK })
}

/// A note for each manifest file that is not its own canonical text: its SHA-256 is then not
/// the agent's `MANIFEST_SHA256`, and the comparison is of its normalized reading.
fn not_canonical_notes(files: &[&LoadedManifest], out: &mut String) {
    for m in files {
        if !m.is_canonical() {
            let _ = writeln!(
                out,
                "note: `{}` is not in canonical form (it does not round-trip to its own canonical bytes); it is compared as read, normalized, with canonical sha256 {}",
                m.display_name(),
                m.manifest_sha256()
            );
        }
    }
}

fn diff_json(a: &LoadedManifest, b: &LoadedManifest, d: &ManifestDiff) -> serde_json::Value {
    json!({
        "old": { "path": a.raw_name(), "sha256": d.old_sha256, "canonical": a.is_canonical() },
        "new": { "path": b.raw_name(), "sha256": d.new_sha256, "canonical": b.is_canonical() },
        "has_widening": d.has_widening(),
        "summary": {
            "widening": d.count(ChangeKind::Widening),
            "narrowing": d.count(ChangeKind::Narrowing),
            "neutral": d.count(ChangeKind::Neutral),
        },
        "changes": d.changes,
    })
}

/// `agents manifest verify BASELINE CURRENT [--sha256 HEX]`: any byte difference, or a hash
/// other than the expected one, fails (exit 1).
pub(crate) fn verify(baseline: &Path, current: &Path, sha256: Option<&str>, out: &mut String) -> CmdResult {
    if let Some(g) = load_if_composite(baseline)? {
        return composite_cmd::verify(g, current, sha256, out);
    }
    let base = load::manifest(baseline)?;
    let cur = load::manifest(current)?;
    if let Some(expected) = sha256
        && expected != cur.file_sha256()
    {
        let _ = writeln!(
            out,
            "HASH MISMATCH: `{}` has sha256 {}, expected {}",
            cur.display_name(),
            cur.file_sha256(),
            term::esc(expected)
        );
        return Ok(EXIT_FINDING);
    }
    if base.bytes == cur.bytes {
        not_canonical_notes(&[&cur], out);
        let _ = writeln!(
            out,
            "OK: `{}` matches the baseline `{}` (sha256 {})",
            cur.display_name(),
            base.display_name(),
            cur.file_sha256()
        );
        return Ok(EXIT_OK);
    }
    let d = diff_loaded(&base, &cur);
    let _ = writeln!(out, "MISMATCH: `{}` differs from the baseline `{}`", cur.display_name(), base.display_name());
    let _ = writeln!(out, "baseline sha256 {}", base.file_sha256());
    let _ = writeln!(out, "current  sha256 {}", cur.file_sha256());
    not_canonical_notes(&[&base, &cur], out);
    if d.is_empty() {
        let _ = writeln!(
            out,
            "The manifests are equal in content, but the files are not byte-identical (formatting, whitespace or a trailing newline)."
        );
    } else {
        let _ = write!(out, "{d}");
    }
    if d.has_widening() {
        let _ = writeln!(out, "This change WIDENS what the agent may do; a reviewer must approve it.");
    }
    let _ = writeln!(
        out,
        "If the change is intended, replace the baseline with the current manifest (in a project using the baseline gate: AGENTS_BLESS=1 cargo test) and commit it."
    );
    Ok(EXIT_FINDING)
}

/// `agents manifest hash FILE`: SHA-256 of the file's bytes, as `sha256sum` prints it.
pub(crate) fn hash(file: &Path, out: &mut String, err: &mut String) -> CmdResult {
    if let Some(g) = load_if_composite(file)? {
        return composite_cmd::hash(&g, out, err);
    }
    let m = load::manifest(file)?;
    let _ = writeln!(out, "{}", m.file_sha256());
    if !m.is_canonical() {
        let _ = writeln!(
            err,
            "note: `{}` is not in canonical form; the agent's MANIFEST_SHA256 for this content is {}",
            m.display_name(),
            m.manifest_sha256()
        );
    }
    Ok(EXIT_OK)
}

/// `agents manifest render FILE [--diff OLD] [--roles ROLES] -o OUT`.
pub(crate) fn render(
    file: &Path,
    old: Option<&Path>,
    roles: Option<&Path>,
    output: &Path,
    out: &mut String,
) -> CmdResult {
    if let Some(g) = load_if_composite(file)? {
        return composite_cmd::render(&g, old, roles.is_some(), output, out);
    }
    let m = load::manifest(file)?;
    let old = old.map(load::manifest).transpose()?;
    let roles = roles.map(load::roles).transpose()?;
    let d = old.as_ref().map(|o| diff_loaded(o, &m));
    let (source, sha256) = (m.raw_name(), m.manifest_sha256());
    let old_name = old.as_ref().map(|o| o.raw_name());
    let html = report::render(&Report {
        diff: d.as_ref().zip(old_name.as_deref()),
        roles: roles.as_ref(),
        io: m.io.as_ref(),
        ..Report::new(&m.manifest, &source, &sha256)
    });
    std::fs::write(output, html.as_bytes()).map_err(|e| {
        CliError::new(format!("cannot write the report to `{}`: {e}", term::path(output)))
            .hint("check that the directory exists and is writable")
    })?;
    let _ = writeln!(out, "wrote {} ({} bytes)", term::path(output), html.len());
    Ok(EXIT_OK)
}
