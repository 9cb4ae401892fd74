//! Embeddings: the [`Embedder`] trait, what one call reports for a budget
//! ([`EmbeddingUsage`]), the check every answer passes ([`Embeddings::checked`]) and the
//! offline [`ScriptedEmbedder`]. The client of the OpenAI embeddings wire format is
//! [`OpenAiEmbedder`](crate::OpenAiEmbedder) (feature `http`).
//!
//! ```
//! use agents_knowledge::{Embedder, ScriptedEmbedder};
//!
//! let embedder = ScriptedEmbedder::new(64);
//! let inputs = vec!["annual leave".to_string(), "probation period".to_string()];
//! let answer = futures::executor::block_on(embedder.embed(&inputs))?;
//! assert_eq!(answer.vectors.len(), 2);
//! assert_eq!(answer.usage.calls, 1);
//! assert_eq!(answer.usage.inputs, 2);
//! # Ok::<(), agents_knowledge::EmbedError>(())
//! ```

use agents_core::BoxFuture;
use sha2::{Digest, Sha256};

use crate::error::EmbedError;

/// What one embedding call spent: what a budget counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct EmbeddingUsage {
    /// Calls made (one per request sent).
    pub calls: u64,
    /// Texts embedded.
    pub inputs: u64,
    /// Tokens, as the server reported them (or estimated: see [`estimated`](Self::estimated)).
    pub tokens: u64,
    /// Whether [`tokens`](Self::tokens) is an estimate (a quarter of the bytes sent, rounded
    /// up) because the server did not report usage.
    pub estimated: bool,
}

impl EmbeddingUsage {
    /// The estimate used when a server reports no usage: a quarter of the bytes, rounded up.
    pub fn estimate_tokens(inputs: &[String]) -> u64 {
        inputs.iter().map(|t| (t.len() as u64).div_ceil(4)).sum()
    }
}

/// The sum of two usages (`estimated` when either is).
impl std::ops::Add for EmbeddingUsage {
    type Output = Self;

    fn add(self, other: Self) -> Self {
        Self {
            calls: self.calls + other.calls,
            inputs: self.inputs + other.inputs,
            tokens: self.tokens + other.tokens,
            estimated: self.estimated || other.estimated,
        }
    }
}

/// One answer: a vector per input, in input order, and what the call spent.
#[derive(Debug, Clone, PartialEq)]
pub struct Embeddings {
    /// The vectors, one per input, all of one length, every number finite.
    pub vectors: Vec<Vec<f32>>,
    /// What the call spent.
    pub usage: EmbeddingUsage,
}

impl Embeddings {
    /// Checks an answer to `inputs` texts: one vector per input, all of one length (and of
    /// `dimension`, when one is known), none empty, every number finite. The index checks
    /// every embedder's answer this way, a hand-written [`Embedder`] included.
    ///
    /// ```
    /// use agents_knowledge::{EmbedError, EmbeddingUsage, Embeddings};
    ///
    /// let answer = |vectors| Embeddings { vectors, usage: EmbeddingUsage::default() };
    /// assert!(answer(vec![vec![0.5, 0.5]]).checked(1, Some(2)).is_ok());
    /// let short = answer(vec![vec![1.0]]).checked(2, None);
    /// assert_eq!(short, Err(EmbedError::Count { expected: 2, got: 1 }));
    /// let nan = answer(vec![vec![f32::NAN]]).checked(1, None);
    /// assert_eq!(nan, Err(EmbedError::NotFinite { index: 0 }));
    /// ```
    pub fn checked(self, inputs: usize, dimension: Option<usize>) -> Result<Self, EmbedError> {
        if self.vectors.len() != inputs {
            return Err(EmbedError::Count { expected: inputs, got: self.vectors.len() });
        }
        let expected = dimension.or_else(|| self.vectors.first().map(Vec::len));
        for (index, vector) in self.vectors.iter().enumerate() {
            if vector.is_empty() || vector.iter().any(|x| !x.is_finite()) {
                return Err(EmbedError::NotFinite { index });
            }
            if let Some(expected) = expected.filter(|&d| d != vector.len()) {
                return Err(EmbedError::Dimension { expected, got: vector.len() });
            }
        }
        Ok(self)
    }
}

/// An embedding that failed, and what was spent before and by the failing call: a budget
/// counts it all. A call whose answer was refused by [`Embeddings::checked`] counts as the
/// server reported it; a call that got no answer counts as one call of its inputs with its
/// tokens [estimated](EmbeddingUsage::estimated).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{error} ({} embedding calls were spent)", .spent.calls)]
pub struct EmbedFailure {
    /// What failed.
    pub error: EmbedError,
    /// What was spent, the failing call included.
    pub spent: EmbeddingUsage,
}

/// One call of `embedder` on `inputs`, its answer [checked](Embeddings::checked) against
/// `dimension`; a failure carries what the call spent (added to `before`).
pub async fn embed_checked(
    embedder: &dyn Embedder,
    inputs: &[String],
    dimension: Option<usize>,
    before: EmbeddingUsage,
) -> Result<Embeddings, EmbedFailure> {
    match embedder.embed(inputs).await {
        Ok(answer) => {
            let usage = answer.usage;
            answer.checked(inputs.len(), dimension).map_err(|error| EmbedFailure { error, spent: before + usage })
        }
        Err(error) => {
            let tokens = EmbeddingUsage::estimate_tokens(inputs);
            let call = EmbeddingUsage { calls: 1, inputs: inputs.len() as u64, tokens, estimated: true };
            Err(EmbedFailure { error, spent: before + call })
        }
    }
}

/// Turns texts into vectors. Implementations: [`ScriptedEmbedder`] (offline, deterministic)
/// and [`OpenAiEmbedder`](crate::OpenAiEmbedder) (the OpenAI embeddings wire format).
pub trait Embedder: Send + Sync {
    /// A name for the configuration (`scripted`, `openai`, ...).
    fn name(&self) -> &str;
    /// The model id.
    fn model(&self) -> &str;
    /// One call embedding `inputs`. The answer is checked by the caller
    /// ([`Embeddings::checked`]); an implementation need not trust itself.
    fn embed<'a>(&'a self, inputs: &'a [String]) -> BoxFuture<'a, Result<Embeddings, EmbedError>>;
    /// What `usage` cost, in US dollars, when the embedder knows its model's price (a
    /// runtime counts it against the run's budget in USD); 0 otherwise, the default (an
    /// offline or local embedder). The tokens count against caps in tokens either way.
    fn cost_usd(&self, usage: &EmbeddingUsage) -> f64 {
        let _ = usage;
        0.0
    }
}

/// An offline embedder for tests and demos: each word (lowercased, split on what is not
/// alphanumeric) adds one to a bucket chosen by the SHA-256 of the word, and the vector is
/// scaled to length 1. Texts that share words are close; the same text always gives the
/// same vector. It reports one call per `embed` and one token per word.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScriptedEmbedder {
    dimension: usize,
}

impl ScriptedEmbedder {
    /// An embedder of `dimension` numbers per vector (at least 1).
    pub fn new(dimension: usize) -> Self {
        Self { dimension: dimension.max(1) }
    }

    /// The vector of one text.
    pub fn vector(&self, text: &str) -> Vec<f32> {
        let mut v = vec![0f32; self.dimension];
        for word in words(text) {
            let digest = Sha256::digest(word.as_bytes());
            let bucket = u64::from_le_bytes(digest[..8].try_into().expect("8 bytes")) % self.dimension as u64;
            v[bucket as usize] += 1.0;
        }
        let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        if norm > 0.0 {
            v.iter_mut().for_each(|x| *x /= norm);
        } else {
            // A text without words still gets a finite, non-zero vector.
            v[0] = 1.0;
        }
        v
    }
}

fn words(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()).map(str::to_lowercase)
}

impl Embedder for ScriptedEmbedder {
    fn name(&self) -> &str {
        "scripted"
    }

    fn model(&self) -> &str {
        "scripted-bag-of-words"
    }

    fn embed<'a>(&'a self, inputs: &'a [String]) -> BoxFuture<'a, Result<Embeddings, EmbedError>> {
        let vectors = inputs.iter().map(|t| self.vector(t)).collect();
        let tokens = inputs.iter().map(|t| words(t).count() as u64).sum();
        let usage = EmbeddingUsage { calls: 1, inputs: inputs.len() as u64, tokens, estimated: false };
        Box::pin(std::future::ready(Ok(Embeddings { vectors, usage })))
    }
}

/// The cosine similarity of two vectors of one length (0 when either is zero).
///
/// ```
/// assert_eq!(agents_knowledge::cosine(&[1.0, 0.0], &[2.0, 0.0]), 1.0);
/// assert_eq!(agents_knowledge::cosine(&[1.0, 0.0], &[0.0, 3.0]), 0.0);
/// ```
pub fn cosine(a: &[f32], b: &[f32]) -> f32 {
    let dot: f32 = a.iter().zip(b).map(|(x, y)| x * y).sum();
    let na = a.iter().map(|x| x * x).sum::<f32>().sqrt();
    let nb = b.iter().map(|x| x * x).sum::<f32>().sqrt();
    if na == 0.0 || nb == 0.0 { 0.0 } else { dot / (na * nb) }
}
