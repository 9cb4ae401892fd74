//! The transitions of a proposal a call waits on (dialog mode, and a direct session's
//! confirmer): the book's entry, the `proposed` record and the stored row before the person is
//! asked; the person's verdict recorded in the store, where the first one recorded holds; then
//! the settlement of a rejection, the claim of an approved execution, the `confirmed` record
//! and the run; or the withdrawal of a proposal that ended undecided.

use super::entry::withdraw;
use super::{Confirmation, Proposal};
use crate::audit::AuditStatus;
use crate::run::context::{CallOutcome, RunCtx};
use crate::run::decision::REJECTED_MESSAGE;
use crate::run::decision::{Undecided, Verdict};
use crate::run::gate::checked::Checked;
use crate::run::gate::execute::execute_approved;
use crate::run::ledger::ClaimHeartbeat;
use crate::run::owed::FinalOwed;
use crate::run::pending::{Heard, SharedStore, declined, seal, verdict_of};
use crate::run::proposal::State;
use crate::run::record::{RecordIds, RecordOf};
use crate::run::shared::LocalWaiter;
use crate::run::sync::lock;
use crate::store::{DecideOutcome, ProposalRecord, StoreError, StoredVerdict};
use crate::tool::Registry;
use std::sync::Arc;
use tokio::sync::oneshot;

/// A dialog proposal's entry in the state store, withdrawn (in the background) if the call
/// ends without settling it, so a later decision on it runs nothing.
///
/// While the call waits it holds the row's keys and the seals a verdict gives it, not the row:
/// the row's details (the arguments' provenance among them) are the store's to keep.
pub(in crate::run) struct StoredProposal {
    store: SharedStore,
    keys: RowKeys,
    /// The seals a verdict on it gets ([`seal::decided`]): approved, rejected.
    sealed: [String; 2],
    /// The whole row, kept only for a proposal whose first approval is recorded before the
    /// person is asked again (that record is built from the row).
    whole: Option<Box<ProposalRecord>>,
    settled: bool,
}

/// What names a stored proposal's row: its call, and whose a verdict on it must be.
struct RowKeys {
    call_id: String,
    org_id: String,
    user_id: String,
}

impl StoredProposal {
    /// The proposal as stored, for one whose first approval is recorded (`None` for any other:
    /// such a proposal keeps only its keys and seals).
    pub(in crate::run) fn acknowledged_row(&self) -> Option<&ProposalRecord> {
        self.whole.as_deref()
    }

    fn call_id(&self) -> &str {
        &self.keys.call_id
    }

    /// Records a verdict heard from this node (the confirmer's answer, or `decide` on this
    /// node); when another decision got there first, that one (and its reason) holds.
    async fn record_verdict(&self, verdict: Verdict) -> Result<(Verdict, Option<String>), String> {
        let p = &self.keys;
        let (stored, sealed) = match verdict {
            Verdict::Approve => (crate::store::StoredVerdict::Approved, &self.sealed[0]),
            Verdict::Reject => (crate::store::StoredVerdict::Rejected, &self.sealed[1]),
        };
        let outcome = self.store.decide(&p.call_id, &p.org_id, &p.user_id, stored, None, sealed).await;
        match outcome.map_err(|e| e.to_string())? {
            DecideOutcome::Recorded => Ok((verdict, None)),
            DecideOutcome::AlreadyDecided => {
                let found = self.store.proposal(&p.call_id).await.map_err(|e| e.to_string())?;
                found
                    .and_then(|f| Some((verdict_of(f.verdict?), f.reason)))
                    .ok_or_else(|| "the decision vanished".to_owned())
            }
            other => Err(format!("the state store refused the decision ({other:?})")),
        }
    }

    /// Ends the stored proposal without running it (see [`withdraw`]); `Err` when the store
    /// failed, and the final record is then not this call's to write.
    async fn withdraw(&mut self, reason: &str) -> Result<(), StoreError> {
        self.settled = true;
        withdraw(&*self.store, self.call_id(), reason).await.inspect_err(|e| {
            tracing::warn!(error = %e, call_id = %self.call_id(), "a stored proposal could not be withdrawn");
        })
    }
}

/// Why a heard answer could not be settled in the state store.
enum Unsettled {
    /// The proposal could not be withdrawn either: its final record is left to a resumption.
    Unclaimed(StoreError),
    /// The verdict could not be recorded; the proposal was withdrawn.
    Unrecorded(String),
}

impl StoredProposal {
    /// Across nodes the store decides: a verdict heard here is recorded there, and the one recorded
    /// first (from any node) holds; a question that ended undecided withdraws the proposal.
    async fn arbitrate(&mut self, waited: Waited) -> Result<Waited, Unsettled> {
        match waited {
            Waited::Answer(Ok(Heard { verdict, recorded: false, .. })) => match self.record_verdict(verdict).await {
                Ok((verdict, reason)) => Ok(Waited::Answer(Ok(Heard { verdict, recorded: true, reason }))),
                Err(e) => {
                    self.withdraw("the decision could not be recorded").await.map_err(Unsettled::Unclaimed)?;
                    Err(Unsettled::Unrecorded(e))
                }
            },
            Waited::TimedOut => {
                self.withdraw(&Undecided::TimedOut.reason()).await.map_err(Unsettled::Unclaimed)?;
                Ok(Waited::TimedOut)
            }
            Waited::Answer(Err(why)) => {
                self.withdraw(&why.reason()).await.map_err(Unsettled::Unclaimed)?;
                Ok(Waited::Answer(Err(why)))
            }
            recorded => Ok(recorded),
        }
    }
}

impl Drop for StoredProposal {
    fn drop(&mut self) {
        if !self.settled {
            let (store, call_id) = (self.store.clone(), self.keys.call_id.clone());
            crate::store::now_or_in_background("withdraw a proposal", async move {
                withdraw(&*store, &call_id, "abandoned: the call ended before it was settled").await
            });
        }
    }
}

/// The store failed while this call's final record was being claimed: without the claim the
/// call writes no final record (a resumption that wins the claim once the run's slot lapsed
/// writes it, so there is never a second one); nothing ran, and the run ends with
/// [`RunError::StateUnavailable`](crate::run::RunError::StateUnavailable).
fn unclaimed<A: Registry>(
    ctx: &Arc<RunCtx<A>>,
    stored: &StoredProposal,
    owed: FinalOwed<'_, RunCtx<A>>,
    e: StoreError,
) -> CallOutcome {
    owed.paid();
    ctx.inner.live.settling.remove(stored.call_id());
    tracing::error!(call_id = %stored.call_id(), error = %e,
        "the state store failed while claiming a proposal's final record; a resumption writes it");
    let _ = ctx.state_failed.set(e.to_string());
    // A run ends; a direct session's call answers with the error (its caller decides).
    if ctx.direct.is_none() {
        ctx.cancel.cancel();
    }
    CallOutcome::err("the state store is unavailable; nothing ran")
}

/// A dialog proposal's entry in the book, closed however the call ends (its final record is
/// owed separately, see [`FinalOwed`]).
pub(in crate::run) struct OpenProposal<'a> {
    book: &'a crate::run::proposal::Book,
    session: &'a str,
    call_id: &'a str,
    /// This call opened the entry (so it closes it).
    opened: bool,
}

impl<'a> OpenProposal<'a> {
    fn new(book: &'a crate::run::proposal::Book, ids: &'a Arc<RecordIds>, call_id: &'a str) -> Self {
        let opened = book.open(ids, call_id, true);
        OpenProposal { book, session: ids.session_id.as_str(), call_id, opened }
    }
}

impl Drop for OpenProposal<'_> {
    fn drop(&mut self) {
        if self.opened {
            self.book.close(self.session, self.call_id);
        }
    }
}

/// How a dialog wait ended.
pub(in crate::run) enum Waited {
    /// A person decided, or the question ended undecided for this reason.
    Answer(Result<Heard, Undecided>),
    /// Nobody answered within the confirmation timeout.
    TimedOut,
}

impl Waited {
    /// What came of the wait, as the `agents.decision` attribute names it.
    pub(in crate::run) fn decision(&self) -> &'static str {
        match self {
            Waited::Answer(Ok(Heard { verdict: Verdict::Approve, .. })) => "approved",
            Waited::Answer(Ok(Heard { verdict: Verdict::Reject, .. })) => "rejected",
            Waited::Answer(Err(_)) | Waited::TimedOut => "undecided",
        }
    }
}

/// A dialog proposal as the ledger keeps it while its call waits: its entry in the book, the
/// final record it owes, and its row in the state store.
pub(in crate::run) struct Waiting<'a, A: Registry> {
    /// Closed however the call ends.
    _open: OpenProposal<'a>,
    owed: FinalOwed<'a, RunCtx<A>>,
    pub(in crate::run) stored: StoredProposal,
}

/// A dialog call registered for [`Runtime::decide`](crate::run::Runtime::decide) on this node,
/// deregistered when dropped (only this run's registration, not one another run made under
/// the same call id), so a late decision finds nothing.
pub(in crate::run) struct Registered<'a> {
    decisions: &'a std::sync::Mutex<std::collections::HashMap<String, LocalWaiter>>,
    call_id: &'a str,
    run_id: &'a str,
}

impl Drop for Registered<'_> {
    fn drop(&mut self) {
        let mut decisions = lock(self.decisions);
        if decisions.get(self.call_id).is_some_and(|d| d.run_id == self.run_id) {
            decisions.remove(self.call_id);
        }
    }
}

/// Registers `call_id` of the run `ctx` for a decision made on this node by the run's own
/// principal (an approval only when the proposal needs no second confirmation,
/// `acknowledge`); the receiver hears it. `None` (the registration undone) when the proposal's
/// session ended: registered first, then looked at, so a session that ends from here on drops
/// the registration, and one that ended before is seen now.
pub(in crate::run) fn register<'a, A>(
    ctx: &'a RunCtx<A>,
    call_id: &'a str,
    acknowledge: bool,
) -> Option<(Registered<'a>, oneshot::Receiver<Heard>)> {
    let (tx, rx) = oneshot::channel();
    let principal = &ctx.principal;
    lock(&ctx.inner.live.decisions).insert(
        call_id.to_owned(),
        LocalWaiter {
            user_id: principal.user_id.clone(),
            org_id: principal.org_id.clone(),
            role: principal.role.clone(),
            session_id: ctx.ids.session_id.to_string(),
            run_id: ctx.ids.run_id.to_string(),
            tx,
            acknowledge,
        },
    );
    let registered = Registered { decisions: &ctx.inner.live.decisions, call_id, run_id: ctx.ids.run_id.as_str() };
    ctx.inner.keep_watching();
    if ctx.inner.live.proposals.session_ended(ctx.ids.session_id.as_str(), call_id) {
        return None;
    }
    Some((registered, rx))
}

impl<'a, A: Registry, F: RecordOf> Proposal<'a, A, F> {
    /// Proposes the call to a person who decides while it waits: its entry in the book (one per
    /// call id), its `proposed` record, the final record it owes from then on, and its row in the
    /// state store, durable and decidable from any node sharing the store before the person is
    /// asked. `Err`: the call's answer, nothing ran.
    pub(in crate::run) async fn propose_waited(&self) -> Result<Waiting<'a, A>, CallOutcome> {
        let proposal = self;
        let Checked { ctx, call, .. } = proposal.checked;
        // The proposal's entry in the book, closed however this call ends; one per call id.
        let open = OpenProposal::new(&ctx.inner.live.proposals, &ctx.ids, call.id);
        if !open.opened {
            return Err(CallOutcome::err("a call with this id is already waiting for a decision; nothing ran"));
        }
        if !proposal.propose().await {
            return Err(CallOutcome::err("the audit log is unavailable; nothing ran"));
        }
        // From here the proposal owes exactly one final record, whatever happens to this future.
        let owed = proposal.owed(AuditStatus::Skipped);
        let record = proposal.store_record();
        if let Err(e) = ctx.inner.services.store.put_proposal(&record).await {
            let reason = format!("the state store could not keep the proposal ({e}); nothing ran");
            super::entry::withdraw_unkept(ctx, &record, &reason).await;
            proposal.end(owed, AuditStatus::Skipped, reason).await;
            return Err(CallOutcome::err("the state store is unavailable; nothing ran"));
        }
        let tokens = &ctx.inner.services.tokens;
        let sealed = [StoredVerdict::Approved, StoredVerdict::Rejected].map(|v| seal::decided(tokens, &record, v));
        let keys =
            RowKeys { call_id: record.call_id.clone(), org_id: record.org_id.clone(), user_id: record.user_id.clone() };
        let whole = proposal.needs_acknowledgement().then(|| Box::new(record));
        let stored = StoredProposal { store: ctx.inner.services.store.clone(), keys, sealed, whole, settled: false };
        // Its final record, once in the log, is marked written in the store (this call's
        // claim then holds no more; see `Runtime::resume_orphaned`).
        ctx.inner.live.settling.insert(stored.keys.call_id.clone());
        Ok(Waiting { _open: open, owed, stored })
    }
}

impl<'a, A: Registry, F: RecordOf> Confirmation<'a, A, F> {
    /// Ends a waited-on proposal with what its wait heard (`since` it began): a verdict heard
    /// here is recorded in the store, where the first one recorded holds; then a rejection is
    /// settled, an approval claimed and run, and a question that ended undecided withdrawn.
    pub(in crate::run) async fn settle_waited(
        self,
        waiting: Waiting<'a, A>,
        waited: Waited,
        since: std::time::Instant,
    ) -> CallOutcome {
        let Waiting { _open, owed, mut stored } = waiting;
        let ctx = self.proposal.checked.ctx;
        let waited = match stored.arbitrate(waited).await {
            Ok(waited) => waited,
            Err(Unsettled::Unclaimed(e)) => return unclaimed(ctx, &stored, owed, e),
            Err(Unsettled::Unrecorded(e)) => {
                let reason = format!("the decision could not be recorded in the state store ({e}); nothing ran");
                self.proposal.end(owed, AuditStatus::Skipped, reason).await;
                return CallOutcome::err("the state store is unavailable; nothing ran");
            }
        };
        crate::telemetry::confirmation_waited(self.proposal.checked.call.name, since.elapsed(), waited.decision());
        match waited {
            Waited::TimedOut => {
                self.proposal.end(owed, AuditStatus::Skipped, Undecided::TimedOut.reason()).await;
                ctx.confirmation_timed_out.store(true, std::sync::atomic::Ordering::Release);
                ctx.cancel.cancel();
                CallOutcome::err("The user did not confirm in time. The action did not run.")
            }
            Waited::Answer(Err(why)) => {
                self.proposal.end(owed, AuditStatus::Skipped, why.reason()).await;
                CallOutcome::err(match why {
                    Undecided::Stopped | Undecided::Shutdown => "The run was cancelled before this action ran.",
                    Undecided::TimedOut => "The user did not confirm in time. The action did not run.",
                    _ => "The user's confirmation did not arrive, so the action did not run. Do not retry it unasked.",
                })
            }
            Waited::Answer(Ok(Heard { verdict: Verdict::Reject, reason, .. })) => {
                self.rejected(stored, owed, reason).await
            }
            Waited::Answer(Ok(Heard { verdict: Verdict::Approve, .. })) => self.claim_approved(stored, owed).await,
        }
    }

    /// The person rejected: exactly one final record, this run's, unless a resumption on
    /// another node (which took this run for gone) claimed and wrote it.
    async fn rejected(
        self,
        mut stored: StoredProposal,
        owed: FinalOwed<'a, RunCtx<A>>,
        reason: Option<String>,
    ) -> CallOutcome {
        let proposal = self.proposal;
        let ctx = proposal.checked.ctx;
        stored.settled = true;
        match ctx.inner.services.store.claim_settlement(stored.call_id(), ctx.inner.settings.node_id.as_str()).await {
            Ok(false) => {
                owed.paid();
                ctx.inner.live.settling.remove(stored.call_id());
                return CallOutcome::err(REJECTED_MESSAGE);
            }
            Ok(true) => {}
            // Not claimed, not written: a resumption claims and writes it.
            Err(e) => return unclaimed(ctx, &stored, owed, e),
        }
        proposal.end(owed, AuditStatus::Rejected, declined(reason.as_deref())).await;
        CallOutcome::err(REJECTED_MESSAGE)
    }

    /// The person approved: exactly one node runs the call, the one whose claim the store
    /// grants.
    ///
    /// The approval is read back from the store and must carry the seal this node's key gives
    /// this run's own proposal approved: a verdict set in the store by someone without the key
    /// runs nothing, and the call ends `failed` with the reason.
    async fn claim_approved(self, mut stored: StoredProposal, owed: FinalOwed<'a, RunCtx<A>>) -> CallOutcome {
        let ctx = self.proposal.checked.ctx;
        let node = ctx.inner.settings.node_id.as_str();
        let read = ctx.inner.services.store.proposal(stored.call_id()).await;
        let sealed = match &read {
            Ok(Some(found)) => {
                found.verdict == Some(StoredVerdict::Approved)
                    && crate::token::constant_time_eq(found.proposal.seal.as_bytes(), stored.sealed[0].as_bytes())
            }
            // Not readable: the claim below fails the same way and is handled there.
            Ok(None) | Err(_) => true,
        };
        if !sealed {
            tracing::error!(call_id = %stored.call_id(), "an approval read back from the state store does not verify; nothing runs");
            if let Err(e) = stored.withdraw(seal::FORGED).await {
                return unclaimed(ctx, &stored, owed, e);
            }
            self.proposal.end(owed, AuditStatus::Failed, seal::FORGED).await;
            return CallOutcome::err("the approval in the state store does not verify; nothing ran");
        }
        let claim_seal = seal::claimed_after(&ctx.inner.services.tokens, &stored.sealed[0], node);
        match ctx.inner.services.store.claim_execution(stored.call_id(), node, &claim_seal).await {
            Ok(true) => {
                stored.settled = true;
                // Renewed while the call runs, should the run's slot lapse meanwhile.
                let (inner, id) = (&ctx.inner, stored.call_id());
                let _claim = ClaimHeartbeat::start(&inner.services.store, inner.settings.settle_lease, id, node);
                self.approved(owed).await
            }
            Ok(false) => {
                // Claimed by a resumption on another node, which writes its records.
                stored.settled = true;
                owed.paid();
                ctx.inner.live.settling.remove(stored.call_id());
                CallOutcome::err(
                    "The approved action is carried out by another server; its outcome is in the audit log.",
                )
            }
            Err(e) => {
                if let Err(e) = stored.withdraw("the execution could not be claimed").await {
                    return unclaimed(ctx, &stored, owed, e);
                }
                let reason = format!("the state store could not grant the execution ({e}); nothing ran");
                self.proposal.end(owed, AuditStatus::Skipped, reason).await;
                CallOutcome::err("the state store is unavailable; nothing ran")
            }
        }
    }

    /// The person approved: a token is minted for what they saw, the approval is audited,
    /// and the token is redeemed for what will run.
    async fn approved(self, owed: FinalOwed<'a, RunCtx<A>>) -> CallOutcome {
        let Confirmation { proposal, run, typed } = self;
        let Checked { ctx, call, spec, .. } = proposal.checked;
        let (session, turn, book) = (ctx.ids.session_id.as_str(), ctx.ids.run_id.as_str(), &ctx.inner.live.proposals);
        let token = match ctx.inner.services.tokens.mint(session, spec.name, proposal.args_hash, ctx.token_ttl()).await
        {
            Ok(token) => token,
            Err(e) => {
                // No token, no execution; the proposal still ends.
                owed.paid();
                let _ = proposal.record(AuditStatus::Skipped, format!("{e}; nothing ran")).await;
                return CallOutcome::err(format!("{e}; nothing ran"));
            }
        };
        let reason = match &proposal.card.acknowledge {
            Some(warning) => {
                format!(
                    "approved by the user a second time, acknowledging the warning ({warning}); token {}",
                    token.id()
                )
            }
            None => format!("approved by the user; token {}", token.id()),
        };
        let confirmed = book
            .transition(session, call.id, State::Confirmed, None, || {
                proposal.record_durable(AuditStatus::Confirmed, reason)
            })
            .await;
        let running = confirmed.ok().and_then(|()| book.claim_execution(session, call.id, turn));
        let Some(running) = running else {
            // The approval is not on record (or the proposal ended meanwhile), so nothing runs;
            // the proposal still ends.
            owed.paid();
            let reason = "the approval could not be recorded in the audit log; nothing ran";
            let _ = proposal.record(AuditStatus::Skipped, reason).await;
            return CallOutcome::err("the audit log is unavailable; nothing ran");
        };
        if let Err(e) = ctx.inner.services.tokens.redeem(&token, session, spec.name, proposal.args_hash).await {
            running.abort();
            owed.paid();
            let _ = proposal.record(AuditStatus::Denied, format!("confirmation token refused: {e}")).await;
            return CallOutcome::err(format!("{e}; nothing ran"));
        }
        running.commit(None);
        execute_approved(proposal.checked, run, typed, &token, owed).await
    }
}
