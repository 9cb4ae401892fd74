//! DeskLoop's policy documents (`src/helpdesk/policies/*.md`, compiled in and pinned by
//! SHA-256 in its manifest) and how the offline model answers from them.
//!
//! Each turn the runtime retrieves the passages that match the user's question and gives them
//! to the model as a data message (see [`agents_runtime::knowledge`]). The offline rule model
//! answers a question none of its rules recognise from the best passage, and cites it: the
//! source, the lines and the passage's id, which the run's `knowledge_loaded` event and its
//! audit record name too.

use agents_runtime::knowledge::{ChunkLimits, KnowledgeSettings, PASSAGES_CLOSE, PASSAGES_OPEN};
use agents_runtime::provider::{ChatMessage, ChatRequest};
use serde_json::Value;

/// The largest passage of the helpdesk's documents, in bytes: about one section of a policy.
pub const PASSAGE_BYTES: usize = 320;

/// How the helpdesk's runtime reads and ranks its documents: offline (BM25), passages of
/// about one section.
pub fn knowledge_settings() -> KnowledgeSettings {
    KnowledgeSettings { chunks: ChunkLimits { max_chunk_bytes: PASSAGE_BYTES }, ..KnowledgeSettings::default() }
}

/// The passages of the request's data message (the latest), best first: each as the JSON
/// object the runtime wrote (`source`, `path`, `chunk`, `lines`, `sha256`, `text`).
pub fn passages(request: &ChatRequest) -> Vec<Value> {
    let data = request.messages.iter().rev().find_map(|m| match m {
        ChatMessage::User { content } => {
            let (_, rest) = content.split_once(PASSAGES_OPEN)?;
            Some(rest.rsplit_once(PASSAGES_CLOSE)?.0.trim().to_owned())
        }
        _ => None,
    });
    data.and_then(|d| serde_json::from_str::<Vec<Value>>(&d).ok()).unwrap_or_default()
}

/// An answer from the best passage, citing it; `None` without passages.
///
/// ```
/// # use agents_runtime::provider::{ChatMessage, ChatRequest};
/// let passage = serde_json::json!([{"source": "probation", "path": "", "chunk": "k1", "lines": [3, 5],
///     "sha256": "00", "text": "## Notice\n\nOne week's notice.\n"}]);
/// let content = format!("data\n<retrieved_passages>\n{passage}\n</retrieved_passages>");
/// let request = ChatRequest {
///     system: String::new(),
///     messages: vec![ChatMessage::User { content }],
///     tools: vec![],
///     response_schema: None,
/// };
/// let answer = examples::helpdesk::knowledge::answer_from_passages(&request).unwrap();
/// assert_eq!(answer, "One week's notice.\n\n(Source: the probation policy, lines 3–4, passage k1.)");
/// ```
pub fn answer_from_passages(request: &ChatRequest) -> Option<String> {
    let best = passages(request).into_iter().next()?;
    let text = best["text"].as_str()?;
    let body: Vec<&str> = text.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with('#')).collect();
    let (start, end) = (best["lines"][0].as_u64()?, best["lines"][1].as_u64()?);
    Some(format!(
        "{}\n\n(Source: the {} policy, lines {start}–{}, passage {}.)",
        body.join(" "),
        best["source"].as_str()?,
        end.saturating_sub(1).max(start),
        best["chunk"].as_str()?,
    ))
}
