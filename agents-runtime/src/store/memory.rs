//! The in-memory store: one process, one lock, the runtime's default.

use super::{
    DecideOutcome, ProposalCursor, ProposalPage, ProposalRecord, ProposalState, Redeemed, SessionRecord, SessionSaved,
    SlotId, SlotOwner, Store, StoreError, StoreResult, StoredVerdict, TokenGrant,
};
use crate::BoxFuture;
use crate::audit::{AuditRecord, ChainSummary, GENESIS_HASH};
use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Duration;
use tokio::time::Instant;

/// Holds the runtime's state in this process's memory: what one process agrees with itself.
/// Nothing survives the process, and other processes do not see it; use a durable store
/// (`agents_store`) for that.
///
/// Expiry is measured on tokio's clock, so tests that pause time see tokens, slots and
/// sessions expire as time is advanced.
#[derive(Debug, Default)]
pub struct MemoryStore {
    state: Mutex<State>,
}

/// How often minting sweeps expired tokens out of a [`MemoryStore`], at most.
pub const MEMORY_SWEEP_EVERY: Duration = Duration::from_secs(10);

#[derive(Debug, Default)]
struct State {
    /// Live tokens: a redeemed one is removed at once (nothing can use it again).
    tokens: HashMap<String, (TokenGrant, Instant)>,
    next_token_sweep: Option<Instant>,
    slots: HashMap<String, (SlotOwner, Instant)>,
    /// Proposals, by call id.
    proposals: HashMap<String, Held>,
    proposal_counter: u64,
    next_proposal_sweep: Option<Instant>,
    sessions: HashMap<String, (SessionRecord, Instant)>,
    streams: HashMap<String, Vec<String>>,
    heads: HashMap<String, (u64, String)>,
    /// The run trees whose closing was claimed, and by which node.
    closed_trees: HashMap<String, String>,
}

impl MemoryStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // Every update is a whole insert, remove or field write: a panic elsewhere cannot
        // leave a half-made entry.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Tokens held: minted, not redeemed, not yet swept or pruned.
    pub fn token_count(&self) -> usize {
        self.lock().tokens.len()
    }

    /// Proposals held: open ones, and those over but not yet swept out (a proposal is swept
    /// when another is stored, [`MEMORY_SWEEP_EVERY`] after it ended).
    pub fn proposal_count(&self) -> usize {
        self.lock().proposals.len()
    }

    /// Conversation sessions held: live ones, and idle ones not yet pruned.
    pub fn session_count(&self) -> usize {
        self.lock().sessions.len()
    }
}

/// A proposal with its order, when it was stored and, once over (its final record claimed:
/// approved and claimed, or rejected and settled), when.
#[derive(Debug)]
struct Held {
    state: ProposalState,
    order: u64,
    put: Instant,
    /// When its final record was claimed (or the claim last taken over or renewed).
    over: Option<Instant>,
    /// Who holds the claim: its claimant, or who took it over last.
    held_by: Option<String>,
    /// When its final record was marked written.
    recorded: Option<Instant>,
}

impl State {
    /// The proposals `keep` selects, oldest first, at most `limit`.
    fn oldest(&self, limit: u32, keep: impl Fn(&Held) -> bool) -> Vec<ProposalState> {
        self.page(ProposalCursor::START, limit, keep).proposals
    }

    /// The proposals stored after `after` that `keep` selects, oldest first, at most `limit`.
    fn page(&self, after: ProposalCursor, limit: u32, keep: impl Fn(&Held) -> bool) -> ProposalPage {
        let mut found: Vec<_> = self
            .proposals
            .values()
            .filter(|h| h.order > after.0 && keep(h))
            .map(|h| (h.order, h.state.clone()))
            .collect();
        found.sort_by_key(|(order, _)| *order);
        found.truncate(limit as usize);
        let full = found.len() == limit as usize;
        let next = found.last().filter(|_| full).map(|(order, _)| ProposalCursor(*order));
        ProposalPage { next, proposals: found.into_iter().map(|(_, p)| p).collect() }
    }

    fn sweep_tokens(&mut self, now: Instant) -> u64 {
        let before = self.tokens.len();
        self.tokens.retain(|_, (_, expires)| *expires > now);
        // A burst that expired leaves its table behind unless it is given back.
        if self.tokens.capacity() > 64 && self.tokens.len() < self.tokens.capacity() / 4 {
            self.tokens.shrink_to_fit();
        }
        self.next_token_sweep = Some(now + MEMORY_SWEEP_EVERY);
        (before - self.tokens.len()) as u64
    }
}

fn ready<T: Send + 'static>(value: StoreResult<T>) -> BoxFuture<'static, StoreResult<T>> {
    Box::pin(std::future::ready(value))
}

impl Store for MemoryStore {
    fn answers_at_once(&self) -> bool {
        true
    }

    fn mint_token<'a>(&'a self, grant: &'a TokenGrant, ttl: Duration) -> BoxFuture<'a, StoreResult<()>> {
        let now = Instant::now();
        let mut state = self.lock();
        if state.tokens.contains_key(&grant.id) {
            return ready(Err(StoreError::Invalid(format!("token id `{}` is taken", grant.id))));
        }
        // Expired tokens are swept out when a sweep is due, so memory stays bounded by the
        // tokens minted within one lifetime plus the sweep interval, even without pruning.
        if state.next_token_sweep.is_none_or(|due| due <= now) {
            state.sweep_tokens(now);
        }
        state.tokens.insert(grant.id.clone(), (grant.clone(), now + ttl));
        ready(Ok(()))
    }

    fn redeem_token<'a>(&'a self, id: &'a str) -> BoxFuture<'a, StoreResult<Redeemed>> {
        let mut state = self.lock();
        let answer = match state.tokens.remove(id) {
            Some((grant, expires)) => Redeemed::Taken { grant, expired: Instant::now() >= expires },
            None => Redeemed::Unknown,
        };
        ready(Ok(answer))
    }

    fn revoke_session_tokens<'a>(&'a self, session_id: &'a str) -> BoxFuture<'a, StoreResult<u64>> {
        let mut state = self.lock();
        let before = state.tokens.len();
        state.tokens.retain(|_, (g, _)| g.session_id != session_id);
        ready(Ok((before - state.tokens.len()) as u64))
    }

    fn prune_tokens(&self) -> BoxFuture<'_, StoreResult<u64>> {
        ready(Ok(self.lock().sweep_tokens(Instant::now())))
    }

    fn acquire_slot<'a>(
        &'a self,
        owner: &'a SlotOwner,
        cap: u32,
        lease: Duration,
    ) -> BoxFuture<'a, StoreResult<Option<SlotId>>> {
        let now = Instant::now();
        let mut state = self.lock();
        state.slots.retain(|_, (_, until)| *until > now);
        let held = state.slots.values().filter(|(o, _)| o == owner).count();
        if held >= cap as usize {
            return ready(Ok(None));
        }
        let id = uuid::Uuid::new_v4().to_string();
        state.slots.insert(id.clone(), (owner.clone(), now + lease));
        ready(Ok(Some(SlotId(id))))
    }

    fn renew_slot<'a>(&'a self, slot: &'a SlotId, lease: Duration) -> BoxFuture<'a, StoreResult<bool>> {
        let now = Instant::now();
        let mut state = self.lock();
        let renewed = match state.slots.get_mut(&slot.0) {
            Some((_, until)) => {
                *until = now + lease;
                true
            }
            _ => false,
        };
        ready(Ok(renewed))
    }

    fn release_slot<'a>(&'a self, slot: &'a SlotId) -> BoxFuture<'a, StoreResult<()>> {
        self.lock().slots.remove(&slot.0);
        ready(Ok(()))
    }

    fn slot_held<'a>(&'a self, slot: &'a SlotId) -> BoxFuture<'a, StoreResult<bool>> {
        let now = Instant::now();
        ready(Ok(self.lock().slots.get(&slot.0).is_some_and(|(_, until)| *until > now)))
    }

    fn active_slots<'a>(&'a self, owner: &'a SlotOwner) -> BoxFuture<'a, StoreResult<u32>> {
        let now = Instant::now();
        let n = self.lock().slots.values().filter(|(o, until)| o == owner && *until > now).count();
        ready(Ok(n as u32))
    }

    fn put_proposal<'a>(&'a self, proposal: &'a ProposalRecord) -> BoxFuture<'a, StoreResult<()>> {
        let mut state = self.lock();
        if state.proposals.contains_key(&proposal.call_id) {
            return ready(Err(StoreError::Invalid(format!("call id `{}` is taken", proposal.call_id))));
        }
        // Proposals that are over are swept out a sweep interval after they ended (until then
        // a second decision still finds them decided), so memory stays bounded.
        let now = Instant::now();
        if state.next_proposal_sweep.is_none_or(|due| due <= now) {
            state.proposals.retain(|_, held| held.recorded.is_none_or(|at| at + MEMORY_SWEEP_EVERY > now));
            state.next_proposal_sweep = Some(now + MEMORY_SWEEP_EVERY);
        }
        state.proposal_counter += 1;
        let order = state.proposal_counter;
        let entry = ProposalState {
            proposal: proposal.clone(),
            verdict: None,
            reason: None,
            claimed_by: None,
            settled_by: None,
        };
        state.proposals.insert(
            proposal.call_id.clone(),
            Held { state: entry, order, put: now, over: None, held_by: None, recorded: None },
        );
        ready(Ok(()))
    }

    fn decide<'a>(
        &'a self,
        call_id: &'a str,
        org_id: &'a str,
        user_id: &'a str,
        verdict: StoredVerdict,
        reason: Option<&'a str>,
        seal: &'a str,
    ) -> BoxFuture<'a, StoreResult<DecideOutcome>> {
        let mut state = self.lock();
        let outcome = match state.proposals.get_mut(call_id) {
            None => DecideOutcome::Unknown,
            Some(h) if h.state.proposal.org_id != org_id || h.state.proposal.user_id != user_id => {
                DecideOutcome::NotYours
            }
            Some(h) if h.state.verdict.is_some() => DecideOutcome::AlreadyDecided,
            Some(h) => {
                h.state.verdict = Some(verdict);
                h.state.reason = reason.map(str::to_owned);
                seal.clone_into(&mut h.state.proposal.seal);
                DecideOutcome::Recorded
            }
        };
        ready(Ok(outcome))
    }

    fn proposal<'a>(&'a self, call_id: &'a str) -> BoxFuture<'a, StoreResult<Option<ProposalState>>> {
        ready(Ok(self.lock().proposals.get(call_id).map(|h| h.state.clone())))
    }

    fn pending_for<'a>(&'a self, org_id: &'a str, user_id: &'a str) -> BoxFuture<'a, StoreResult<Vec<ProposalRecord>>> {
        let state = self.lock();
        let mut pending: Vec<_> = state
            .proposals
            .values()
            .filter(|h| {
                h.state.verdict.is_none() && h.state.proposal.org_id == org_id && h.state.proposal.user_id == user_id
            })
            .map(|h| (h.order, h.state.proposal.clone()))
            .collect();
        pending.sort_by_key(|(order, _)| *order);
        ready(Ok(pending.into_iter().map(|(_, p)| p).collect()))
    }

    fn claim_execution<'a>(
        &'a self,
        call_id: &'a str,
        node: &'a str,
        seal: &'a str,
    ) -> BoxFuture<'a, StoreResult<bool>> {
        let mut state = self.lock();
        let claimed = match state.proposals.get_mut(call_id) {
            Some(h) if h.state.verdict == Some(StoredVerdict::Approved) && h.state.claimed_by.is_none() => {
                h.state.claimed_by = Some(node.to_owned());
                seal.clone_into(&mut h.state.proposal.seal);
                h.over = Some(Instant::now());
                h.held_by = Some(node.to_owned());
                true
            }
            _ => false,
        };
        ready(Ok(claimed))
    }

    fn approved_unclaimed(&self, limit: u32) -> BoxFuture<'_, StoreResult<Vec<ProposalState>>> {
        let found = self
            .lock()
            .oldest(limit, |h| h.state.verdict == Some(StoredVerdict::Approved) && h.state.claimed_by.is_none());
        ready(Ok(found))
    }

    fn claim_settlement<'a>(&'a self, call_id: &'a str, node: &'a str) -> BoxFuture<'a, StoreResult<bool>> {
        let mut state = self.lock();
        let claimed = match state.proposals.get_mut(call_id) {
            Some(h) if h.state.verdict == Some(StoredVerdict::Rejected) && h.state.settled_by.is_none() => {
                h.state.settled_by = Some(node.to_owned());
                h.over = Some(Instant::now());
                h.held_by = Some(node.to_owned());
                true
            }
            _ => false,
        };
        ready(Ok(claimed))
    }

    fn claim_tree_close<'a>(&'a self, tree_run_id: &'a str, node: &'a str) -> BoxFuture<'a, StoreResult<bool>> {
        let mut state = self.lock();
        let claimed = match state.closed_trees.entry(tree_run_id.to_owned()) {
            std::collections::hash_map::Entry::Occupied(_) => false,
            std::collections::hash_map::Entry::Vacant(v) => {
                v.insert(node.to_owned());
                true
            }
        };
        ready(Ok(claimed))
    }

    fn close_undecided<'a>(
        &'a self,
        call_id: &'a str,
        node: &'a str,
        reason: &'a str,
    ) -> BoxFuture<'a, StoreResult<bool>> {
        let mut state = self.lock();
        let closed = match state.proposals.get_mut(call_id) {
            Some(h) if h.state.verdict.is_none() => {
                h.state.verdict = Some(StoredVerdict::Rejected);
                h.state.reason = Some(reason.to_owned());
                h.state.settled_by = Some(node.to_owned());
                h.over = Some(Instant::now());
                h.held_by = Some(node.to_owned());
                true
            }
            _ => false,
        };
        ready(Ok(closed))
    }

    fn unsettled(
        &self,
        after: ProposalCursor,
        limit: u32,
        undecided_for: Duration,
    ) -> BoxFuture<'_, StoreResult<ProposalPage>> {
        let now = Instant::now();
        let found = self.lock().page(after, limit, |h| match h.state.verdict {
            _ if h.recorded.is_some() => false,
            Some(StoredVerdict::Approved) => h.state.claimed_by.is_none(),
            Some(StoredVerdict::Rejected) => h.state.settled_by.is_none(),
            None => h.put + undecided_for <= now,
        });
        ready(Ok(found))
    }

    fn mark_recorded<'a>(&'a self, call_id: &'a str) -> BoxFuture<'a, StoreResult<()>> {
        if let Some(h) = self.lock().proposals.get_mut(call_id) {
            h.recorded.get_or_insert_with(Instant::now);
        }
        ready(Ok(()))
    }

    fn stale_claims(
        &self,
        after: ProposalCursor,
        limit: u32,
        lease: Duration,
    ) -> BoxFuture<'_, StoreResult<ProposalPage>> {
        let now = Instant::now();
        let found =
            self.lock().page(after, limit, |h| h.recorded.is_none() && h.over.is_some_and(|at| at + lease <= now));
        ready(Ok(found))
    }

    fn take_over<'a>(&'a self, call_id: &'a str, node: &'a str, lease: Duration) -> BoxFuture<'a, StoreResult<bool>> {
        let now = Instant::now();
        let taken = match self.lock().proposals.get_mut(call_id) {
            Some(h) if h.recorded.is_none() && h.over.is_some_and(|at| at + lease <= now) => {
                h.over = Some(now);
                h.held_by = Some(node.to_owned());
                true
            }
            _ => false,
        };
        ready(Ok(taken))
    }

    fn renew_claim<'a>(&'a self, call_id: &'a str, node: &'a str) -> BoxFuture<'a, StoreResult<bool>> {
        let renewed = match self.lock().proposals.get_mut(call_id) {
            Some(h) if h.recorded.is_none() && h.over.is_some() && h.held_by.as_deref() == Some(node) => {
                h.over = Some(Instant::now());
                true
            }
            _ => false,
        };
        ready(Ok(renewed))
    }

    fn prune_proposals(&self, retention: Duration) -> BoxFuture<'_, StoreResult<u64>> {
        let now = Instant::now();
        let mut state = self.lock();
        let before = state.proposals.len();
        state.proposals.retain(|_, h| h.recorded.is_none_or(|at| at + retention > now));
        ready(Ok((before - state.proposals.len()) as u64))
    }

    fn save_session<'a>(
        &'a self,
        session: &'a SessionRecord,
        idle: Duration,
    ) -> BoxFuture<'a, StoreResult<SessionSaved>> {
        let now = Instant::now();
        let mut state = self.lock();
        let version = match state.sessions.get(&session.session_id) {
            Some((held, _)) if held.org_id != session.org_id || held.user_id != session.user_id => {
                return ready(Ok(SessionSaved::NotYours));
            }
            Some((held, used)) if held.version == session.version || (session.version == 0 && now >= *used + idle) => {
                held.version + 1
            }
            None if session.version == 0 => 1,
            _ => return ready(Ok(SessionSaved::Conflict)),
        };
        let mut stored = session.clone();
        stored.version = version;
        state.sessions.insert(session.session_id.clone(), (stored, now));
        ready(Ok(SessionSaved::Stored { version }))
    }

    fn load_session<'a>(
        &'a self,
        session_id: &'a str,
        idle: Duration,
    ) -> BoxFuture<'a, StoreResult<Option<SessionRecord>>> {
        let now = Instant::now();
        let state = self.lock();
        let found = state.sessions.get(session_id).filter(|(_, used)| now < *used + idle).map(|(s, _)| s.clone());
        ready(Ok(found))
    }

    fn delete_session<'a>(&'a self, session_id: &'a str) -> BoxFuture<'a, StoreResult<bool>> {
        ready(Ok(self.lock().sessions.remove(session_id).is_some()))
    }

    fn prune_sessions(&self, idle: Duration) -> BoxFuture<'_, StoreResult<u64>> {
        let now = Instant::now();
        let mut state = self.lock();
        let before = state.sessions.len();
        state.sessions.retain(|_, (_, used)| now < *used + idle);
        ready(Ok((before - state.sessions.len()) as u64))
    }

    fn append_audit<'a>(
        &'a self,
        stream: &'a str,
        records: Vec<AuditRecord>,
    ) -> BoxFuture<'a, StoreResult<Vec<AuditRecord>>> {
        let mut state = self.lock();
        let (seq, prev) = state.heads.get(stream).cloned().unwrap_or_else(|| (0, GENESIS_HASH.to_owned()));
        let (sealed, lines, seq, prev) = super::seal_after(seq, &prev, records);
        state.streams.entry(stream.to_owned()).or_default().extend(lines);
        state.heads.insert(stream.to_owned(), (seq, prev));
        ready(Ok(sealed))
    }

    fn holds_final<'a>(&'a self, stream: &'a str, call_id: &'a str) -> BoxFuture<'a, StoreResult<Option<bool>>> {
        let state = self.lock();
        let lines = state.streams.get(stream).map(Vec::as_slice).unwrap_or_default();
        let needle = super::call_id_needle(call_id);
        let found = lines.iter().any(|l| l.contains(&needle) && super::line_is_final_of(l, call_id));
        ready(Ok(Some(found)))
    }

    fn verify_audit<'a>(&'a self, stream: &'a str) -> BoxFuture<'a, StoreResult<ChainSummary>> {
        let state = self.lock();
        let lines = state.streams.get(stream).map(Vec::as_slice).unwrap_or_default();
        ready(super::verify_lines(stream, lines.iter().map(String::as_str)))
    }

    fn audit_lines<'a>(
        &'a self,
        stream: &'a str,
        after_seq: u64,
        limit: u32,
    ) -> BoxFuture<'a, StoreResult<Vec<(u64, String)>>> {
        let state = self.lock();
        let lines = state.streams.get(stream).map(Vec::as_slice).unwrap_or_default();
        // The line at index `i` is sealed as `seq` `i + 1`.
        let first = usize::try_from(after_seq).unwrap_or(usize::MAX).min(lines.len());
        let page = lines[first..].iter().take(limit as usize);
        ready(Ok(page.zip(after_seq + 1..).map(|(line, seq)| (seq, line.clone())).collect()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn proposal(call_id: &str) -> ProposalRecord {
        ProposalRecord {
            call_id: call_id.into(),
            run_id: "r".into(),
            session_id: "s".into(),
            org_id: "o".into(),
            user_id: "u".into(),
            tool: "t".into(),
            title: "T".into(),
            args: serde_json::json!({}),
            args_mac: "m".into(),
            detail: serde_json::json!({}),
            seal: String::new(),
        }
    }

    /// Proposals that are over (their final record marked written) leave memory a sweep
    /// interval after they ended; open ones, approved ones nobody claimed (a resumption may
    /// still run them), rejected ones whose final record nobody claimed, and claimed ones whose
    /// record is not marked written (a resumption may still write it) stay.
    #[tokio::test(start_paused = true)]
    async fn proposals_that_are_over_are_swept_and_open_ones_stay() {
        let store = MemoryStore::new();
        for id in ["rejected", "unsettled", "claimed", "approved", "open", "unwritten"] {
            store.put_proposal(&proposal(id)).await.unwrap();
        }
        store.decide("rejected", "o", "u", StoredVerdict::Rejected, None, "").await.unwrap();
        assert!(store.claim_settlement("rejected", "n").await.unwrap());
        store.decide("unsettled", "o", "u", StoredVerdict::Rejected, None, "").await.unwrap();
        store.decide("claimed", "o", "u", StoredVerdict::Approved, None, "").await.unwrap();
        assert!(store.claim_execution("claimed", "n", "").await.unwrap());
        store.decide("approved", "o", "u", StoredVerdict::Approved, None, "").await.unwrap();
        store.decide("unwritten", "o", "u", StoredVerdict::Rejected, None, "").await.unwrap();
        assert!(store.claim_settlement("unwritten", "n").await.unwrap());
        for written in ["rejected", "claimed"] {
            store.mark_recorded(written).await.unwrap();
        }
        // Within the interval a second decision still finds the first.
        let again = store.decide("rejected", "o", "u", StoredVerdict::Approved, None, "").await.unwrap();
        assert_eq!(again, DecideOutcome::AlreadyDecided);
        tokio::time::advance(MEMORY_SWEEP_EVERY + Duration::from_secs(1)).await;
        store.put_proposal(&proposal("next")).await.unwrap();
        let mut held: Vec<String> = store.lock().proposals.keys().cloned().collect();
        held.sort();
        assert_eq!(held, ["approved", "next", "open", "unsettled", "unwritten"]);
        assert_eq!(store.proposal_count(), 5);
    }
}
