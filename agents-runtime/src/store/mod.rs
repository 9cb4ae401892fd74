//! The state seam: everything the gate must agree on across processes, behind one trait.
//!
//! A [`Store`] holds confirmation tokens, per-user run slots, pending proposals and their
//! decisions, sessions, and appends to audit chains. Implementations:
//!
//! | store | holds state in | several processes |
//! | --- | --- | --- |
//! | [`MemoryStore`] | this process (the runtime's default) | no |
//! | `agents_store::SqliteStore` | one SQLite file, WAL | one host: every process opening the file |
//! | `agents_store::PostgresStore` | a PostgreSQL database | any number of nodes |
//!
//! # Where correctness comes from
//!
//! Every guarantee below is one conditional statement or one transaction of the store, never
//! a lock inside one process, so it holds against other processes (nodes) using the same
//! database as well as against concurrent tasks of this one:
//!
//! - a token is redeemed at most once ([`Store::redeem_token`]: one conditional update);
//! - a user holds at most `cap` unexpired run slots ([`Store::acquire_slot`]: count and insert
//!   in one transaction serialised per user); a slot whose holder stops renewing it (a
//!   crashed node) lapses when its lease ends;
//! - a proposal is decided once, only by its own user and organisation, and an approved
//!   proposal is claimed for execution once ([`Store::decide`], [`Store::claim_execution`]),
//!   by the run waiting for it or, when that run's slot lapsed ([`Store::slot_held`]), by a
//!   resumption on any node ([`Store::unsettled`]);
//! - a rejected proposal's final record is claimed once ([`Store::claim_settlement`]), by
//!   the run that heard the rejection, the run withdrawing it, or a resumption on any node
//!   once the run is gone; an undecided proposal is ended (rejected and claimed) in the same
//!   conditional update ([`Store::close_undecided`]), so of a late decision and a run's
//!   timeout, or a resumption expiring a gone run's proposal, exactly one holds;
//! - a session is saved only over the revision its writer read ([`Store::save_session`]: one
//!   conditional statement), so of two nodes saving one revision one stores and the other
//!   is told of the conflict; a session is bound to one user and organisation for good;
//! - a claim whose final record its holder has not marked written ([`Store::mark_recorded`])
//!   within a lease is taken over by exactly one taker per lapse ([`Store::take_over`]: one
//!   conditional update that restarts the lease and makes the taker the claim's holder), so a
//!   holder that died between its claim and its record does not leave the record unwritten
//!   (see `Runtime::resume_orphaned`); a live holder keeps its claim from lapsing by renewing
//!   it ([`Store::renew_claim`]: one conditional update that holds only while it is still the
//!   holder), so only a holder that stopped renewing loses it;
//! - proposals that are over (claimed or settled) are dropped once older than a retention
//!   ([`Store::prune_proposals`]), tokens once redeemed or expired
//!   ([`Store::prune_tokens`]), sessions once idle ([`Store::prune_sessions`]);
//! - each audit stream is one hash chain, whatever number of writers append to it
//!   ([`Store::append_audit`]: the chain's head is read and advanced under a lock of the
//!   database, in the transaction that inserts the records);
//! - a call's `proposed` record is a debt of its stream until the call's final record is
//!   appended: both are kept in the transaction that appends the record, so a final record
//!   whose write failed (the connection dropped, the node died) is still known to be owed, and
//!   a resumption on any node writes it ([`Store::owed_finals`], [`Store::claim_owed`]).
//!
//! Ids that key decisions ([`ProposalRecord::call_id`]) are minted by the runtime, never
//! taken from a model provider (providers reuse ids such as `call_1` across runs).
//!
//! # Against an insider with write access to the store, without the server key
//!
//! The store is not trusted to say what may run. Each proposal carries a seal
//! ([`ProposalRecord::seal`]): an HMAC under the runtime's server key (the key of
//! [`TokenStore`](crate::token::TokenStore), set with `RuntimeBuilder::server_key`, never
//! written to the store) over the call id, run, session, organisation, user, role, subject,
//! agent, manifest hash, tool and the MAC of the arguments; a decision replaces it with a seal
//! that adds the verdict and its decider, and a claim of the execution with one that adds the
//! claimant. The runtime computes every seal; the store only keeps the current one. A runtime
//! carries out an approval only when the row's seal is the one its key gives for the row as it
//! reads it (a resumption, a conversation's "yes", the run waiting for its decision), and a
//! resumption asks the audit log ([`AuditSink::holds_final`](crate::audit::AuditSink::holds_final))
//! before it runs the call, every time. Against a person who can run any SQL on the state
//! database (or write the SQLite file) but does not hold the server key:
//!
//! | they can | they cannot |
//! | --- | --- |
//! | deny service: reject, close, claim or delete proposals (a deleted proposal may be left without its final record; its `proposed` record stays in the log), hold or expire run slots, drop sessions, tokens and budgets | make an action run that its user did not approve: a verdict set to approved, a row inserted, or any sealed field changed (another row's arguments, MAC and seal copied in; the tool, user, organisation, role or session changed) runs nothing, and the call's one final record is `failed`, saying the row does not verify |
//! | read what the store keeps: the arguments as the tool receives them (values the log masks included), sessions' histories | run an action for another user, organisation, role or session than the one its person approved in |
//! | make a node write a `failed` record for a row they forged (the log then shows it) | run an approved call a second time once its final record is in the log: a claim cleared, its earlier seal written back, or a pruned row written again, is found by the log check and not run (it gets no second final record) |
//! | between a claim and the call's final record (while its holder runs it), clear the claim and expire the run's slot so that a resumption runs the call a second time: the log holds no final record yet | |
//!
//! This holds when every node holds the same server key (a node with another key refuses every
//! approval it did not seal: `failed`, or [`DecisionError::Unverified`](crate::run::DecisionError::Unverified)),
//! the key stays out of the database, and the audit sink can be searched (`holds_final` answers;
//! the JSONL, SQLite and memory sinks and the stores' own streams do). It does not hold against
//! someone who holds the server key or runs code in a node's process. Rows written before the
//! seal existed (SQLite migration 7, PostgreSQL 8) carry none: an approval of theirs not yet
//! carried out ends `failed`.
//!
//! The audit streams a store keeps ([`Store::append_audit`]) are a plain hash chain: it proves
//! integrity against accidents only. The SQLite and PostgreSQL tables refuse every statement
//! that would change or replace a stored record (`UPDATE`, `DELETE`, `TRUNCATE`,
//! `INSERT OR REPLACE`, upserts) and a head that moves back, so an application bug or a
//! mistaken statement cannot rewrite the record; someone who drops the triggers (or edits the
//! file) can, and can append records that continue the chain, since the plain chain needs no
//! key. Against an insider, use the keyed chain with checkpoints published elsewhere (see
//! [`crate::audit`]).

mod debts;
mod memory;
mod signal;
mod sink;

pub use debts::Debts;
pub use memory::{MEMORY_SWEEP_EVERY, MemoryStore};
pub use signal::{DECISION_SIGNALS_HELD, DecisionSignal};
pub use sink::{STORE_IN_FLIGHT, STORE_MAX_BATCH, StoreAuditSink};

use crate::BoxFuture;
use crate::audit::{AuditRecord, ChainSummary};
use serde_json::Value;
use std::time::Duration;

/// Why a store could not answer. The runtime fails closed on every one of them.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// The database could not be reached or failed the operation.
    #[error("state store unavailable: {0}")]
    Unavailable(String),
    /// The database's schema is newer than this code knows: a newer version of the
    /// application migrated it. Nothing was changed.
    #[error(
        "the state store's schema is at version {found}, newer than version {known} that this build knows; run the \
         newer build, or restore the database from before its migration"
    )]
    NewerSchema {
        /// The version the database holds.
        found: i64,
        /// The newest version this build knows.
        known: i64,
    },
    /// The request was refused as malformed (nothing changed).
    #[error("state store refused the request: {0}")]
    Invalid(String),
    /// An audit chain held by the store does not verify.
    #[error("audit stream `{stream}` does not verify: {detail}")]
    BrokenChain {
        /// The stream.
        stream: String,
        /// Where and how it breaks.
        detail: String,
    },
}

/// What [`Store`] methods return.
pub type StoreResult<T> = Result<T, StoreError>;

/// What the store keeps of a minted confirmation token: what it was bound to. The token's MAC
/// is not stored; the runtime recomputes it with its server key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenGrant {
    /// The token's id (lowercase hex of 16 random bytes).
    pub id: String,
    /// The session the token was minted for.
    pub session_id: String,
    /// The tool it was approved for.
    pub tool: String,
    /// The HMAC of the canonical arguments it was approved for.
    pub args_mac: String,
}

/// What a redemption found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Redeemed {
    /// This redemption used the token up; `expired` tells whether its expiry had passed (an
    /// expired token is used up too, and must be refused).
    Taken {
        /// What the token was bound to.
        grant: TokenGrant,
        /// Whether it had expired.
        expired: bool,
    },
    /// Never minted, already redeemed, or pruned.
    Unknown,
}

/// The user a run slot is counted against.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct SlotOwner {
    /// The organisation.
    pub org_id: String,
    /// The user.
    pub user_id: String,
}

/// A held run slot. Release it with [`Store::release_slot`]; renew it with
/// [`Store::renew_slot`] before its lease ends, or it lapses.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct SlotId(pub String);

/// A person's decision, as the store keeps it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum StoredVerdict {
    /// Approved.
    Approved,
    /// Rejected.
    Rejected,
}

impl StoredVerdict {
    /// The word stored in the database.
    pub fn as_str(self) -> &'static str {
        match self {
            StoredVerdict::Approved => "approved",
            StoredVerdict::Rejected => "rejected",
        }
    }

    /// The verdict a stored word names.
    pub fn parse(word: &str) -> Option<Self> {
        match word {
            "approved" => Some(StoredVerdict::Approved),
            "rejected" => Some(StoredVerdict::Rejected),
            _ => None,
        }
    }
}

/// A proposed action waiting for (or past) a person's decision.
#[derive(Debug, Clone, PartialEq)]
pub struct ProposalRecord {
    /// The runtime's own id of the call (minted by the runtime, unique per call).
    pub call_id: String,
    /// The run that proposed it.
    pub run_id: String,
    /// The run's session.
    pub session_id: String,
    /// The organisation the run acts for.
    pub org_id: String,
    /// The user the run acts for; only they may decide.
    pub user_id: String,
    /// The tool.
    pub tool: String,
    /// The title a person reads.
    pub title: String,
    /// The arguments as the decider's card shows them.
    pub args: Value,
    /// The HMAC of the canonical arguments (what a token will be bound to).
    pub args_mac: String,
    /// What the runtime keeps beside the proposal, opaque to the store (JSON object): the
    /// run's role, agent, the tool's risk, when it was proposed, and what carrying out the
    /// approved call needs once the run that proposed it is gone (the principal, the
    /// arguments as the tool receives them, the run's slot). Those arguments include values
    /// the records mask: the state database is as sensitive as the application's own.
    pub detail: Value,
    /// The seal of the proposal in its current state: an HMAC under the server key, computed
    /// by the runtime (never by the store), over everything that decides what runs and for
    /// whom (call id, run, session, organisation, user, role, subject, agent, manifest, tool,
    /// [`ProposalRecord::args_mac`]) and, once decided, the verdict and its decider, and once
    /// claimed for execution, the claimant. Stored as given by [`Store::put_proposal`] and
    /// replaced by [`Store::decide`] and [`Store::claim_execution`]; the store only keeps it.
    /// A runtime carries out an approved call only when the seal it reads back is the one its
    /// key gives for the row as read (see the module documentation). Empty: sealed by nobody.
    pub seal: String,
}

/// A proposal with its state.
#[derive(Debug, Clone, PartialEq)]
pub struct ProposalState {
    /// The proposal.
    pub proposal: ProposalRecord,
    /// The decision, once made.
    pub verdict: Option<StoredVerdict>,
    /// The rejection reason, if one was given.
    pub reason: Option<String>,
    /// The node that claimed the approved call's execution, once claimed.
    pub claimed_by: Option<String>,
    /// Who claimed a rejected proposal's final record (a node, or the run that withdrew
    /// it), once claimed.
    pub settled_by: Option<String>,
}

/// A position in a store's order of proposals (the order they were stored in): a listing
/// that starts after it goes on from the proposal stored next. [`ProposalCursor::START`]
/// lists from the first. Only the store that gave a cursor knows what it means.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ProposalCursor(pub u64);

impl ProposalCursor {
    /// Before the first proposal.
    pub const START: ProposalCursor = ProposalCursor(0);
}

/// One page of a listing of proposals, oldest first.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ProposalPage {
    /// The proposals of this page.
    pub proposals: Vec<ProposalState>,
    /// Where the next page starts (the position of this page's last proposal), or `None`
    /// when the listing ends with this page (it held fewer proposals than asked for).
    pub next: Option<ProposalCursor>,
}

/// Why a decision was not recorded.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum DecideOutcome {
    /// Recorded: this decision is the proposal's one decision.
    Recorded,
    /// No such proposal.
    Unknown,
    /// The decider is not the run's own user and organisation; nothing changed.
    NotYours,
    /// Already decided (by this or another node); nothing changed.
    AlreadyDecided,
}

/// A session's durable state: whose it is (user, organisation and role), its replayed
/// history, the digest of its executed tool results, the proposal waiting for the user's next
/// message, and its revision.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionRecord {
    /// The session id.
    pub session_id: String,
    /// The organisation it is bound to.
    pub org_id: String,
    /// The user it is bound to.
    pub user_id: String,
    /// The role its context was built under: a run of the same user under another role
    /// starts a fresh context (the runtime replaces the record).
    pub role: String,
    /// The replayed history (JSON, as the runtime writes it).
    pub history: Value,
    /// The digest of executed tool results (JSON).
    pub digest: Value,
    /// The conversational proposal waiting for the user's next message (JSON, as the runtime
    /// writes it), or `null`.
    pub pending: Value,
    /// The revision. As loaded: the one the store holds. As saved: the one the writer read
    /// (`0` for a session it found absent or idle); see [`Store::save_session`].
    pub version: u64,
}

/// What [`Store::save_session`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SessionSaved {
    /// Stored (created or replaced); the store now holds it at `version`.
    Stored {
        /// The revision the store holds now.
        version: u64,
    },
    /// The session id belongs to another user or organisation; nothing changed.
    NotYours,
    /// Another writer saved the session since the revision this one read, or it was ended
    /// (dropped) meanwhile; nothing changed. Load it again and apply the change to what is
    /// there.
    Conflict,
}

/// The state store. See the [module documentation](self) for what each method guarantees
/// and against whom.
///
/// Durations are measured on the store's own clock (the database server's, for a shared
/// store), so nodes whose clocks differ agree on expiry.
pub trait Store: Send + Sync + 'static {
    /// Whether every method's future is ready when first polled (an in-memory store), so a
    /// caller that cannot wait may use it. `false` unless the store says otherwise.
    fn answers_at_once(&self) -> bool {
        false
    }

    // -- confirmation tokens ------------------------------------------------------------

    /// Stores a minted token, redeemable until `ttl` from now.
    fn mint_token<'a>(&'a self, grant: &'a TokenGrant, ttl: Duration) -> BoxFuture<'a, StoreResult<()>>;

    /// Uses the token up, in one conditional operation: of any number of concurrent
    /// redemptions of one token, on any number of nodes, exactly one gets
    /// [`Redeemed::Taken`].
    fn redeem_token<'a>(&'a self, id: &'a str) -> BoxFuture<'a, StoreResult<Redeemed>>;

    /// Drops every token of `session_id` (the session ended). Returns how many.
    fn revoke_session_tokens<'a>(&'a self, session_id: &'a str) -> BoxFuture<'a, StoreResult<u64>>;

    /// Drops redeemed and expired tokens. Returns how many.
    fn prune_tokens(&self) -> BoxFuture<'_, StoreResult<u64>>;

    // -- run slots ----------------------------------------------------------------------

    /// Takes one of `owner`'s run slots with a lease of `lease`, or `None` when they hold
    /// `cap` unexpired slots already. Count and insert are one transaction serialised per
    /// owner, so the cap holds across nodes.
    fn acquire_slot<'a>(
        &'a self,
        owner: &'a SlotOwner,
        cap: u32,
        lease: Duration,
    ) -> BoxFuture<'a, StoreResult<Option<SlotId>>>;

    /// Extends a held slot's lease to `lease` from now. `false` when the slot is gone: it
    /// was released, or it lapsed and an acquisition of its owner took its place (a lapsed
    /// slot still in place is renewed: the cap never counted a slot that was not there).
    fn renew_slot<'a>(&'a self, slot: &'a SlotId, lease: Duration) -> BoxFuture<'a, StoreResult<bool>>;

    /// Gives a slot back. Releasing a slot that is gone does nothing.
    fn release_slot<'a>(&'a self, slot: &'a SlotId) -> BoxFuture<'a, StoreResult<()>>;

    /// Whether `slot` is held and its lease has not run out (its holder is alive).
    fn slot_held<'a>(&'a self, slot: &'a SlotId) -> BoxFuture<'a, StoreResult<bool>>;

    /// `owner`'s unexpired slots.
    fn active_slots<'a>(&'a self, owner: &'a SlotOwner) -> BoxFuture<'a, StoreResult<u32>>;

    // -- proposals and decisions --------------------------------------------------------

    /// Stores a proposal, undecided. Refused ([`StoreError::Invalid`]) when its call id is
    /// taken.
    fn put_proposal<'a>(&'a self, proposal: &'a ProposalRecord) -> BoxFuture<'a, StoreResult<()>>;

    /// Records `verdict` on the proposal, with `seal` as its new
    /// [`ProposalRecord::seal`], only when `org_id`/`user_id` are the run's own and it is
    /// undecided (one conditional update).
    fn decide<'a>(
        &'a self,
        call_id: &'a str,
        org_id: &'a str,
        user_id: &'a str,
        verdict: StoredVerdict,
        reason: Option<&'a str>,
        seal: &'a str,
    ) -> BoxFuture<'a, StoreResult<DecideOutcome>>;

    /// The proposal and its state.
    fn proposal<'a>(&'a self, call_id: &'a str) -> BoxFuture<'a, StoreResult<Option<ProposalState>>>;

    /// The proposals among `call_ids` that are decided, with their state, in any order (unknown
    /// and undecided ids are left out): what a node looks up for all the calls waiting on it
    /// at once. The default asks [`Store::proposal`] for each; a database answers in one query.
    fn decided<'a>(&'a self, call_ids: &'a [String]) -> BoxFuture<'a, StoreResult<Vec<ProposalState>>> {
        signal::decided_one_by_one(self, call_ids)
    }

    /// Signals of decisions as they are committed on any node sharing the store (see
    /// [`DecisionSignal`]), for as long as the receiver is kept; `None` (the default) when the
    /// store has none, and nodes then hear other nodes' decisions only by looking them up
    /// ([`Store::decided`], every [`RuntimeBuilder::decision_poll`](crate::run::RuntimeBuilder::decision_poll)).
    /// A runtime asks once and keeps the receiver. Called within a tokio runtime.
    fn watch_decisions(&self) -> Option<tokio::sync::mpsc::Receiver<DecisionSignal>> {
        None
    }

    /// The undecided proposals of one user, oldest first (what a person still has to decide,
    /// whatever events they missed).
    fn pending_for<'a>(&'a self, org_id: &'a str, user_id: &'a str) -> BoxFuture<'a, StoreResult<Vec<ProposalRecord>>>;

    /// Claims an approved proposal's execution for `node`, with `seal` as its new
    /// [`ProposalRecord::seal`]: `true` for exactly one claim of an approved proposal, ever;
    /// `false` when it is not approved or already claimed (nothing changed).
    fn claim_execution<'a>(
        &'a self,
        call_id: &'a str,
        node: &'a str,
        seal: &'a str,
    ) -> BoxFuture<'a, StoreResult<bool>>;

    /// Approved proposals whose execution nobody claimed, oldest first, at most `limit`.
    fn approved_unclaimed(&self, limit: u32) -> BoxFuture<'_, StoreResult<Vec<ProposalState>>>;

    /// Claims a rejected proposal's final record for `node`: `true` for exactly one claim of
    /// a rejected proposal, ever; `false` when it is not rejected or already claimed.
    fn claim_settlement<'a>(&'a self, call_id: &'a str, node: &'a str) -> BoxFuture<'a, StoreResult<bool>>;

    /// Ends an undecided proposal: records it rejected with `reason` and claims its final
    /// record for `node`, in one conditional update. `true` when this call ended it; `false`
    /// when it was decided already (or is unknown), and nothing changed.
    fn close_undecided<'a>(
        &'a self,
        call_id: &'a str,
        node: &'a str,
        reason: &'a str,
    ) -> BoxFuture<'a, StoreResult<bool>>;

    /// Proposals whose final record nobody has claimed nor marked written, stored after
    /// `after`, oldest first, at most `limit`: approved ones whose execution nobody claimed,
    /// rejected ones whose record nobody claimed, and undecided ones stored more than
    /// `undecided_for` ago. What a node settling the proposals of runs that are gone looks at,
    /// page by page (each page's [`ProposalPage::next`] is where the next one starts), so
    /// proposals it must leave alone (still waiting for their user) never hide the ones after
    /// them.
    fn unsettled(
        &self,
        after: ProposalCursor,
        limit: u32,
        undecided_for: Duration,
    ) -> BoxFuture<'_, StoreResult<ProposalPage>>;

    /// Marks the proposal's final record written: called by the claim's holder once the
    /// record is durably appended. From then on the proposal is never settled again (neither
    /// [`Store::unsettled`] nor [`Store::stale_claims`] lists it). Marking an unknown or
    /// marked proposal does nothing.
    fn mark_recorded<'a>(&'a self, call_id: &'a str) -> BoxFuture<'a, StoreResult<()>>;

    /// Claims the closing of run tree `tree_run_id` (its root run's `run_finished` record,
    /// written by a resumption that settled the tree's last waiting proposal) for `node`, in
    /// one conditional insert: `true` for exactly one claim per tree, ever, whatever number of
    /// nodes settle the tree's last proposals at once; `false` when it was claimed already
    /// (nothing changed). A claimer that dies before writing the record leaves the tree
    /// unclosed: the root's `run_finished` is written at most once.
    ///
    /// ```
    /// use agents_runtime::store::{MemoryStore, Store};
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// let store = MemoryStore::new();
    /// assert!(store.claim_tree_close("tree-run-1", "node-a").await.unwrap());
    /// assert!(!store.claim_tree_close("tree-run-1", "node-b").await.unwrap(), "closed once");
    /// # });
    /// ```
    fn claim_tree_close<'a>(&'a self, tree_run_id: &'a str, node: &'a str) -> BoxFuture<'a, StoreResult<bool>>;

    /// Proposals stored after `after` whose final record was claimed (execution, settlement
    /// or closing) and is not marked written, and whose claim was taken, taken over or renewed
    /// more than `lease` ago, oldest first, at most `limit`: the claims of holders that may
    /// have died between the claim and the record. Listed page by page, as
    /// [`Store::unsettled`].
    fn stale_claims(
        &self,
        after: ProposalCursor,
        limit: u32,
        lease: Duration,
    ) -> BoxFuture<'_, StoreResult<ProposalPage>>;

    /// Takes over a claim whose final record is not marked written and which was taken, taken
    /// over or renewed more than `lease` ago, for `node`, in one conditional update that
    /// restarts the claim's lease and makes `node` its holder (the one
    /// [`Store::renew_claim`] accepts): of any number of concurrent takers, exactly one gets
    /// `true` per lapse. The claimant fields ([`ProposalState::claimed_by`],
    /// [`ProposalState::settled_by`]) keep the original claimant's name.
    fn take_over<'a>(&'a self, call_id: &'a str, node: &'a str, lease: Duration) -> BoxFuture<'a, StoreResult<bool>>;

    /// Restarts the lease of a claim `node` holds (it claimed it with
    /// [`Store::claim_execution`], [`Store::claim_settlement`] or [`Store::close_undecided`],
    /// or took it over last), in one conditional update that matches only while `node` is
    /// still its holder and its final record is not marked written: `true` when renewed;
    /// `false` when another node took it over, the record was marked written, or `node` never
    /// held it (nothing changed). A holder that renews more often than the lease keeps the
    /// claim from ever being listed by [`Store::stale_claims`]; one that stopped (it died)
    /// loses it once the lease ran out.
    fn renew_claim<'a>(&'a self, call_id: &'a str, node: &'a str) -> BoxFuture<'a, StoreResult<bool>>;

    /// Drops proposals that are over (approved and claimed, or rejected and their record
    /// claimed, and their final record marked written) since longer than `retention`.
    /// Returns how many.
    fn prune_proposals(&self, retention: Duration) -> BoxFuture<'_, StoreResult<u64>>;

    // -- sessions -----------------------------------------------------------------------

    /// Stores a session's state and marks it used now, only over the revision the writer
    /// read (optimistic concurrency, one conditional statement, so of two nodes writing the
    /// same revision exactly one succeeds and the other gets [`SessionSaved::Conflict`]):
    /// with `session.version == 0`, creates it, or replaces one of the same user and
    /// organisation unused for longer than `idle`; otherwise replaces it only while the store
    /// holds exactly `session.version` (a session dropped meanwhile is not recreated). Refused
    /// (nothing changes) when the id belongs to another user or organisation, idle or not.
    fn save_session<'a>(
        &'a self,
        session: &'a SessionRecord,
        idle: Duration,
    ) -> BoxFuture<'a, StoreResult<SessionSaved>>;

    /// A session used within `idle`, or `None` (never stored, or idle longer).
    fn load_session<'a>(
        &'a self,
        session_id: &'a str,
        idle: Duration,
    ) -> BoxFuture<'a, StoreResult<Option<SessionRecord>>>;

    /// Drops a session (and nothing else). Returns whether it was held.
    fn delete_session<'a>(&'a self, session_id: &'a str) -> BoxFuture<'a, StoreResult<bool>>;

    /// Drops sessions unused for longer than `idle`. Returns how many.
    fn prune_sessions(&self, idle: Duration) -> BoxFuture<'_, StoreResult<u64>>;

    // -- audit chains -------------------------------------------------------------------

    /// Seals `records` (a plain chain: `seq`, `prev_hash`, `hash`) after the head of
    /// `stream` and stores them, in one transaction that holds the stream's head locked, so
    /// concurrent appenders on any node extend one chain. Returns the sealed records.
    /// Appends a process calls without waiting are sealed in the order of the calls, except
    /// batches the database refused for a head that moved on (another node appended, or the
    /// batch before failed): those are sealed again after the stored head, in either order.
    fn append_audit<'a>(
        &'a self,
        stream: &'a str,
        records: Vec<AuditRecord>,
    ) -> BoxFuture<'a, StoreResult<Vec<AuditRecord>>>;

    /// Whether an append to `stream` called now would be sent behind the last one before its
    /// answer; only then does a [`StoreAuditSink`] send a second batch ([`STORE_IN_FLIGHT`]).
    /// Default `false`.
    fn pipelines_audit(&self, _stream: &str) -> bool {
        false
    }

    /// Verifies `stream`'s chain from its first record.
    fn verify_audit<'a>(&'a self, stream: &'a str) -> BoxFuture<'a, StoreResult<ChainSummary>>;

    /// A page of `stream`'s stored lines in `seq` order: those after `after_seq`, at most
    /// `limit`, each with the `seq` the store files it under. A reader pages through a stream
    /// by passing the last `seq` of a page as the next page's `after_seq`, and is done at an
    /// empty page; a stream the store does not hold reads as empty.
    ///
    /// The lines are the store's bytes, not yet trusted: whoever can write the database can
    /// change them. Check them as a chain
    /// ([`ChainVerifier::line`](agents_core::audit::ChainVerifier::line)) before relying on
    /// what they say, as the service's `StoreReader` does.
    fn audit_lines<'a>(
        &'a self,
        stream: &'a str,
        after_seq: u64,
        limit: u32,
    ) -> BoxFuture<'a, StoreResult<Vec<(u64, String)>>>;

    /// Whether `stream` holds a final record of call `call_id` (see
    /// [`AuditSink::holds_final`](crate::audit::AuditSink::holds_final)): `Some(found)`, or
    /// `None` when this store cannot look (the default). Asked before every execution of a
    /// stored approval and whenever a claim is taken over.
    fn holds_final<'a>(&'a self, stream: &'a str, call_id: &'a str) -> BoxFuture<'a, StoreResult<Option<bool>>> {
        let _ = (stream, call_id);
        Box::pin(std::future::ready(Ok(None)))
    }

    /// The `proposed` records of `stream` whose final record is owed since longer than
    /// `older_than` and whose debt is not claimed within that time either, for calls without a
    /// stored proposal (see [`AuditSink::owed_finals`](crate::audit::AuditSink::owed_finals)),
    /// oldest first, at most `limit`. A store that derives its debts from the stored records
    /// when they are read (PostgreSQL) counts a debt as owed since the read that found it. A
    /// store that keeps no debts owes nothing (the default).
    fn owed_finals<'a>(
        &'a self,
        stream: &'a str,
        older_than: Duration,
        limit: u32,
    ) -> BoxFuture<'a, StoreResult<Vec<AuditRecord>>> {
        let _ = (stream, older_than, limit);
        Box::pin(std::future::ready(Ok(Vec::new())))
    }

    /// Claims the debt of call `call_id` of run `run_id` in `stream` for `node`, in one
    /// conditional update: `true` for one claimer per `lease` (a claim not paid by a final
    /// record within the lease may be taken again). The final record, once appended, pays the
    /// debt. The default claims nothing.
    fn claim_owed<'a>(
        &'a self,
        stream: &'a str,
        call_id: &'a str,
        run_id: &'a str,
        node: &'a str,
        lease: Duration,
    ) -> BoxFuture<'a, StoreResult<bool>> {
        let _ = (stream, call_id, run_id, node, lease);
        Box::pin(std::future::ready(Ok(false)))
    }
}

/// The records of owed calls, from their stored lines (a line that does not parse is a
/// broken store: refused, naming it).
pub fn owed_records<'a>(lines: impl IntoIterator<Item = &'a str>) -> StoreResult<Vec<AuditRecord>> {
    lines
        .into_iter()
        .map(|line| {
            serde_json::from_str::<AuditRecord>(line)
                .map_err(|e| StoreError::Invalid(format!("an owed `proposed` record does not parse ({e}): {line}")))
        })
        .collect()
}

/// The text a canonical line holds when it is a record of call `call_id` (a filter before
/// parsing the line).
pub fn call_id_needle(call_id: &str) -> String {
    format!("\"call_id\":{}", Value::from(call_id))
}

pub use crate::audit::line_is_final_of;

/// Verifies a chain given as canonical JSON lines in `seq` order (what the stores keep).
pub fn verify_lines<'a>(stream: &str, lines: impl IntoIterator<Item = &'a str>) -> StoreResult<ChainSummary> {
    let mut verifier = agents_core::audit::ChainVerifier::new();
    let broken = |e: agents_core::audit::ChainError| StoreError::BrokenChain {
        stream: stream.to_owned(),
        detail: e.to_string(),
    };
    for (i, line) in lines.into_iter().enumerate() {
        verifier.line(line, i + 1).map_err(broken)?;
    }
    verifier.finish().map_err(broken)
}

/// Seals `records` after `(seq, prev_hash)` in a plain chain; returns them with their lines
/// and the new head.
pub fn seal_after(
    mut seq: u64,
    prev_hash: &str,
    records: Vec<AuditRecord>,
) -> (Vec<AuditRecord>, Vec<String>, u64, String) {
    let mut prev = prev_hash.to_owned();
    let mut sealed = Vec::with_capacity(records.len());
    let mut lines = Vec::with_capacity(records.len());
    for record in records {
        seq += 1;
        let (record, line) = agents_core::audit::PreparedRecord::new(record).seal(seq, &prev);
        prev.clone_from(&record.hash);
        sealed.push(record);
        lines.push(line);
    }
    (sealed, lines, seq, prev)
}

/// `future`'s output if it is ready at once (the in-memory store's always is), or the future.
pub(crate) fn answer_now<F: Future + Unpin>(mut future: F) -> Result<F::Output, F> {
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    match std::pin::Pin::new(&mut future).poll(&mut cx) {
        std::task::Poll::Ready(value) => Ok(value),
        std::task::Poll::Pending => Err(future),
    }
}

/// `future`'s answer if it has one at once; otherwise it goes on as a task of the current
/// tokio runtime (or, outside one, is dropped with a warning) and the answer is `None`.
pub(crate) fn now_or_in_background<T: Send + 'static>(
    what: &'static str,
    future: impl Future<Output = StoreResult<T>> + Send + 'static,
) -> Option<T> {
    match answer_now(Box::pin(future)) {
        Ok(Ok(value)) => Some(value),
        Ok(Err(e)) => {
            tracing::warn!(error = %e, "{what}: the state store failed");
            None
        }
        Err(future) => {
            match tokio::runtime::Handle::try_current() {
                Ok(handle) => drop(handle.spawn(async move {
                    if let Err(e) = future.await {
                        tracing::warn!(error = %e, "{what}: the state store failed");
                    }
                })),
                Err(_) => tracing::warn!("{what}: the state store did not answer at once and no tokio runtime runs"),
            }
            None
        }
    }
}
