//! Retrieval quality on DeskLoop's policies: recall@5 on the labelled questions of
//! `examples/eval/retrieval/helpdesk.json` for three rankings of the same passages: BM25 (the
//! runtime's offline default), hybrid (BM25 and a [`ScriptedEmbedder`]'s vectors fused by
//! reciprocal rank) and a plain substring-search baseline (passages ranked by how many of the
//! question's words occur in them, ties in document order).
//!
//! The passages are the ones a run retrieves from: the agent's own declared sources
//! (`DeskLoop::SPEC.knowledge`), cut as the helpdesk's runtime cuts them
//! ([`knowledge_settings`]). Run
//! `cargo bench -p examples --bench retrieval_recall` to print the figures.

use super::DeskLoop;
use super::knowledge::knowledge_settings;
use agents_runtime::Agent;
use agents_runtime::agents_core::knowledge::KnowledgeOrigin;
use agents_runtime::knowledge::{KnowledgeBase, RetrievalLimits, ScriptedEmbedder, Source, SourceLimits, SourceSet};
use serde::Deserialize;

/// The labelled set, as committed.
pub const LABELLED_SET: &str = include_str!("../../eval/retrieval/helpdesk.json");
/// How many passages count by default: recall@`K`.
pub const K: usize = 5;
/// The numbers per vector of the scripted embedder of the hybrid ranking.
pub const DIMENSION: usize = 256;

/// One labelled question.
#[derive(Debug, Clone, Deserialize)]
pub struct Labelled {
    /// The question.
    pub question: String,
    /// The passages that answer it, as `source:line`.
    pub relevant: Vec<String>,
}

#[derive(Deserialize)]
struct Set {
    questions: Vec<Labelled>,
}

/// Recall@`k` of each ranking, over the whole set.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Recall {
    /// How many passages counted.
    pub k: usize,
    /// The questions.
    pub questions: usize,
    /// The passages searched.
    pub passages: usize,
    /// BM25.
    pub lexical: f64,
    /// BM25 and the scripted embedder, fused.
    pub hybrid: f64,
    /// Substring search.
    pub substring: f64,
}

/// The labelled questions, each label resolved to a chunk id of `base`; an error names a
/// label that names no passage.
pub fn resolved(base: &KnowledgeBase) -> Result<Vec<(String, Vec<String>)>, String> {
    let set: Set = serde_json::from_str(LABELLED_SET).map_err(|e| format!("the labelled set: {e}"))?;
    let resolve = |label: &str| {
        let (source, line) = label.split_once(':').ok_or(format!("label `{label}` is not `source:line`"))?;
        let line: usize = line.parse().map_err(|_| format!("label `{label}`: the line is not a number"))?;
        base.chunks()
            .iter()
            .find(|c| c.source == source && c.lines.contains(&line))
            .map(|c| c.id.clone())
            .ok_or(format!("label `{label}` names no passage"))
    };
    set.questions
        .into_iter()
        .map(|q| Ok((q.question, q.relevant.iter().map(|l| resolve(l)).collect::<Result<_, String>>()?)))
        .collect()
}

/// The helpdesk's passages, as its runtime builds them.
pub fn knowledge_base() -> KnowledgeBase {
    let sources = DeskLoop::SPEC
        .knowledge
        .iter()
        .map(|s| match s.origin {
            KnowledgeOrigin::Embedded(bytes) => Source::embedded(s.name, bytes),
            KnowledgeOrigin::File(p) => Source::file(s.name, p),
            KnowledgeOrigin::Directory(p) => Source::directory(s.name, p),
        })
        .collect();
    let set = SourceSet::load(sources, SourceLimits::default()).expect("the helpdesk's sources load");
    KnowledgeBase::build(&set, knowledge_settings().chunks).expect("the helpdesk's passages index")
}

/// The ids of the best `k` passages by substring search: each passage scores the number of
/// the question's words (lower case, three letters or more) found in its lower-cased text.
pub fn substring_top(base: &KnowledgeBase, question: &str, k: usize) -> Vec<String> {
    let words: Vec<String> =
        question.split(|c: char| !c.is_alphanumeric()).filter(|w| w.len() >= 3).map(str::to_lowercase).collect();
    let mut scored: Vec<(usize, usize)> = base
        .chunks()
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let text = c.text().to_lowercase();
            (words.iter().filter(|w| text.contains(w.as_str())).count(), i)
        })
        .filter(|(n, _)| *n > 0)
        .collect();
    scored.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    scored.into_iter().take(k).map(|(_, i)| base.chunks()[i].id.clone()).collect()
}

fn share(found: &[String], relevant: &[String]) -> f64 {
    relevant.iter().filter(|r| found.contains(r)).count() as f64 / relevant.len().max(1) as f64
}

/// Recall@`k` of the three rankings on the labelled set (offline: no network).
pub async fn measure(k: usize) -> Result<Recall, String> {
    let lexical_base = knowledge_base();
    let labelled = resolved(&lexical_base)?;
    let mut hybrid_base = knowledge_base();
    let embedder = ScriptedEmbedder::new(DIMENSION);
    hybrid_base.embed(&embedder).await.map_err(|e| e.to_string())?;
    let limits = RetrievalLimits { max_chunks: k, max_bytes: usize::MAX, ..RetrievalLimits::default() };
    let ids = |r: agents_runtime::knowledge::Retrieval| r.passages.into_iter().map(|p| p.chunk.id).collect::<Vec<_>>();
    let (mut lexical, mut hybrid, mut substring) = (0.0, 0.0, 0.0);
    for (question, relevant) in &labelled {
        lexical += share(&ids(lexical_base.search(question, limits).map_err(|e| e.to_string())?), relevant);
        let h = hybrid_base.search_hybrid(question, &embedder, limits).await.map_err(|e| e.to_string())?;
        hybrid += share(&ids(h), relevant);
        substring += share(&substring_top(&lexical_base, question, k), relevant);
    }
    let n = labelled.len() as f64;
    Ok(Recall {
        k,
        questions: labelled.len(),
        passages: lexical_base.chunks().len(),
        lexical: lexical / n,
        hybrid: hybrid / n,
        substring: substring / n,
    })
}
