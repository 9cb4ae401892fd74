//! Reading manifests, audit logs and roles files, with errors that name the file and say
//! what kind of file was expected.

use crate::error::CliError;
use agents_core::RoleMap;
use agents_core::audit::AuditRecord;
use agents_core::canonical::sha256_hex;
use agents_core::manifest::{self, Manifest, ManifestError};
use agents_core::reviewed::{self, Document, IoSchemas};
use serde_json::Value;
use std::path::{Path, PathBuf};

/// Reads a file, turning I/O errors into a message that names the file and its role.
pub(crate) fn read_bytes(path: &Path, what: &str) -> Result<Vec<u8>, CliError> {
    std::fs::read(path).map_err(|e| {
        let err = CliError::new(format!("cannot read {what} `{}`: {}", path.display(), io_reason(&e)));
        match e.kind() {
            std::io::ErrorKind::NotFound => err.hint("check the path (it is resolved against the current directory)"),
            std::io::ErrorKind::PermissionDenied => err.hint("check the file's permissions"),
            _ => err,
        }
    })
}

fn io_reason(e: &std::io::Error) -> String {
    match e.kind() {
        std::io::ErrorKind::NotFound => "no such file".to_owned(),
        std::io::ErrorKind::IsADirectory => "it is a directory".to_owned(),
        _ => e.to_string(),
    }
}

/// A manifest, or a reviewed document (the manifest with the agent's input and output
/// schemas), read from a file.
pub(crate) struct LoadedManifest {
    /// Where it was read from.
    pub(crate) path: PathBuf,
    /// The file's bytes.
    pub(crate) bytes: Vec<u8>,
    /// The parsed manifest.
    pub(crate) manifest: Manifest,
    /// The schemas, when the file is a reviewed document.
    pub(crate) io: Option<IoSchemas>,
}

impl LoadedManifest {
    /// SHA-256 of the file's bytes (what `sha256sum` prints).
    pub(crate) fn file_sha256(&self) -> String {
        sha256_hex(&self.bytes)
    }

    /// Whether the file holds exactly the canonical text, so its hash is the agent's
    /// `MANIFEST_SHA256` (for a reviewed document: the document's own hash).
    pub(crate) fn is_canonical(&self) -> bool {
        self.document().is_canonical_text(&self.bytes)
    }

    /// The document read: the manifest, with the schemas when there are some.
    pub(crate) fn document(&self) -> Document {
        Document { manifest: self.manifest.clone(), io: self.io.clone() }
    }

    /// The canonical SHA-256 of the reviewed document, when the file is one.
    pub(crate) fn reviewed_sha256(&self) -> Option<String> {
        self.io.as_ref().map(|_| self.document().sha256())
    }

    /// The hash the agent's records carry: the canonical SHA-256.
    pub(crate) fn manifest_sha256(&self) -> String {
        self.manifest.sha256()
    }

    /// The file name for headings, escaped for the terminal.
    pub(crate) fn display_name(&self) -> String {
        crate::term::path(&self.path)
    }

    /// The file name as it is, for JSON and HTML output (escaped there by their own rules).
    pub(crate) fn raw_name(&self) -> String {
        self.path.display().to_string()
    }
}

/// Reads and parses a manifest file.
pub(crate) fn manifest(path: &Path) -> Result<LoadedManifest, CliError> {
    let bytes = read_bytes(path, "manifest")?;
    let shown = path.display();
    let Ok(text) = std::str::from_utf8(&bytes) else {
        return Err(CliError::new(format!("`{shown}` is not a permission manifest: it is not UTF-8 text")));
    };
    match Document::parse(text) {
        Ok(Document { manifest, io }) => Ok(LoadedManifest { path: path.to_owned(), bytes, manifest, io }),
        Err(ManifestError::InvalidReviewed(d)) => Err(CliError::new(format!(
            "`{shown}` is not a reviewed manifest document: {d}"
        ))
        .hint("a reviewed document is the text `agents_core::reviewed::of::<MyAgent>()` builds; write it again from the agent")),
        Err(ManifestError::WrongVersion(v)) => Err(CliError::new(format!(
            "`{shown}` is a version {v} permission manifest; this build of `agents` reads version {}",
            manifest::VERSION
        ))
        .hint("use the `agents` CLI from the same framework release as the agent that wrote the manifest")),
        Err(ManifestError::WrongFormat(f)) => Err(CliError::new(format!(
            "`{shown}` is not a permission manifest: its format is `{f}`, expected `{}` (or `{}` for a reviewed document, `{}` for a composite)",
            manifest::FORMAT,
            reviewed::FORMAT,
            agents_core::graph::FORMAT
        ))),
        Err(e) => {
            if looks_like_audit_log(text) {
                return Err(CliError::new(format!("`{shown}` is an audit log, not a permission manifest"))
                    .hint("use `agents audit verify|show|stats` for audit logs"));
            }
            let detail = match e {
                ManifestError::NotAManifest(d) => d,
                other => other.to_string(),
            };
            Err(CliError::new(format!("`{shown}` is not a permission manifest: {detail}")).hint(
                "a manifest is the canonical JSON an agent's `MANIFEST` constant holds; write it to a file with `std::fs::write(path, MyAgent::MANIFEST)`",
            ))
        }
    }
}

fn looks_like_audit_log(text: &str) -> bool {
    text.lines().next().is_some_and(|l| serde_json::from_str::<AuditRecord>(l).is_ok())
}

/// Reads a roles file: `{"role": ["permission", ...], ...}`, or the same map under a single
/// top-level `"roles"` key.
pub(crate) fn roles(path: &Path) -> Result<RoleMap, CliError> {
    let bytes = read_bytes(path, "roles file")?;
    let shown = path.display();
    let hint = r#"a roles file maps each role to the permissions it holds, for example {"nurse": ["patient.read"], "physician": ["patient.read", "prescription.write"]}"#;
    let value: Value = serde_json::from_slice(&bytes)
        .map_err(|e| CliError::new(format!("`{shown}` is not a roles file: {e}")).hint(hint))?;
    let Some(mut map) = value.as_object() else {
        return Err(
            CliError::new(format!("`{shown}` is not a roles file: the top level is not a JSON object")).hint(hint)
        );
    };
    if map.len() == 1
        && let Some(inner) = map.get("roles").and_then(Value::as_object)
    {
        map = inner;
    }
    let mut roles = RoleMap::new();
    for (role, perms) in map {
        let Some(list) = perms.as_array() else {
            return Err(
                CliError::new(format!("`{shown}`: role `{role}` must map to a list of permission names")).hint(hint)
            );
        };
        let mut names = Vec::new();
        for p in list {
            match p.as_str() {
                Some(s) => names.push(s.to_owned()),
                None => {
                    return Err(CliError::new(format!("`{shown}`: role `{role}` lists `{p}`, which is not a string"))
                        .hint(hint));
                }
            }
        }
        roles = roles.role(role.clone(), names);
    }
    Ok(roles)
}
