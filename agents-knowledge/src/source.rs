//! Declared knowledge sources: [`Source`] (a file, a directory, or bytes embedded in the
//! binary), [`SourceSet`] (an agent's sources, loaded once under [`SourceLimits`]) and
//! [`SourceEntry`] (what the permission manifest carries of each source).
//!
//! A set is read once, into memory: each document's SHA-256 is taken over the bytes that were
//! read, and those same bytes are chunked and indexed. A file changed after the set was
//! loaded changes nothing the set holds; a file changed before, against the entries a
//! reviewer approved, is refused by [`SourceSet::verify`] (fail closed). The set keeps each
//! file's size and modification time, so that [`SourceSet::unchanged_on_disk`] tells cheaply
//! whether the files may have changed since (and the set should be loaded and verified
//! again).
//!
//! ```
//! use agents_knowledge::{Source, SourceLimits, SourceSet};
//!
//! let set = SourceSet::load(
//!     vec![Source::embedded("leave-policy", b"Annual leave: 25 days.\n")],
//!     SourceLimits::default(),
//! )?;
//! let entries = set.entries();
//! assert_eq!(entries[0].name, "leave-policy");
//! assert_eq!(entries[0].path, "embedded");
//! assert_eq!(entries[0].bytes, 23);
//! // What a run checks at start against the manifest's entries:
//! set.verify(&entries)?;
//! # Ok::<(), agents_knowledge::SourceError>(())
//! ```

use agents_core::canonical;
use agents_core::knowledge::{WalkError, directory_sha256, walk_directory};
use serde_json::Value;
use std::collections::BTreeSet;
use std::io::Read;
use std::path::{Path, PathBuf};

use crate::entry::{EMBEDDED, SourceEntry};
use crate::error::SourceError;
use crate::stamp::Stamps;

/// Where a source's bytes come from.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Origin {
    /// Bytes compiled into the binary (`include_bytes!`): one document.
    Embedded(&'static [u8]),
    /// One file, read when the set is loaded.
    File(PathBuf),
    /// Every regular file beneath a directory, read when the set is loaded (see
    /// [`Source::directory`] for the walk).
    Directory(PathBuf),
}

/// One declared source of knowledge: a name (unique in its set; the manifest and every
/// retrieved passage name it) and where its documents come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Source {
    /// The name, as the manifest and the passages show it.
    pub name: String,
    /// Where the bytes come from.
    pub origin: Origin,
}

impl Source {
    /// A document compiled into the binary.
    ///
    /// ```
    /// let policy = agents_knowledge::Source::embedded("leave-policy", b"Annual leave: 25 days.");
    /// // or: Source::embedded("leave-policy", include_bytes!("../docs/leave.md"))
    /// assert_eq!(policy.name, "leave-policy");
    /// ```
    pub fn embedded(name: impl Into<String>, bytes: &'static [u8]) -> Self {
        Self { name: name.into(), origin: Origin::Embedded(bytes) }
    }

    /// One file, read when the set is loaded.
    pub fn file(name: impl Into<String>, path: impl Into<PathBuf>) -> Self {
        Self { name: name.into(), origin: Origin::File(path.into()) }
    }

    /// Every regular file beneath `path`, recursively, in the byte order of their relative
    /// paths (`/`-separated), so the walk is the same on every machine. Names starting with
    /// `.` (files and directories) are skipped; a symbolic link is refused
    /// ([`SourceError::Link`]): declare its target instead.
    pub fn directory(name: impl Into<String>, path: impl Into<PathBuf>) -> Self {
        Self { name: name.into(), origin: Origin::Directory(path.into()) }
    }

    fn path_label(&self) -> String {
        match &self.origin {
            Origin::Embedded(_) => EMBEDDED.to_string(),
            Origin::File(p) | Origin::Directory(p) => p.to_string_lossy().into_owned(),
        }
    }
}

/// Bounds on what loading a set reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SourceLimits {
    /// The largest document, in bytes (default 4 MiB).
    pub max_document_bytes: u64,
    /// All documents of the set together, in bytes (default 64 MiB).
    pub max_total_bytes: u64,
    /// The number of documents of the set (default 10 000).
    pub max_documents: usize,
}

impl SourceLimits {
    /// Default of [`max_document_bytes`](Self::max_document_bytes).
    pub const DEFAULT_MAX_DOCUMENT_BYTES: u64 = 4 << 20;
    /// Default of [`max_total_bytes`](Self::max_total_bytes).
    pub const DEFAULT_MAX_TOTAL_BYTES: u64 = 64 << 20;
    /// Default of [`max_documents`](Self::max_documents).
    pub const DEFAULT_MAX_DOCUMENTS: usize = 10_000;
}

impl Default for SourceLimits {
    fn default() -> Self {
        Self {
            max_document_bytes: Self::DEFAULT_MAX_DOCUMENT_BYTES,
            max_total_bytes: Self::DEFAULT_MAX_TOTAL_BYTES,
            max_documents: Self::DEFAULT_MAX_DOCUMENTS,
        }
    }
}

/// One document as read: its text and the SHA-256 of its bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Document {
    /// The source it belongs to.
    pub source: String,
    /// Its path relative to the source's directory (`/`-separated); the file's name for a
    /// file source; empty for an embedded one.
    pub path: String,
    /// Its text (documents are UTF-8; other bytes are refused when the set is loaded).
    pub text: String,
    /// The lowercase hex SHA-256 of its bytes.
    pub sha256: String,
}

/// An agent's sources, loaded: every document read and hashed, within the [`SourceLimits`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceSet {
    documents: Vec<Document>,
    entries: Vec<SourceEntry>,
    stamps: Stamps,
}

impl SourceSet {
    /// Reads every source once. Fails, and keeps nothing, on a duplicated or empty name, an
    /// unreadable path, a symbolic link, a document that is not UTF-8, or a limit crossed;
    /// each error names the source and the path.
    pub fn load(sources: Vec<Source>, limits: SourceLimits) -> Result<Self, SourceError> {
        let mut names = BTreeSet::new();
        let mut budget = Budget { limits, bytes: 0, documents: 0, stamps: Stamps::default() };
        let mut documents = Vec::new();
        let mut entries = Vec::new();
        for source in &sources {
            if source.name.trim().is_empty() {
                return Err(SourceError::EmptyName);
            }
            if !names.insert(source.name.clone()) {
                return Err(SourceError::DuplicateName { name: source.name.clone() });
            }
            let read = read_source(source, &mut budget)?;
            entries.push(entry_of(source, &read));
            documents.extend(read);
        }
        entries.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(Self { documents, entries, stamps: budget.stamps })
    }

    /// Whether every file the set read still has the size and modification time it had when
    /// it was read, and every directory source still holds the same files: a `stat` per file
    /// and a walk per directory, nothing read. Embedded sources never change.
    ///
    /// `false` says only that something may have changed: a copy or a `touch` changes a time
    /// and not the bytes. Load the sources again and [verify](Self::verify) them: the hash
    /// decides.
    ///
    /// ```
    /// use agents_knowledge::{Source, SourceLimits, SourceSet};
    ///
    /// let dir = tempfile::tempdir()?;
    /// let path = dir.path().join("leave.md");
    /// std::fs::write(&path, "Annual leave: 25 days.\n")?;
    /// let set = SourceSet::load(vec![Source::file("leave", &path)], SourceLimits::default())?;
    /// assert!(set.unchanged_on_disk());
    /// std::fs::write(&path, "Annual leave: 250 days.\n")?;
    /// assert!(!set.unchanged_on_disk(), "another size");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn unchanged_on_disk(&self) -> bool {
        self.stamps.unchanged()
    }

    /// The documents, source by source in declaration order, each source's in walk order.
    pub fn documents(&self) -> &[Document] {
        &self.documents
    }

    /// One entry per source, sorted by name.
    pub fn entries(&self) -> Vec<SourceEntry> {
        self.entries.clone()
    }

    /// The entries as the manifest carries them: canonical JSON (RFC 8785) of the array
    /// of [`SourceEntry::to_json`], sorted by name.
    pub fn manifest_json(&self) -> String {
        canonical::to_string(&Value::Array(self.entries.iter().map(SourceEntry::to_json).collect()))
    }

    /// Checks the loaded sources against the entries a reviewer approved (the manifest's):
    /// the same names, and for each the same path, SHA-256 and size. The first difference is
    /// the error ([`SourceError::Missing`], [`SourceError::Undeclared`],
    /// [`SourceError::Changed`]); a run must not start on it.
    pub fn verify(&self, expected: &[SourceEntry]) -> Result<(), SourceError> {
        for want in expected {
            let Some(got) = self.entries.iter().find(|e| e.name == want.name) else {
                return Err(SourceError::Missing { name: want.name.clone() });
            };
            if got != want {
                return Err(SourceError::Changed { expected: Box::new(want.clone()), found: Box::new(got.clone()) });
            }
        }
        if let Some(extra) = self.entries.iter().find(|e| !expected.iter().any(|w| w.name == e.name)) {
            return Err(SourceError::Undeclared { name: extra.name.clone() });
        }
        Ok(())
    }

    /// Loads `sources` and [verifies](Self::verify) them against `expected`: what a run does
    /// at start.
    pub fn load_verified(
        sources: Vec<Source>,
        limits: SourceLimits,
        expected: &[SourceEntry],
    ) -> Result<Self, SourceError> {
        let set = Self::load(sources, limits)?;
        set.verify(expected)?;
        Ok(set)
    }
}

/// What loading has read so far, against the limits.
struct Budget {
    limits: SourceLimits,
    bytes: u64,
    documents: usize,
    /// The files read and the directories walked so far.
    stamps: Stamps,
}

impl Budget {
    fn take(&mut self, source: &str, path: &str, len: u64) -> Result<(), SourceError> {
        if len > self.limits.max_document_bytes {
            return Err(SourceError::TooLarge {
                source_name: source.into(),
                path: path.into(),
                max: self.limits.max_document_bytes,
            });
        }
        self.documents += 1;
        if self.documents > self.limits.max_documents {
            return Err(SourceError::TooManyDocuments { max: self.limits.max_documents });
        }
        self.bytes = self.bytes.saturating_add(len);
        if self.bytes > self.limits.max_total_bytes {
            return Err(SourceError::TotalTooLarge { max: self.limits.max_total_bytes });
        }
        Ok(())
    }
}

fn read_source(source: &Source, budget: &mut Budget) -> Result<Vec<Document>, SourceError> {
    match &source.origin {
        Origin::Embedded(bytes) => {
            budget.take(&source.name, "", bytes.len() as u64)?;
            Ok(vec![document(&source.name, "", bytes)?])
        }
        Origin::File(path) => {
            let label = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
            let bytes = read_file(&source.name, path, &path.to_string_lossy(), budget)?;
            Ok(vec![document(&source.name, &label, &bytes)?])
        }
        Origin::Directory(root) => {
            let files = walk_directory(root).map_err(|e| match e {
                WalkError::Link(path) => SourceError::Link { source_name: source.name.clone(), path },
                WalkError::Unreadable(path, cause) => {
                    SourceError::Unreadable { source_name: source.name.clone(), path, cause }
                }
            })?;
            budget.stamps.directory(root, &files);
            let mut out = Vec::with_capacity(files.len());
            for relative in files {
                let bytes = read_file(&source.name, &root.join(&relative), &relative, budget)?;
                out.push(document(&source.name, &relative, &bytes)?);
            }
            Ok(out)
        }
    }
}

/// Reads one file, never more than the document limit plus one byte (a file that grows while
/// it is read is still bounded).
fn read_file(source: &str, path: &Path, label: &str, budget: &mut Budget) -> Result<Vec<u8>, SourceError> {
    let unreadable = |e: std::io::Error| SourceError::Unreadable {
        source_name: source.into(),
        path: path.to_string_lossy().into_owned(),
        cause: e.to_string(),
    };
    // A pipe or a device would block the start or never end: only regular files are read.
    if !std::fs::metadata(path).map_err(unreadable)?.is_file() {
        return Err(SourceError::Unreadable {
            source_name: source.into(),
            path: path.to_string_lossy().into_owned(),
            cause: "not a regular file (a directory, a pipe or a device)".into(),
        });
    }
    let file = std::fs::File::open(path).map_err(unreadable)?;
    // Stamped before the read: a change made while it reads shows at the next check.
    budget.stamps.file(path, &file.metadata().map_err(unreadable)?);
    let mut bytes = Vec::new();
    file.take(budget.limits.max_document_bytes.saturating_add(1)).read_to_end(&mut bytes).map_err(unreadable)?;
    budget.take(source, label, bytes.len() as u64)?;
    Ok(bytes)
}

fn document(source: &str, path: &str, bytes: &[u8]) -> Result<Document, SourceError> {
    let text = std::str::from_utf8(bytes).map_err(|e| SourceError::NotUtf8 {
        source_name: source.into(),
        path: path.into(),
        offset: e.valid_up_to(),
    })?;
    Ok(Document {
        source: source.into(),
        path: path.into(),
        text: text.to_owned(),
        sha256: canonical::sha256_hex(bytes),
    })
}

fn entry_of(source: &Source, documents: &[Document]) -> SourceEntry {
    let bytes = documents.iter().map(|d| d.text.len() as u64).sum();
    let sha256 = match &source.origin {
        Origin::Directory(_) => directory_sha256(
            &documents.iter().map(|d| (d.path.clone(), d.sha256.clone(), d.text.len() as u64)).collect::<Vec<_>>(),
        ),
        _ => documents.first().map(|d| d.sha256.clone()).unwrap_or_default(),
    };
    SourceEntry { name: source.name.clone(), path: source.path_label(), sha256, bytes }
}
