//! The bounded run loop and the gate every tool call passes.
//!
//! One call, in this order: lookup in the availability snapshot → (with a principal source,
//! who the run acts for read again: see [`crate::authority`]) → strict parse → typed parse
//! → interceptors → tier (read: audit `proposed`, run, audit the outcome; action: audit
//! `proposed`, ask a person, mint a token bound to the exact arguments, redeem it, re-check
//! the permission, run; handoff: audit `handed_off`, emit the record, nothing runs).
//!
//! # Tools that reach out: egress provenance
//!
//! A tool whose policy declares a network host, or that is marked `#[tool(egress)]`, carries
//! data out in its arguments. Its calls pass one more check, between the permission and the
//! tier (see [`crate::provenance`] for exactly what it compares and what it cannot see):
//! every argument value is classified by where it was seen before (the user's messages, the
//! application's system prompt, a tool result of the session, nowhere), and the facts are given
//! to the interceptors ([`Interception::provenance`](crate::interceptor::Interception::provenance));
//! after them, any URL or host name outside the declared hosts is refused (`denied`, naming the
//! value and the hosts), and the facts are recorded (a `notice` before the call's records).
//! A read call carrying a value copied from a tool result, not typed by the user, is then
//! decided like an action, on every channel below, its card's
//! [`why`](ConfirmRequest::why) naming the argument and the result it came from. The check
//! is string provenance: a model that paraphrases, encodes or assembles a value defeats it,
//! and the host allowlist still holds.
//!
//! # What the person deciding sees
//!
//! A proposal's values at `#[secret]` positions are masked in its audit records, in the run's
//! broadcast events (`confirm_required` included) and in [`ConfirmRequest::args`]. The person
//! asked to approve is shown the arguments as the tool will receive them, secret values
//! included ([`DeciderView`]: [`ConfirmRequest::decider_args`] for a [`Confirmer`] such as MCP
//! elicitation, [`PendingDecision::decider_arguments`] for the principal the run acts for, the
//! only one [`Runtime::pending_decisions`] lists a proposal to). A value a person cannot see is
//! not a value they can approve. [`DeciderView`] has no `Serialize` and prints no value in
//! `Debug`, so it reaches no record, event or log by accident.
//!
//! # Which channel carries what
//!
//! What the model reads comes in channels it trusts differently, and untrusted text never
//! enters the most trusted one:
//!
//! - **system**: the application's system prompt and the runtime's own instructions about
//!   the turn (a proposal confirmed, changed, cancelled or waiting), which name tools and
//!   titles from code only. Never a tool result, a user's words or anything a tool read;
//! - **user messages**: the person's input, the replayed history (text of earlier turns), and
//!   the digest of earlier tool results: one message, opened with a sentence saying it is
//!   data, whose facts are a JSON array of `{"tool", "result"}` objects between
//!   `<earlier_tool_results>` markers (a result cannot close the block: its `<` is escaped);
//! - **tool messages**: this turn's tool results, each answering its call.
//!
//! The rooms of this module, in layers: a file imports only from files of its own layer or
//! below (`cargo xtask graph` finds no circle among them), and the public facade sits on top.
//!
//! 1. What every run shares and what the records are made of, at the bottom:
//!    - `record`: the fields every audit record of a run repeats, the parts that vary, what
//!      builds the records of one call, and the time stamp;
//!    - `decision`: the vocabulary of a person's decision ([`ConfirmMode`], [`Verdict`],
//!      [`Undecided`], [`ConfirmRequest`], [`DeciderView`], [`Confirmer`], [`DecisionError`]);
//!    - `proposal`: the in-process book every proposed action moves through (its state machine);
//!    - `pending`: proposals as the state store keeps them (their detail, their seals,
//!      runtime-minted call ids, the [`PendingDecision`] card);
//!    - `place`: where a proposal's run sat in a run tree, kept beside the proposal (under a
//!      MAC, and sealed with it) for the records a resumption writes after a restart;
//!    - `conversation`: a session's conversation as the store keeps it, what one turn changed,
//!      and history replay;
//!    - `secrets`: the values of a call's secrets, masked in the texts derived from the call;
//!    - `choice`: the reading of a model's answer to a choice the runtime asked for (exactly
//!      one call of the one tool offered, with one text argument), for a skill and a branch;
//!    - `skill`: the skill a run works within and the tools it offers, the skill-choice step
//!      offered to the model and the reading of its answer, which fails closed;
//!    - `outcome`: how a run ends and the handle that waits for it;
//!    - `shared`: what every run of one runtime shares (`Inner`: its settings, its services and
//!      its live state), and the records written with nobody waiting for them;
//!    - `call`: one tool call as the gate reads it, what it hands back, and what the records of
//!      a tool's calls repeat.
//! 2. How a run records, and what the gate takes of it:
//!    - `recorder`: the `Recorder` one run writes its records and events through (the audit
//!      sink, the run's ids, the event bus, the run's list of calls), made once per run and
//!      borrowed by every call;
//!    - `scope`: `Run`, what the gate takes of a run: its recorder, the runtime's settings and
//!      services, and the narrow parts of the run a call needs (who it acts for, its stop, its
//!      availability snapshot, its secrets and provenance, its approval, a tool's call
//!      context). The gate is generic over it and knows no more of a run;
//!    - `context`: one run's context (who it acts for, its availability snapshot, its ids, its
//!      recorder, the call context a tool runs with, its conversation), which implements `Run`.
//!      A direct session has one too. A tool that calls another granted tool goes back through
//!      the gate by the nested invoker its call context carries: a trait object the code that
//!      makes a run arms once (`gate::arm_nested`), so nothing below the gate names the gate.
//! 3. Above the context, what moves one call:
//!    - `owed`: the final record a call owes once it has begun;
//!    - `gate`: the checks every call passes (with the egress check of tools that reach out),
//!      one room per tier (read, action, handoff), a call past the checks and the recording of
//!      its outcome (`gate::checked`) and the run of an approved action (`gate::execute`),
//!      all generic over the run (`Run`); the action tier hands the call to the run's
//!      `gate::action::Ask` and knows no channel; `gate::nested` makes the invoker through
//!      which a tool calls another;
//!    - `ledger`: the one owner of a proposal, from its `proposed` record to its one final
//!      record. The book, the store's row with its verdict and claims, the decisions waiting
//!      on this node and the final records this node owes are its state; each transition
//!      (propose, decide, claim, execute, settle, withdraw or end) is one function of it that
//!      changes the book, the store and the audit log together, and no other code writes a
//!      proposal's records (its module docs list the transitions and the invariant they keep);
//!    - `confirm`: how a person is asked about an action: one `Channel` (a `pub(crate)` trait)
//!      per way of asking, each its own file (`dialog`: a UI, the HTTP decisions route or a
//!      [`Confirmer`] such as MCP elicitation; `conversational`; `unavailable`), chosen once
//!      per call by a run's context (its `Ask`, in `confirm`); a channel asks and waits, and
//!      moves the proposal only through the ledger;
//!    - `carry`: the context an approved call whose run is gone (or that the decisions API
//!      approved) runs in, handed to the ledger that carries it out;
//!    - `spend`: the budget gate every paid model call of a run passes, the agent's and a
//!      classifier's;
//!    - `threshold`: the fractions of the user's and the organisation's caps a settled paid
//!      call carried the spend across, reported once each (an event and a `notice`).
//! 4. `driver` (the run loop, step by step) and `session` (the state a session keeps between
//!    turns on this node, and [`DirectSession`]).
//! 5. The facade: `runtime` (the [`Runtime`] and its [`RuntimeBuilder`]), `start`
//!    ([`Runtime::start`], [`Runtime::start_in_skill`]: the checks before anything is
//!    recorded, then the run's task), `decide`
//!    ([`Runtime::pending_decisions`], [`Runtime::decide_async`]) and `resume`
//!    ([`Runtime::resume_orphaned`], [`Runtime::prune_state`]); beside them, for run trees,
//!    `child` (a node's run, the tree's own records) and `tree_call` (a run tree's own model
//!    call, a branch's model router: within the tree's allowance and the caller's budget,
//!    reserved and settled in the budget store as `spend` does).
//!
//! # Confirmation channels: what holds on which path
//!
//! An action runs only after a person approved exactly its arguments, and at most once per
//! approval. The channels differ in how the person is asked:
//!
//! | Channel | How the person answers | Proposal ends as |
//! |---|---|---|
//! | Dialog ([`ConfirmMode::Dialog`]) | [`Runtime::decide`] / [`Runtime::decide_async`] (any node sharing the store) from the run's own user, organisation and role, or the runtime's [`Confirmer`] ([`RuntimeBuilder::confirmer`]), whichever the store records first | `confirmed` then `executed`/`failed`, or `rejected`, or `skipped` (reason `timeout`, `stopped`, `abandoned`) |
//! | Direct session with a [`Confirmer`] (MCP elicitation) | the confirmer's answer, or [`Runtime::decide`], whichever the store records first | as dialog; a channel failure is `skipped` with its [`Undecided`] code |
//! | Direct session without a confirmer | cannot ask | `skipped` at once; the caller gets a structured "confirmation required" result |
//! | Conversational ([`ConfirmMode::Conversational`]) | the user's next message, classified, on any node sharing the store; or [`Runtime::decide_async`] (the decisions API) | `confirmed` (then run in that same turn), `rejected`, or `skipped` with reason `superseded`, `cancelled` or `expired`; approved through the API: run by the session's next turn or [`Runtime::resume_orphaned`], whichever claims it |
//!
//! On every path:
//! - an action call is known by a call id the runtime mints for it (`call-` and 32 hex
//!   digits): its records, events, confirm requests and decisions carry that id, never the
//!   provider's (providers reuse ids such as `call_1` across runs); the model's own answer
//!   keeps the provider's id, and [`ConfirmRequest::caller_call_id`] the caller's;
//! - a dialog proposal (and a direct session's with a confirmer) is put in the state store
//!   before the person is asked: listed by [`Runtime::pending_decisions`] whatever events a
//!   subscriber missed, decided there once (one conditional update, whatever node or channel
//!   the decision comes through, the first one recorded holds), and run only by the node whose
//!   claim of its execution the store grants. A call that ends undecided (timeout, stop, a
//!   dropped caller) withdraws it, so a later decision runs nothing. A call waiting on one
//!   node hears a decision made on another at once when the store signals decisions
//!   (PostgreSQL's notifications), and otherwise from the one lookup its runtime makes for all
//!   its waiting calls every [`RuntimeBuilder::decision_poll`]; the row read back decides,
//!   never the signal; when its process is gone, [`Runtime::resume_orphaned`]
//!   carries the approved call out, exactly once;
//! - the `proposed` record is durable before the person is asked, and every later step of
//!   the proposal is recorded before it takes effect; a step whose record the log refuses
//!   does not happen (a refused `confirmed` record runs nothing, in every mode);
//! - the token minted on approval is bound to the session, the tool and the MAC of the exact
//!   arguments, and is redeemed once; the role's permission is checked again before the run;
//! - a conversational proposal is one entry of the runtime's proposal book, and is put in the
//!   state store too, kept in its session (see [Sessions](#sessions-durable-and-shared)): of
//!   concurrent answers to it on one node (two "yes" messages, an answer racing a stop)
//!   exactly one decides it; across nodes and channels, ending it is one conditional update
//!   of the store ([`Store::close_undecided`](crate::store::Store::close_undecided)) and
//!   carrying it out records the approval and claims the execution there
//!   ([`Store::claim_execution`](crate::store::Store::claim_execution)), so it runs at most
//!   once whatever node or channel answered, and only the node that ended it writes its final
//!   record;
//! - an approval not used in the turn that granted it lapses when that turn ends (`skipped`,
//!   reason `expired`): a later message never rides on an earlier "yes"; a proposal made in a
//!   turn that ends other than waiting for the answer (stopped, failed, iteration or budget
//!   limit) ends `skipped` with reason `cancelled`; a newer proposal in the session ends an
//!   undecided older one (`superseded`). A final record the log refuses at a turn's end does
//!   not keep the proposal open: it ends without one (failing closed) and the error is logged;
//! - a dialog proposal owes exactly one final record from the moment it is proposed, written
//!   by the call or, if the call's future is dropped, on its own ([`Runtime::records_settled`]);
//! - a decision is accepted only from the principal the run acts for: same user, organisation
//!   and role ([`DecisionError::NotYourRun`] otherwise, and nothing changes); a conversational
//!   answer comes from a run of that principal, since a session bound to the same user under
//!   another role starts afresh;
//! - when a session ends ([`Runtime::end_session`], idle expiry when the session is used again
//!   or purged by [`Runtime::purge_expired`] or the runtime's own sweep, eviction at the
//!   [session cap](RuntimeBuilder::max_sessions), or its user coming back under another role),
//!   every proposal in it ends with one final record: one waiting for the user's next message
//!   is `skipped` (reason `cancelled`, or `expired` for an approval not yet used), written by
//!   the runtime on its own ([`Runtime::records_settled`] waits for it); a dialog or direct call
//!   waiting for a decision ends `skipped` with reason `stopped`; from then on no proposal of
//!   the ended session can be approved or start running (one already running finishes);
//! - a final record the log refuses decides nothing while the proposal can still be decided
//!   (it stays where it was and ends later); at a turn's or session's end it ends the proposal
//!   anyway, without a record in the log (failing closed). So each proposal has at most one
//!   final record in the log, and exactly one unless the log refused it.
//!
//! # Sessions: durable and shared
//!
//! A session's conversation lives in the state store ([`RuntimeBuilder::store`]): its owner
//! (user, organisation *and* role), its history (text messages only, capped at four times the
//! replayed messages and bytes), the digest of its executed results and the conversational
//! proposal waiting for the user's next message. With a shared store (`agents_store`'s SQLite
//! file on one host, or PostgreSQL), a session started on one node goes on on any other:
//!
//! - a turn loads the session when it starts and binds it on first use; another user or
//!   organisation is refused ([`StartError::SessionNotYours`]) on every node; the same user
//!   under another role, or after the [idle timeout](RuntimeBuilder::session_idle_timeout),
//!   starts a fresh context (the old one's proposals end, its tokens are revoked);
//! - a turn saves what it changed when it ends, over the revision it read (one conditional
//!   statement of the store, [`Store::save_session`](crate::store::Store::save_session)).
//!   When another turn (on any node) saved the session meanwhile, the turn is applied again to
//!   what is there, so two overlapping turns both count; after a few conflicting attempts the
//!   turn is not remembered and a `notice` record says so. A session ended, expired or rebound
//!   to another role meanwhile does not take the turn;
//! - replay stays bounded by [`Limits::history_messages`](agents_core::Limits::history_messages)
//!   and [`RuntimeBuilder::history_bytes`]; an approval lapses with the turn that granted it
//!   (it is never stored); [`Runtime::end_session_async`] ends a session for every node, and
//!   [`Runtime::prune_state`] drops idle ones from the store;
//! - the runtime sweeps on its own ([`RuntimeBuilder::sweep_every`], every minute by default):
//!   expired tokens go, and sessions idle past the idle timeout (without a model run under way
//!   on this node) end here and are dropped from the store, whether or not the application
//!   calls [`Runtime::purge_expired`] or [`Runtime::prune_state`]. At most
//!   [`RuntimeBuilder::max_sessions`] sessions (10 000 by default) are held on a node beside
//!   those with runs under way: a new one evicts the least recently used (see there for what
//!   that ends, and the memory a session holds);
//! - a conversational proposal is listed by [`Runtime::pending_decisions`] (after a restart
//!   too) and may be answered in the conversation on any node or through
//!   [`Runtime::decide_async`]; an approval through the API is carried out by the session's
//!   next turn or by [`Runtime::resume_orphaned`], whichever claims it first, once. Nodes
//!   that carry out each other's proposals need the same
//!   [`RuntimeBuilder::server_key`] (tokens are bound to MACs made with it).
//!
//! What stays in one node's memory: the egress provenance ledger of a session (a tool that
//! reaches out compares its arguments with the results of this node's turns; once a turn of
//! the session ran on another node, the check fails closed on this one: every value the user
//! did not type here waits for a person) and the proposal book's in-flight claims. The
//! in-memory store keeps everything in this process and answers at once, so a single node
//! behaves as before, with nothing to wait for.
//!
//! The model-based test `tests/run_model.rs` drives random schedules of these channels
//! (proposals, duplicated, concurrent, late and wrong-role decisions, stops, iteration limits,
//! confirmation timeouts, refused records, tool panics, session ends) and checks, from the
//! records offered to the log and the tool's own log of its runs, that every proposal ends as
//! above and that the tool ran at most once per proposal, only in the turn whose approval is
//! on record, before that turn ended.
//!
//! A running tool is contained: a panic fails the call (`failed`, reason `panicked`, its text
//! withheld) and the run goes on; a call that outlives [`RuntimeBuilder::tool_timeout`] or a
//! stop of the run is ended (`failed`, reason `timeout` or `stopped`); a result larger than
//! [`RuntimeBuilder::max_result_bytes`] is cut, with a notice, before anyone sees it. The model
//! reads at most [`RuntimeBuilder::max_model_result_bytes`] (64 KiB by default) of any one
//! result: the start of a longer one, then a notice of how much was cut and that it is not
//! visible; the application (events, a calling tool) still gets the whole value, and the
//! `executed` record keeps the keyed digest of the whole result and says how much the model was
//! shown. This bounds what a tool result costs the model's context against a tool (or the data
//! behind it) that returns too much; it does not stop the start of a result from steering the
//! model. A stopped
//! run starts no tool; a tool that finishes in its first poll (most read tools) is given no
//! timer and no watch on the stop, and the deadline of one that does not counts from before
//! that first poll.
//!
//! # Redaction: what holds on which path
//!
//! - Arguments in records, events and confirmation requests are redacted by the tool's input
//!   schema: every position marked `x-agents-secret` (a [`Secret`](crate::Secret) field,
//!   nested in structs, options, vectors and maps) is masked, as is every key on the
//!   runtime's [`RedactionKeys`](agents_core::redact::RedactionKeys) list.
//! - The *values* found at schema-marked positions are masked wherever else they appear in
//!   texts derived from the call: the typed-parse refusal (a serde error quoting an
//!   argument), an interceptor's denial reason, other argument positions, the tool's error
//!   message and its result (as the model, the events and the records receive it), and an
//!   interceptor's substitute result. Each value is matched as written, with any byte
//!   percent-, `\x`-, `\u00`- or HTML-escaped, in hex and in base64 (values of six bytes or
//!   more); values shorter than four bytes are not searched for.
//! - A strict-parse refusal (the arguments are not strict JSON) masks the values found at
//!   secret positions when the text is read leniently (every value of a key given twice,
//!   numbers of any size), and a number it quotes as beyond ±2^53 when that number's position
//!   is secret. A text that is not JSON at all is quoted by position only (line, column and
//!   the JSON pointer of keys read so far), never by a value.
//! - An interceptor's replacement arguments that fail to parse: the refusal masks their secret
//!   values as well as the call's.
//! - A run's error ([`RunError`], the `error` event) and a recorded provider
//!   failure mask the secret values of every call the run made (a provider's error may quote
//!   the request; the output parse error quotes the model's answer). The model's own answer
//!   ([`RunReport::text`], `message` and `token` events) is passed on as the model wrote it.
//!   A [`DirectResult`]'s error is a call's refusal or tool error, masked as above.
//! - The runtime's own tracing output (spans and events, at every level) carries ids, tool
//!   names and reasons, never argument values; the redaction fuzz test scans it.
//! - Not covered: values at positions only the key list masks, schema constructs the schema
//!   walker does not follow (see `agents_core::redact`), a map key that is itself secret (a
//!   strict-parse refusal may name it in a JSON pointer), text a tool writes to its own logs
//!   or to tracing, and encodings stacked on one another.
//! - What the records keep of a call's values is the runtime's
//!   [`RuntimeBuilder::audit_values`]. By default (`Omitted`) no value: each argument's name
//!   with a keyed digest of its value (HMAC-SHA-256 under the server key), the result's keyed
//!   digest, and argument values of four bytes or more replaced by `[omitted]` in the record's
//!   reason (a tool's error message that names a person otherwise than by an argument's
//!   value is the tool's to keep clean). `Masked` keeps the argument values, secret positions
//!   masked as above; `Full` the result's redacted value too. The person deciding sees the
//!   values on the card; the state store keeps them for that, not the log. A setting wider
//!   than the agent's manifest declares (`audit: { values: ... }` in its `agent!`) refuses
//!   the run at its start ([`StartError::AuditValuesNotDeclared`]).

/// Awaits a future where it is made: `.await` moves a future it is given once more before it
/// keeps it in the caller's own future, and a large one (the gate's, a tool call's) is then
/// copied twice on every call. Pinned in place and polled there, it is written once.
macro_rules! await_in_place {
    ($future:expr) => {{
        let mut future = ::std::pin::pin!($future);
        ::std::future::poll_fn(|cx| ::std::future::Future::poll(future.as_mut(), cx)).await
    }};
}

mod call;
mod carry;
mod child;
mod choice;
mod confirm;
mod context;
mod conversation;
mod decide;
mod decision;
mod driver;
mod gate;
mod granted;
#[cfg(feature = "knowledge")]
mod knowledge;
mod ledger;
mod limit;
mod outcome;
mod owed;
mod pending;
mod place;
mod proposal;
mod record;
mod recorder;
mod resume;
mod runtime;
mod scope;
mod secrets;
mod session;
mod shared;
#[cfg(test)]
mod size_tests;
mod skill;
mod slot;
mod spend;
mod start;
mod start_skill;
mod sync;
mod threshold;
mod tree_call;

#[doc(hidden)]
pub use child::granted_agent;
pub(crate) use child::{TreeEnd, TreeIds};
pub(crate) use choice::{one_call_argument, shown};
pub use conversation::{DIGEST_ENTRIES, DIGEST_ENTRY_CHARS, DIGEST_TOTAL_CHARS};
pub use decision::{
    ConfirmAnswer, ConfirmMode, ConfirmRequest, Confirmer, DeciderView, DecisionError, REJECTED_MESSAGE, Undecided,
    Verdict,
};
pub use granted::GrantedAgent;
pub use ledger::ResumedCall;
pub use limit::TreeLimit;
pub(crate) use limit::{NodeScope, TreeAllowance};
pub use outcome::{
    CallStatus, CallSummary, RunError, RunHandle, RunOutput, RunReport, RunResultExt, RunStatus, RunUsage, StartError,
};
pub use pending::PendingDecision;
pub use resume::{Pruned, RESUME_BATCH};
pub use runtime::{
    DEFAULT_DECISION_POLL, DEFAULT_HISTORY_BYTES, DEFAULT_MAX_MODEL_RESULT_BYTES, DEFAULT_MAX_RESULT_BYTES,
    DEFAULT_MAX_SESSIONS, DEFAULT_MAX_TOOL_CALLS_PER_ANSWER, DEFAULT_PROPOSAL_RETENTION, DEFAULT_SESSION_IDLE_TIMEOUT,
    DEFAULT_SETTLE_LEASE, DEFAULT_SWEEP_EVERY, DEFAULT_TOOL_TIMEOUT, RUN_SLOT_LEASE, Runtime, RuntimeBuilder,
};
pub use session::{DirectResult, DirectSession};
pub use shared::{DisabledFallback, DisabledTools};
pub use skill::CHOICE_TOOL;
pub(crate) use tree_call::TreeCallError;
