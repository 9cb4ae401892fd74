//! A proposal's ledger: the one owner of a proposed call, from its `proposed` record to its one
//! final record. The book of this node's open proposals (`proposal::Book`), the state store's
//! row of each proposal, its verdict and its claims, the decisions waiting on this node
//! (`live.decisions`) and the final records this node owes (`live.settling`) are its state;
//! each transition below is one function that changes the book, the store and the audit log
//! together, each step taking effect only once the step it depends on holds. The confirmation
//! channels (`confirm`) ask the person and wait; the run loop, the sessions, the decisions API
//! and the resumption of a gone run's calls ask the ledger to move a proposal. No other code
//! writes a proposal's records: the outcome of an approved call is recorded by the run the
//! ledger starts (`gate::execute`, through the run's recorder), and a final record owed when a
//! call goes away is written by the [`FinalOwed`](super::owed::FinalOwed) the ledger arms.
//!
//! | transition | where | what it writes |
//! |---|---|---|
//! | propose, waited on (dialog, a direct session's confirmer) | [`Proposal::propose_waited`] | the book's entry, `proposed`, the stored row, the final record owed ([`FinalOwed`](super::owed::FinalOwed)) |
//! | propose, to the session (conversational) | [`Proposal::propose_to_session`] | `proposed`, the stored row, `skipped` (`superseded`) for the older undecided one, the book's entry |
//! | end unasked (a direct session that cannot ask) | [`Proposal::skip_unasked`] | `skipped` |
//! | adopt (a turn begins) | [`adopt`], [`drop_stale`] | the book's entry of the session's proposal, or its end as the store says (`rejected`; an approval's execution claimed) |
//! | first approval (a proposal the policy asks a second confirmation of) | [`first_approval_in_store`] (the decisions API), [`Proposal::first_approval`] (a confirmer), the conversation's reply (`driver`) | `first_approval`; nothing in the store: the second approval must carry the acknowledgement ([`acknowledged`]) |
//! | decide (a person's verdict) | [`Confirmation::settle_waited`] (heard here: recorded in the store, the first recorded holds), [`answer_waiting`] (the user's reply), [`decide_in_store`] (the decisions API, any node) | the store's verdict; `confirmed` (a reply) or `rejected` |
//! | claim the execution | [`Confirmation::settle_waited`], [`claim_in_store`], [`carry_claimed`] | the store's claim, its seal checked first; the book's move to executing |
//! | execute | [`Confirmation::settle_waited`], [`Confirmation::with_approval`], [`carry_claimed`] | `confirmed`, then the token redeemed for the exact arguments, the permission checked again, the run, `executed` or `failed` |
//! | settle (a rejection, or a claim whose holder is gone) | [`Confirmation::settle_waited`], [`resume_one`], [`take_over_one`] | the store's settlement claim, then `rejected` or `skipped`, marked written |
//! | withdraw / end undecided | [`end_waiting`](waiting::end_waiting), [`end_or_close`], [`resolve_turn`] (a turn's end), [`Inner::end_proposals_of`](super::shared::Inner), [`Inner::close_waiting`](super::shared::Inner), [`Confirmation::settle_waited`] | the store's conditional close, then `skipped` (`timeout`, `stopped`, `cancelled`, `expired`, `superseded`, `abandoned`) |
//! | end under a changed authority (the principal source says the user is gone or holds another role) | [`Inner::end_under_authority`](super::shared::Inner), [`Inner::end_for_authority`](super::shared::Inner) | the store's conditional close, then `skipped` (`authority changed: ...`) |
//!
//! The invariant it keeps, on every path and every node sharing the store:
//!
//! - **exactly one final record per proposed call**: a call owes its final record from the
//!   moment its `proposed` record is durable ([`FinalOwed`](super::owed::FinalOwed), which
//!   writes it when the call goes away first); a proposal that waits in its session is ended
//!   by whoever wins the store's conditional close or settlement claim, and only the winner
//!   writes the record; a record the log refuses at a turn's or session's end still ends the
//!   proposal (failing closed), so there is at most one and, unless the log refused it,
//!   exactly one;
//! - **nothing runs twice**: a move in the book is claimed exclusively; the store grants one
//!   execution claim per proposal, ever, whatever node or channel answered; a resumption asks
//!   the audit log first whether the call ran already;
//! - **an action runs only with the person's decision bound to its exact arguments**: the
//!   approval becomes a token bound to the session, the tool and the MAC of the canonical
//!   arguments, redeemed once, and the role's permission is checked again before the run;
//! - **the store's seal is checked before anything runs**: a stored row must carry the seal
//!   this node's server key gives it in its state (proposed, approved, claimed), and what runs
//!   is the sealed row's tool and arguments.

mod acknowledge;
mod authority;
mod carry;
mod claim;
mod conversation;
mod dialog;
mod entry;
mod orphan;
mod waiting;
mod watch;

pub(super) use acknowledge::{acknowledged, awaited_acknowledgement, first_approval_in_store, reply_reason};
pub use carry::ResumedCall;
pub(super) use carry::carry_claimed;
pub(super) use claim::{ClaimHeartbeat, claim_in_store};
pub(super) use dialog::{StoredProposal, Waited, register};
pub(super) use entry::{Confirmation, Proposal};
pub(super) use orphan::{Resumed, decide_in_store, hand_to_waiter, resume_one, take_over_one};
pub(super) use waiting::{Adopted, adopt, answer_waiting, drop_stale, end_or_close, resolve_turn};
