//! `agents manifest show|diff|verify|hash|render` for a composite's graph manifest: the
//! manifest commands read the `format` field first and come here for
//! `agents.composite-manifest`.

use crate::error::{CliError, CmdResult, EXIT_FINDING, EXIT_OK};
use crate::load;
use crate::table::{Table, clip};
use crate::term;
use agents_core::canonical::sha256_hex;
use agents_core::diff::{ChangeKind, ManifestDiff};
use agents_core::graph::{self, GraphManifest, NodeKind, NodeManifests};
use agents_core::report::{CompositeReport, render_composite};
use serde_json::json;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// A composite's graph manifest read from a file.
pub(crate) struct LoadedGraph {
    path: PathBuf,
    bytes: Vec<u8>,
    graph: GraphManifest,
}

impl LoadedGraph {
    fn file_sha256(&self) -> String {
        sha256_hex(&self.bytes)
    }

    fn is_canonical(&self) -> bool {
        self.graph.is_canonical_text(&self.bytes)
    }

    fn name(&self) -> String {
        term::path(&self.path)
    }

    fn raw_name(&self) -> String {
        self.path.display().to_string()
    }
}

/// Reads `path` as a composite's graph manifest when it declares that format (or is torn
/// JSON that names it); `None` for any other file, which the agent manifest's reader takes.
pub(crate) fn load_if_composite(path: &Path) -> Result<Option<LoadedGraph>, CliError> {
    let bytes = load::read_bytes(path, "manifest")?;
    let Ok(text) = std::str::from_utf8(&bytes) else { return Ok(None) };
    let torn = || serde_json::from_str::<serde::de::IgnoredAny>(text).is_err();
    let composite = graph::declares_format(text) || (text.contains(graph::FORMAT) && torn());
    if !composite {
        return Ok(None);
    }
    match GraphManifest::parse(text) {
        Ok(graph) => Ok(Some(LoadedGraph { path: path.to_owned(), bytes, graph })),
        Err(e) => Err(CliError::new(format!("`{}` is not a valid composite manifest: {e}", path.display())).hint(
            "a composite manifest is the canonical JSON a composite's `MANIFEST` constant holds; write it to a file with `std::fs::write(path, MyComposite::MANIFEST)`",
        )),
    }
}

/// Reads a file that must be a composite manifest (the other side of a composite's diff).
fn load_composite(path: &Path, other: &Path) -> Result<LoadedGraph, CliError> {
    load_if_composite(path)?.ok_or_else(|| {
        CliError::new(format!(
            "`{}` is not a composite manifest, but `{}` is; a composite is compared with a composite",
            path.display(),
            other.display()
        ))
        .hint("an agent's own manifest is compared with `agents manifest diff` on two agent manifests")
    })
}

/// `show`: the composite, its capability union, its nodes and edges.
pub(crate) fn show(m: &LoadedGraph, out: &mut String) -> CmdResult {
    let g = &m.graph;
    let c = &g.composite;
    let mut head = Table::new(["field", "value"]);
    head.row(["composite".to_owned(), c.name.clone()]);
    head.row(["description".to_owned(), clip(&c.description, 100)]);
    head.row(["input".to_owned(), c.input.clone()]);
    head.row(["output".to_owned(), c.output.clone()]);
    head.row(["format".to_owned(), format!("{} v{}", graph::FORMAT, graph::VERSION)]);
    head.row(["sha256".to_owned(), g.sha256()]);
    head.row(["file".to_owned(), canonical_text(m)]);
    head.row(["nodes".to_owned(), format!("{} ({} edge(s))", g.nodes.len(), g.edges.len())]);
    for (field, names) in g.capabilities.fields() {
        head.row([field.to_owned(), if names.is_empty() { "none".to_owned() } else { names.join(", ") }]);
    }
    out.push_str(&head.render());
    out.push_str("\nNODES\n");
    let mut nodes = Table::new(["id", "kind", "reaches", "details", "manifest sha256"]);
    for n in &g.nodes {
        let (details, sha) = match &n.kind {
            NodeKind::Agent(a) => (format!("{} · tools: {}", a.agent, list(&a.lists.tools)), a.manifest_sha256.clone()),
            other => (node_details(other), "-".to_owned()),
        };
        nodes.row([n.id.clone(), n.kind.name().to_owned(), g.reach_from(&n.id).to_string(), details, sha]);
    }
    out.push_str(&nodes.render());
    out.push_str("\nEDGES\n");
    let mut edges = Table::new(["from", "kind", "to"]);
    for e in &g.edges {
        edges.row([e.from.clone(), e.kind.as_str().to_owned(), e.to.clone()]);
    }
    out.push_str(&edges.render());
    Ok(EXIT_OK)
}

fn canonical_text(m: &LoadedGraph) -> String {
    if m.is_canonical() {
        "canonical (sha256sum of the file gives the sha256 above)".to_owned()
    } else {
        format!("not canonical: sha256sum of the file gives {}", m.file_sha256())
    }
}

fn list(v: &[String]) -> String {
    if v.is_empty() { "none".to_owned() } else { v.join(", ") }
}

fn node_details(kind: &NodeKind) -> String {
    match kind {
        NodeKind::Agent(a) => a.agent.clone(),
        NodeKind::Branch { router } => format!("router: {}", router.as_str()),
        NodeKind::Loop { max_iterations } => format!("at most {max_iterations} iteration(s)"),
        NodeKind::Parallel { join, on_failure } => format!("join {join}, on failure {}", on_failure.as_str()),
        NodeKind::Forum { rounds } => format!("{rounds} round(s)"),
        NodeKind::Wrap { steps } => format!("steps: {}", steps.join(", ")),
    }
}

/// The agent manifests given with `--node-manifest`, by their canonical SHA-256.
fn node_manifests(paths: &[PathBuf]) -> Result<NodeManifests, CliError> {
    let mut given = NodeManifests::new();
    for p in paths {
        if load_if_composite(p)?.is_some() {
            return Err(CliError::new(format!("`{}` is a composite manifest, not an agent's", p.display()))
                .hint("--node-manifest takes the permission manifest of an agent node (its MANIFEST)"));
        }
        given.insert(load::manifest(p)?.manifest);
    }
    Ok(given)
}

/// `diff OLD NEW [--node-manifest FILE]... [--json]`: exit 1 on any widening.
pub(crate) fn diff(old: LoadedGraph, new: &Path, nodes: &[PathBuf], as_json: bool, out: &mut String) -> CmdResult {
    let new = load_composite(new, &old.path)?;
    let d = graph::diff(&old.graph, &new.graph, &node_manifests(nodes)?);
    if as_json {
        let v = json!({
            "old": { "path": old.raw_name(), "sha256": d.old_sha256, "canonical": old.is_canonical() },
            "new": { "path": new.raw_name(), "sha256": d.new_sha256, "canonical": new.is_canonical() },
            "has_widening": d.has_widening(),
            "summary": { "widening": d.count(ChangeKind::Widening), "narrowing": d.count(ChangeKind::Narrowing), "neutral": d.count(ChangeKind::Neutral) },
            "changes": d.changes,
        });
        out.push_str(&term::json(&v));
        out.push('\n');
    } else {
        let _ = writeln!(out, "old  {}  sha256 {}", old.name(), d.old_sha256);
        let _ = writeln!(out, "new  {}  sha256 {}", new.name(), d.new_sha256);
        out.push('\n');
        verdict(&d, out);
    }
    Ok(if d.has_widening() { EXIT_FINDING } else { EXIT_OK })
}

fn verdict(d: &ManifestDiff, out: &mut String) {
    let _ = writeln!(out, "{d}");
    if d.has_widening() {
        let _ = writeln!(
            out,
            "result: a run of the new composite may reach MORE ({} widening change(s)); a reviewer must approve it",
            d.count(ChangeKind::Widening)
        );
    } else {
        let _ = writeln!(out, "result: no widening");
    }
}

/// `verify BASELINE CURRENT [--sha256 HEX]`: the baseline must be canonical text, the current
/// file byte-identical to it, and its hash the expected one; anything else exits 1.
pub(crate) fn verify(base: LoadedGraph, current: &Path, sha256: Option<&str>, out: &mut String) -> CmdResult {
    let cur = load_composite(current, &base.path)?;
    let mut ok = true;
    if !base.is_canonical() {
        ok = false;
        let _ = writeln!(
            out,
            "BASELINE NOT CANONICAL: `{}` is not its own canonical text (sha256sum gives {}, the composite's hash is {}); regenerate it from the composite's MANIFEST",
            base.name(),
            base.file_sha256(),
            base.graph.sha256()
        );
    }
    if let Some(expected) = sha256
        && expected != cur.file_sha256()
    {
        ok = false;
        let _ = writeln!(
            out,
            "HASH MISMATCH: `{}` has sha256 {}, expected {}",
            cur.name(),
            cur.file_sha256(),
            term::esc(expected)
        );
    }
    if base.bytes == cur.bytes {
        if ok {
            let _ = writeln!(
                out,
                "OK: `{}` matches the baseline `{}` (sha256 {})",
                cur.name(),
                base.name(),
                cur.file_sha256()
            );
        }
        return Ok(if ok { EXIT_OK } else { EXIT_FINDING });
    }
    let _ = writeln!(out, "MISMATCH: `{}` differs from the baseline `{}`", cur.name(), base.name());
    let _ = writeln!(out, "baseline sha256 {}\ncurrent  sha256 {}\n", base.file_sha256(), cur.file_sha256());
    verdict(&graph::diff(&base.graph, &cur.graph, &NodeManifests::new()), out);
    let _ = writeln!(out, "If the change is intended, replace the baseline with the current manifest and commit it.");
    Ok(EXIT_FINDING)
}

/// `hash FILE`: SHA-256 of the file's bytes.
pub(crate) fn hash(m: &LoadedGraph, out: &mut String, err: &mut String) -> CmdResult {
    let _ = writeln!(out, "{}", m.file_sha256());
    if !m.is_canonical() {
        let _ = writeln!(
            err,
            "note: `{}` is not in canonical form; the composite's MANIFEST_SHA256 for this content is {}",
            m.name(),
            m.graph.sha256()
        );
    }
    Ok(EXIT_OK)
}

/// `render FILE [--diff OLD] -o OUT`: the composite's graph and nodes as a self-contained page.
pub(crate) fn render(m: &LoadedGraph, old: Option<&Path>, roles: bool, output: &Path, out: &mut String) -> CmdResult {
    if roles {
        return Err(CliError::new("--roles applies to an agent's manifest; a composite's report has no role table")
            .hint("render each agent node's own manifest with --roles"));
    }
    let old = old.map(|p| load_composite(p, &m.path)).transpose()?;
    let d = old.as_ref().map(|o| graph::diff(&o.graph, &m.graph, &NodeManifests::new()));
    let (source, sha256, old_name) = (m.raw_name(), m.graph.sha256(), old.as_ref().map(LoadedGraph::raw_name));
    let html = render_composite(&CompositeReport {
        diff: d.as_ref().zip(old_name.as_deref()),
        ..CompositeReport::new(&m.graph, &source, &sha256)
    });
    std::fs::write(output, html.as_bytes()).map_err(|e| {
        CliError::new(format!("cannot write the report to `{}`: {e}", term::path(output)))
            .hint("check that the directory exists and is writable")
    })?;
    let _ = writeln!(out, "wrote {} ({} bytes)", term::path(output), html.len());
    Ok(EXIT_OK)
}
