//! The baseline gate for a composite's graph manifest: the committed file holds exactly the
//! manifest's bytes, as [`crate::baseline`] holds an agent's. Any difference fails with the
//! nodes, edges and capabilities that were added or removed; `AGENTS_BLESS=1` rewrites the
//! file (atomically) instead.
//!
//! ```no_run
//! # const MANIFEST: &str = "";
//! #[test]
//! fn graph_manifest_matches_baseline() {
//!     agents_core::compose::baseline::assert_baseline(
//!         MANIFEST, // `<YourComposite as Composite>::MANIFEST`
//!         concat!(env!("CARGO_MANIFEST_DIR"), "/baselines/my-pipeline.composite.json"),
//!     );
//! }
//! ```

use crate::baseline::{Mode, Outcome, write_atomically};
use crate::canonical::sha256_hex;
use crate::graph::{GraphManifest, NodeManifests};
use std::path::{Path, PathBuf};

/// Why a graph manifest did not pass its baseline.
#[derive(Debug, thiserror::Error)]
pub enum CompositeBaselineError {
    /// The text is not a canonical composite manifest.
    #[error("not a canonical composite manifest: {0}")]
    Invalid(String),
    /// No baseline file.
    #[error("no baseline at {path}: run the test with AGENTS_BLESS=1 to create it, then commit it")]
    Missing {
        /// The file.
        path: PathBuf,
    },
    /// The file could not be read or written.
    #[error("baseline {path}: {message}")]
    Io {
        /// The file.
        path: PathBuf,
        /// What failed.
        message: String,
    },
    /// The manifest differs from the baseline.
    #[error(
        "the graph manifest differs from its baseline {path} (baseline sha256 {baseline_sha256}, now {current_sha256}):\n{}\nif the change is intended, run the test with AGENTS_BLESS=1 and commit the file with the code",
        changes.join("\n")
    )]
    Differs {
        /// The file.
        path: PathBuf,
        /// The hash of the file's bytes.
        baseline_sha256: String,
        /// The hash of the manifest.
        current_sha256: String,
        /// One line per node, edge or capability added (`+`) or removed (`-`).
        changes: Vec<String>,
    },
}

/// Checks `manifest_text` against the baseline at `path`, or rewrites it when
/// `AGENTS_BLESS=1` is set.
pub fn check(manifest_text: &str, path: impl AsRef<Path>) -> Result<Outcome, CompositeBaselineError> {
    check_with(manifest_text, path.as_ref(), Mode::from_env())
}

/// [`check`], panicking with the readable report on failure: the one-liner for a test.
#[track_caller]
pub fn assert_baseline(manifest_text: &str, path: impl AsRef<Path>) {
    if let Err(e) = check(manifest_text, path) {
        panic!("{e}");
    }
}

/// [`check`] in a given mode.
pub fn check_with(manifest_text: &str, path: &Path, mode: Mode) -> Result<Outcome, CompositeBaselineError> {
    let current = parse(manifest_text)?;
    let io = |e: std::io::Error| CompositeBaselineError::Io { path: path.to_owned(), message: e.to_string() };
    let existing = match std::fs::read(path) {
        Ok(bytes) => Some(bytes),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(io(e)),
    };
    if existing.as_deref() == Some(manifest_text.as_bytes()) {
        return Ok(Outcome::Matched);
    }
    if mode == Mode::Bless {
        write_atomically(path, manifest_text.as_bytes()).map_err(io)?;
        return Ok(if existing.is_some() { Outcome::Rewritten(None) } else { Outcome::Created });
    }
    let Some(existing) = existing else {
        return Err(CompositeBaselineError::Missing { path: path.to_owned() });
    };
    let mut changes = changes(&existing, &current);
    if changes.is_empty() {
        changes
            .push("no node, edge or capability changed: the file differs in its other fields or its formatting".into());
    }
    Err(CompositeBaselineError::Differs {
        path: path.to_owned(),
        baseline_sha256: sha256_hex(&existing),
        current_sha256: sha256_hex(manifest_text.as_bytes()),
        changes,
    })
}

/// The manifest, refused unless it is canonical JSON of this format.
/// The manifest, read by the reviewers' strict reader and refused unless canonical.
fn parse(text: &str) -> Result<GraphManifest, CompositeBaselineError> {
    let graph = GraphManifest::parse(text).map_err(|e| CompositeBaselineError::Invalid(e.to_string()))?;
    if !graph.is_canonical_text(text.as_bytes()) {
        return Err(CompositeBaselineError::Invalid("the text is not canonical JSON".into()));
    }
    Ok(graph)
}

/// What changed from the baseline, as `agents manifest diff` classifies it, one line each.
fn changes(old: &[u8], new: &GraphManifest) -> Vec<String> {
    let old = match std::str::from_utf8(old)
        .map_err(|e| e.to_string())
        .and_then(|t| GraphManifest::parse(t).map_err(|e| e.to_string()))
    {
        Ok(old) => old,
        Err(e) => return vec![format!("the baseline is not a composite manifest this release reads: {e}")],
    };
    let d = crate::graph::diff(&old, new, &NodeManifests::new());
    if d.is_empty() {
        return Vec::new();
    }
    d.to_string().lines().map(|l| crate::terminal::escape(l).into_owned()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const OLD: &str = r#"{"capabilities":{"actions":[],"handoffs":[],"permissions":[],"tools":[]},"composite":{"description":"d","entry":"a","input":"String","name":"n","output":"String"},"edges":[],"format":"agents.composite-manifest","nodes":[{"actions":[],"agent":"a","handoffs":[],"id":"a","kind":"agent","manifest_sha256":"1111111111111111111111111111111111111111111111111111111111111111","permissions":[],"reaches":"none","tools":[]}],"version":1}"#;

    fn temp(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("agents-composite-baseline-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        dir.join(name)
    }

    #[test]
    fn a_missing_baseline_fails_and_blessing_creates_it() {
        let path = temp("missing.json");
        let _ = std::fs::remove_file(&path);
        assert!(matches!(check_with(OLD, &path, Mode::Verify), Err(CompositeBaselineError::Missing { .. })));
        assert_eq!(check_with(OLD, &path, Mode::Bless).unwrap(), Outcome::Created);
        assert_eq!(std::fs::read_to_string(&path).unwrap(), OLD);
        assert_eq!(check_with(OLD, &path, Mode::Verify).unwrap(), Outcome::Matched);
    }

    #[test]
    fn a_changed_node_hash_fails_and_names_the_node() {
        let path = temp("changed.json");
        std::fs::write(&path, OLD).unwrap();
        let new = OLD.replace(&"1".repeat(64), &"2".repeat(64));
        let Err(CompositeBaselineError::Differs { changes, .. }) = check_with(&new, &path, Mode::Verify) else {
            panic!("a changed node passed");
        };
        let shown = changes.join("\n");
        assert!(shown.contains("node_manifest_changed") || shown.contains("node manifest"), "{shown}");
        assert!(shown.contains(&"1".repeat(64)) && shown.contains(&"2".repeat(64)), "{shown}");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), OLD, "verifying changes nothing");
    }

    #[test]
    fn text_that_is_not_a_canonical_composite_manifest_is_refused() {
        let path = temp("never.json");
        for bad in [" {}", "{}", &OLD.replace(",\"version\":1", ", \"version\":1")] {
            assert!(matches!(check_with(bad, &path, Mode::Bless), Err(CompositeBaselineError::Invalid(_))), "{bad}");
        }
        assert!(!path.exists(), "nothing was written");
    }
}
