//! What a person is asked and what they answer: how an action waits for a person
//! ([`ConfirmMode`]), the decision ([`Verdict`]), why a question ended undecided
//! ([`Undecided`]), the card ([`ConfirmRequest`], [`DeciderView`]), the [`Confirmer`] a channel
//! asks through, and why a decision was not accepted ([`DecisionError`]).

use crate::BoxFuture;
use serde_json::Value;
use std::sync::Arc;

/// What the model is told after a person declines.
pub const REJECTED_MESSAGE: &str =
    "The user declined this action. Do not retry it; ask how they would like to proceed.";

/// How an action waits for a person.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum ConfirmMode {
    /// The run pauses and a UI calls [`Runtime::decide`](super::Runtime::decide) (a confirm dialog).
    #[default]
    Dialog,
    /// The turn ends with a proposal; the user's next message is classified (chat front ends).
    /// While a proposal is pending the agent binds no tools.
    Conversational,
}

/// A person's decision on a pending action.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Verdict {
    /// Run exactly this call.
    Approve,
    /// Do not run it.
    Reject,
}

/// Why a pending action ended without a person's decision. The `skipped` record's `reason`
/// starts with its [`code`](Undecided::code) (`"disconnected: ..."`), so the audit log says what
/// happened and never records a disconnect, a timeout, a stop or a shutdown as a refusal.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Undecided {
    /// The client through which the person was asked disconnected.
    Disconnected,
    /// No answer within the confirmation timeout (the run's, or the client's own).
    TimedOut,
    /// The run or session was stopped.
    Stopped,
    /// The server shut down.
    Shutdown,
    /// The person dismissed the question without deciding.
    Dismissed,
    /// The call's caller went away (its future was dropped or its task ended) before the
    /// call wrote a final record.
    Abandoned,
}

impl Undecided {
    /// Every reason, for readers that match on codes.
    pub const ALL: [Undecided; 6] = [
        Undecided::Disconnected,
        Undecided::TimedOut,
        Undecided::Stopped,
        Undecided::Shutdown,
        Undecided::Dismissed,
        Undecided::Abandoned,
    ];

    /// The stable code that starts the record's reason.
    pub fn code(self) -> &'static str {
        match self {
            Undecided::Disconnected => "disconnected",
            Undecided::TimedOut => "timeout",
            Undecided::Stopped => "stopped",
            Undecided::Shutdown => "shutdown",
            Undecided::Dismissed => "dismissed",
            Undecided::Abandoned => "abandoned",
        }
    }

    fn explanation(self) -> &'static str {
        match self {
            Undecided::Disconnected => "the client disconnected before the user decided; nothing ran",
            Undecided::TimedOut => "no decision within the confirmation timeout; nothing ran",
            Undecided::Stopped => "the run was stopped before this action ran",
            Undecided::Shutdown => "the server shut down before the user decided; nothing ran",
            Undecided::Dismissed => "the user dismissed the question without deciding; nothing ran",
            Undecided::Abandoned => "the caller went away before this call finished; its outcome is unknown",
        }
    }

    /// The record's reason: the code, a colon, and what it means.
    pub fn reason(self) -> String {
        format!("{}: {}", self.code(), self.explanation())
    }

    /// The reason a record's `reason` text names, if it starts with one of the codes.
    pub fn of_reason(reason: &str) -> Option<Undecided> {
        let code = reason.split_once(':').map_or(reason, |(c, _)| c);
        Undecided::ALL.into_iter().find(|u| u.code() == code)
    }
}

/// What a [`Confirmer`] learned from the person.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ConfirmAnswer {
    /// The person decided.
    Decided(Verdict),
    /// The question ended without a decision, for this reason (recorded as `skipped`).
    Undecided(Undecided),
    /// No answer from this channel: the decision is left to
    /// [`Runtime::decide`](super::Runtime::decide) or the confirmation timeout.
    NoAnswer,
}

/// Why a decision was not accepted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DecisionError {
    /// No call waits under this id (decided already, timed out, or never existed).
    #[error("no action is waiting for a decision under `{0}`")]
    NotPending(String),
    /// The decision comes from another user, organisation or role than the run's.
    #[error("only the user the run acts for, in the same organisation and role, can decide on its actions")]
    NotYourRun,
    /// [`Runtime::decide`](super::Runtime::decide) (which does not wait) found no call waiting
    /// under this id on this node, and the state store does not answer at once.
    #[error(
        "no action waits under `{0}` on this node; decide it with `Runtime::decide_async`, which reaches every node \
         sharing the state store"
    )]
    NotHere(String),
    /// The state store could not be asked or could not record the decision; nothing changed
    /// that the store did not record. Try again.
    #[error("the decision could not be recorded: {0}")]
    Unavailable(String),
    /// An approval of a stored proposal that does not verify under this node's server key: it
    /// was written or edited in the state store by someone without the key, or the nodes hold
    /// different server keys. Nothing was decided; nothing will run under this id.
    #[error(
        "the stored proposal `{0}` does not verify under this node's server key (edited in the state store, or the \
         nodes hold different server keys); nothing was decided. Give every node the same server key, and check who \
         writes the state store"
    )]
    Unverified(String),
    /// The principal the run acts for changed since it started: the runtime reads it again
    /// ([`RuntimeBuilder::reread_principal`](super::RuntimeBuilder::reread_principal)) and the
    /// user is gone or holds another role. The decision was not recorded, and the proposal
    /// ended (`skipped`, with this reason). The text says what changed.
    #[error("{0}; the decision was not recorded and the proposal ended")]
    AuthorityChanged(String),
    /// The first approval of a proposal that needs a second confirmation (see
    /// [`crate::untrusted`]) is recorded; nothing ran. The person must approve again, this time
    /// acknowledging the warning: [`Runtime::acknowledge`](super::Runtime::acknowledge) with the
    /// digest given here.
    #[error(
        "the first approval of `{}` is recorded, and nothing ran: a value in it came from content the user did not \
         write ({}). Approve it again acknowledging this warning, with its digest",
        .0.call_id, .0.warning
    )]
    AcknowledgementRequired(Box<crate::untrusted::Acknowledgement>),
    /// An acknowledgement that is not the one of this proposal, its person and its warning (or
    /// of a proposal that needs none); nothing was decided.
    #[error(
        "the acknowledgement does not match the warning of `{0}` (it belongs to another proposal, another person or \
         another warning, or the proposal needs none); nothing was decided. Approve the proposal first and acknowledge \
         the warning its answer gives"
    )]
    AcknowledgementMismatch(String),
}

/// What a proposal's card says beyond the call itself: why a person is asked (a read that
/// reaches out) or the warning (an action whose values came from content the user did not
/// write), and where each argument value came from.
#[derive(Debug, Clone, Default)]
pub(in crate::run) struct Card {
    /// The sentence(s) the card shows; `None`: nothing to warn about.
    pub(in crate::run) why: Option<String>,
    /// Every argument value's origin (`None` for a call the check did not assess).
    pub(in crate::run) origins: Option<crate::provenance::Provenance>,
    /// The warning a second confirmation must acknowledge, when the application's policy asks
    /// for one ([`crate::untrusted::UntrustedPolicy::SecondConfirmation`]).
    pub(in crate::run) acknowledge: Option<String>,
}

impl Card {
    /// The card of a call whose values `origins` holds, saying `why`; whether it needs a second
    /// confirmation is settled when it is proposed (`Confirmation::new`).
    pub(in crate::run) fn new(why: Option<String>, origins: Option<crate::provenance::Provenance>) -> Self {
        Card { why, origins, acknowledge: None }
    }
}

/// What a person is asked to decide.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct ConfirmRequest {
    /// The call, by the id the runtime minted for it (what decisions are keyed by).
    pub call_id: String,
    /// The id the caller gave the call (a direct session caller's, or the model provider's).
    pub caller_call_id: String,
    /// The tool.
    pub tool: String,
    /// The title a person reads.
    pub title: String,
    /// The arguments as the audit log and the run's events hold them: secret values masked.
    pub args: Value,
    /// The arguments as the tool will receive them, secret values included: what the person
    /// the run acts for is asked to approve (a value they cannot see is a value they cannot
    /// approve). For the card shown to that person only; never serialized, never in `Debug`.
    #[serde(skip)]
    pub decider_args: DeciderView,
    /// Declared risk.
    pub risk: String,
    /// A normalized description of exactly what would run.
    pub description: String,
    /// Why a person is asked when the tool alone would not say: for a tool that reaches the
    /// outside world, which argument was copied from which tool result ("argument `url` was
    /// copied from the result of `read_email` (call c1)"); for an action, the warning that
    /// values came from content the user did not write. `None` when nothing is flagged.
    pub why: Option<String>,
    /// Where each argument value came from (see [`crate::provenance`]); `None` for a call
    /// the check did not assess.
    pub origins: Option<crate::provenance::Provenance>,
    /// Set on the second request about a proposal under
    /// [`UntrustedPolicy::SecondConfirmation`](crate::untrusted::UntrustedPolicy::SecondConfirmation),
    /// made after the person's first approval: what they must now acknowledge. A [`Confirmer`]
    /// answers [`Verdict::Approve`] to it only when the person affirmed the warning explicitly
    /// (its [`phrase`](crate::untrusted::Acknowledgement::phrase)); `None` on a first request.
    pub second_confirmation: Option<crate::untrusted::Acknowledgement>,
}

/// The arguments of a proposal as its decider sees them: the exact values the call will be
/// bound to, secrets included (the audit records and the broadcast events hold the masked
/// copy, [`ConfirmRequest::args`]).
///
/// Only the principal the run acts for is ever shown it: it is handed to that run's
/// [`Confirmer`] and listed by [`Runtime::pending_decisions`](super::Runtime::pending_decisions)
/// for that principal alone. It has no `Serialize` and its `Debug` prints no value, so it does
/// not reach a log or an event by accident.
#[derive(Clone, PartialEq, Default)]
pub struct DeciderView(Value);

impl DeciderView {
    /// Wraps the arguments as the tool will receive them.
    pub(crate) fn new(args: Value) -> Self {
        DeciderView(args)
    }

    /// The arguments, secret values included.
    pub fn as_value(&self) -> &Value {
        &self.0
    }

    /// The arguments, secret values included.
    pub fn into_value(self) -> Value {
        self.0
    }
}

impl std::fmt::Debug for DeciderView {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("DeciderView(..)")
    }
}

/// Asks a person (for example through MCP elicitation).
pub trait Confirmer: Send + Sync {
    /// Asks. A channel that fails says why ([`ConfirmAnswer::Undecided`]); only an answer the
    /// person gave is a [`Verdict`].
    fn confirm(&self, request: ConfirmRequest) -> BoxFuture<'static, ConfirmAnswer>;
}

/// How a direct call (no model loop, e.g. an MCP server) gets a person's decision.
#[derive(Clone)]
pub(super) enum DirectConfirm {
    /// Ask through this callback (e.g. MCP elicitation).
    Ask(Arc<dyn Confirmer>),
    /// The client cannot ask: return a structured "confirmation required" result; nothing runs.
    Unavailable,
}
