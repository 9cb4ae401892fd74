//! The dialog channel: the proposal is put in the state store and the call waits for a
//! decision, made through [`Runtime::decide`](crate::run::Runtime::decide) on this node,
//! [`Runtime::decide_async`](crate::run::Runtime::decide_async) on any node sharing the store
//! (the HTTP decisions route), or the answer of a [`Confirmer`] that asks (the runtime's, or a
//! direct session's such as MCP elicitation), whichever the store records first. The ledger
//! proposes the call, records the verdict and settles it (`ledger::dialog`); the channel asks
//! and waits.

use super::{Channel, Confirmation};
use crate::events::{Event, RunPhase};
use crate::run::context::CallOutcome;
use crate::run::decision::{ConfirmAnswer, Confirmer, Undecided, Verdict};
use crate::run::gate::checked::Checked;
use crate::run::ledger::{Proposal, StoredProposal, Waited, register};
use crate::run::pending::Heard;
use crate::run::record::RecordOf;
use crate::run::sync::{first_of, unless_cancelled};
use crate::tool::Registry;
use std::sync::Arc;
use std::time::Duration;

/// The dialog channel, with the [`Confirmer`] that asks beside the decisions API, if any.
pub(in crate::run) struct Dialog {
    pub(in crate::run) confirmer: Option<Arc<dyn Confirmer>>,
}

impl Channel for Dialog {
    fn decide<'a, A: Registry, F: RecordOf + 'a>(
        self,
        confirmation: Confirmation<'a, A, F>,
    ) -> impl Future<Output = CallOutcome> + 'a {
        dialog(confirmation, self.confirmer)
    }
}

/// Dialog mode (and a direct session's confirmer): the ledger proposes the call, the person is
/// asked, and the call waits for [`Runtime::decide`](crate::run::Runtime::decide) or the
/// confirmer, whichever answers first, within the confirmation timeout; the ledger settles
/// what the wait heard.
#[allow(
    clippy::manual_async_fn,
    reason = "as an `async fn` its confirmation would be kept beside the parts it is taken apart into, for the whole of the wait"
)]
fn dialog<'a, A: Registry, F: RecordOf + 'a>(
    confirmation: Confirmation<'a, A, F>,
    confirmer: Option<Arc<dyn Confirmer>>,
) -> impl Future<Output = CallOutcome> + 'a {
    let Confirmation { proposal, run, typed } = confirmation;
    async move {
        // Proposing and settling are boxed: only the wait's own state is held while the person
        // decides, not the largest of the three (settling runs the tool).
        let waiting = match Box::pin(proposal.propose_waited()).await {
            Ok(waiting) => waiting,
            Err(refused) => return refused,
        };
        let since = std::time::Instant::now();
        let waited = wait(&proposal, confirmer, &waiting.stored).await;
        Box::pin(Confirmation { proposal, run, typed }.settle_waited(waiting, waited, since)).await
    }
}

/// Registers the call for [`Runtime::decide`](crate::run::Runtime::decide) (deregistered on
/// every exit, so a late decision finds nothing) and waits for it or the confirmer.
async fn wait<A: Registry, F: RecordOf>(
    proposal: &Proposal<'_, A, F>,
    confirmer: Option<Arc<dyn Confirmer>>,
    stored: &StoredProposal,
) -> Waited {
    let Checked { ctx, call, .. } = &proposal.checked;
    // Boxed: without a confirmer (the service's runs: a person decides through the API) the
    // wait holds a pointer instead of room for the asking, twice over (the block that takes
    // it, and the one that awaits it).
    let asked = confirmer.map(|c| Box::pin(ask(proposal, c, stored)));
    let registered = register(ctx, call.id, proposal.needs_acknowledgement());
    let Some((_registered, rx)) = registered else { return Waited::Answer(Err(Undecided::Stopped)) };
    ctx.emit(|| proposal.confirm_required());
    ctx.emit(|| Event::Status { run_id: ctx.ids.run_id.to_string(), status: RunPhase::WaitingForConfirmation });
    let wait = Duration::from_secs(ctx.limits.confirm_timeout_secs);
    let decision = async move {
        // A confirmer without an answer leaves the decision to `decide` or the timeout.
        let from_confirmer = async move {
            if let Some(asked) = asked {
                match asked.await {
                    ConfirmAnswer::Decided(verdict) => {
                        return Ok(Heard { verdict, recorded: false, reason: None });
                    }
                    ConfirmAnswer::Undecided(why) => return Err(why),
                    ConfirmAnswer::NoAnswer => {}
                }
            }
            std::future::pending().await
        };
        // A decision made here, or through another node (or runtime) sharing the store and
        // heard by the runtime's watch (`ledger::watch`). The sender goes only with the
        // registration, which lives as long as this wait.
        let here = async move { rx.await.map_err(|_| Undecided::Stopped) };
        first_of(from_confirmer, here).await
    };
    match unless_cancelled(&ctx.cancel, tokio::time::timeout(wait, decision)).await {
        Some(Ok(answer)) => Waited::Answer(answer),
        Some(Err(_)) => Waited::TimedOut,
        None => Waited::Answer(Err(ctx.stop_reason.get().copied().unwrap_or(Undecided::Stopped))),
    }
}

/// Asks `confirmer` about the proposal: once, or, for a proposal that needs a second
/// confirmation, twice: its first approval is recorded (`first_approval`) and only its answer
/// to the second request, which carries the warning to acknowledge, decides.
async fn ask<A: Registry, F: RecordOf>(
    proposal: &Proposal<'_, A, F>,
    confirmer: Arc<dyn Confirmer>,
    stored: &StoredProposal,
) -> ConfirmAnswer {
    let first = confirmer.confirm(proposal.request()).await;
    if !proposal.needs_acknowledgement() || first != ConfirmAnswer::Decided(Verdict::Approve) {
        return first;
    }
    let Some(row) = stored.acknowledged_row() else {
        // Kept for every proposal that needs the acknowledgement; without it nothing runs.
        return ConfirmAnswer::NoAnswer;
    };
    let Some(ack) = proposal.first_approval(row).await else {
        // The first approval is not on record: nothing more is asked, nothing runs here.
        return ConfirmAnswer::NoAnswer;
    };
    let Checked { ctx, call, .. } = &proposal.checked;
    let (run_id, call_id, warning) = (ctx.ids.run_id.to_string(), call.id.to_owned(), ack.warning.clone());
    ctx.emit(|| Event::AcknowledgementRequired { run_id, call_id, warning });
    let mut second = proposal.request();
    second.second_confirmation = Some(ack);
    confirmer.confirm(second).await
}
