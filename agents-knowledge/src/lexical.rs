//! The lexical index: [`LexicalIndex`], BM25 over the chunks' text, held in memory.
//!
//! # Why `tantivy`
//!
//! `tantivy` is the maintained full-text engine of the Rust ecosystem (Lucene's design:
//! BM25 scoring, an English stemmer, a tokenizer pipeline), and its index lives in RAM here
//! (`Index::create_in_ram`), so the embedded default needs no server, no file and no
//! network. The crate's default features (memory-mapped files, compression) are off: nothing
//! is written to disk.
//!
//! Text is cut on what is not a letter or a digit, lowercased and reduced by the English
//! stemmer (`booking` finds `booked`); in other languages words still match as written.
//!
//! A query is the model's text, so it is never parsed as query syntax (no field names, no
//! operators, no wildcards a model could use to list the index): it is cut into terms by the
//! index's own tokenizer, and the chunks are ranked by BM25 over those terms (any of them
//! may match).

use tantivy::collector::TopDocs;
use tantivy::query::{BooleanQuery, Occur, Query, TermQuery};
use tantivy::schema::{Field, INDEXED, IndexRecordOption, STORED, Schema, TextFieldIndexing, TextOptions, Value as _};
use tantivy::{Index, IndexReader, IndexWriter, ReloadPolicy, TantivyDocument, Term, doc};

use crate::chunk::Chunk;
use crate::error::IndexError;

/// The indexing memory of the one writer thread (tantivy's minimum, 15 MB; released once
/// the index is built).
const WRITER_BYTES: usize = 15_000_000;
/// The terms of one query that count (a longer query is cut here).
const MAX_QUERY_TERMS: usize = 64;

/// BM25 over chunks, in memory (see the [module docs](self)).
///
/// ```
/// use agents_knowledge::{ChunkLimits, LexicalIndex, Source, SourceLimits, SourceSet, chunk_set};
///
/// let set = SourceSet::load(
///     vec![Source::embedded("a", b"Receipts are required."), Source::embedded("b", b"Leave is booked ahead.")],
///     SourceLimits::default(),
/// )?;
/// let chunks = chunk_set(&set, ChunkLimits::default())?;
/// let index = LexicalIndex::build(&chunks)?;
/// let hits = index.search("booking leave", 5)?;
/// assert_eq!(hits[0].0, 1); // the second chunk
/// assert!(index.search("body:* OR ord:0", 5)?.is_empty()); // not query syntax
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct LexicalIndex {
    index: Index,
    reader: IndexReader,
    ord: Field,
    body: Field,
}

impl std::fmt::Debug for LexicalIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LexicalIndex").field("documents", &self.reader.searcher().num_docs()).finish()
    }
}

impl LexicalIndex {
    /// Indexes `chunks`; a hit names a chunk by its position in this slice.
    pub fn build(chunks: &[Chunk]) -> Result<Self, IndexError> {
        let mut schema = Schema::builder();
        let ord = schema.add_u64_field("ord", INDEXED | STORED);
        let indexing = TextFieldIndexing::default()
            .set_tokenizer("en_stem")
            .set_index_option(IndexRecordOption::WithFreqsAndPositions);
        let body = schema.add_text_field("body", TextOptions::default().set_indexing_options(indexing));
        let index = Index::create_in_ram(schema.build());
        let mut writer: IndexWriter = index.writer_with_num_threads(1, WRITER_BYTES)?;
        for (i, chunk) in chunks.iter().enumerate() {
            writer.add_document(doc!(ord => i as u64, body => chunk.text()))?;
        }
        writer.commit()?;
        // Waits for the writer's threads, so none outlives the build.
        writer.wait_merging_threads()?;
        let reader = index.reader_builder().reload_policy(ReloadPolicy::Manual).try_into()?;
        Ok(Self { index, reader, ord, body })
    }

    /// The best `limit` chunks for `query`, best first, as (position, BM25 score). A query
    /// with no indexed term finds nothing.
    pub fn search(&self, query: &str, limit: usize) -> Result<Vec<(usize, f32)>, IndexError> {
        let terms = self.terms(query)?;
        if terms.is_empty() || limit == 0 {
            return Ok(Vec::new());
        }
        let clauses: Vec<(Occur, Box<dyn Query>)> = terms
            .into_iter()
            .map(|t| (Occur::Should, Box::new(TermQuery::new(t, IndexRecordOption::WithFreqs)) as Box<dyn Query>))
            .collect();
        let searcher = self.reader.searcher();
        let top = searcher.search(&BooleanQuery::new(clauses), &TopDocs::with_limit(limit))?;
        let mut hits = Vec::with_capacity(top.len());
        for (score, address) in top {
            let stored: TantivyDocument = searcher.doc(address)?;
            let ord = stored
                .get_first(self.ord)
                .and_then(|v| v.as_u64())
                .ok_or_else(|| IndexError("a stored chunk has lost its position".into()))?;
            hits.push((usize::try_from(ord).map_err(|e| IndexError(e.to_string()))?, score));
        }
        Ok(hits)
    }

    /// The distinct terms of `query` under the index's tokenizer, at most [`MAX_QUERY_TERMS`].
    fn terms(&self, query: &str) -> Result<Vec<Term>, IndexError> {
        let mut analyzer = self.index.tokenizer_for_field(self.body)?;
        let mut stream = analyzer.token_stream(query);
        let mut terms: Vec<Term> = Vec::new();
        while stream.advance() && terms.len() < MAX_QUERY_TERMS {
            let term = Term::from_field_text(self.body, &stream.token().text);
            if !terms.contains(&term) {
                terms.push(term);
            }
        }
        Ok(terms)
    }
}
