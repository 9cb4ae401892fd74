//! An action call (or a read of a tool that reaches out, carrying a value copied from a tool
//! result): a person decides on exactly these arguments before it runs (dialog or
//! conversational mode, or a direct session's confirmer); the approval is a token bound to
//! the arguments, redeemed by the channel, and the permission is checked again before the tool
//! runs ([`execute`](super::execute)).

use super::checked::Checked;
use super::execute::ActionFn;
use crate::run::confirm::{Channel, Confirmation, Conversational, Dialog, Unavailable};
use crate::run::context::CallOutcome;
use crate::run::decision::{ConfirmMode, DirectConfirm};
use crate::run::record::RecordOf;
use crate::token::ConfirmationToken;
use crate::tool::{ErasedArgs, Registry};

/// Boxed by the gate (like refusals), so the gate's future carries only what a read call needs.
pub(super) async fn call<A: Registry>(
    checked: Checked<'_, A, impl RecordOf>,
    args_hash: &str,
    approved: Option<(ConfirmationToken, String, String)>,
    raw: serde_json::Value,
    run: ActionFn,
    typed: ErasedArgs,
    why: Option<String>,
) -> CallOutcome {
    let ctx = checked.ctx;
    let confirmation = Confirmation::new(checked, args_hash, raw, run, typed, why);
    // The channel, chosen once for the call.
    match &ctx.direct {
        None if ctx.inner.settings.confirm_mode == ConfirmMode::Conversational => {
            Conversational { approved }.decide(confirmation).await
        }
        Some(DirectConfirm::Unavailable) => Unavailable.decide(confirmation).await,
        // A direct session's confirmer (MCP elicitation) asks beside the decisions API.
        Some(DirectConfirm::Ask(confirmer)) => Dialog { confirmer: Some(confirmer.clone()) }.decide(confirmation).await,
        None => Dialog { confirmer: ctx.inner.services.confirmer.clone() }.decide(confirmation).await,
    }
}
