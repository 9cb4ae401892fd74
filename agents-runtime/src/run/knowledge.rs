//! A turn's passages of the agent's knowledge (see [`crate::knowledge`]): retrieved for the
//! user's message, given to the model as one user-role data message, noted as untrusted
//! content for the egress check, shown as a `knowledge_loaded` event and recorded as a
//! `notice` whose result is the evidence (chunk ids and SHA-256s, never text); the tokens of
//! embedding calls are counted in the turn's spend, and their cost in USD when the embedder
//! has a price ([`Embedder::cost_usd`](crate::knowledge::Embedder::cost_usd)), in the run's
//! total and the budget store.

use super::context::RunCtx;
use super::outcome::StartError;
use super::record::RecordFields;
use super::spend::{Meter, Spend};
use super::sync::lock;
use crate::audit::{AuditResult, AuditStatus};
use crate::events::Event;
use crate::provider::{ChatMessage, Usage};
use crate::tool::Registry;
use std::sync::Mutex;

/// The passages message for `query`, `None` when the agent declares no knowledge or nothing
/// matched. An agent whose sources cannot be loaded or verified gets the error: its turn must
/// not reach the model.
pub(super) async fn passages_for<A: Registry>(
    ctx: &RunCtx<A>,
    query: &str,
    spend: &Mutex<Spend>,
) -> Result<Option<ChatMessage>, StartError> {
    let knowledge = &ctx.inner.services.knowledge;
    let Some(loaded) = knowledge.load(A::MANIFEST_SHA256, A::SPEC.knowledge).map_err(StartError::Knowledge)? else {
        return Ok(None);
    };
    let (found, usage, degraded) = loaded.retrieve(query, &knowledge.settings).await;
    lock(spend).count_tokens(&Usage { input_tokens: usage.tokens, ..Usage::default() });
    // A priced embedder's calls join the run's spend in USD and the budget store, as a
    // model call's do (recorded once made: the next paid call is refused when they spent
    // the budget).
    let cost_usd = knowledge.settings.embedder.as_ref().map_or(0.0, |e| e.cost_usd(&usage));
    if cost_usd != 0.0 {
        Meter { ctx, spend }.settle(Default::default(), cost_usd).await;
    }
    if let Some(why) = degraded {
        let reason = format!("knowledge: {why}; this turn's passages were ranked by BM25 alone");
        let _ = ctx.audit(RecordFields::new(AuditStatus::Notice).reason(reason)).await;
    }
    let found = match found {
        Ok(found) => found,
        Err(why) => {
            let reason = format!("knowledge: retrieval failed ({why}); the model answers without passages");
            let _ = ctx.audit(RecordFields::new(AuditStatus::Notice).reason(reason)).await;
            return Ok(None);
        }
    };
    for p in &found.passages {
        ctx.note_passage(&p.chunk.source, &p.chunk.id, p.chunk.text());
    }
    let evidence = found.evidence();
    let reason = format!(
        "knowledge: {} passages given to the model as data ({} embedding calls, {} tokens)",
        found.passages.len(),
        usage.calls,
        usage.tokens
    );
    let record =
        RecordFields { result: Some(AuditResult::Value(evidence.clone())), ..RecordFields::new(AuditStatus::Notice) };
    let _ = ctx.audit(record.reason(reason)).await;
    let (run_id, sources) = (ctx.ids.run_id.to_string(), loaded.entries.clone());
    ctx.emit(|| Event::KnowledgeLoaded { run_id, sources, passages: evidence });
    Ok(crate::knowledge::passages_message(&found.passages))
}
