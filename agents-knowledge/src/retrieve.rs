//! Retrieval: a [`KnowledgeBase`] (the chunks of a loaded [`SourceSet`], their lexical index
//! and, optionally, their vectors) answers a query with a [`Retrieval`] bounded by
//! [`RetrievalLimits`].
//!
//! # Ranking
//!
//! Lexical only (no vectors): BM25. With vectors and an [`Embedder`] for the query: hybrid,
//! by reciprocal rank fusion (Cormack, Clarke and Büttcher, 2009): each chunk scores
//! `Σ 1 / (60 + rank)` over the two rankings it appears in (rank from 1, each ranking cut to
//! its best [`RetrievalLimits::candidates`]). Fusion uses ranks only, so BM25 scores and
//! cosine similarities, which have no common scale, need no calibration. Ties go to the
//! chunk that comes first in the sources.
//!
//! # Bounds
//!
//! At most [`max_chunks`](RetrievalLimits::max_chunks) passages (default 5) and at most
//! [`max_bytes`](RetrievalLimits::max_bytes) bytes of text together (default 8 KiB): the
//! passages are taken best first, and one that would cross the byte bound is left out (the
//! next, smaller one may still fit).
//!
//! ```
//! use agents_knowledge::{ChunkLimits, KnowledgeBase, RetrievalLimits, Source, SourceLimits, SourceSet};
//!
//! let set = SourceSet::load(
//!     vec![
//!         Source::embedded("leave", b"Annual leave is 25 days a year.\n"),
//!         Source::embedded("probation", b"Probation lasts six months for every new hire.\n"),
//!     ],
//!     SourceLimits::default(),
//! )?;
//! let base = KnowledgeBase::build(&set, ChunkLimits::default())?;
//! let found = base.search("how long does probation last?", RetrievalLimits::default())?;
//! assert_eq!(found.passages[0].chunk.source, "probation");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use serde_json::{Value, json};
use std::collections::HashMap;

use crate::chunk::{Chunk, ChunkLimits, chunk_set};
use crate::embed::{EmbedFailure, Embedder, EmbeddingUsage, Embeddings, cosine, embed_checked};
use crate::entry::SourceEntry;
use crate::error::IndexError;
use crate::lexical::LexicalIndex;
use crate::source::SourceSet;

/// The constant of reciprocal rank fusion (the value of the original paper).
pub const RRF_K: f32 = 60.0;

/// How much one query may return.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetrievalLimits {
    /// The most passages returned (default 5).
    pub max_chunks: usize,
    /// The most bytes of passage text returned, all passages together (default 8 KiB).
    pub max_bytes: usize,
    /// How many of each ranking's best chunks are fused (default 50).
    pub candidates: usize,
}

impl Default for RetrievalLimits {
    fn default() -> Self {
        Self { max_chunks: 5, max_bytes: 8 << 10, candidates: 50 }
    }
}

/// One retrieved chunk and its score (BM25 when lexical only; the fused score when hybrid).
#[derive(Debug, Clone, PartialEq)]
pub struct Passage {
    /// The chunk.
    pub chunk: Chunk,
    /// Its score; higher is better.
    pub score: f32,
}

/// What one query returned.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Retrieval {
    /// The passages, best first, within the limits.
    pub passages: Vec<Passage>,
    /// Whether matching chunks were left out by the limits.
    pub truncated: bool,
    /// What embedding the query cost (zero when lexical only).
    pub usage: EmbeddingUsage,
}

impl Retrieval {
    /// The evidence of what was used, without any text: for each passage its chunk id, source,
    /// path, byte and line ranges and SHA-256s. What an event or an audit record may carry.
    ///
    /// ```
    /// # use agents_knowledge::{ChunkLimits, KnowledgeBase, RetrievalLimits, Source, SourceLimits, SourceSet};
    /// let set = SourceSet::load(vec![Source::embedded("hr", b"Probation: six months.")], SourceLimits::default())?;
    /// let base = KnowledgeBase::build(&set, ChunkLimits::default())?;
    /// let evidence = base.search("probation", RetrievalLimits::default())?.evidence();
    /// assert_eq!(evidence[0]["source"], "hr");
    /// assert_eq!(evidence[0]["lines"], serde_json::json!([1, 2]));
    /// assert!(!evidence.to_string().contains("six months"));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn evidence(&self) -> Value {
        Value::Array(
            self.passages
                .iter()
                .map(|p| {
                    let c = &p.chunk;
                    json!({
                        "chunk": c.id, "source": c.source, "path": c.path,
                        "bytes": [c.bytes.start, c.bytes.end], "lines": [c.lines.start, c.lines.end],
                        "sha256": c.sha256, "document_sha256": c.document_sha256,
                    })
                })
                .collect(),
        )
    }
}

/// Why a knowledge base could not be built or searched.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum KnowledgeError {
    /// Chunking settings.
    #[error(transparent)]
    Chunk(#[from] crate::error::ChunkError),
    /// The lexical index.
    #[error(transparent)]
    Index(#[from] IndexError),
    /// Embeddings (with what they spent).
    #[error(transparent)]
    Embed(#[from] EmbedFailure),
    /// The database of the PostgreSQL backend (feature `postgres`).
    #[error("the knowledge database failed: {0}")]
    Database(String),
}

/// The chunks of a loaded set, their BM25 index and, once [embedded](Self::embed), their
/// vectors (see the [module docs](self)).
#[derive(Debug)]
pub struct KnowledgeBase {
    entries: Vec<SourceEntry>,
    chunks: Vec<Chunk>,
    lexical: LexicalIndex,
    vectors: Option<Vec<Vec<f32>>>,
}

impl KnowledgeBase {
    /// The texts sent to an embedder in one call.
    pub const EMBED_BATCH: usize = 32;

    /// Cuts every document of `set` into chunks and indexes them (lexical only).
    pub fn build(set: &SourceSet, limits: ChunkLimits) -> Result<Self, KnowledgeError> {
        let chunks = chunk_set(set, limits)?;
        let lexical = LexicalIndex::build(&chunks)?;
        Ok(Self { entries: set.entries(), chunks, lexical, vectors: None })
    }

    /// Embeds every chunk, [`EMBED_BATCH`](Self::EMBED_BATCH) at a time, for hybrid ranking.
    /// Every answer is [checked](Embeddings::checked) (one vector per chunk, one length,
    /// finite numbers); on any error nothing is kept and the base stays lexical. Returns what
    /// the calls spent; a failure carries it too.
    pub async fn embed(&mut self, embedder: &dyn Embedder) -> Result<EmbeddingUsage, EmbedFailure> {
        let mut vectors: Vec<Vec<f32>> = Vec::with_capacity(self.chunks.len());
        let mut usage = EmbeddingUsage::default();
        for batch in self.chunks.chunks(Self::EMBED_BATCH) {
            let texts: Vec<String> = batch.iter().map(|c| c.text().to_owned()).collect();
            let dimension = vectors.first().map(Vec::len);
            let answer = embed_checked(embedder, &texts, dimension, usage).await?;
            usage = usage + answer.usage;
            vectors.extend(answer.vectors);
        }
        self.vectors = Some(vectors);
        Ok(usage)
    }

    /// The entries of the sources the base was built from.
    pub fn entries(&self) -> &[SourceEntry] {
        &self.entries
    }

    /// Every chunk, in source order.
    pub fn chunks(&self) -> &[Chunk] {
        &self.chunks
    }

    /// Whether the chunks have vectors.
    pub fn is_embedded(&self) -> bool {
        self.vectors.is_some()
    }

    /// Lexical retrieval (BM25), within `limits`.
    pub fn search(&self, query: &str, limits: RetrievalLimits) -> Result<Retrieval, KnowledgeError> {
        let hits = self.lexical.search(query, limits.candidates.max(limits.max_chunks))?;
        Ok(bounded(
            hits.into_iter().filter_map(|(i, score)| Some((self.chunks.get(i)?, score))),
            limits,
            EmbeddingUsage::default(),
        ))
    }

    /// Hybrid retrieval: BM25 and the cosine similarity to the query's vector, fused by
    /// reciprocal rank. Lexical only when the base has no vectors (no embedding call is made).
    pub async fn search_hybrid(
        &self,
        query: &str,
        embedder: &dyn Embedder,
        limits: RetrievalLimits,
    ) -> Result<Retrieval, KnowledgeError> {
        let Some(vectors) = &self.vectors else {
            return self.search(query, limits);
        };
        let candidates = limits.candidates.max(limits.max_chunks);
        let lexical = self.lexical.search(query, candidates)?;
        let input = [query.to_owned()];
        let dimension = vectors.first().map(Vec::len);
        let Embeddings { vectors: mut q, usage } =
            embed_checked(embedder, &input, dimension, EmbeddingUsage::default()).await?;
        let q = q.pop().unwrap_or_default();
        let mut semantic: Vec<(usize, f32)> = vectors.iter().enumerate().map(|(i, v)| (i, cosine(&q, v))).collect();
        semantic.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        semantic.truncate(candidates);
        let fused = fuse(&[&lexical, &semantic]);
        Ok(bounded(fused.into_iter().filter_map(|(i, score)| Some((self.chunks.get(i)?, score))), limits, usage))
    }
}

/// The passages of `ranked` (best first) within the limits (see the [module docs](self)).
pub(crate) fn bounded<'c>(
    ranked: impl IntoIterator<Item = (&'c Chunk, f32)>,
    limits: RetrievalLimits,
    usage: EmbeddingUsage,
) -> Retrieval {
    let mut out = Retrieval { usage, ..Retrieval::default() };
    let mut bytes = 0usize;
    for (chunk, score) in ranked {
        if out.passages.len() == limits.max_chunks || bytes + chunk.text().len() > limits.max_bytes {
            out.truncated = true;
            continue;
        }
        bytes += chunk.text().len();
        out.passages.push(Passage { chunk: chunk.clone(), score });
    }
    out
}

/// Reciprocal rank fusion of rankings (best first) of chunk positions: see the
/// [module docs](self). Returns the fused ranking, best first, ties by position.
///
/// ```
/// // Chunk 1 is second lexically and first by meaning: it wins over chunk 3 (first, then third).
/// let lexical = [(3, 9.1), (1, 5.0)];
/// let semantic = [(1, 0.92), (4, 0.80), (3, 0.11)];
/// let fused = agents_knowledge::fuse(&[&lexical, &semantic]);
/// assert_eq!(fused.iter().map(|(i, _)| *i).collect::<Vec<_>>(), [1, 3, 4]);
/// ```
pub fn fuse(rankings: &[&[(usize, f32)]]) -> Vec<(usize, f32)> {
    let mut scores: HashMap<usize, f32> = HashMap::new();
    for ranking in rankings {
        for (rank, (i, _)) in ranking.iter().enumerate() {
            *scores.entry(*i).or_default() += 1.0 / (RRF_K + rank as f32 + 1.0);
        }
    }
    let mut fused: Vec<(usize, f32)> = scores.into_iter().collect();
    fused.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    fused
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fusion_rewards_agreement_and_breaks_ties_by_position() {
        let lexical = [(3, 9.0), (1, 5.0), (7, 1.0)];
        let semantic = [(1, 0.9), (4, 0.8), (3, 0.1)];
        let fused = fuse(&[&lexical, &semantic]);
        let order: Vec<usize> = fused.iter().map(|(i, _)| *i).collect();
        // 1 and 3 are in both (ranks 2+1 and 1+3); 1 wins: 1/62 + 1/61 > 1/61 + 1/63.
        assert_eq!(order, vec![1, 3, 4, 7]);
        let tie = fuse(&[&[(5, 1.0)], &[(2, 1.0)]]);
        assert_eq!(tie.iter().map(|(i, _)| *i).collect::<Vec<_>>(), vec![2, 5]);
    }
}
