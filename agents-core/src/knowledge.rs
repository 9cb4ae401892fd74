//! Knowledge sources as the manifest carries them: [`KnowledgeEntry`] (name, path, SHA-256,
//! size), [`KnowledgeSpec`] (what `agent!` compiles into an agent) and the rules both the
//! macro (at expansion time) and the runtime (at start, through `agents-knowledge`) apply to
//! compute an entry: [`walk_directory`] and [`directory_sha256`]. They are written once, here,
//! so that the hash a reviewer approved and the hash a run checks are the same function.
//!
//! ```
//! use agents_core::knowledge::{KnowledgeEntry, directory_sha256};
//! use agents_core::canonical::sha256_hex;
//!
//! let leave = b"Annual leave: 25 days.\n";
//! let file = KnowledgeEntry::of_document("leave", "policies/leave.md", leave);
//! assert_eq!(file.sha256, sha256_hex(leave));
//! // A directory's hash covers each document's relative path, hash and size:
//! let dir = directory_sha256(&[("leave.md".into(), sha256_hex(leave), leave.len() as u64)]);
//! assert_ne!(dir, file.sha256);
//! ```

use crate::canonical;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::path::Path;

/// The `path` of an embedded source's [`KnowledgeEntry`].
pub const EMBEDDED: &str = "embedded";

/// What the permission manifest carries of one knowledge source: its name, its path (or
/// [`EMBEDDED`]), the SHA-256 and the size of its contents.
///
/// The `sha256` of a source with one document (embedded or a file) is the document's own
/// SHA-256, so `sha256sum` of the file gives it. A directory's is [`directory_sha256`] of its
/// documents in walk order ([`walk_directory`]): any added, removed, renamed or changed file
/// changes it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KnowledgeEntry {
    /// The source's name.
    pub name: String,
    /// The declared path, or [`EMBEDDED`].
    pub path: String,
    /// The lowercase hex SHA-256 (see the type's docs).
    pub sha256: String,
    /// The size of all its documents together, in bytes.
    pub bytes: u64,
}

impl KnowledgeEntry {
    /// The entry of a source of one document (embedded or a file): the document's own
    /// SHA-256 and size.
    pub fn of_document(name: &str, path: &str, bytes: &[u8]) -> Self {
        Self { name: name.into(), path: path.into(), sha256: canonical::sha256_hex(bytes), bytes: bytes.len() as u64 }
    }

    /// The entry as JSON (keys as the manifest writes them).
    pub fn to_json(&self) -> Value {
        json!({"name": self.name, "path": self.path, "sha256": self.sha256, "bytes": self.bytes})
    }

    /// The entry of a spec `agent!` compiled.
    pub fn from_spec(spec: &KnowledgeSpec) -> Self {
        Self { name: spec.name.into(), path: spec.path().into(), sha256: spec.sha256.into(), bytes: spec.bytes }
    }
}

/// The SHA-256 of a directory source: of the canonical JSON (RFC 8785) array of
/// `[relative path, sha256, bytes]` of its documents, in walk order.
pub fn directory_sha256(documents: &[(String, String, u64)]) -> String {
    let list = documents.iter().map(|(path, sha, bytes)| json!([path, sha, bytes])).collect();
    canonical::sha256_hex(canonical::to_string(&Value::Array(list)).as_bytes())
}

/// Why a directory could not be walked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WalkError {
    /// A symbolic link (its path relative to the walked directory): refused, since what it
    /// points to could change without the directory changing.
    Link(String),
    /// A directory that could not be read: its path and the system's reason.
    Unreadable(String, String),
}

/// The relative paths (`/`-separated) of every regular file beneath `root`, recursively, in
/// byte order, so the walk is the same on every machine. Names starting with `.` (files and
/// directories) are skipped; a symbolic link is refused.
pub fn walk_directory(root: &Path) -> Result<Vec<String>, WalkError> {
    let mut out = Vec::new();
    walk(root, "", &mut out)?;
    out.sort();
    Ok(out)
}

fn walk(dir: &Path, prefix: &str, out: &mut Vec<String>) -> Result<(), WalkError> {
    let unreadable = |e: std::io::Error| WalkError::Unreadable(dir.to_string_lossy().into_owned(), e.to_string());
    for entry in std::fs::read_dir(dir).map_err(unreadable)? {
        let entry = entry.map_err(unreadable)?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with('.') {
            continue;
        }
        let relative = if prefix.is_empty() { name } else { format!("{prefix}/{name}") };
        let kind = entry.file_type().map_err(unreadable)?;
        if kind.is_symlink() {
            return Err(WalkError::Link(relative));
        } else if kind.is_dir() {
            walk(&entry.path(), &relative, out)?;
        } else if kind.is_file() {
            out.push(relative);
        }
    }
    Ok(())
}

/// Where a compiled source's documents come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KnowledgeOrigin {
    /// Bytes compiled into the binary.
    Embedded(&'static [u8]),
    /// One file, read at start (its path as declared, relative to the runtime's knowledge
    /// root when relative).
    File(&'static str),
    /// Every regular file beneath a directory, read at start (see [`walk_directory`]).
    Directory(&'static str),
}

/// One knowledge source of an agent, as `agent!` compiles it: where its documents come
/// from, and the SHA-256 and size found when the agent was built.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KnowledgeSpec {
    /// The source's name.
    pub name: &'static str,
    /// Where its documents come from.
    pub origin: KnowledgeOrigin,
    /// The lowercase hex SHA-256 found at build time (see [`KnowledgeEntry`]).
    pub sha256: &'static str,
    /// The size found at build time, in bytes.
    pub bytes: u64,
}

impl KnowledgeSpec {
    /// The path the manifest shows: the declared path, or [`EMBEDDED`].
    pub fn path(&self) -> &'static str {
        match self.origin {
            KnowledgeOrigin::Embedded(_) => EMBEDDED,
            KnowledgeOrigin::File(p) | KnowledgeOrigin::Directory(p) => p,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_directory_hash_changes_with_any_path_hash_or_size() {
        let base = vec![("a.md".to_owned(), "00".to_owned(), 1), ("b.md".to_owned(), "11".to_owned(), 2)];
        let h = directory_sha256(&base);
        let mut renamed = base.clone();
        renamed[0].0 = "c.md".into();
        let mut changed = base.clone();
        changed[1].1 = "12".into();
        let mut grown = base.clone();
        grown[1].2 = 3;
        let fewer = base[..1].to_vec();
        for other in [renamed, changed, grown, fewer] {
            assert_ne!(directory_sha256(&other), h, "{other:?}");
        }
    }

    #[test]
    fn the_walk_is_sorted_skips_dot_names_and_refuses_links() {
        let dir = std::env::temp_dir().join(format!("agents-core-walk-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("sub")).unwrap();
        std::fs::create_dir_all(dir.join(".git")).unwrap();
        for f in ["b.md", "a.md", "sub/c.md", ".hidden", ".git/x"] {
            std::fs::write(dir.join(f), "x").unwrap();
        }
        assert_eq!(walk_directory(&dir).unwrap(), ["a.md", "b.md", "sub/c.md"]);
        std::os::unix::fs::symlink(dir.join("a.md"), dir.join("sub/link.md")).unwrap();
        assert_eq!(walk_directory(&dir), Err(WalkError::Link("sub/link.md".into())));
        std::fs::remove_dir_all(&dir).unwrap();
        assert!(matches!(walk_directory(&dir), Err(WalkError::Unreadable(..))));
    }
}
