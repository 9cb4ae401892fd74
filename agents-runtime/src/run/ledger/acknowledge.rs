//! The first step of a second confirmation (see [`crate::untrusted`]): a person's first
//! approval of a proposal the application's policy asks a second confirmation of is recorded
//! (`first_approval`) and answered with what they must acknowledge; it decides nothing in the
//! state store. The second step is an approval like any other once its acknowledgement is
//! checked ([`acknowledged`]), recorded by the ledger's usual transitions.

use super::Proposal;
use crate::audit::AuditStatus;
use crate::run::decision::DecisionError;
use crate::run::pending::seal;
use crate::run::record::{RecordFields, RecordOf};
use crate::run::shared::Inner;
use crate::store::ProposalRecord;
use crate::tool::Registry;
use crate::untrusted::Acknowledgement;
use agents_core::SharedValue;

/// The reason of a `first_approval` record.
fn first_reason(ack: &Acknowledgement) -> String {
    format!(
        "approved once by the user; nothing ran: a second confirmation acknowledging the warning is required ({})",
        ack.warning
    )
}

/// A first approval of the stored proposal `p` through the decisions API: when `p` needs a
/// second confirmation, its `first_approval` record (durable before anything is answered), and
/// the acknowledgement the person must give; `Ok(None)` when it needs none.
pub(in crate::run) async fn first_approval_in_store(
    inner: &Inner,
    p: &ProposalRecord,
) -> Result<Option<Acknowledgement>, DecisionError> {
    let tokens = &inner.services.tokens;
    let Some(ack) = seal::acknowledgement(tokens, p) else { return Ok(None) };
    // The warning is part of the seal: a row that does not verify is given no digest.
    if !seal::holds_proposed(tokens, p) {
        tracing::error!(call_id = %p.call_id, "a stored proposal does not verify under the server key; not decided");
        return Err(DecisionError::Unverified(p.call_id.clone()));
    }
    let ids = super::waiting::ids_of(p);
    let fields = RecordFields {
        call_id: Some(p.call_id.as_str().into()),
        tool: Some(p.tool.as_str().into()),
        title: Some(p.title.as_str().into()),
        args: Some(SharedValue::from(p.args.clone())),
        args_hash: Some(p.args_mac.clone()),
        ..RecordFields::new(AuditStatus::FirstApproval)
    }
    .reason(first_reason(&ack));
    inner.services.audit.append(ids.record(fields)).await.map_err(|e| DecisionError::Unavailable(e.to_string()))?;
    Ok(Some(ack))
}

/// Whether `digest` acknowledges the stored proposal `p` (its own digest, compared in constant
/// time); a proposal that needs no second confirmation acknowledges nothing.
pub(in crate::run) fn acknowledged(inner: &Inner, p: &ProposalRecord, digest: &str) -> bool {
    let tokens = &inner.services.tokens;
    seal::acknowledgement(tokens, p)
        .is_some_and(|ack| crate::token::constant_time_eq(ack.digest.as_bytes(), digest.as_bytes()))
}

impl<A: Registry, F: RecordOf> Proposal<'_, A, F> {
    /// A first approval heard by this run (a confirmer's answer): its `first_approval` record,
    /// and the acknowledgement the second request carries; `None` when the log refused the
    /// record (nothing is asked then, and nothing runs).
    pub(in crate::run) async fn first_approval(&self, stored: &ProposalRecord) -> Option<Acknowledgement> {
        let ack = seal::acknowledgement(&self.checked.ctx.inner.services.tokens, stored)?;
        self.record(AuditStatus::FirstApproval, first_reason(&ack)).await.then_some(ack)
    }
}

/// What the conversation's approval of the proposal `call_id` would skip: the acknowledgement
/// of a proposal that needs a second confirmation (a reply in the conversation cannot give it;
/// the proposal keeps waiting for the decisions API). `Err`: the store could not be asked.
pub(in crate::run) async fn awaited_acknowledgement(
    inner: &Inner,
    call_id: &str,
) -> Result<Option<Acknowledgement>, crate::store::StoreError> {
    let found = inner.services.store.proposal(call_id).await?;
    Ok(found.and_then(|f| seal::acknowledgement(&inner.services.tokens, &f.proposal)))
}

/// The reason of the `first_approval` record a reply writes.
pub(in crate::run) fn reply_reason(ack: &Acknowledgement) -> String {
    format!("reply classified as confirm; {}", first_reason(ack))
}
