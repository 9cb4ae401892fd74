#![doc = include_str!("../README.md")]
#![cfg_attr(docsrs, feature(doc_cfg))]

pub mod chunk;
pub mod embed;
pub mod entry;
pub mod error;
pub mod lexical;
#[cfg(feature = "http")]
pub mod openai;
#[cfg(feature = "postgres")]
pub mod postgres;
pub mod render;
pub mod retrieve;
pub mod source;
mod stamp;

pub use chunk::{Chunk, ChunkLimits, chunk_document, chunk_ranges, chunk_set};
pub use embed::{EmbedFailure, Embedder, EmbeddingUsage, Embeddings, ScriptedEmbedder, cosine, embed_checked};
pub use entry::{EMBEDDED, SourceEntry};
pub use error::{ChunkError, EmbedError, IndexError, SourceError};
pub use lexical::LexicalIndex;
#[cfg(feature = "http")]
pub use openai::{OpenAiEmbedder, OpenAiEmbeddingConfig};
#[cfg(feature = "postgres")]
pub use postgres::PgKnowledge;
pub use render::{PASSAGES_CLOSE, PASSAGES_OPEN, PASSAGES_PREAMBLE, passages_message};
pub use retrieve::{KnowledgeBase, KnowledgeError, Passage, RRF_K, Retrieval, RetrievalLimits, fuse};
pub use source::{Document, Origin, Source, SourceLimits, SourceSet};
