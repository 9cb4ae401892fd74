//! Bounded chunks of a document: [`chunk_document`] cuts a text into [`Chunk`]s of at most
//! [`ChunkLimits::max_chunk_bytes`], preferring a paragraph's end, then a line's end, and
//! otherwise the last character boundary that fits: never inside a UTF-8 character. The
//! chunks' byte ranges follow each other and cover the document exactly (a property test
//! holds this), so every byte the agent may read is in one and only one chunk.
//!
//! ```
//! use agents_knowledge::{ChunkLimits, Document, chunk_document};
//!
//! let text = "Probation lasts six months.\n\nLeave accrues monthly.\n";
//! let doc = Document {
//!     source: "hr".into(),
//!     path: "policy.md".into(),
//!     text: text.into(),
//!     sha256: agents_core::canonical::sha256_hex(text.as_bytes()),
//! };
//! let chunks = chunk_document(&doc, ChunkLimits { max_chunk_bytes: 32 })?;
//! assert_eq!(chunks.len(), 2);
//! assert_eq!(chunks[0].text(), "Probation lasts six months.\n\n");
//! assert_eq!((chunks[1].bytes.start, chunks[1].lines.start), (29, 3));
//! # Ok::<(), agents_knowledge::ChunkError>(())
//! ```

use agents_core::canonical;
use serde_json::json;
use std::ops::Range;
use std::sync::Arc;

use crate::error::ChunkError;
use crate::source::{Document, SourceSet};

/// How large a chunk may be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChunkLimits {
    /// The largest chunk, in bytes (default 1 200; at least 4).
    pub max_chunk_bytes: usize,
}

impl ChunkLimits {
    /// Default of [`max_chunk_bytes`](Self::max_chunk_bytes).
    pub const DEFAULT_MAX_CHUNK_BYTES: usize = 1200;
}

impl Default for ChunkLimits {
    fn default() -> Self {
        Self { max_chunk_bytes: Self::DEFAULT_MAX_CHUNK_BYTES }
    }
}

/// One chunk: where it is in which document of which source, its SHA-256 and its stable id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Chunk {
    /// The chunk's id: `k` and 16 hex digits of the SHA-256 of the canonical JSON
    /// `[source, path, start, end, sha256]`. The same document cut with the same limits gives
    /// the same ids on every machine; a changed byte changes the ids of the chunks it is in.
    pub id: String,
    /// The source's name.
    pub source: String,
    /// The document's path within its source (see [`Document::path`]).
    pub path: String,
    /// The byte range in the document.
    pub bytes: Range<usize>,
    /// The lines it spans, 1-based, end exclusive (a chunk ending with a newline ends before
    /// the next line).
    pub lines: Range<usize>,
    /// The lowercase hex SHA-256 of the chunk's bytes.
    pub sha256: String,
    /// The SHA-256 of the whole document it was cut from.
    pub document_sha256: String,
    text: Arc<str>,
}

impl Chunk {
    /// The chunk's text.
    pub fn text(&self) -> &str {
        &self.text
    }
}

/// Cuts `document` into chunks of at most `limits.max_chunk_bytes` bytes (see the
/// [module docs](self)). An empty document has no chunk.
pub fn chunk_document(document: &Document, limits: ChunkLimits) -> Result<Vec<Chunk>, ChunkError> {
    let ranges = chunk_ranges(&document.text, limits)?;
    let mut line = 1;
    let mut chunks = Vec::with_capacity(ranges.len());
    for bytes in ranges {
        let text = &document.text[bytes.clone()];
        let newlines = text.matches('\n').count();
        let end_line = if text.ends_with('\n') { line + newlines } else { line + newlines + 1 };
        let sha256 = canonical::sha256_hex(text.as_bytes());
        let key = json!([document.source, document.path, bytes.start, bytes.end, sha256]);
        let id = format!("k{}", &canonical::sha256_hex(canonical::to_string(&key).as_bytes())[..16]);
        chunks.push(Chunk {
            id,
            source: document.source.clone(),
            path: document.path.clone(),
            lines: line..end_line,
            bytes,
            sha256,
            document_sha256: document.sha256.clone(),
            text: Arc::from(text),
        });
        line += newlines;
    }
    Ok(chunks)
}

/// The chunks of every document of `set`, in source order.
pub fn chunk_set(set: &SourceSet, limits: ChunkLimits) -> Result<Vec<Chunk>, ChunkError> {
    let mut chunks = Vec::new();
    for document in set.documents() {
        chunks.extend(chunk_document(document, limits)?);
    }
    Ok(chunks)
}

/// The byte ranges of the chunks of `text`: consecutive, covering it exactly, each at most
/// `limits.max_chunk_bytes` long and on character boundaries.
pub fn chunk_ranges(text: &str, limits: ChunkLimits) -> Result<Vec<Range<usize>>, ChunkError> {
    let max = limits.max_chunk_bytes;
    if max < 4 {
        return Err(ChunkError::TooSmall { got: max });
    }
    let mut ranges = Vec::new();
    let mut start = 0;
    while start < text.len() {
        let end = if text.len() - start <= max { text.len() } else { cut(text, start, start + max) };
        ranges.push(start..end);
        start = end;
    }
    Ok(ranges)
}

/// Where to end a chunk starting at `start` that may not reach past `limit`: after the last
/// blank line, else after the last newline, else at the last character boundary.
fn cut(text: &str, start: usize, limit: usize) -> usize {
    let window = &text.as_bytes()[start..limit];
    if let Some(at) = find_last(window, b"\n\n") {
        return start + at + 2;
    }
    if let Some(at) = window.iter().rposition(|&b| b == b'\n') {
        return start + at + 1;
    }
    // A character is at most 4 bytes and `limit - start >= 4`, so a boundary exists past `start`.
    (start + 1..=limit).rev().find(|&i| text.is_char_boundary(i)).unwrap_or(limit)
}

fn find_last(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).rposition(|w| w == needle)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn doc(text: &str) -> Document {
        Document {
            source: "s".into(),
            path: "p".into(),
            text: text.into(),
            sha256: canonical::sha256_hex(text.as_bytes()),
        }
    }

    proptest! {
        #[test]
        fn ranges_cover_the_text_exactly_on_character_boundaries(
            text in "(\\PC|\n|\n\n|é|€|𝄞| ){0,400}",
            max in 4usize..64,
        ) {
            let ranges = chunk_ranges(&text, ChunkLimits { max_chunk_bytes: max }).unwrap();
            let mut at = 0;
            for r in &ranges {
                prop_assert_eq!(r.start, at, "consecutive");
                prop_assert!(r.end > r.start, "never empty");
                prop_assert!(r.end - r.start <= max, "bounded");
                prop_assert!(text.is_char_boundary(r.start) && text.is_char_boundary(r.end));
                at = r.end;
            }
            prop_assert_eq!(at, text.len(), "covers the whole text");
            let chunks = chunk_document(&doc(&text), ChunkLimits { max_chunk_bytes: max }).unwrap();
            let joined: String = chunks.iter().map(Chunk::text).collect();
            prop_assert_eq!(joined, text);
        }
    }

    #[test]
    fn paragraphs_then_lines_then_characters() {
        let limits = ChunkLimits { max_chunk_bytes: 12 };
        assert_eq!(chunk_ranges("aaaa\n\nbbbb\ncc\n", limits).unwrap(), vec![0..6, 6..14]);
        assert_eq!(chunk_ranges("aaaa\nbbbb\ncccc\n", limits).unwrap(), vec![0..10, 10..15]);
        // Three 4-byte characters fit; the fourth would be split, so it starts the next chunk.
        assert_eq!(chunk_ranges("𝄞𝄞𝄞𝄞", ChunkLimits { max_chunk_bytes: 14 }).unwrap(), vec![0..12, 12..16]);
    }

    #[test]
    fn lines_are_counted_from_one_end_exclusive() {
        let chunks = chunk_document(&doc("one\ntwo\n\nthree"), ChunkLimits { max_chunk_bytes: 9 }).unwrap();
        let lines: Vec<_> = chunks.iter().map(|c| c.lines.clone()).collect();
        assert_eq!(lines, vec![1..4, 4..5]);
    }

    #[test]
    fn ids_are_stable_and_change_with_a_byte() {
        let a = chunk_document(&doc("same text"), ChunkLimits::default()).unwrap();
        let b = chunk_document(&doc("same text"), ChunkLimits::default()).unwrap();
        let c = chunk_document(&doc("same texT"), ChunkLimits::default()).unwrap();
        assert_eq!(a[0].id, b[0].id);
        assert_ne!(a[0].id, c[0].id);
        assert!(a[0].id.starts_with('k') && a[0].id.len() == 17);
    }

    #[test]
    fn a_limit_below_one_character_is_refused() {
        assert_eq!(chunk_ranges("abc", ChunkLimits { max_chunk_bytes: 3 }), Err(ChunkError::TooSmall { got: 3 }));
    }
}
