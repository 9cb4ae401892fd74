//! The manifest baseline gate, for a project's own tests.
//!
//! Commit an agent's manifest next to the code (the *baseline*) and check it in a test:
//!
//! ```no_run
//! # const MANIFEST: &str = "";
//! #[test]
//! fn manifest_matches_baseline() {
//!     agents_core::baseline::assert_baseline(
//!         MANIFEST, // `<YourAgent as Agent>::MANIFEST`
//!         concat!(env!("CARGO_MANIFEST_DIR"), "/manifests/my-agent.json"),
//!     );
//! }
//! ```
//!
//! Any difference fails, with every change classified as widening, narrowing or neutral (see
//! [`crate::diff`]). When a change is intended, rewrite the baseline and commit it with the
//! code change, so the reviewer sees both in one pull request:
//!
//! ```text
//! AGENTS_BLESS=1 cargo test
//! ```
//!
//! Decisions:
//!
//! - A missing baseline fails (otherwise deleting the file would pass the gate); running with
//!   `AGENTS_BLESS=1` creates it, with its parent directories.
//! - The comparison is byte for byte, so `sha256sum` of the committed file always equals the
//!   agent's `MANIFEST_SHA256`. The file holds exactly the manifest bytes, with no trailing
//!   newline; a file that differs only in formatting fails too (the diff then lists no
//!   changes and says so).
//! - Blessing writes the file atomically (a temporary file in the same directory, then a
//!   rename) and prints the accepted changes on standard error. Blessing never accepts text
//!   that is not a manifest of this version.
//! - Both the manifest text and the baseline are read with [`Manifest::parse`](crate::manifest::Manifest::parse), the one
//!   reading the `agents` CLI uses too: a repeated key or tool name, a policy entry outside
//!   [`crate::policy`]'s dialect or a contradiction fails with its line and column. A
//!   manifest text that is not canonical (it does not round-trip to its own canonical bytes)
//!   is refused: its hash would not be `MANIFEST_SHA256`.
//! - What the gate guarantees: against a contributor who changes tools, policies or the
//!   agent, no change of the manifest passes unseen (the comparison is byte for byte), and the
//!   report classifies each change with the guarantees of [`crate::diff`] (a change it calls
//!   neutral or narrowing admits no path, host or variable the runtime's matchers refused
//!   before). Values in the report are escaped with [`crate::terminal::escape`].
//! - The text may be a plain manifest or a reviewed document ([`crate::reviewed`]: the
//!   manifest with the JSON Schemas of the agent's input and output), each read by
//!   [`Document::parse`]; pass `agents_core::reviewed::of::<YourAgent>().text` to pin the
//!   schemas too. A schema change is then classified as well
//!   ([`crate::diff::diff_documents`]).
//! - Relative paths are resolved against the current directory, which for `cargo test` is the
//!   package root; `concat!(env!("CARGO_MANIFEST_DIR"), ...)` does not depend on it.

use crate::canonical::sha256_hex;
use crate::diff::{ManifestDiff, diff_documents};
use crate::manifest::ManifestError;
use crate::reviewed::Document;
use crate::terminal::escape;
use std::fmt;
use std::path::{Path, PathBuf};

/// The environment variable that turns a check into a rewrite: `AGENTS_BLESS=1`.
pub const BLESS_VAR: &str = "AGENTS_BLESS";

/// Whether to compare against the baseline or to rewrite it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Fail on any difference.
    Verify,
    /// Write the current manifest to the baseline file.
    Bless,
}

impl Mode {
    /// [`Mode::Bless`] when `AGENTS_BLESS` is `1`, `true` or `yes`, [`Mode::Verify`] otherwise.
    pub fn from_env() -> Mode {
        match std::env::var(BLESS_VAR) {
            Ok(v) if matches!(v.trim().to_ascii_lowercase().as_str(), "1" | "true" | "yes") => Mode::Bless,
            _ => Mode::Verify,
        }
    }
}

/// What a successful check did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// The baseline holds exactly the manifest bytes.
    Matched,
    /// Blessing created a baseline that did not exist.
    Created,
    /// Blessing rewrote a baseline; the changes it accepted (`None` when the old file was not
    /// a readable manifest).
    Rewritten(Option<ManifestDiff>),
}

/// Why the baseline gate failed.
#[derive(Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum BaselineError {
    /// The text to check is not a manifest this crate reads.
    InvalidManifest(ManifestError),
    /// There is no baseline file.
    Missing {
        /// The baseline path.
        path: PathBuf,
    },
    /// The baseline file cannot be read.
    Unreadable {
        /// The baseline path.
        path: PathBuf,
        /// What the operating system said.
        message: String,
    },
    /// The baseline file is not a manifest this crate reads.
    InvalidBaseline {
        /// The baseline path.
        path: PathBuf,
        /// Why.
        error: ManifestError,
    },
    /// The baseline differs from the manifest.
    Differs {
        /// The baseline path.
        path: PathBuf,
        /// SHA-256 of the baseline file's bytes.
        baseline_sha256: String,
        /// SHA-256 of the manifest text.
        current_sha256: String,
        /// The classified changes from baseline to manifest (empty when only the formatting
        /// differs).
        diff: Box<ManifestDiff>,
    },
    /// Blessing could not write the baseline.
    Write {
        /// The baseline path.
        path: PathBuf,
        /// What the operating system said.
        message: String,
    },
}

/// A path as the report shows it: escaped for the terminal.
fn shown(path: &Path) -> String {
    escape(&path.display().to_string()).into_owned()
}

/// Every value that came from a file or a manifest is shown with
/// [`crate::terminal::escape`].
impl fmt::Display for BaselineError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let bless = "AGENTS_BLESS=1 cargo test";
        match self {
            BaselineError::InvalidManifest(e) => {
                write!(
                    f,
                    "the manifest to check is not valid: {}; pass the agent's `MANIFEST` constant",
                    escape(&e.to_string())
                )
            }
            BaselineError::Missing { path } => write!(
                f,
                "manifest baseline `{}` does not exist.\nReview the agent's manifest, then create the baseline with:\n    {bless}\nand commit the file.",
                shown(path)
            ),
            BaselineError::Unreadable { path, message } => write!(
                f,
                "cannot read manifest baseline `{}`: {message}.\nFix the file's permissions, or recreate it with:\n    {bless}",
                shown(path)
            ),
            BaselineError::InvalidBaseline { path, error } => write!(
                f,
                "manifest baseline `{}` is not a readable manifest: {}.\nIf it was written by another version or edited by hand, review the agent's manifest and rewrite the baseline with:\n    {bless}",
                shown(path),
                escape(&error.to_string())
            ),
            BaselineError::Differs { path, baseline_sha256, current_sha256, diff } => {
                writeln!(f, "the agent's manifest differs from the baseline `{}`.", shown(path))?;
                writeln!(f, "baseline sha256 {baseline_sha256}")?;
                writeln!(f, "current  sha256 {current_sha256}")?;
                if diff.is_empty() {
                    writeln!(
                        f,
                        "The manifests are equal in content, but the baseline file is not byte-identical (formatting, whitespace or a trailing newline)."
                    )?;
                } else {
                    write!(f, "{diff}")?;
                }
                if diff.has_widening() {
                    writeln!(f, "This change WIDENS what the agent may do; a reviewer must approve it.")?;
                }
                write!(
                    f,
                    "If the change is intended, rewrite the baseline with:\n    {bless}\nand commit it with the code change."
                )
            }
            BaselineError::Write { path, message } => {
                write!(f, "cannot write manifest baseline `{}`: {message}", shown(path))
            }
        }
    }
}

/// Shows the same text as `Display`, so `check(..).unwrap()` and tests returning `Result`
/// print a readable report.
impl fmt::Debug for BaselineError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl std::error::Error for BaselineError {}

/// Checks `manifest_text` against the baseline file at `path`, or rewrites the file when
/// `AGENTS_BLESS=1` is set (see [`Mode::from_env`]).
pub fn check(manifest_text: &str, path: impl AsRef<Path>) -> Result<Outcome, BaselineError> {
    check_with(manifest_text, path, Mode::from_env())
}

/// [`check`], panicking with the readable report on failure: the one-liner for a test.
#[track_caller]
pub fn assert_baseline(manifest_text: &str, path: impl AsRef<Path>) {
    if let Err(e) = check(manifest_text, path) {
        panic!("{e}");
    }
}

/// [`check`] with an explicit mode instead of the environment.
pub fn check_with(manifest_text: &str, path: impl AsRef<Path>, mode: Mode) -> Result<Outcome, BaselineError> {
    let path = path.as_ref();
    let current = Document::parse(manifest_text).map_err(BaselineError::InvalidManifest)?;
    if !current.is_canonical_text(manifest_text.as_bytes()) {
        return Err(BaselineError::InvalidManifest(ManifestError::NotCanonical));
    }
    let existing = match std::fs::read(path) {
        Ok(bytes) => Some(bytes),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => {
            if mode == Mode::Bless {
                None
            } else {
                return Err(BaselineError::Unreadable { path: path.to_owned(), message: e.to_string() });
            }
        }
    };
    if existing.as_deref() == Some(manifest_text.as_bytes()) {
        return Ok(Outcome::Matched);
    }
    let old = existing.as_ref().map(|bytes| {
        std::str::from_utf8(bytes)
            .map_err(|_| ManifestError::NotAManifest("the file is not UTF-8 text".into()))
            .and_then(Document::parse)
    });
    match mode {
        Mode::Verify => match old {
            None => Err(BaselineError::Missing { path: path.to_owned() }),
            Some(Err(error)) => Err(BaselineError::InvalidBaseline { path: path.to_owned(), error }),
            Some(Ok(old)) => Err(BaselineError::Differs {
                path: path.to_owned(),
                baseline_sha256: sha256_hex(existing.as_deref().unwrap_or_default()),
                current_sha256: sha256_hex(manifest_text.as_bytes()),
                diff: Box::new(diff_documents(&old, &current)),
            }),
        },
        Mode::Bless => {
            write_atomically(path, manifest_text.as_bytes())
                .map_err(|e| BaselineError::Write { path: path.to_owned(), message: e.to_string() })?;
            match old {
                None => {
                    eprintln!("created manifest baseline `{}`", shown(path));
                    Ok(Outcome::Created)
                }
                Some(Ok(old)) => {
                    let d = diff_documents(&old, &current);
                    eprintln!("rewrote manifest baseline `{}`: {}\n{d}", shown(path), d.summary());
                    Ok(Outcome::Rewritten(Some(d)))
                }
                Some(Err(_)) => {
                    eprintln!("rewrote manifest baseline `{}` (the old file was not a readable manifest)", shown(path));
                    Ok(Outcome::Rewritten(None))
                }
            }
        }
    }
}

pub(crate) fn write_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_owned(),
        _ => PathBuf::from("."),
    };
    std::fs::create_dir_all(&dir)?;
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| "manifest".into());
    let tmp = dir.join(format!(".{name}.{}.tmp", std::process::id()));
    std::fs::write(&tmp, bytes)?;
    std::fs::rename(&tmp, path).inspect_err(|_| {
        let _ = std::fs::remove_file(&tmp);
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::manifest::{AgentEntry, Manifest, PolicyEntry, ToolEntry};
    use crate::tool::{Risk, Tier};
    use std::sync::atomic::{AtomicUsize, Ordering};

    fn manifest(tools: &[(&str, Tier)]) -> String {
        let agent = AgentEntry::new("helpdesk", "Answers staff questions.");
        let tools = tools
            .iter()
            .map(|(name, tier)| ToolEntry {
                name: (*name).into(),
                title: None,
                description: format!("The {name} tool."),
                permission: "desk.use".into(),
                tier: *tier,
                mutating: false,
                risk: Risk::Medium,
                policy: PolicyEntry::default(),
                parameters: vec![],
                uses: vec![],
                import: None,
                handoff: None,
            })
            .collect();
        Manifest::from_entries(agent, tools).unwrap().to_canonical_string()
    }

    struct TempDir(PathBuf);

    impl TempDir {
        fn new() -> Self {
            static N: AtomicUsize = AtomicUsize::new(0);
            let dir = std::env::temp_dir().join(format!(
                "agents-baseline-{}-{}",
                std::process::id(),
                N.fetch_add(1, Ordering::Relaxed)
            ));
            std::fs::create_dir_all(&dir).unwrap();
            TempDir(dir)
        }
    }

    impl Drop for TempDir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    #[test]
    fn missing_baseline_fails_and_says_how_to_bless() {
        let dir = TempDir::new();
        let path = dir.0.join("m.json");
        let err = check_with(&manifest(&[("lookup", Tier::Read)]), &path, Mode::Verify).unwrap_err();
        assert!(matches!(err, BaselineError::Missing { .. }));
        let text = err.to_string();
        assert!(text.contains("does not exist") && text.contains("AGENTS_BLESS=1"), "{text}");
        assert!(!path.exists());
    }

    #[test]
    fn bless_creates_then_matches_then_rewrites() {
        let dir = TempDir::new();
        let path = dir.0.join("nested/dir/m.json");
        let v1 = manifest(&[("lookup", Tier::Read)]);
        assert_eq!(check_with(&v1, &path, Mode::Bless).unwrap(), Outcome::Created);
        assert_eq!(std::fs::read_to_string(&path).unwrap(), v1);
        assert_eq!(check_with(&v1, &path, Mode::Verify).unwrap(), Outcome::Matched);

        let v2 = manifest(&[("lookup", Tier::Read), ("submit", Tier::Action)]);
        let err = check_with(&v2, &path, Mode::Verify).unwrap_err();
        let text = format!("{err:?}");
        assert!(text.contains("WIDENING") && text.contains("tool `submit`"), "{text}");
        assert!(text.contains("AGENTS_BLESS=1 cargo test"), "{text}");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), v1, "verify must not write");

        match check_with(&v2, &path, Mode::Bless).unwrap() {
            Outcome::Rewritten(Some(d)) => assert!(d.has_widening()),
            other => panic!("unexpected {other:?}"),
        }
        assert_eq!(std::fs::read_to_string(&path).unwrap(), v2);
        assert_eq!(check_with(&v2, &path, Mode::Verify).unwrap(), Outcome::Matched);
    }

    #[test]
    fn formatting_only_difference_fails_with_empty_diff() {
        let dir = TempDir::new();
        let path = dir.0.join("m.json");
        let v1 = manifest(&[("lookup", Tier::Read)]);
        std::fs::write(&path, format!("{v1}\n")).unwrap();
        match check_with(&v1, &path, Mode::Verify).unwrap_err() {
            BaselineError::Differs { diff, baseline_sha256, current_sha256, .. } => {
                assert!(diff.is_empty());
                assert_ne!(baseline_sha256, current_sha256);
            }
            other => panic!("unexpected {other}"),
        }
    }

    #[test]
    fn invalid_baseline_and_invalid_manifest_are_reported() {
        let dir = TempDir::new();
        let path = dir.0.join("m.json");
        std::fs::write(&path, "not json").unwrap();
        let v1 = manifest(&[("lookup", Tier::Read)]);
        let err = check_with(&v1, &path, Mode::Verify).unwrap_err();
        assert!(matches!(err, BaselineError::InvalidBaseline { .. }), "{err}");
        assert_eq!(check_with(&v1, &path, Mode::Bless).unwrap(), Outcome::Rewritten(None));
        assert_eq!(check_with(&v1, &path, Mode::Verify).unwrap(), Outcome::Matched);

        let err = check_with("{}", &path, Mode::Bless).unwrap_err();
        assert!(matches!(err, BaselineError::InvalidManifest(_)), "{err}");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), v1, "an invalid manifest is never blessed");
    }
}
