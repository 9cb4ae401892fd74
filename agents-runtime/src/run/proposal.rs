//! The life of a proposed action on this node, as a state machine (the proposal book): the
//! ledger's in-process state (see `ledger`, the one owner of a proposal, which moves an entry
//! only together with the state store and the audit log); the state store decides between
//! nodes (see `pending` and `ledger`).
//!
//! ```text
//! proposed ──▶ confirmed ──▶ executing ──▶ executed | failed
//!    │             │
//!    └─────────────┴──▶ rejected | expired | cancelled | superseded
//! ```
//!
//! A transition is claimed, then its audit record is written, then it takes effect: a
//! claimed transition whose record the log refuses is abandoned and the proposal stays
//! where it was. A claim is exclusive, so of any number of concurrent decisions on one
//! proposal (two "yes" messages, an approval racing a stop) exactly one moves it, and a
//! proposal is executed at most once. A proposal that reaches a final state leaves the book;
//! [`Book::resolve_turn`] moves every proposal a turn left open (and every approval it did
//! not use) to a final state when the turn ends, so nothing decided in an ended turn can run
//! later. [`Book::end_session`] does the same when a session ends (explicitly, by idle expiry
//! or because its principal's role changed): a proposal no live call waits on ends at once,
//! and every other proposal of the session may from then on only move to a final state.

use super::record::RecordIds;
use super::sync::lock;
use crate::audit::AuditError;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// Where a proposal is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(super) enum State {
    /// Audited and waiting for a person.
    Proposed,
    /// A person approved it; it may run once, in the turn that granted the approval.
    Confirmed,
    /// Running.
    Executing,
    /// Ran and returned (final).
    Executed,
    /// Ran and failed, or its outcome is unknown (final).
    Failed,
    /// A person declined it (final).
    Rejected,
    /// Its turn ended before it was decided or used (final).
    Expired,
    /// Its run was stopped, or its channel went away (final).
    Cancelled,
    /// A newer proposal in the same session replaced it (final).
    Superseded,
}

impl State {
    /// Whether the proposal's life is over.
    pub(super) fn is_final(self) -> bool {
        !matches!(self, State::Proposed | State::Confirmed | State::Executing)
    }

    /// Whether the machine allows a move from `self` to `to`.
    pub(super) fn allows(self, to: State) -> bool {
        use State::*;
        match self {
            Proposed => matches!(to, Confirmed | Rejected | Expired | Cancelled | Superseded),
            Confirmed => matches!(to, Executing | Expired | Cancelled),
            Executing => matches!(to, Executed | Failed),
            _ => false,
        }
    }
}

/// Why a transition did not happen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Refused {
    /// The proposal is not in a state that allows the move (decided already, ended, unknown),
    /// or another transition of it is under way.
    NotAllowed,
    /// The audit log refused the transition's record; the proposal stays where it was.
    Audit,
}

struct Entry {
    state: State,
    /// The session the proposal belongs to.
    session: String,
    /// The turn (run id) that proposed it, or that granted its approval.
    turn: String,
    /// A transition is claimed and its record is being written.
    busy: bool,
    /// A call is waiting on the proposal and writes its final record itself (dialog mode and
    /// direct sessions); otherwise the proposal waits in its session for the user's next
    /// message (conversational mode).
    waited_on: bool,
    /// Its session ended: only a final state may be reached from now on.
    ended: bool,
    /// The ids of the run that proposed it, for the records written when its session ends.
    ids: Arc<RecordIds>,
}

/// An open proposal its session's end resolved at once: its final state and reason, and the
/// ids of the run that proposed it. The proposal has left the book; its record is owed.
pub(super) struct Ended {
    pub(super) call_id: String,
    pub(super) state: State,
    pub(super) ids: Arc<RecordIds>,
}

/// The open proposals of one runtime, by call id.
#[derive(Default)]
pub(super) struct Book {
    /// By (session, call id): a model's call ids repeat between sessions.
    entries: Mutex<HashMap<(String, String), Entry>>,
}

/// An exclusive claim on one transition; [`Claim::commit`] makes it take effect and
/// [`Claim::abort`] (or dropping the claim) leaves the proposal where it was.
pub(super) struct Claim<'a> {
    book: &'a Book,
    key: (String, String),
    to: State,
    done: bool,
}

impl Book {
    /// Opens a proposal (its `proposed` record is durable, or about to be written by the call
    /// that waits on it: `waited_on`) in the session of `ids`, owned by its run; `false`,
    /// changing nothing, when a proposal under that call id is open already.
    pub(super) fn open(&self, ids: &Arc<RecordIds>, call_id: &str, waited_on: bool) -> bool {
        let session = ids.session_id.as_str();
        let entry = Entry {
            state: State::Proposed,
            session: session.into(),
            turn: ids.run_id.to_string(),
            busy: false,
            waited_on,
            ended: false,
            ids: ids.clone(),
        };
        match lock(&self.entries).entry((session.to_owned(), call_id.to_owned())) {
            std::collections::hash_map::Entry::Occupied(_) => false,
            std::collections::hash_map::Entry::Vacant(v) => {
                v.insert(entry);
                true
            }
        }
    }

    /// The state of an open proposal; `None` once it ended (or never existed).
    #[cfg(test)]
    pub(super) fn state(&self, session: &str, call_id: &str) -> Option<State> {
        lock(&self.entries).get(&(session.to_owned(), call_id.to_owned())).map(|e| e.state)
    }

    /// Claims the move of `call_id` to `to`, when the machine allows it from where the
    /// proposal is and no other transition of it is under way.
    pub(super) fn claim(&self, session: &str, call_id: &str, to: State) -> Option<Claim<'_>> {
        let key = (session.to_owned(), call_id.to_owned());
        let mut entries = lock(&self.entries);
        let entry = entries.get_mut(&key)?;
        if entry.busy || !entry.state.allows(to) || (entry.ended && !to.is_final()) {
            return None;
        }
        entry.busy = true;
        Some(Claim { book: self, key, to, done: false })
    }

    /// Claims the start of an approved proposal's execution, only for the turn that granted
    /// the approval: an approval never outlives its turn.
    pub(super) fn claim_execution(&self, session: &str, call_id: &str, turn: &str) -> Option<Claim<'_>> {
        let owned = lock(&self.entries).get(&(session.to_owned(), call_id.to_owned())).is_some_and(|e| e.turn == turn);
        // The owner does not change while the entry exists but through a claim, which this
        // one then excludes.
        if owned { self.claim(session, call_id, State::Executing) } else { None }
    }

    /// Ends an open proposal without its record (the log refused it): a proposal whose turn
    /// ended must not stay decidable, so resolution fails closed.
    pub(super) fn close(&self, session: &str, call_id: &str) {
        lock(&self.entries).remove(&(session.to_owned(), call_id.to_owned()));
    }

    /// Claims the move, writes its record with `audit`, and makes it take effect only when
    /// the record is durable. `turn`, when given, becomes the proposal's owning turn (the
    /// turn that granted an approval).
    pub(super) async fn transition<Fut>(
        &self,
        session: &str,
        call_id: &str,
        to: State,
        turn: Option<&str>,
        audit: impl FnOnce() -> Fut,
    ) -> Result<(), Refused>
    where
        Fut: Future<Output = Result<(), AuditError>>,
    {
        let claim = self.claim(session, call_id, to).ok_or(Refused::NotAllowed)?;
        match audit().await {
            Ok(()) => {
                claim.commit(turn);
                Ok(())
            }
            Err(_) => {
                claim.abort();
                Err(Refused::Audit)
            }
        }
    }

    /// The open proposals of `session` that `turn` owns and that are not running, with their
    /// states and whether their session ended: what the turn must resolve when it ends.
    pub(super) fn open_of_turn(&self, session: &str, turn: &str) -> Vec<(String, State, bool)> {
        let entries = lock(&self.entries);
        let mut open: Vec<(String, State, bool)> = entries
            .iter()
            .filter(|(_, e)| e.session == session && e.turn == turn && !e.busy && e.state != State::Executing)
            .map(|((_, id), e)| (id.clone(), e.state, e.ended))
            .collect();
        open.sort();
        open
    }

    /// Whether the session of an open proposal ended (`false` when it is not open).
    pub(super) fn session_ended(&self, session: &str, call_id: &str) -> bool {
        lock(&self.entries).get(&(session.to_owned(), call_id.to_owned())).is_some_and(|e| e.ended)
    }

    /// `session` ended: every proposal in it may from now on only reach a final state, and
    /// those that no call waits on and no transition holds end here: a proposal still waiting
    /// for the user's answer is `Cancelled`, an approval not yet used `Expired`. They leave the
    /// book at once (the ending fails closed); their final records are returned to be written.
    pub(super) fn end_session(&self, session: &str) -> Vec<Ended> {
        let mut entries = lock(&self.entries);
        let mut ended = Vec::new();
        entries.retain(|(s, call_id), e| {
            if s != session {
                return true;
            }
            e.ended = true;
            let to = match e.state {
                State::Proposed => State::Cancelled,
                State::Confirmed => State::Expired,
                _ => return true,
            };
            if e.busy || e.waited_on {
                return true;
            }
            ended.push(Ended { call_id: call_id.clone(), state: to, ids: e.ids.clone() });
            false
        });
        ended.sort_by(|a, b| a.call_id.cmp(&b.call_id));
        ended
    }

    /// The open, undecided proposals of `session` that wait in it for the user's next message
    /// (no call waits on them) and that no transition holds.
    pub(super) fn proposed_in(&self, session: &str) -> Vec<String> {
        let entries = lock(&self.entries);
        let mut ids: Vec<String> = entries
            .iter()
            .filter(|(_, e)| e.session == session && e.state == State::Proposed && !e.busy && !e.waited_on)
            .map(|((_, id), _)| id.clone())
            .collect();
        ids.sort();
        ids
    }
}

impl Claim<'_> {
    /// The move takes effect; a final state closes the proposal.
    pub(super) fn commit(mut self, turn: Option<&str>) {
        self.done = true;
        let mut entries = lock(&self.book.entries);
        if self.to.is_final() {
            entries.remove(&self.key);
        } else if let Some(entry) = entries.get_mut(&self.key) {
            entry.state = self.to;
            entry.busy = false;
            if let Some(turn) = turn {
                entry.turn = turn.to_owned();
            }
        }
    }

    /// The move is abandoned; the proposal stays where it was.
    pub(super) fn abort(mut self) {
        self.release();
    }

    fn release(&mut self) {
        if !self.done {
            self.done = true;
            if let Some(entry) = lock(&self.book.entries).get_mut(&self.key) {
                entry.busy = false;
            }
        }
    }
}

impl Drop for Claim<'_> {
    fn drop(&mut self) {
        self.release();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeMap;

    fn ids(session: &str, turn: &str) -> Arc<RecordIds> {
        let p = agents_core::Principal::new("u", "o", "r");
        Arc::new(RecordIds::from_parts(turn, session, "q", &p, "agent", "m"))
    }

    #[test]
    fn a_refused_record_leaves_the_proposal_where_it_was_and_a_durable_one_moves_it() {
        let book = Book::default();
        assert!(book.open(&ids("s", "t1"), "c", false));
        assert!(!book.open(&ids("s", "t2"), "c", false), "one open proposal per call id");
        let refused = futures::executor::block_on(
            book.transition("s", "c", State::Confirmed, None, || async { Err(AuditError::Refused("no".into())) }),
        );
        assert_eq!(refused, Err(Refused::Audit));
        assert_eq!(book.state("s", "c"), Some(State::Proposed));
        let moved =
            futures::executor::block_on(book.transition("s", "c", State::Confirmed, Some("t2"), || async { Ok(()) }));
        assert_eq!(moved, Ok(()));
        assert_eq!(book.state("s", "c"), Some(State::Confirmed));
        assert!(book.claim_execution("s", "c", "t1").is_none(), "only the granting turn may run it");
        assert!(book.claim_execution("s", "c", "t2").is_some());
        let again = futures::executor::block_on(book.transition("s", "c", State::Rejected, None, || async { Ok(()) }));
        assert_eq!(again, Err(Refused::NotAllowed), "a decided proposal is not decided again");
    }

    /// One step of a schedule. Deciders and executors act in two steps (claim, then finish),
    /// so schedules interleave concurrent decisions on one proposal.
    #[derive(Debug, Clone)]
    enum Op {
        /// The current turn proposes proposal `p` (once).
        Propose(usize),
        /// Actor `a` claims a decision on `p`: approve (`true`) or reject.
        BeginDecide { a: usize, p: usize, approve: bool },
        /// Actor `a` finishes its claim; the log takes the record or refuses it.
        FinishDecide { a: usize, sink_ok: bool },
        /// The current turn tries to run approved proposal `p`.
        Execute(usize),
        /// The current turn ends, waiting for the user's answer or not; each resolution record
        /// is refused when `sink_ok` is false.
        EndTurn { awaiting: bool, sink_ok: bool },
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            (0..4usize).prop_map(Op::Propose),
            (0..3usize, 0..4usize, any::<bool>()).prop_map(|(a, p, approve)| Op::BeginDecide { a, p, approve }),
            (0..3usize, any::<bool>()).prop_map(|(a, sink_ok)| Op::FinishDecide { a, sink_ok }),
            (0..4usize).prop_map(Op::Execute),
            (any::<bool>(), any::<bool>()).prop_map(|(awaiting, sink_ok)| Op::EndTurn { awaiting, sink_ok }),
        ]
    }

    fn cases() -> u32 {
        std::env::var("AGENTS_PROPOSAL_CASES").ok().and_then(|n| n.parse().ok()).unwrap_or(10_000)
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: cases(), ..ProptestConfig::default() })]

        /// Every schedule: each proposal runs at most once, only in the turn that approved it,
        /// and ends with exactly one final record unless it still waits for the user's answer.
        #[test]
        fn every_schedule_runs_a_proposal_at_most_once_and_ends_it_once(ops in proptest::collection::vec(op(), 1..40)) {
            let book = Book::default();
            let session = "s";
            let mut turn = 0u32;
            let mut proposed_in: BTreeMap<usize, u32> = BTreeMap::new();
            let mut finals: BTreeMap<usize, Vec<State>> = BTreeMap::new();
            let mut runs: BTreeMap<usize, Vec<u32>> = BTreeMap::new();
            let mut granted_in: BTreeMap<usize, u32> = BTreeMap::new();
            let mut actors: Vec<Option<(usize, Claim<'_>, State)>> = (0..3).map(|_| None).collect();
            let id = |p: usize| format!("call-{p}");
            for op in ops {
                match op {
                    Op::Propose(p) => {
                        if let std::collections::btree_map::Entry::Vacant(v) = proposed_in.entry(p) {
                            v.insert(turn);
                            prop_assert!(book.open(&ids(session, &turn.to_string()), &id(p), false));
                        }
                    }
                    Op::BeginDecide { a, p, approve } => {
                        if actors[a].is_none() {
                            let to = if approve { State::Confirmed } else { State::Rejected };
                            actors[a] = book.claim(session, &id(p), to).map(|c| (p, c, to));
                        }
                    }
                    Op::FinishDecide { a, sink_ok } => {
                        if let Some((p, claim, to)) = actors[a].take() {
                            if sink_ok {
                                claim.commit(Some(&turn.to_string()));
                                if to == State::Confirmed {
                                    granted_in.insert(p, turn);
                                } else {
                                    finals.entry(p).or_default().push(to);
                                }
                            } else {
                                claim.abort();
                            }
                        }
                    }
                    Op::Execute(p) => {
                        if let Some(running) = book.claim_execution(session, &id(p), &turn.to_string()) {
                            running.commit(None);
                            runs.entry(p).or_default().push(turn);
                            let done = book.claim(session, &id(p), State::Executed);
                            prop_assert!(done.is_some(), "a running proposal can end");
                            done.unwrap().commit(None);
                            finals.entry(p).or_default().push(State::Executed);
                        }
                    }
                    Op::EndTurn { awaiting, sink_ok } => {
                        // Claims in flight belong to the turn's requests, which end with it.
                        for a in &mut actors {
                            *a = None;
                        }
                        for (call, state, _) in book.open_of_turn(session, &turn.to_string()) {
                            let p: usize = call["call-".len()..].parse().unwrap();
                            let to = match state {
                                State::Confirmed => State::Expired,
                                State::Proposed if !awaiting => State::Cancelled,
                                _ => continue,
                            };
                            let claim = book.claim(session, &call, to).expect("nothing else holds a claim");
                            if sink_ok { claim.commit(None) } else { claim.abort(); book.close(session, &call) }
                            finals.entry(p).or_default().push(to);
                        }
                        turn += 1;
                    }
                }
            }
            for a in &mut actors {
                *a = None;
            }
            for (p, in_turns) in &runs {
                prop_assert_eq!(in_turns.len(), 1, "proposal {} ran {:?}", p, in_turns);
                prop_assert_eq!(Some(&in_turns[0]), granted_in.get(p), "proposal {} ran outside the turn that approved it", p);
            }
            for p in proposed_in.keys() {
                let ended = finals.get(p).map_or(0, Vec::len);
                match book.state(session, &id(*p)) {
                    None => prop_assert_eq!(ended, 1, "proposal {} ended {:?}", p, finals.get(p)),
                    Some(state) => {
                        prop_assert_eq!(ended, 0);
                        // Only an undecided proposal outlives its turn (waiting for the answer),
                        // or a decision of the turn still under way.
                        let current = granted_in.get(p).copied() == Some(turn);
                        prop_assert!(state == State::Proposed || current, "proposal {} left {:?}", p, state);
                    }
                }
            }
        }
    }
}
