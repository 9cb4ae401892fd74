//! The transitions of a proposal that waits in its session for the user's next message
//! (conversational mode), and of every proposal of a session that ends: each claims the move
//! in this node's book, ends the proposal in the state store (one conditional update, so of
//! every node and channel ending or deciding it one does), and only the one that ended it
//! writes its final record.

use crate::audit::AuditStatus;
use crate::run::context::RunCtx;
use crate::run::conversation::PendingProposal;
use crate::run::outcome::RunStatus;
use crate::run::proposal::{Refused, State};
use crate::run::record::{RecordFields, RecordIds};
use crate::run::shared::{Inner, append_detached};
use crate::run::sync::lock;
use crate::store::{ProposalRecord, StoredVerdict};
use crate::tool::Registry;
use std::sync::Arc;

/// Ends a conversational proposal without running it (`to`: rejected, expired, cancelled or
/// superseded): the move is claimed in this node's book, then the proposal is ended in the
/// state store (one conditional update: of every node and channel ending or deciding it, one
/// does), and only the one that ended it writes `record`, its final record. `Ok(false)` when it
/// was decided or ended elsewhere (it leaves the book without a record from here);
/// `Err(Refused::Audit)` when the store or the log failed (the proposal stays in the book).
pub(in crate::run) async fn end_waiting<A: Registry>(
    ctx: &RunCtx<A>,
    call_id: &str,
    to: State,
    record: RecordFields,
    reason: &str,
) -> Result<bool, Refused> {
    let session = ctx.ids.session_id.as_str();
    let claim = ctx.inner.live.proposals.claim(session, call_id, to).ok_or(Refused::NotAllowed)?;
    match ctx.inner.services.store.close_undecided(call_id, &ctx.inner.settings.node_id, reason).await {
        // The claim is this node's: its final record, once in the log, marks it written.
        Ok(true) => {
            ctx.inner.live.settling.insert(call_id.to_owned());
        }
        Ok(false) => {
            claim.commit(None);
            return Ok(false);
        }
        Err(e) => {
            tracing::warn!(call_id, error = %e, "a proposal could not be ended in the state store");
            claim.abort();
            return Err(Refused::Audit);
        }
    }
    match ctx.audit(record).await {
        Ok(()) => {
            claim.commit(None);
            Ok(true)
        }
        Err(_) => {
            claim.abort();
            Err(Refused::Audit)
        }
    }
}

/// Ends a waiting proposal as [`end_waiting`] does; when the store or the log refused, it
/// ends all the same, without its record (a proposal whose turn ended must not stay
/// decidable: it fails closed). `Err` says the record is missing.
pub(in crate::run) async fn end_or_close<A: Registry>(
    ctx: &RunCtx<A>,
    call_id: &str,
    to: State,
    record: RecordFields,
    reason: &str,
) -> Result<bool, Refused> {
    end_waiting(ctx, call_id, to, record, reason).await.inspect_err(|_| {
        ctx.inner.live.proposals.close(ctx.ids.session_id.as_str(), call_id);
    })
}

/// The user's reply decided a proposal waiting for it (`to`): `Confirmed` writes `record` and
/// makes the approval this turn's (it may run in this turn only; the store records it when it
/// is carried out, once, whatever node answers); `Rejected` ends it as [`end_waiting`] does.
/// `Err(Refused::NotAllowed)` when another answer decided it first, or it ended.
pub(in crate::run) async fn answer_waiting<A: Registry>(
    ctx: &RunCtx<A>,
    call_id: &str,
    to: State,
    record: RecordFields,
    reason: &str,
) -> Result<(), Refused> {
    if to == State::Confirmed {
        let (session, turn) = (ctx.ids.session_id.as_str(), Some(ctx.ids.run_id.as_str()));
        ctx.inner.live.proposals.transition(session, call_id, to, turn, || ctx.audit(record)).await
    } else {
        end_waiting(ctx, call_id, to, record, reason).await.map(drop)
    }
}

/// What the state store says of the proposal a session holds when a turn begins.
pub(in crate::run) enum Adopted {
    /// Still undecided: it waits for this turn's message, in this node's book from now on.
    Waiting,
    /// Decided or ended outside the conversation (`how`, in words) and out of the book; its
    /// final record is written (or another node's to write). `carry`: an approval through the
    /// decisions API whose execution the store granted this node: the turn carries it out.
    Over { how: String, carry: Option<Box<ProposalRecord>> },
    /// Its state could not be read; nothing was decided.
    Unreadable(crate::store::StoreError),
}

/// The proposal `p` a session holds, as the state store sees it when a turn begins: one still
/// undecided enters this node's book (it may have been made on another node); one decided or
/// ended outside the conversation leaves it: rejected through the decisions API, its
/// `rejected` record, unless written already; approved there and not carried out yet, the
/// claim of its execution for this node (once, ever).
pub(in crate::run) async fn adopt<A: Registry>(ctx: &RunCtx<A>, p: &PendingProposal) -> Adopted {
    let (session, book) = (ctx.ids.session_id.as_str(), &ctx.inner.live.proposals);
    let found = match ctx.inner.services.store.proposal(&p.call_id).await {
        Ok(Some(found)) if found.verdict.is_none() => {
            book.open(&Arc::new(ctx.ids.of_run(&p.run_id)), &p.call_id, false);
            return Adopted::Waiting;
        }
        Ok(found) => found,
        Err(e) => return Adopted::Unreadable(e),
    };
    book.close(session, &p.call_id);
    let verdict = found.as_ref().and_then(|f| f.verdict);
    let how = match verdict {
        Some(StoredVerdict::Approved) => "approved and carried out",
        Some(StoredVerdict::Rejected) => "rejected",
        None => "ended",
    };
    let mut carry = None;
    match found {
        // Rejected through the decisions API: its record, unless written already.
        Some(f) if verdict == Some(StoredVerdict::Rejected) && f.settled_by.is_none() => {
            let ids = Arc::new(ctx.ids.of_run(&p.run_id));
            ctx.inner.close_waiting(&p.call_id, "rejected outside the conversation".into(), Some(ids)).await;
        }
        // Approved through the decisions API and not carried out yet: this turn carries it
        // out, if the store grants it the execution (once, ever).
        Some(f) if verdict == Some(StoredVerdict::Approved) && f.claimed_by.is_none() => {
            let node = ctx.inner.settings.node_id.as_str();
            let sealed = crate::run::pending::seal::for_claim(&ctx.inner.services.tokens, &f.proposal, node);
            if matches!(ctx.inner.services.store.claim_execution(&p.call_id, node, &sealed).await, Ok(true)) {
                carry = Some(Box::new(f.proposal));
            }
        }
        _ => {}
    }
    Adopted::Over { how: how.to_owned(), carry }
}

/// Proposals this node's book still holds as waiting in the session (but `keep`), that the
/// store says are over, leave the book: one decided through the decisions API while the
/// session no longer held it ends here (rejected: its record; approved and not carried out:
/// withdrawn), unless another node or the upkeep ended it first.
pub(in crate::run) async fn drop_stale<A: Registry>(ctx: &RunCtx<A>, keep: Option<&str>) {
    let (session, book) = (ctx.ids.session_id.as_str(), &ctx.inner.live.proposals);
    for stale in book.proposed_in(session).into_iter().filter(|c| Some(c.as_str()) != keep) {
        match ctx.inner.services.store.proposal(&stale).await {
            // Still open: a turn under way on this node proposed it.
            Ok(Some(found)) if found.verdict.is_none() => {}
            Ok(Some(found)) => {
                let ids = Arc::new(ctx.ids.of_run(&found.proposal.run_id));
                let reason = "cancelled: the conversation moved on before the decision reached it".to_owned();
                ctx.inner.close_waiting(&stale, reason, Some(ids)).await;
                book.close(session, &stale);
            }
            _ => book.close(session, &stale),
        }
    }
}

/// Ends what the turn leaves open: an approval it granted and did not use expires (a later
/// message never rides on an earlier "yes"), and a proposal it made is cancelled unless the
/// turn ends waiting for the user's answer to it. Each gets its final record.
pub(in crate::run) async fn resolve_turn<A: Registry>(ctx: &RunCtx<A>, status: RunStatus) {
    let session = ctx.ids.session_id.as_str();
    for (call_id, state, session_ended) in ctx.inner.live.proposals.open_of_turn(session, ctx.ids.run_id.as_str()) {
        let (to, reason) = match state {
            State::Confirmed => (
                State::Expired,
                "expired: the approval was not used in the turn that granted it; nothing ran".to_owned(),
            ),
            // Its session ended during the turn: nobody can answer it any more.
            State::Proposed if session_ended => {
                (State::Cancelled, "cancelled: the session ended before the user decided; nothing ran".to_owned())
            }
            State::Proposed if status != RunStatus::AwaitingConfirmation => (
                State::Cancelled,
                format!("cancelled: the turn ended ({}) before the user decided; nothing ran", status.as_str()),
            ),
            _ => continue,
        };
        let record = RecordFields { call_id: Some(call_id.as_str().into()), ..RecordFields::new(AuditStatus::Skipped) }
            .reason(reason.clone());
        if end_or_close(ctx, &call_id, to, record, &reason).await.is_err() {
            // The record was refused; the proposal ended anyway (it must not stay decidable).
            tracing::error!(run_id = %ctx.ids.run_id, call_id, "a proposal's final record was refused; it ends without one");
        }
        lock(&ctx.delta).cleared.push(call_id.clone());
        let mut approved = lock(&ctx.approved);
        if approved.as_deref().is_some_and(|(_, _, c)| *c == call_id) {
            *approved = None;
        }
    }
}

impl Inner {
    /// A session's context ended (`says`: how, in words): every proposal in it resolves with one final record.
    /// One that waits in the session for the user's next message (conversational, on this node
    /// or, `stored`, the one the store held) is ended in the store (one conditional update,
    /// so of every node ending or deciding it one does) and, by the one that ended it,
    /// recorded `skipped` with reason `cancelled` (or `expired` for an approval not yet used),
    /// written by the runtime on its own ([`Runtime::records_settled`](crate::run::Runtime::records_settled)
    /// waits for it). A dialog or direct call waiting for a decision is woken and ends itself
    /// `skipped` with reason `stopped`; any proposal of the session can no longer be approved
    /// or start running, so a turn still under way ends what it holds when it ends.
    pub(in crate::run) async fn end_proposals_of(
        self: &Arc<Self>,
        session_id: &str,
        says: &str,
        stored: Option<String>,
    ) {
        let ended = self.live.proposals.end_session(session_id);
        // Dropping a waiting call's sender wakes it: it ends as stopped, with its own record.
        lock(&self.live.decisions).retain(|_, d| d.session_id != session_id);
        let stored = stored.filter(|c| !ended.iter().any(|e| e.call_id == *c));
        let local = ended.into_iter().map(|e| (e.call_id, e.state, Some(e.ids)));
        for (call_id, state, ids) in local.chain(stored.map(|c| (c, State::Proposed, None))) {
            let reason = match state {
                State::Confirmed => format!("expired: {} before the approval was used; nothing ran", says),
                _ => format!("cancelled: {} before the user decided; nothing ran", says),
            };
            self.close_waiting(&call_id, reason, ids).await;
        }
    }

    /// Ends a conversational proposal in the store and, when this call ended it, writes its
    /// final record (under `ids`, or the ids of the run the store says proposed it): `skipped`
    /// with `reason` when it was undecided; `rejected` when a person rejected it through the
    /// decisions API and nobody recorded that yet; `skipped` when a person approved it there
    /// and nobody carried it out yet (the session ended first: nothing runs). Each is one
    /// conditional update of the store, so of every node ending it one writes the record.
    pub(in crate::run) async fn close_waiting(
        self: &Arc<Self>,
        call_id: &str,
        reason: String,
        ids: Option<Arc<RecordIds>>,
    ) {
        let store = &self.services.store;
        let fields = match self.settle_waiting(call_id, &reason).await {
            Ok(Some(fields)) => {
                // This node holds the claim: the record, once in the log, marks it written.
                self.live.settling.insert(call_id.to_owned());
                fields
            }
            // Decided and settled elsewhere: its final record is the one who did it.
            Ok(None) => return,
            Err(e) => {
                tracing::error!(call_id, error = %e, "a proposal of an ended session could not be ended in the state store");
                return;
            }
        };
        let ids = match ids {
            Some(ids) => ids,
            None => match store.proposal(call_id).await {
                Ok(Some(found)) => Arc::new(ids_of(&found.proposal)),
                _ => {
                    tracing::error!(call_id, "the ended proposal's run could not be read; its final record is missing");
                    return;
                }
            },
        };
        let mut f = fields;
        f.call_id = Some(call_id.into());
        append_detached(self, ids.record(f));
    }

    /// Claims the end of a conversational proposal in the store (see
    /// [`Inner::close_waiting`]); the final record this node then owes, if it won.
    pub(in crate::run) async fn settle_waiting(
        &self,
        call_id: &str,
        reason: &str,
    ) -> Result<Option<RecordFields>, crate::store::StoreError> {
        let (store, node) = (&self.services.store, self.settings.node_id.as_str());
        if store.close_undecided(call_id, node, reason).await? {
            return Ok(Some(RecordFields::new(AuditStatus::Skipped).reason(reason)));
        }
        let Some(found) = store.proposal(call_id).await? else { return Ok(None) };
        Ok(match found.verdict {
            Some(crate::store::StoredVerdict::Rejected) if found.settled_by.is_none() => {
                let declined = crate::run::pending::declined(found.reason.as_deref());
                store
                    .claim_settlement(call_id, node)
                    .await?
                    .then(|| RecordFields::new(AuditStatus::Rejected).reason(declined))
            }
            Some(crate::store::StoredVerdict::Approved) if found.claimed_by.is_none() => {
                let withdrawn = super::entry::WITHDRAWN;
                let why = format!("{reason} (it was approved, and not carried out yet)");
                store
                    .claim_execution(call_id, withdrawn, "")
                    .await?
                    .then(|| RecordFields::new(AuditStatus::Skipped).reason(why))
            }
            _ => None,
        })
    }
}

/// The ids of the run that proposed a stored proposal.
pub(in crate::run) fn ids_of(p: &ProposalRecord) -> RecordIds {
    use crate::run::pending::{detail, detail_str, principal_of};
    RecordIds::from_parts(
        &p.run_id,
        &p.session_id,
        detail_str(p, detail::REQUEST),
        &principal_of(p),
        detail_str(p, detail::AGENT),
        detail_str(p, detail::MANIFEST),
    )
}
