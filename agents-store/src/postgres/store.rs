//! The [`Store`] operations of [`PostgresStore`], each in the file of its topic.

use super::connection::PostgresStore;
use super::{audit, claims, proposals, sessions, slots, tokens};
use agents_runtime::BoxFuture;
use agents_runtime::audit::{AuditRecord, ChainSummary};
use agents_runtime::store::{
    DecideOutcome, DecisionSignal, ProposalCursor, ProposalPage, ProposalRecord, ProposalState, Redeemed,
    SessionRecord, SessionSaved, SlotId, SlotOwner, Store, StoreResult, StoredVerdict, TokenGrant,
};
use std::time::Duration;

impl Store for PostgresStore {
    fn mint_token<'a>(&'a self, grant: &'a TokenGrant, ttl: Duration) -> BoxFuture<'a, StoreResult<()>> {
        tokens::mint_token(self, grant, ttl)
    }

    fn redeem_token<'a>(&'a self, id: &'a str) -> BoxFuture<'a, StoreResult<Redeemed>> {
        tokens::redeem_token(self, id)
    }

    fn revoke_session_tokens<'a>(&'a self, session_id: &'a str) -> BoxFuture<'a, StoreResult<u64>> {
        tokens::revoke_session_tokens(self, session_id)
    }

    fn prune_tokens(&self) -> BoxFuture<'_, StoreResult<u64>> {
        tokens::prune_tokens(self)
    }

    fn acquire_slot<'a>(
        &'a self,
        owner: &'a SlotOwner,
        cap: u32,
        lease: Duration,
    ) -> BoxFuture<'a, StoreResult<Option<SlotId>>> {
        slots::acquire_slot(self, owner, cap, lease)
    }

    fn renew_slot<'a>(&'a self, slot: &'a SlotId, lease: Duration) -> BoxFuture<'a, StoreResult<bool>> {
        slots::renew_slot(self, slot, lease)
    }

    fn slot_held<'a>(&'a self, slot: &'a SlotId) -> BoxFuture<'a, StoreResult<bool>> {
        slots::slot_held(self, slot)
    }

    fn release_slot<'a>(&'a self, slot: &'a SlotId) -> BoxFuture<'a, StoreResult<()>> {
        slots::release_slot(self, slot)
    }

    fn active_slots<'a>(&'a self, owner: &'a SlotOwner) -> BoxFuture<'a, StoreResult<u32>> {
        slots::active_slots(self, owner)
    }

    fn put_proposal<'a>(&'a self, p: &'a ProposalRecord) -> BoxFuture<'a, StoreResult<()>> {
        proposals::put_proposal(self, p)
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
        proposals::decide(self, call_id, org_id, user_id, verdict, reason, seal)
    }

    fn proposal<'a>(&'a self, call_id: &'a str) -> BoxFuture<'a, StoreResult<Option<ProposalState>>> {
        proposals::proposal(self, call_id)
    }

    fn decided<'a>(&'a self, call_ids: &'a [String]) -> BoxFuture<'a, StoreResult<Vec<ProposalState>>> {
        proposals::decided(self, call_ids)
    }

    fn watch_decisions(&self) -> Option<tokio::sync::mpsc::Receiver<DecisionSignal>> {
        Some(super::listen::watch(&self.listen))
    }

    fn pending_for<'a>(&'a self, org_id: &'a str, user_id: &'a str) -> BoxFuture<'a, StoreResult<Vec<ProposalRecord>>> {
        proposals::pending_for(self, org_id, user_id)
    }

    fn claim_execution<'a>(
        &'a self,
        call_id: &'a str,
        node: &'a str,
        seal: &'a str,
    ) -> BoxFuture<'a, StoreResult<bool>> {
        claims::claim_execution(self, call_id, node, seal)
    }

    fn approved_unclaimed(&self, limit: u32) -> BoxFuture<'_, StoreResult<Vec<ProposalState>>> {
        proposals::approved_unclaimed(self, limit)
    }

    fn claim_settlement<'a>(&'a self, call_id: &'a str, node: &'a str) -> BoxFuture<'a, StoreResult<bool>> {
        claims::claim_settlement(self, call_id, node)
    }

    fn claim_tree_close<'a>(&'a self, tree_run_id: &'a str, node: &'a str) -> BoxFuture<'a, StoreResult<bool>> {
        claims::claim_tree_close(self, tree_run_id, node)
    }

    fn close_undecided<'a>(
        &'a self,
        call_id: &'a str,
        node: &'a str,
        reason: &'a str,
    ) -> BoxFuture<'a, StoreResult<bool>> {
        proposals::close_undecided(self, call_id, node, reason)
    }

    fn unsettled(
        &self,
        after: ProposalCursor,
        limit: u32,
        undecided_for: Duration,
    ) -> BoxFuture<'_, StoreResult<ProposalPage>> {
        proposals::unsettled(self, after, limit, undecided_for)
    }

    fn mark_recorded<'a>(&'a self, call_id: &'a str) -> BoxFuture<'a, StoreResult<()>> {
        claims::mark_recorded(self, call_id)
    }

    fn stale_claims(
        &self,
        after: ProposalCursor,
        limit: u32,
        lease: Duration,
    ) -> BoxFuture<'_, StoreResult<ProposalPage>> {
        claims::stale_claims(self, after, limit, lease)
    }

    fn take_over<'a>(&'a self, call_id: &'a str, node: &'a str, lease: Duration) -> BoxFuture<'a, StoreResult<bool>> {
        claims::take_over(self, call_id, node, lease)
    }

    fn renew_claim<'a>(&'a self, call_id: &'a str, node: &'a str) -> BoxFuture<'a, StoreResult<bool>> {
        claims::renew_claim(self, call_id, node)
    }

    fn prune_proposals(&self, retention: Duration) -> BoxFuture<'_, StoreResult<u64>> {
        proposals::prune_proposals(self, retention)
    }

    fn save_session<'a>(&'a self, s: &'a SessionRecord, idle: Duration) -> BoxFuture<'a, StoreResult<SessionSaved>> {
        sessions::save_session(self, s, idle)
    }

    fn load_session<'a>(
        &'a self,
        session_id: &'a str,
        idle: Duration,
    ) -> BoxFuture<'a, StoreResult<Option<SessionRecord>>> {
        sessions::load_session(self, session_id, idle)
    }

    fn delete_session<'a>(&'a self, session_id: &'a str) -> BoxFuture<'a, StoreResult<bool>> {
        sessions::delete_session(self, session_id)
    }

    fn prune_sessions(&self, idle: Duration) -> BoxFuture<'_, StoreResult<u64>> {
        sessions::prune_sessions(self, idle)
    }

    fn append_audit<'a>(
        &'a self,
        stream: &'a str,
        records: Vec<AuditRecord>,
    ) -> BoxFuture<'a, StoreResult<Vec<AuditRecord>>> {
        audit::append_audit(self, stream, records)
    }

    fn pipelines_audit(&self, stream: &str) -> bool {
        audit::pipelines_audit(self, stream)
    }

    fn verify_audit<'a>(&'a self, stream: &'a str) -> BoxFuture<'a, StoreResult<ChainSummary>> {
        audit::verify_audit(self, stream)
    }

    fn audit_lines<'a>(
        &'a self,
        stream: &'a str,
        after_seq: u64,
        limit: u32,
    ) -> BoxFuture<'a, StoreResult<Vec<(u64, String)>>> {
        audit::audit_lines(self, stream, after_seq, limit)
    }

    fn holds_final<'a>(&'a self, stream: &'a str, call_id: &'a str) -> BoxFuture<'a, StoreResult<Option<bool>>> {
        audit::holds_final(self, stream, call_id)
    }

    fn owed_finals<'a>(
        &'a self,
        stream: &'a str,
        older_than: Duration,
        limit: u32,
    ) -> BoxFuture<'a, StoreResult<Vec<AuditRecord>>> {
        audit::owed_finals(self, stream, older_than, limit)
    }

    fn claim_owed<'a>(
        &'a self,
        stream: &'a str,
        call_id: &'a str,
        run_id: &'a str,
        node: &'a str,
        lease: Duration,
    ) -> BoxFuture<'a, StoreResult<bool>> {
        audit::claim_owed(self, stream, call_id, run_id, node, lease)
    }
}
