//! The crate's errors: [`SourceError`] (loading and verifying sources), [`ChunkError`]
//! (chunking settings), [`IndexError`] (the lexical index) and [`EmbedError`] (embeddings).
//! Each says what was refused and what to do; none carries a document's text.

use crate::entry::SourceEntry;

/// Why a set of sources could not be loaded or does not match the manifest. A run must not
/// start on any of them (fail closed).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SourceError {
    /// A source without a name.
    #[error("a knowledge source has an empty name; give each source a name")]
    EmptyName,
    /// Two sources with one name.
    #[error("two knowledge sources are named `{name}`; give each source its own name")]
    DuplicateName {
        /// The name.
        name: String,
    },
    /// A path could not be read.
    #[error(
        "knowledge source `{source_name}`: cannot read {path}: {cause}; check that the path exists and is readable by this process"
    )]
    Unreadable {
        /// The source.
        source_name: String,
        /// The path.
        path: String,
        /// The system's reason.
        cause: String,
    },
    /// A symbolic link inside a directory source.
    #[error(
        "knowledge source `{source_name}`: {path} is a symbolic link; declare the file it points to as a source of its own"
    )]
    Link {
        /// The source.
        source_name: String,
        /// The link's path relative to the source's directory.
        path: String,
    },
    /// A document that is not UTF-8 text.
    #[error(
        "knowledge source `{source_name}`: {path} is not UTF-8 text (invalid byte at offset {offset}); convert it to UTF-8 text or leave it out"
    )]
    NotUtf8 {
        /// The source.
        source_name: String,
        /// The document's path (empty for an embedded source).
        path: String,
        /// The offset of the first invalid byte.
        offset: usize,
    },
    /// A document larger than [`SourceLimits::max_document_bytes`](crate::SourceLimits::max_document_bytes).
    #[error(
        "knowledge source `{source_name}`: {path} is larger than {max} bytes; split it, or raise `SourceLimits::max_document_bytes`"
    )]
    TooLarge {
        /// The source.
        source_name: String,
        /// The document's path.
        path: String,
        /// The limit.
        max: u64,
    },
    /// All documents together larger than [`SourceLimits::max_total_bytes`](crate::SourceLimits::max_total_bytes).
    #[error(
        "the knowledge sources hold more than {max} bytes together; declare fewer documents, or raise `SourceLimits::max_total_bytes`"
    )]
    TotalTooLarge {
        /// The limit.
        max: u64,
    },
    /// More documents than [`SourceLimits::max_documents`](crate::SourceLimits::max_documents).
    #[error(
        "the knowledge sources hold more than {max} documents; declare fewer, or raise `SourceLimits::max_documents`"
    )]
    TooManyDocuments {
        /// The limit.
        max: usize,
    },
    /// A source the manifest lists was not loaded.
    #[error(
        "knowledge source `{name}` is in the manifest but was not loaded; declare it, or review the manifest again"
    )]
    Missing {
        /// The source.
        name: String,
    },
    /// A source was loaded that the manifest does not list.
    #[error("knowledge source `{name}` is not in the manifest; a reviewer must approve the new manifest first")]
    Undeclared {
        /// The source.
        name: String,
    },
    /// A source whose path, hash or size differs from the manifest's.
    #[error(
        "knowledge source `{}` differs from the manifest (path {}, sha256 {}, {} bytes; the manifest has path {}, sha256 {}, {} bytes); restore the reviewed documents, or have the new manifest reviewed",
        .expected.name, .found.path, .found.sha256, .found.bytes, .expected.path, .expected.sha256, .expected.bytes
    )]
    Changed {
        /// The manifest's entry.
        expected: Box<SourceEntry>,
        /// The entry of what was loaded.
        found: Box<SourceEntry>,
    },
}

/// Chunking settings that cannot work.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ChunkError {
    /// A chunk must hold at least one character of any width.
    #[error("`ChunkLimits::max_chunk_bytes` is {got}; it must be at least 4 (one UTF-8 character of any width)")]
    TooSmall {
        /// The value given.
        got: usize,
    },
}

/// The lexical index failed (an internal error of the index library; retrieval is off).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the knowledge index failed: {0}")]
pub struct IndexError(pub String);

impl From<tantivy::TantivyError> for IndexError {
    fn from(e: tantivy::TantivyError) -> Self {
        Self(e.to_string())
    }
}

/// Why embedding texts failed. An answer that does not fit what was asked (a wrong count, a
/// wrong dimension, a number that is not finite) is refused whole: no vector of it is used.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum EmbedError {
    /// The HTTP call failed (the key is never in its text).
    #[error("the embeddings call failed: {0}")]
    Provider(#[from] agents_provider::ProviderError),
    /// The answer does not have the shape of the wire format.
    #[error("the embeddings answer could not be read: {0}")]
    Protocol(String),
    /// Not one vector per input.
    #[error("the embedder returned {got} vectors for {expected} inputs; the answer was refused")]
    Count {
        /// Inputs sent.
        expected: usize,
        /// Vectors received.
        got: usize,
    },
    /// Vectors of different lengths, or of another length than the index's.
    #[error("the embedder returned a vector of {got} numbers where {expected} were expected; the answer was refused")]
    Dimension {
        /// The expected length.
        expected: usize,
        /// The length received.
        got: usize,
    },
    /// A vector holding NaN or an infinity, or no number at all.
    #[error(
        "the embedder returned an unusable vector for input {index} (empty, NaN or infinite); the answer was refused"
    )]
    NotFinite {
        /// The input's position.
        index: usize,
    },
}
