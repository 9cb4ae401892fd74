//! The claims on a decided proposal: who runs an approved call, who records a rejected one, and
//! the leases that let another process take over a claim whose holder went silent.

use super::connection::{SqliteStore, execute, now_ms, sql_error};
use super::proposals::{PROPOSAL_COLUMNS, proposal_page};
use crate::millis;
use agents_runtime::BoxFuture;
use agents_runtime::store::{ProposalCursor, ProposalPage, StoreResult};
use rusqlite::params;
use std::time::Duration;

/// [`Store::claim_execution`](crate::Store::claim_execution).
pub(super) fn claim_execution<'a>(
    store: &'a SqliteStore,
    call_id: &'a str,
    node: &'a str,
    seal: &'a str,
) -> BoxFuture<'a, StoreResult<bool>> {
    let (call_id, node, seal) = (call_id.to_owned(), node.to_owned(), seal.to_owned());
    store.run(move |conn| {
        execute(
            conn,
            "UPDATE agents_proposals SET claimed_by = ?2, held_by = ?2, over_at = ?3, seal = ?4 \
             WHERE call_id = ?1 AND verdict = 'approved' AND claimed_by IS NULL",
            params![call_id, node, now_ms(), seal],
        )
        .map(|n| n == 1)
        .map_err(sql_error)
    })
}

/// [`Store::claim_settlement`](crate::Store::claim_settlement).
pub(super) fn claim_settlement<'a>(
    store: &'a SqliteStore,
    call_id: &'a str,
    node: &'a str,
) -> BoxFuture<'a, StoreResult<bool>> {
    let (call_id, node) = (call_id.to_owned(), node.to_owned());
    store.run(move |conn| {
        execute(
            conn,
            "UPDATE agents_proposals SET settled_by = ?2, held_by = ?2, over_at = ?3 \
             WHERE call_id = ?1 AND verdict = 'rejected' AND settled_by IS NULL",
            params![call_id, node, now_ms()],
        )
        .map(|n| n == 1)
        .map_err(sql_error)
    })
}

/// [`Store::mark_recorded`](crate::Store::mark_recorded).
pub(super) fn mark_recorded<'a>(store: &'a SqliteStore, call_id: &'a str) -> BoxFuture<'a, StoreResult<()>> {
    let call_id = call_id.to_owned();
    store.run(move |conn| {
        execute(
            conn,
            "UPDATE agents_proposals SET recorded_at = ?2 WHERE call_id = ?1 AND recorded_at IS NULL",
            params![call_id, now_ms()],
        )
        .map(drop)
        .map_err(sql_error)
    })
}

/// [`Store::stale_claims`](crate::Store::stale_claims).
pub(super) fn stale_claims(
    store: &SqliteStore,
    after: ProposalCursor,
    limit: u32,
    lease: Duration,
) -> BoxFuture<'_, StoreResult<ProposalPage>> {
    store.run(move |conn| {
        let sql = format!(
            "SELECT {PROPOSAL_COLUMNS}, ord FROM agents_proposals \
             WHERE ord > ?1 AND over_at IS NOT NULL AND recorded_at IS NULL AND over_at <= ?3 ORDER BY ord LIMIT ?2"
        );
        proposal_page(conn, &sql, after, limit, now_ms().saturating_sub(millis(lease)))
    })
}

/// [`Store::take_over`](crate::Store::take_over).
pub(super) fn take_over<'a>(
    store: &'a SqliteStore,
    call_id: &'a str,
    node: &'a str,
    lease: Duration,
) -> BoxFuture<'a, StoreResult<bool>> {
    let (call_id, node) = (call_id.to_owned(), node.to_owned());
    store.run(move |conn| {
        let now = now_ms();
        execute(
            conn,
            "UPDATE agents_proposals SET over_at = ?2, held_by = ?4 \
             WHERE call_id = ?1 AND over_at IS NOT NULL AND recorded_at IS NULL AND over_at <= ?3",
            params![call_id, now, now.saturating_sub(millis(lease)), node],
        )
        .map(|n| n == 1)
        .map_err(sql_error)
    })
}

/// [`Store::renew_claim`](crate::Store::renew_claim).
pub(super) fn renew_claim<'a>(
    store: &'a SqliteStore,
    call_id: &'a str,
    node: &'a str,
) -> BoxFuture<'a, StoreResult<bool>> {
    let (call_id, node) = (call_id.to_owned(), node.to_owned());
    store.run(move |conn| {
        // One statement under the database's write lock: a take-over commits before it (and
        // it matches nothing) or after it (and finds the lease restarted).
        execute(
            conn,
            "UPDATE agents_proposals SET over_at = ?3 \
             WHERE call_id = ?1 AND held_by = ?2 AND over_at IS NOT NULL AND recorded_at IS NULL",
            params![call_id, node, now_ms()],
        )
        .map(|n| n == 1)
        .map_err(sql_error)
    })
}

/// [`Store::claim_tree_close`](crate::Store::claim_tree_close).
pub(super) fn claim_tree_close<'a>(
    store: &'a SqliteStore,
    tree_run_id: &'a str,
    node: &'a str,
) -> BoxFuture<'a, StoreResult<bool>> {
    let (tree, node) = (tree_run_id.to_owned(), node.to_owned());
    store.run(move |conn| {
        execute(
            conn,
            "INSERT INTO agents_tree_closes (tree_run_id, closed_by, closed_at) VALUES (?1, ?2, ?3) \
             ON CONFLICT (tree_run_id) DO NOTHING",
            params![tree, node, now_ms()],
        )
        .map(|n| n == 1)
        .map_err(sql_error)
    })
}
