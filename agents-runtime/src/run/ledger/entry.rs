//! One proposed call as the ledger holds it ([`Confirmation`]: the call past the gate's checks,
//! what the person is asked about, and what runs on an approval) and the records it writes:
//! `proposed`, the final record it owes from then on, and the end of a proposal that does not
//! run.

use crate::audit::AuditStatus;
use crate::events::Event;
use crate::run::context::RunCtx;
use crate::run::decision::{Card, ConfirmRequest, DeciderView, Undecided};
use crate::run::gate::checked::Checked;
use crate::run::gate::execute::ActionFn;
use crate::run::owed::FinalOwed;
use crate::run::pending::{detail_of, seal};
use crate::run::place::{self, TreePlace};
use crate::run::proposal::{Refused, State};
use crate::run::record::RecordOf;
use crate::store::{ProposalRecord, Store, StoreError};
use crate::tool::{ErasedArgs, Registry};
use agents_core::SharedValue;
use std::time::Duration;

/// The node that claims a call it withdrew: nobody may run it any more.
pub(in crate::run) const WITHDRAWN: &str = "withdrawn";

/// Withdraws a stored proposal whose call ended without running it (timeout, stop, a dropped
/// caller), and claims its final record for the call (which writes it): recorded as rejected
/// with `reason` when still undecided; when a decision got there first, its execution and its
/// record are claimed for nobody else, so no node (nor a resumption) runs or records it later.
pub(in crate::run) async fn withdraw(store: &dyn Store, call_id: &str, reason: &str) -> Result<(), StoreError> {
    if store.close_undecided(call_id, WITHDRAWN, reason).await? {
        return Ok(());
    }
    // Claimed for nobody: the row keeps no seal, so nothing can ever carry it out.
    store.claim_execution(call_id, WITHDRAWN, "").await?;
    store.claim_settlement(call_id, WITHDRAWN).await.map(drop)
}

/// How many times, and how far apart, a withdrawal of a proposal the store may hold is tried
/// again in the background when the store cannot be asked at once (a minute in all).
const WITHDRAW_RETRIES: u32 = 30;
const WITHDRAW_RETRY_EVERY: Duration = Duration::from_secs(2);

/// A proposal the store answered with an error may be stored all the same (the insert went
/// through and its reply was lost, and reading it back failed too): it is withdrawn (ended,
/// its final record claimed), so it is neither listed for a decision nor run once approved
/// behind the `skipped` record the call writes next, which then marks the claim written. A
/// store that cannot be asked now is asked again in the background ([`WITHDRAW_RETRIES`] times,
/// [`WITHDRAW_RETRY_EVERY`] apart); a claim withdrawn that late is marked written by the
/// resumption that takes it over, once it found the `skipped` record in the log.
pub(super) async fn withdraw_unkept<A: Registry>(ctx: &RunCtx<A>, record: &ProposalRecord, reason: &str) {
    let Err(e) = withdraw(&*ctx.inner.services.store, &record.call_id, reason).await else {
        ctx.inner.live.settling.insert(record.call_id.clone());
        return;
    };
    tracing::error!(call_id = %record.call_id, error = %e,
        "a proposal the state store may hold could not be withdrawn; its `skipped` record is written all the same, \
         and the withdrawal is tried again in the background");
    let Ok(handle) = tokio::runtime::Handle::try_current() else { return };
    let (store, record, reason) = (ctx.inner.services.store.clone(), record.clone(), reason.to_owned());
    handle.spawn(async move {
        for _ in 0..WITHDRAW_RETRIES {
            tokio::time::sleep(WITHDRAW_RETRY_EVERY).await;
            match withdraw(&*store, &record.call_id, &reason).await {
                Ok(()) => return,
                Err(e) => tracing::warn!(call_id = %record.call_id, error = %e, "the withdrawal failed again"),
            }
        }
        tracing::error!(call_id = %record.call_id, "a proposal the state store may hold could not be withdrawn");
    });
}

/// One action call past the gate's checks, waiting for a person; a [`Channel`] asks about it
/// and ends it.
pub(in crate::run) struct Confirmation<'a, A, F> {
    pub(in crate::run) proposal: Proposal<'a, A, F>,
    pub(in crate::run) run: ActionFn,
    /// Held by value only (the typed arguments are `Send`, not `Sync`).
    pub(in crate::run) typed: ErasedArgs,
}

/// What a person is asked about: the call, the MAC of its arguments and their description.
pub(in crate::run) struct Proposal<'a, A, F> {
    pub(in crate::run) checked: Checked<'a, RunCtx<A>, F>,
    pub(in crate::run) args_hash: &'a str,
    /// The arguments as the tool receives them (kept in the store for a resumption).
    raw: SharedValue,
    /// A normalized description of exactly what would run.
    pub(in crate::run) description: String,
    /// Why a person is asked, beyond the tool's tier (see [`ConfirmRequest::why`]), and
    /// where each argument value came from.
    pub(in crate::run) card: Card,
}

impl<'a, A: Registry, F: RecordOf> Proposal<'a, A, F> {
    pub(in crate::run) fn title(&self) -> &'static str {
        self.checked.spec.title.unwrap_or(self.checked.spec.name)
    }

    pub(in crate::run) fn confirm_required(&self) -> Event {
        let Checked { ctx, call, spec, redacted, .. } = &self.checked;
        Event::ConfirmRequired {
            run_id: ctx.ids.run_id.to_string(),
            call_id: call.id.to_owned(),
            tool: spec.name.into(),
            title: self.title().into(),
            args: redacted.as_value().clone(),
            risk: spec.risk,
            why: self.card.why.clone(),
            origins: self.card.origins.clone(),
        }
    }

    /// Writes the record `status` of this call with `reason`; whether the log took it.
    pub(super) async fn record(&self, status: AuditStatus, reason: impl Into<String>) -> bool {
        let Checked { ctx, base, redacted, .. } = &self.checked;
        ctx.audit(base(status, redacted.clone()).reason(reason)).await.is_ok()
    }

    /// Writes the record `status` of this call with `reason`, with the log's answer.
    pub(super) async fn record_durable(
        &self,
        status: AuditStatus,
        reason: String,
    ) -> Result<(), crate::audit::AuditError> {
        let Checked { ctx, base, redacted, .. } = &self.checked;
        ctx.audit(base(status, redacted.clone()).reason(reason)).await
    }

    /// Ends a call no person can be asked about (a direct session that cannot ask) with its
    /// one record, `skipped` with `reason`, before anything is proposed; whether the log took it.
    pub(in crate::run) async fn skip_unasked(&self, reason: &str) -> bool {
        self.record(AuditStatus::Skipped, reason).await
    }

    /// Writes this call's `proposed` record (its reason: where each argument value came from,
    /// without the values); whether the log took it.
    pub(super) async fn propose(&self) -> bool {
        let Checked { ctx, base, redacted, .. } = &self.checked;
        let mut fields = base(AuditStatus::Proposed, redacted.clone());
        if let Some(origins) = &self.card.origins {
            fields = fields.reason(origins.describe());
        }
        ctx.audit(fields).await.is_ok()
    }

    /// The final record a proposal owes from now on, `status` unless written otherwise.
    pub(super) fn owed(&self, status: AuditStatus) -> FinalOwed<'a, RunCtx<A>> {
        FinalOwed::new(self.checked.ctx, (self.checked.base)(status, self.checked.redacted.clone()))
    }

    /// Ends the proposal without running it: the transition (its record first), and a
    /// `tool_result` event. The proposal ends even when the log refuses the record.
    pub(super) async fn end(&self, owed: FinalOwed<'a, RunCtx<A>>, status: AuditStatus, reason: impl Into<String>) {
        owed.paid();
        let Checked { ctx, call, .. } = &self.checked;
        let reason = reason.into();
        let to = match Undecided::of_reason(&reason) {
            _ if status == AuditStatus::Rejected => State::Rejected,
            Some(Undecided::TimedOut) => State::Expired,
            _ => State::Cancelled,
        };
        let record = || self.record_durable(status, reason.clone());
        let session = ctx.ids.session_id.as_str();
        if let Err(Refused::NotAllowed) = ctx.inner.live.proposals.transition(session, call.id, to, None, record).await
        {
            // Not open in the book (a channel that keeps none): the record is still owed.
            let _ = self.record(status, reason.clone()).await;
        }
        let shown = if status == AuditStatus::Rejected { AuditStatus::Rejected } else { AuditStatus::Skipped };
        self.checked.ctx.emit_result(self.checked.call.id, self.checked.spec.name, shown, None);
    }

    /// The proposal as the state store keeps it.
    pub(super) fn store_record(&self) -> ProposalRecord {
        let Checked { ctx, call, spec, redacted, .. } = &self.checked;
        let slot = ctx.slot.get().map(|s| s.0.as_str());
        let mut record = ProposalRecord {
            call_id: call.id.to_owned(),
            run_id: ctx.ids.run_id.to_string(),
            session_id: ctx.ids.session_id.to_string(),
            org_id: ctx.principal.org_id.clone(),
            user_id: ctx.principal.user_id.clone(),
            tool: spec.name.into(),
            title: self.title().into(),
            args: redacted.as_value().clone(),
            args_mac: self.args_hash.to_owned(),
            detail: detail_of(
                &ctx.principal,
                A::SPEC.name,
                A::MANIFEST_SHA256,
                spec.risk.as_str(),
                &self.raw,
                slot,
                ctx.ids.request_id.as_str(),
                &self.card,
            ),
            seal: String::new(),
        };
        let tokens = &ctx.inner.services.tokens;
        if let (Some(node), Some(tree)) = (&ctx.ids.node, ctx.tree.get())
            && let Some(detail) = record.detail.as_object_mut()
        {
            let place = TreePlace {
                node: node.clone(),
                composite: tree.composite.0.to_owned(),
                composite_sha256: tree.composite.1.to_owned(),
            };
            detail.insert(place::NODE.to_owned(), place.to_detail(tokens, &record.call_id));
        }
        record.seal = seal::proposed(tokens, &record);
        record
    }

    /// What the confirmer shows the person.
    pub(in crate::run) fn request(&self) -> ConfirmRequest {
        let Checked { call, spec, redacted, .. } = &self.checked;
        ConfirmRequest {
            call_id: call.id.to_owned(),
            caller_call_id: call.given_id.to_owned(),
            tool: spec.name.into(),
            title: self.title().into(),
            args: redacted.as_value().clone(),
            decider_args: DeciderView::new(self.raw.as_value().clone()),
            risk: spec.risk.as_str().into(),
            description: self.description.clone(),
            why: self.card.why.clone(),
            origins: self.card.origins.clone(),
            second_confirmation: None,
        }
    }

    /// Whether the application's policy asks a second confirmation of this proposal.
    pub(in crate::run) fn needs_acknowledgement(&self) -> bool {
        self.card.acknowledge.is_some()
    }
}

impl<'a, A: Registry, F: RecordOf> Confirmation<'a, A, F> {
    pub(in crate::run) fn new(
        checked: Checked<'a, RunCtx<A>, F>,
        args_hash: &'a str,
        raw: SharedValue,
        run: ActionFn,
        typed: ErasedArgs,
        mut card: Card,
    ) -> Self {
        let spec = checked.spec;
        card.acknowledge = checked.ctx.inner.settings.untrusted.acknowledgement(spec.name, card.origins.as_ref());
        let mut description = format!(
            "{}: `{}` with {}",
            spec.title.unwrap_or(spec.name),
            spec.name,
            agents_core::canonical::to_string(&checked.redacted)
        );
        if let Some(why) = &card.why {
            description.push_str(&format!(" (needs confirmation: {why})"));
        }
        Confirmation { proposal: Proposal { checked, args_hash, raw, description, card }, run, typed }
    }
}
