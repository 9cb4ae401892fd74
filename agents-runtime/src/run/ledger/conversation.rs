//! The transitions of a conversational proposal made in a turn: proposed (its record, its
//! row in the state store, the older undecided proposal of the session superseded, its entry in
//! the book), and carried out by the turn an approval came in (the execution claimed in the
//! book and in the store, once, whatever node or channel answered; the token redeemed for the
//! sealed row's exact arguments; the call run; its final record).

use super::{ClaimHeartbeat, Confirmation, Proposal, claim_in_store, end_or_close};
use crate::audit::AuditStatus;
use crate::events::Event;
use crate::run::context::CallOutcome;
use crate::run::gate::checked::Checked;
use crate::run::gate::execute::execute_approved;
use crate::run::pending::seal;
use crate::run::proposal::State;
use crate::run::record::{RecordFields, RecordOf};
use crate::run::sync::lock;
use crate::token::ConfirmationToken;
use crate::tool::Registry;
use serde_json::Value;

impl<'a, A: Registry, F: RecordOf> Proposal<'a, A, F> {
    /// Proposes the call to the user's next message: its `proposed` record, its row in the
    /// state store (listed for the user on every node sharing the store, and after a restart;
    /// decided there once, whatever node or channel answers), the end of an older undecided
    /// proposal of the session (`superseded`), and its entry in the book. `Err`: the call's
    /// answer, nothing ran.
    pub(in crate::run) async fn propose_to_session(&self) -> Result<(), CallOutcome> {
        let Checked { ctx, call, .. } = self.checked;
        let session = ctx.ids.session_id.as_str();
        let proposal = self;
        if !proposal.propose().await {
            return Err(CallOutcome::err("the audit log is unavailable; nothing ran"));
        }
        // Durable before the user is asked: listed for them on every node sharing the store
        // (and after a restart), and decided there once, whatever node or channel answers.
        let mut record = proposal.store_record();
        if let Some(detail) = record.detail.as_object_mut() {
            detail.insert(crate::run::pending::detail::CONVERSATIONAL.into(), Value::Bool(true));
        }
        if let Err(e) = ctx.inner.services.store.put_proposal(&record).await {
            let reason = format!("the state store could not keep the proposal ({e}); nothing ran");
            super::entry::withdraw_unkept(ctx, &record, &reason).await;
            let _ = proposal.record(AuditStatus::Skipped, reason).await;
            return Err(CallOutcome::err("the state store is unavailable; nothing ran"));
        }
        // An older undecided proposal in the session (under any call id) is replaced by this one.
        for old in ctx.inner.live.proposals.proposed_in(session) {
            let reason = "superseded: a newer proposal replaced this one before the user decided; nothing ran";
            let record = RecordFields { call_id: Some(old.as_str().into()), ..RecordFields::new(AuditStatus::Skipped) }
                .reason(reason);
            let _ = end_or_close(ctx, &old, State::Superseded, record, reason).await;
            lock(&ctx.delta).cleared.push(old);
        }
        ctx.inner.live.proposals.open(&ctx.ids, call.id, false);
        Ok(())
    }
}

impl<'a, A: Registry, F: RecordOf> Confirmation<'a, A, F> {
    /// Conversational mode with the session's approval of `proposal_call` for this tool: the
    /// token is redeemed for these exact arguments and the action runs, once.
    pub(in crate::run) async fn with_approval(self, token: ConfirmationToken, proposal_call: String) -> CallOutcome {
        let Confirmation { proposal, run, typed } = self;
        let Checked { ctx, call, spec, .. } = proposal.checked;
        let session = ctx.ids.session_id.as_str();
        // The approved proposal moves to `executing` once: a second use finds it gone.
        let turn = ctx.ids.run_id.as_str();
        let Some(running) = ctx.inner.live.proposals.claim_execution(session, &proposal_call, turn) else {
            let reason = "the approval is no longer valid (used, expired or ended with its turn); nothing ran";
            let _ = proposal.record(AuditStatus::Denied, reason).await;
            return CallOutcome::err(format!("{reason}. Propose the action again so the user can confirm it."));
        };
        // Across nodes the state store decides: the approval is recorded there and
        // the execution claimed, once, whatever node or channel answered the proposal.
        let stored = match claim_in_store(ctx, &proposal_call).await {
            Ok(stored) => stored,
            Err(why) => {
                running.abort();
                let _ = proposal.record(AuditStatus::Denied, why.clone()).await;
                return CallOutcome::err(format!(
                    "{why}. Nothing ran here. Tell the user; propose the action again only if they ask for it."
                ));
            }
        };
        // The proposing turn's slot is gone: the claim is kept alive by renewing it until
        // the final record is written, however long the call runs.
        let (inner, node) = (&ctx.inner, ctx.inner.settings.node_id.as_str());
        let _claim = ClaimHeartbeat::start(&inner.services.store, inner.settings.settle_lease, &proposal_call, node);
        if let Err(e) = ctx.inner.services.tokens.redeem(&token, session, spec.name, proposal.args_hash).await {
            running.abort();
            let _ = proposal.record(AuditStatus::Denied, format!("confirmation token refused: {e}")).await;
            ctx.emit(|| Event::ToolDenied {
                run_id: ctx.ids.run_id.to_string(),
                call_id: call.id.to_owned(),
                tool: spec.name.into(),
                reason: e.to_string(),
            });
            return CallOutcome::err(format!(
                "Permission problem: {e}. Nothing ran. The user's confirmation belonged to a different action; propose this one so they can confirm it."
            ));
        }
        // What runs is what the sealed row holds: its tool, and arguments with its MAC.
        if stored.tool != spec.name
            || !crate::token::constant_time_eq(stored.args_mac.as_bytes(), proposal.args_hash.as_bytes())
        {
            running.abort();
            let _ = proposal.record(AuditStatus::Denied, seal::FORGED).await;
            return CallOutcome::err(format!("{}. Tell the user.", seal::FORGED));
        }
        running.commit(None);
        let owed = proposal.owed(AuditStatus::Failed);
        let out = execute_approved(proposal.checked, run, typed, &token, owed).await;
        let end = if out.executed { State::Executed } else { State::Failed };
        // The executed or failed record is written; the proposal's life is over.
        if let Some(done) = ctx.inner.live.proposals.claim(session, &proposal_call, end) {
            done.commit(None);
        }
        out
    }
}
