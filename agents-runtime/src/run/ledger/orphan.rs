//! The transitions of a proposal whose run is gone ([`Runtime::resume_orphaned`]: its
//! approval's execution claimed, its rejection or its undecided end settled, a lapsed claim
//! taken over), and of a person's decision made through the decisions API from any node
//! ([`Runtime::decide_async`], [`Runtime::decide`]): each one conditional update of the state
//! store, then, for the node that won it, the one final record.
//!
//! [`Runtime::resume_orphaned`]: crate::run::Runtime::resume_orphaned
//! [`Runtime::decide_async`]: crate::run::Runtime::decide_async
//! [`Runtime::decide`]: crate::run::Runtime::decide

use super::entry::WITHDRAWN;
use super::{ClaimHeartbeat, ResumedCall};
use crate::audit::AuditStatus;
use crate::run::decision::{DecisionError, Undecided, Verdict};
use crate::run::pending::{Heard, declined, detail, detail_str, principal_of, seal, stored, unavailable};
use crate::run::place::place_of;
use crate::run::record::{RecordFields, RecordIds};
use crate::run::shared::{Inner, Live, mark_recorded};
use crate::run::sync::lock;
use crate::store::{DecideOutcome, ProposalRecord, ProposalState, SlotId, StoreError, StoredVerdict};
use crate::tool::Registry;
use agents_core::{Principal, SharedValue};
use serde_json::Value;
use std::sync::Arc;

/// What came of one unsettled proposal a resumption looked at.
pub(in crate::run) enum Resumed {
    /// Its approved execution is this node's now: the caller carries it out (`run::carry`).
    Carry(ProposalRecord),
    /// Its final record was written here (or refused by the log).
    Settled(ResumedCall),
    /// Not this agent's, its run is alive, it still waits for its user, or another node
    /// settled it.
    Left,
}

/// The final record a claim that lapsed unwritten gets: what the store knows of the
/// proposal, and never more (an execution claimed by a node that died may have run).
fn taken_over(found: &ProposalState) -> (AuditStatus, String) {
    let reason = found.reason.as_deref();
    match (found.verdict, found.claimed_by.as_deref()) {
        (Some(StoredVerdict::Approved), Some(WITHDRAWN) | None) => (
            AuditStatus::Skipped,
            format!(
                "{}: the run ended before carrying out the approval and stopped before recording why; nothing ran",
                Undecided::Abandoned.code()
            ),
        ),
        (Some(StoredVerdict::Approved), Some(node)) => (
            AuditStatus::Failed,
            format!(
                "{}; {node} claimed its execution and stopped before recording the outcome",
                Undecided::Abandoned.reason()
            ),
        ),
        _ => match reason.and_then(Undecided::of_reason) {
            Some(_) => (AuditStatus::Skipped, reason.unwrap_or_default().to_owned()),
            None => (AuditStatus::Rejected, declined(reason)),
        },
    }
}

/// Settles one unsettled proposal if it is `A`'s and its run is gone (see
/// [`Runtime::resume_orphaned`](crate::run::Runtime::resume_orphaned)), what came of it.
pub(in crate::run) async fn resume_one<A: Registry>(
    inner: &Arc<Inner>,
    found: ProposalState,
) -> Result<Resumed, StoreError> {
    let store = &inner.services.store;
    let node = inner.settings.node_id.as_str();
    let p = found.proposal;
    if detail_str(&p, detail::AGENT) != A::SPEC.name || detail_str(&p, detail::MANIFEST) != A::MANIFEST_SHA256 {
        return Ok(Resumed::Left);
    }
    // A direct session's proposal has no slot: its caller is gone with it.
    let Some(slot) = p.detail.get(detail::SLOT).and_then(Value::as_str) else { return Ok(Resumed::Left) };
    // A live run (its lease renewed) settles its proposal itself.
    if store.slot_held(&SlotId(slot.to_owned())).await? {
        return Ok(Resumed::Left);
    }
    match found.verdict {
        Some(StoredVerdict::Approved) => {
            // A row that does not verify is claimed with no seal, and refused below.
            let sealed = seal::for_claim(&inner.services.tokens, &p, node);
            if store.claim_execution(&p.call_id, node, &sealed).await? {
                return Ok(Resumed::Carry(p));
            }
        }
        Some(StoredVerdict::Rejected) => {
            if store.claim_settlement(&p.call_id, node).await? {
                let reason = declined(found.reason.as_deref());
                return Ok(Resumed::Settled(settle::<A>(inner, p, AuditStatus::Rejected, reason).await));
            }
        }
        None => {
            // A conversational proposal waits as long as its session holds it for the
            // user's next message (until the session idles out, ends or moves on).
            if p.detail.get(detail::CONVERSATIONAL).and_then(Value::as_bool) == Some(true)
                && session_holds(inner, &p).await?
            {
                return Ok(Resumed::Left);
            }
            let reason = Undecided::TimedOut.reason();
            if store.close_undecided(&p.call_id, node, &reason).await? {
                return Ok(Resumed::Settled(settle::<A>(inner, p, AuditStatus::Skipped, reason).await));
            }
        }
    }
    Ok(Resumed::Left)
}

/// Takes over one lapsed claim if it is `A`'s and its run's slot (if any) lapsed too, and
/// writes (or, found in the log, marks) its final record, what it wrote.
pub(in crate::run) async fn take_over_one<A: Registry>(
    inner: &Arc<Inner>,
    found: ProposalState,
) -> Result<Option<ResumedCall>, StoreError> {
    let store = &inner.services.store;
    let p = &found.proposal;
    if detail_str(p, detail::AGENT) != A::SPEC.name || detail_str(p, detail::MANIFEST) != A::MANIFEST_SHA256 {
        return Ok(None);
    }
    if let Some(slot) = p.detail.get(detail::SLOT).and_then(Value::as_str)
        && store.slot_held(&SlotId(slot.to_owned())).await?
    {
        return Ok(None);
    }
    if !store.take_over(&p.call_id, &inner.settings.node_id, inner.settings.settle_lease).await? {
        return Ok(None);
    }
    // Its record may have reached the log just before its holder died: then it is only
    // marked.
    match inner.services.audit.holds_final(&p.call_id).await {
        Ok(Some(true)) => {
            tracing::warn!(call_id = %p.call_id, "a lapsed claim's final record is in the log; marking it");
            store.mark_recorded(&p.call_id).await?;
            return Ok(None);
        }
        Ok(_) => {}
        Err(e) => {
            tracing::warn!(call_id = %p.call_id, error = %e, "the log could not be searched; writing the record");
        }
    }
    let (status, reason) = taken_over(&found);
    tracing::warn!(call_id = %p.call_id, "a claim of a final record lapsed unwritten; writing the record");
    Ok(Some(settle::<A>(inner, found.proposal, status, reason).await))
}

/// Whether the proposal's session (within its idle time) still waits for the user's answer
/// to it.
async fn session_holds(inner: &Inner, p: &ProposalRecord) -> Result<bool, StoreError> {
    let session = inner.services.store.load_session(&p.session_id, inner.settings.session_idle_timeout).await?;
    Ok(session.is_some_and(|s| s.pending.get("call_id").and_then(Value::as_str) == Some(p.call_id.as_str())))
}

/// Writes the final record of a claimed proposal that does not run.
async fn settle<A: Registry>(inner: &Inner, p: ProposalRecord, status: AuditStatus, reason: String) -> ResumedCall {
    let _claim =
        ClaimHeartbeat::start(&inner.services.store, inner.settings.settle_lease, &p.call_id, &inner.settings.node_id);
    let principal = principal_of(&p);
    let request_id = match detail_str(&p, detail::REQUEST) {
        "" => uuid::Uuid::new_v4().to_string(),
        given => given.to_owned(),
    };
    let mut ids = RecordIds::new::<A>(&p.run_id, &p.session_id, &request_id, &principal);
    ids.node = place_of(&inner.services.tokens, &p).map(|place| place.node);
    let record = RecordFields {
        call_id: Some(p.call_id.as_str().into()),
        tool: Some(p.tool.as_str().into()),
        title: Some(p.title.as_str().into()),
        args: Some(SharedValue::from(p.args.clone())),
        args_hash: Some(p.args_mac.clone()),
        ..RecordFields::new(status)
    }
    .reason(reason.clone());
    crate::telemetry::audited(status, Some(p.tool.as_str()), None);
    let recorded = match inner.services.audit.append(ids.record(record)).await {
        Ok(_) => {
            mark_recorded(&inner.services, &p.call_id).await;
            true
        }
        Err(e) => {
            tracing::error!(call_id = %p.call_id, error = %e, "the final record of a gone run's proposal could not be written");
            false
        }
    };
    ResumedCall { call_id: p.call_id, run_id: p.run_id, tool: p.tool, status, reason: Some(reason), recorded }
}

/// Records a person's verdict on `p` in the state store, sealed under the server key (an
/// approval only for a row a key holder wrote), where of every node and channel deciding it
/// the first one recorded holds; a dialog call waiting on this node hears it at once, one on
/// another node finds it in the store.
pub(in crate::run) async fn decide_in_store(
    inner: &Inner,
    p: &ProposalRecord,
    verdict: Verdict,
    reason: Option<&str>,
) -> Result<(), DecisionError> {
    let call_id = p.call_id.as_str();
    let not_pending = || DecisionError::NotPending(call_id.to_owned());
    // An approval is sealed over the row as read, so only a row a key holder wrote gets one
    // (a rejection runs nothing, whoever wrote the row).
    let tokens = &inner.services.tokens;
    if verdict == Verdict::Approve && !seal::holds_proposed(tokens, p) {
        tracing::error!(call_id, "a stored proposal does not verify under the server key; not decided");
        return Err(DecisionError::Unverified(call_id.to_owned()));
    }
    let sealed = seal::decided(tokens, p, stored(verdict));
    match inner
        .services
        .store
        .decide(call_id, &p.org_id, &p.user_id, stored(verdict), reason, &sealed)
        .await
        .map_err(unavailable)?
    {
        DecideOutcome::Recorded => {}
        DecideOutcome::NotYours => return Err(DecisionError::NotYourRun),
        DecideOutcome::Unknown | DecideOutcome::AlreadyDecided => return Err(not_pending()),
    }
    // A run waiting here hears it at once; one on another node finds it in the store.
    if let Some(waiter) = lock(&inner.live.decisions).remove(call_id) {
        let _ = waiter.tx.send(Heard { verdict, recorded: true, reason: reason.map(str::to_owned) });
    }
    Ok(())
}

/// Hands `decider`'s verdict to a dialog call waiting on this node for it, which then records
/// it in the state store (where a decision made first through another node holds). `None`
/// when no call waits here under `call_id`, or when an approval of it must go through the
/// decisions API (a proposal that needs a second confirmation); a decider other than the run's own principal
/// (user, organisation and role) is refused and changes nothing.
pub(in crate::run) fn hand_to_waiter(
    live: &Live,
    call_id: &str,
    decider: &Principal,
    verdict: Verdict,
) -> Option<Result<(), DecisionError>> {
    let mut decisions = lock(&live.decisions);
    let waiter = decisions.get(call_id)?;
    if waiter.user_id != decider.user_id || waiter.org_id != decider.org_id || waiter.role != decider.role {
        tracing::warn!(call_id, decider = %decider.user_id, "decision from another principal refused");
        return Some(Err(DecisionError::NotYourRun));
    }
    // A second confirmation is asked through the decisions API, which records the first
    // approval and checks the acknowledgement; an approval handed here would skip both.
    if verdict == Verdict::Approve && waiter.acknowledge {
        return None;
    }
    let waiter = decisions.remove(call_id).expect("checked above");
    Some(
        waiter
            .tx
            .send(Heard { verdict, recorded: false, reason: None })
            .map_err(|_| DecisionError::NotPending(call_id.to_owned())),
    )
}
