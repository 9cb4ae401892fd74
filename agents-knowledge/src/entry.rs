//! What the permission manifest carries of a knowledge source: [`SourceEntry`].

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// The `path` of an embedded source's [`SourceEntry`].
pub const EMBEDDED: &str = "embedded";

/// What the permission manifest carries of one source: its name, its path (or `"embedded"`),
/// the SHA-256 and the size of its contents.
///
/// The `sha256` of a source with one document (embedded or a file) is the document's own
/// SHA-256, so `sha256sum` of the file gives it. A directory's is the SHA-256 of the
/// canonical JSON (RFC 8785) array of `[relative path, sha256, bytes]` of its documents in
/// walk order: any added, removed, renamed or changed file changes it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SourceEntry {
    /// The source's name.
    pub name: String,
    /// The declared path, or [`EMBEDDED`].
    pub path: String,
    /// The lowercase hex SHA-256 (see the type's docs).
    pub sha256: String,
    /// The size of all its documents together, in bytes.
    pub bytes: u64,
}

impl SourceEntry {
    /// The entry as JSON (keys as the manifest writes them).
    pub fn to_json(&self) -> Value {
        json!({"name": self.name, "path": self.path, "sha256": self.sha256, "bytes": self.bytes})
    }
}
