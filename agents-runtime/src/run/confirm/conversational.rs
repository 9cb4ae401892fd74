//! The conversational channel: the turn ends with a proposal kept in the session, and the
//! user's next message (classified, on any node sharing the store) or the decisions API
//! answers it; the call the model makes again after an approval redeems its token. The ledger
//! proposes the call, ends what it replaces and carries an approval out
//! (`ledger::conversation`); the channel keeps the proposal in the turn's session.

use super::{Channel, Confirmation};
use crate::run::context::CallOutcome;
use crate::run::conversation::PendingProposal;
use crate::run::gate::checked::Checked;
use crate::run::record::RecordOf;
use crate::run::sync::lock;
use crate::token::ConfirmationToken;
use crate::tool::Registry;
use serde_json::json;

/// The conversational channel, with the approval the user's answer granted in this turn, if
/// any (a token for the exact proposal, its tool and the proposal's call id).
pub(in crate::run) struct Conversational {
    pub(in crate::run) approved: Option<(ConfirmationToken, String, String)>,
}

impl Channel for Conversational {
    fn decide<'a, A: Registry, F: RecordOf + 'a>(
        self,
        confirmation: Confirmation<'a, A, F>,
    ) -> impl Future<Output = CallOutcome> + 'a {
        confirmation.conversational(self.approved)
    }
}

impl<'a, A: Registry, F: RecordOf> Confirmation<'a, A, F> {
    /// Conversational mode. With the session's approval for this tool, the token is redeemed
    /// for these exact arguments and the action runs; otherwise the proposal is audited, kept
    /// in the session for the user's next message, and nothing runs.
    async fn conversational(self, approved: Option<(ConfirmationToken, String, String)>) -> CallOutcome {
        if let Some((token, _, proposal_call)) = approved.filter(|(_, t, _)| t == self.proposal.checked.spec.name) {
            return self.with_approval(token, proposal_call).await;
        }
        let Confirmation { proposal, .. } = self;
        let Checked { ctx, call, spec, .. } = proposal.checked;
        if let Err(refused) = proposal.propose_to_session().await {
            return refused;
        }
        ctx.emit(|| proposal.confirm_required());
        lock(&ctx.delta).proposed = Some(Box::new(PendingProposal {
            call_id: call.id.to_owned(),
            run_id: ctx.ids.run_id.to_string(),
            tool: spec.name.into(),
            title: proposal.title().into(),
            args: proposal.checked.redacted.clone(),
            args_hash: proposal.args_hash.to_owned(),
            tier: spec.tier,
        }));
        *lock(&ctx.awaiting) = true;
        CallOutcome::ok(
            json!({"status": "confirmation_required", "description": proposal.description, "message": "Nothing ran. Show the user this proposal and ask them to confirm or cancel."}),
        )
    }
}
