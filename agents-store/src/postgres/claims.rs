//! The claims on a decided proposal: who runs an approved call, who records a rejected one, and
//! the leases that let another node take over a claim whose holder went silent.

use super::connection::{PostgresStore, pg_error};
use super::proposals::{PROPOSAL_COLUMNS, proposal_page};
use crate::millis;
use agents_runtime::BoxFuture;
use agents_runtime::store::{ProposalCursor, ProposalPage, StoreResult};
use std::time::Duration;

/// The two claims on a decided proposal. Each is one conditional update on the proposal's
/// row, so of two claimers (on any nodes) exactly one matches it; the claim also starts the
/// holder's lease (`held_at`).
#[derive(Clone, Copy)]
enum Claim {
    /// Who runs an approved call.
    Execution,
    /// Who records a rejected call's refusal.
    Settlement,
}

/// The statement of one claim: the same shape for both, with the claim's own columns and the
/// verdict it claims.
#[rustfmt::skip]
macro_rules! claim_statement {
    ($by:literal, $at:literal, $verdict:literal, $also:literal) => {
        concat!(
            "UPDATE agents_proposals SET ", $by, " = $2, ", $at, " = now(), held_at = now(), held_by = $2", $also, " ",
            "WHERE call_id = $1 AND verdict = '", $verdict, "' AND ", $by, " IS NULL"
        )
    };
}

impl Claim {
    const fn statement(self) -> &'static str {
        match self {
            // The execution's claim writes the claimed seal too (`$3`).
            Claim::Execution => claim_statement!("claimed_by", "claimed_at", "approved", ", seal = $3"),
            Claim::Settlement => claim_statement!("settled_by", "settled_at", "rejected", ""),
        }
    }
}

/// [`Store::claim_execution`](crate::Store::claim_execution).
pub(super) fn claim_execution<'a>(
    store: &'a PostgresStore,
    call_id: &'a str,
    node: &'a str,
    seal: &'a str,
) -> BoxFuture<'a, StoreResult<bool>> {
    Box::pin(async move {
        let client = store.client().await?;
        let stmt = client.prepare_cached(Claim::Execution.statement()).await.map_err(pg_error)?;
        let n = client.execute(&stmt, &[&call_id, &node, &seal]).await.map_err(pg_error)?;
        Ok(n == 1)
    })
}

/// [`Store::claim_settlement`](crate::Store::claim_settlement).
pub(super) fn claim_settlement<'a>(
    store: &'a PostgresStore,
    call_id: &'a str,
    node: &'a str,
) -> BoxFuture<'a, StoreResult<bool>> {
    Box::pin(store.claim(Claim::Settlement, call_id, node))
}

/// [`Store::mark_recorded`](crate::Store::mark_recorded).
pub(super) fn mark_recorded<'a>(store: &'a PostgresStore, call_id: &'a str) -> BoxFuture<'a, StoreResult<()>> {
    Box::pin(async move {
        let client = store.client().await?;
        let stmt = client
            .prepare_cached(
                "UPDATE agents_proposals SET recorded_at = now() WHERE call_id = $1 AND recorded_at IS NULL",
            )
            .await
            .map_err(pg_error)?;
        client.execute(&stmt, &[&call_id]).await.map(drop).map_err(pg_error)
    })
}

/// [`Store::stale_claims`](crate::Store::stale_claims).
pub(super) fn stale_claims(
    store: &PostgresStore,
    after: ProposalCursor,
    limit: u32,
    lease: Duration,
) -> BoxFuture<'_, StoreResult<ProposalPage>> {
    Box::pin(async move {
        let sql = format!(
            "SELECT {PROPOSAL_COLUMNS}, ord FROM agents_proposals \
             WHERE ord > $1 AND held_at IS NOT NULL AND recorded_at IS NULL \
             AND held_at <= now() - $3::BIGINT * interval '1 millisecond' ORDER BY ord LIMIT $2"
        );
        proposal_page(store, &sql, after, limit, millis(lease)).await
    })
}

/// [`Store::take_over`](crate::Store::take_over).
pub(super) fn take_over<'a>(
    store: &'a PostgresStore,
    call_id: &'a str,
    node: &'a str,
    lease: Duration,
) -> BoxFuture<'a, StoreResult<bool>> {
    Box::pin(async move {
        let client = store.client().await?;
        // One conditional update: a concurrent taker (or the holder renewing) waits for the
        // row's lock, then re-checks the lapse on the renewed row, which fails.
        let stmt = client
            .prepare_cached(
                "UPDATE agents_proposals SET held_at = now(), held_by = $3 \
                 WHERE call_id = $1 AND held_at IS NOT NULL AND recorded_at IS NULL \
                 AND held_at <= now() - $2::BIGINT * interval '1 millisecond'",
            )
            .await
            .map_err(pg_error)?;
        let n = client.execute(&stmt, &[&call_id, &millis(lease), &node]).await.map_err(pg_error)?;
        Ok(n == 1)
    })
}

/// [`Store::renew_claim`](crate::Store::renew_claim).
pub(super) fn renew_claim<'a>(
    store: &'a PostgresStore,
    call_id: &'a str,
    node: &'a str,
) -> BoxFuture<'a, StoreResult<bool>> {
    Box::pin(async move {
        let client = store.client().await?;
        // One conditional update: a concurrent take-over waits for the row's lock and then
        // finds the lease restarted, or took it first and this matches nothing.
        let stmt = client
            .prepare_cached(
                "UPDATE agents_proposals SET held_at = now() \
                 WHERE call_id = $1 AND held_by = $2 AND held_at IS NOT NULL AND recorded_at IS NULL",
            )
            .await
            .map_err(pg_error)?;
        let n = client.execute(&stmt, &[&call_id, &node]).await.map_err(pg_error)?;
        Ok(n == 1)
    })
}

impl PostgresStore {
    /// Claims `call_id` for `node` (see [`Claim`]); `true` if this call took the claim.
    async fn claim(&self, claim: Claim, call_id: &str, node: &str) -> StoreResult<bool> {
        let client = self.client().await?;
        let stmt = client.prepare_cached(claim.statement()).await.map_err(pg_error)?;
        let n = client.execute(&stmt, &[&call_id, &node]).await.map_err(pg_error)?;
        Ok(n == 1)
    }
}

/// [`Store::claim_tree_close`](crate::Store::claim_tree_close).
pub(super) fn claim_tree_close<'a>(
    store: &'a PostgresStore,
    tree_run_id: &'a str,
    node: &'a str,
) -> BoxFuture<'a, StoreResult<bool>> {
    Box::pin(async move {
        let client = store.client().await?;
        let stmt = client
            .prepare_cached(
                "INSERT INTO agents_tree_closes (tree_run_id, closed_by) VALUES ($1, $2) \
                 ON CONFLICT (tree_run_id) DO NOTHING",
            )
            .await
            .map_err(pg_error)?;
        let n = client.execute(&stmt, &[&tree_run_id, &node]).await.map_err(pg_error)?;
        Ok(n == 1)
    })
}
