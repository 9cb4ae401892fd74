//! An action call (or a read of a tool that reaches out, carrying a value copied from a tool
//! result): a person decides on exactly these arguments before it runs (dialog or
//! conversational mode, or a direct session's confirmer); the approval is a token bound to
//! the arguments, redeemed by the ledger, and the permission is checked again before the tool
//! runs ([`execute`](super::execute)). How the person is asked is the run's business
//! ([`Ask`]): the gate hands the checked call over and knows no channel.

use super::checked::Checked;
use super::execute::ActionFn;
use crate::run::call::CallOutcome;
pub(in crate::run) use crate::run::decision::Card;
use crate::run::record::RecordOf;
use crate::run::scope::Run;
use crate::token::ConfirmationToken;
use crate::tool::ErasedArgs;
use agents_core::SharedValue;

/// A run whose action calls a person decides on: it chooses the confirmation channel once per
/// call and hands the call to it (`confirm`, for a run's context).
pub(in crate::run) trait Ask: Run {
    /// Asks about `checked` (its arguments' MAC `args_hash`, the arguments as the tool
    /// receives them `raw`, what its card says beyond the call `card`) and ends it, running `run` only on
    /// an approval bound to exactly these arguments; `approved`: the approval the turn holds.
    #[allow(clippy::too_many_arguments)]
    fn ask<'a, F: RecordOf + Send + Sync + 'a>(
        checked: Checked<'a, Self, F>,
        args_hash: &'a str,
        approved: Option<(ConfirmationToken, String, String)>,
        raw: SharedValue,
        run: ActionFn,
        typed: ErasedArgs,
        card: Card,
    ) -> impl Future<Output = CallOutcome> + Send + 'a;

    /// Why the principal the run acts for no longer holds, when the runtime reads it again
    /// (see [`crate::authority`]) and it changed; the proposals made under the old authority
    /// have then ended. `None`: it still holds.
    fn authority_changed(&self) -> impl Future<Output = Option<String>> + Send + '_;
}

/// Boxed by the gate (like refusals), so the gate's future carries only what a read call needs.
/// The run's own future, not one around it: a future wrapping it would keep these arguments
/// beside it for the whole of the wait for a person.
pub(in crate::run) fn call<'a, R: Ask>(
    checked: Checked<'a, R, impl RecordOf + Send + Sync + 'a>,
    args_hash: &'a str,
    approved: Option<(ConfirmationToken, String, String)>,
    raw: SharedValue,
    run: ActionFn,
    typed: ErasedArgs,
    card: Card,
) -> impl Future<Output = CallOutcome> + Send + 'a {
    R::ask(checked, args_hash, approved, raw, run, typed, card)
}
