//! How a person decides on an action: [`Confirmation`], one action call past the gate's
//! checks, and the [`Channel`]s that ask about it, one per file: the dialog (a UI deciding
//! through [`Runtime::decide`](super::Runtime::decide) or, from any node sharing the store,
//! [`Runtime::decide_async`](super::Runtime::decide_async), as the HTTP decisions route does;
//! and a [`Confirmer`] asking, the runtime's or a direct session's such as MCP elicitation),
//! the conversational mode (the user's next message, classified) and a direct session that
//! cannot ask. The gate's action tier chooses the channel once per call. The vocabulary they
//! speak (modes, verdicts, the [`Confirmer`]) is in `decision`.

mod conversational;
mod dialog;
mod unavailable;

pub(super) use conversational::Conversational;
pub(super) use dialog::Dialog;
pub(super) use unavailable::Unavailable;

pub(super) use super::ledger::Confirmation;

use super::context::{CallOutcome, RunCtx};
use super::decision::{ConfirmMode, DirectConfirm};
use super::gate::action::{Ask, Card};
use super::gate::checked::Checked;
use super::gate::execute::ActionFn;
use super::record::RecordOf;
use crate::token::ConfirmationToken;
use crate::tool::{ErasedArgs, Registry};
use tokio_util::either::Either;

/// A way of asking a person about one action call: it asks, waits for the answer, and
/// carries the proposal to its one final record, running the call only on an approval bound
/// to its exact arguments. The gate's action tier chooses one per call (`gate::action`).
pub(super) trait Channel {
    /// Asks about `confirmation` and ends it: the model's answer for the call.
    fn decide<'a, A: Registry, F: RecordOf + 'a>(
        self,
        confirmation: Confirmation<'a, A, F>,
    ) -> impl Future<Output = CallOutcome> + 'a;
}

/// A run's action calls are asked about on the channel its settings and its kind choose, once
/// per call: a direct session's (a confirmer, or none), the conversational mode, or the dialog
/// (with the runtime's confirmer, if any).
impl<A: Registry> Ask for RunCtx<A> {
    fn ask<'a, F: RecordOf + Send + Sync + 'a>(
        checked: Checked<'a, Self, F>,
        args_hash: &'a str,
        approved: Option<(ConfirmationToken, String, String)>,
        raw: agents_core::SharedValue,
        run: ActionFn,
        typed: ErasedArgs,
        card: Card,
    ) -> impl Future<Output = CallOutcome> + Send + 'a {
        let ctx = checked.ctx;
        let confirmation = Confirmation::new(checked, args_hash, raw, run, typed, card);
        // The channel's own future, not one around it: a future wrapping it would keep the
        // call's parts (moved into the confirmation) beside it for the whole of the wait.
        match &ctx.direct {
            // Boxed: a conversational proposal ends the turn instead of waiting in it, and
            // unboxed its state would size every dialog call's future, which waits.
            None if ctx.inner.settings.confirm_mode == ConfirmMode::Conversational => {
                Either::Left(Either::Left(Box::pin(Conversational { approved }.decide(confirmation))))
            }
            Some(DirectConfirm::Unavailable) => Either::Left(Either::Right(Unavailable.decide(confirmation))),
            // A direct session's confirmer (MCP elicitation) asks beside the decisions API.
            Some(DirectConfirm::Ask(confirmer)) => {
                Either::Right(Dialog { confirmer: Some(confirmer.clone()) }.decide(confirmation))
            }
            None => Either::Right(Dialog { confirmer: ctx.inner.services.confirmer.clone() }.decide(confirmation)),
        }
    }

    async fn authority_changed(&self) -> Option<String> {
        let reason = self.inner.authority_changed(&self.principal).await?;
        self.inner.end_under_authority(&self.principal, &reason).await;
        Some(reason)
    }
}
