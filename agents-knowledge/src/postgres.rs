//! The PostgreSQL backend (feature `postgres`): [`PgKnowledge`] ranks the chunks of a set
//! with PostgreSQL's full-text search, so several nodes share one index.
//!
//! # Why full-text search, not vectors
//!
//! `pgvector` is not packaged in the Debian archive this project installs PostgreSQL from,
//! so this backend ranks with what every PostgreSQL has: a `tsvector` column generated from
//! each chunk with the `english` configuration (stemming, stop words), a GIN index, and
//! `ts_rank` against a query whose words are joined by OR (any may match, as BM25 does).
//! The query is the model's text, so it is never parsed as query syntax: PostgreSQL cuts it
//! into lexemes (`to_tsvector`), and each lexeme is quoted before the OR query is built.
//!
//! # The database ranks; it never supplies text
//!
//! Each node loads and verifies the sources itself ([`SourceSet::verify`]) and keeps the
//! chunks in memory. The database returns chunk ids and ranks only; a passage is the node's
//! own verified chunk of that id. A row changed in the database (its text rewritten to steer
//! the model) can only change the ranking, never what the model reads, and a row whose id is
//! not in the node's set is ignored. Rows are keyed by the set (the SHA-256 of its entries and
//! the chunk size), so sets never mix, and publishing is idempotent: every node publishes at
//! start, and the first one's rows serve all.
//!
//! ```no_run
//! use agents_knowledge::{ChunkLimits, PgKnowledge, RetrievalLimits, Source, SourceLimits, SourceSet};
//!
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! let set = SourceSet::load(vec![Source::directory("policies", "/srv/policies")], SourceLimits::default())?;
//! let (client, connection) = tokio_postgres::connect("host=db user=agents", tokio_postgres::NoTls).await?;
//! tokio::spawn(connection);
//! let knowledge = PgKnowledge::open(client, &set, ChunkLimits::default()).await?;
//! let found = knowledge.search("How long is probation?", RetrievalLimits::default()).await?;
//! # Ok(())
//! # }
//! ```

use agents_core::canonical;
use serde_json::json;
use std::collections::HashMap;
use tokio_postgres::Client;

use crate::chunk::{Chunk, ChunkLimits, chunk_set};
use crate::embed::EmbeddingUsage;
use crate::retrieve::{KnowledgeError, Retrieval, RetrievalLimits, bounded};
use crate::source::SourceSet;

/// The longest query text searched, in bytes (a longer one is cut at a character boundary;
/// NUL characters, which PostgreSQL's text cannot hold, count as spaces).
pub const MAX_QUERY_BYTES: usize = 4096;

const MIGRATE: &str = "
SELECT pg_advisory_xact_lock(hashtext('agents_knowledge_chunks'));
CREATE TABLE IF NOT EXISTS agents_knowledge_chunks (
    set_key text NOT NULL,
    ord integer NOT NULL,
    chunk_id text NOT NULL,
    body text NOT NULL,
    tsv tsvector GENERATED ALWAYS AS (to_tsvector('english', body)) STORED,
    PRIMARY KEY (set_key, chunk_id)
);
CREATE INDEX IF NOT EXISTS agents_knowledge_chunks_tsv ON agents_knowledge_chunks USING gin (tsv);
";

const PUBLISH: &str = "
INSERT INTO agents_knowledge_chunks (set_key, ord, chunk_id, body)
SELECT $1, t.ord, t.chunk_id, t.body FROM unnest($2::int4[], $3::text[], $4::text[]) AS t(ord, chunk_id, body)
ON CONFLICT (set_key, chunk_id) DO NOTHING";

/// Each lexeme quoted for `tsquery` (backslashes and quotes escaped), joined by OR.
const SEARCH: &str = "
WITH q AS (
    SELECT string_agg('''' || replace(replace(l, '\\', '\\\\'), '''', '''''') || '''', ' | ')::tsquery AS q
    FROM (SELECT l FROM unnest(tsvector_to_array(to_tsvector('english', $2))) AS l LIMIT 64) AS terms
)
SELECT c.chunk_id, ts_rank(c.tsv, q.q)::real AS rank
FROM agents_knowledge_chunks c, q
WHERE c.set_key = $1 AND c.tsv @@ q.q
ORDER BY rank DESC, c.ord
LIMIT $3";

/// A set's chunks ranked by PostgreSQL (see the [module docs](self)).
pub struct PgKnowledge {
    client: Client,
    set_key: String,
    chunks: Vec<Chunk>,
    by_id: HashMap<String, usize>,
}

impl std::fmt::Debug for PgKnowledge {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgKnowledge").field("set_key", &self.set_key).field("chunks", &self.chunks.len()).finish()
    }
}

fn database(e: tokio_postgres::Error) -> KnowledgeError {
    KnowledgeError::Database(e.to_string())
}

impl PgKnowledge {
    /// Chunks `set` (loaded and verified by the caller), creates the table if it is missing
    /// and publishes the set's chunks, in one transaction (idempotent: a set already there is
    /// left as it is).
    pub async fn open(mut client: Client, set: &SourceSet, limits: ChunkLimits) -> Result<Self, KnowledgeError> {
        let chunks = chunk_set(set, limits)?;
        let key = json!({"entries": set.manifest_json(), "max_chunk_bytes": limits.max_chunk_bytes});
        let set_key = canonical::sha256_hex(canonical::to_string(&key).as_bytes());
        let ords: Vec<i32> = (0..chunks.len()).map(|i| i32::try_from(i).unwrap_or(i32::MAX)).collect();
        let ids: Vec<&str> = chunks.iter().map(|c| c.id.as_str()).collect();
        let bodies: Vec<&str> = chunks.iter().map(Chunk::text).collect();
        let tx = client.transaction().await.map_err(database)?;
        tx.batch_execute(MIGRATE).await.map_err(database)?;
        tx.execute(PUBLISH, &[&set_key, &ords, &ids, &bodies]).await.map_err(database)?;
        tx.commit().await.map_err(database)?;
        let by_id = chunks.iter().enumerate().map(|(i, c)| (c.id.clone(), i)).collect();
        Ok(Self { client, set_key, chunks, by_id })
    }

    /// The key of the set's rows: the SHA-256 of the canonical JSON of its entries and the
    /// chunk size.
    pub fn set_key(&self) -> &str {
        &self.set_key
    }

    /// The set's chunks, in source order (the node's verified copy).
    pub fn chunks(&self) -> &[Chunk] {
        &self.chunks
    }

    /// Full-text retrieval within `limits`: PostgreSQL ranks, the passages are the node's own
    /// chunks (see the [module docs](self)).
    pub async fn search(&self, query: &str, limits: RetrievalLimits) -> Result<Retrieval, KnowledgeError> {
        let cut = (0..=query.len().min(MAX_QUERY_BYTES)).rev().find(|&i| query.is_char_boundary(i)).unwrap_or(0);
        let candidates = i64::try_from(limits.candidates.max(limits.max_chunks)).unwrap_or(i64::MAX);
        // PostgreSQL's text holds no NUL; a model's query may.
        let query = query[..cut].replace('\0', " ");
        let rows = self.client.query(SEARCH, &[&self.set_key, &query, &candidates]).await.map_err(database)?;
        let ranked = rows.iter().filter_map(|row| {
            let id: &str = row.get(0);
            let rank: f32 = row.get(1);
            Some((&self.chunks[*self.by_id.get(id)?], rank))
        });
        Ok(bounded(ranked, limits, EmbeddingUsage::default()))
    }
}
