//! Confirmation tokens: minted on approval, redeemed once, revoked with their session.

use super::connection::{PostgresStore, is_unique_violation, pg_error};
use crate::millis;
use agents_runtime::BoxFuture;
use agents_runtime::store::{Redeemed, StoreError, StoreResult, TokenGrant};
use std::time::Duration;

/// [`Store::mint_token`](crate::Store::mint_token).
pub(super) fn mint_token<'a>(
    store: &'a PostgresStore,
    grant: &'a TokenGrant,
    ttl: Duration,
) -> BoxFuture<'a, StoreResult<()>> {
    Box::pin(async move {
        let client = store.client().await?;
        let stmt = client
            .prepare_cached(
                "INSERT INTO agents_tokens (id, session_id, tool, args_mac, expires_at) \
                 VALUES ($1, $2, $3, $4, now() + $5::BIGINT * interval '1 millisecond')",
            )
            .await
            .map_err(pg_error)?;
        client
            .execute(&stmt, &[&grant.id, &grant.session_id, &grant.tool, &grant.args_mac, &millis(ttl)])
            .await
            .map_err(|e| {
                if is_unique_violation(&e) {
                    StoreError::Invalid(format!("token id `{}` is taken", grant.id))
                } else {
                    pg_error(e)
                }
            })
            .map(drop)
    })
}

/// [`Store::redeem_token`](crate::Store::redeem_token).
pub(super) fn redeem_token<'a>(store: &'a PostgresStore, id: &'a str) -> BoxFuture<'a, StoreResult<Redeemed>> {
    Box::pin(async move {
        let client = store.client().await?;
        // One conditional update: a concurrent redemption waits for this row's lock and
        // then re-checks `redeemed_at IS NULL` on the updated row, which fails.
        let stmt = client
            .prepare_cached(
                "UPDATE agents_tokens SET redeemed_at = now() WHERE id = $1 AND redeemed_at IS NULL \
                 RETURNING id, session_id, tool, args_mac, expires_at <= now()",
            )
            .await
            .map_err(pg_error)?;
        let row = client.query_opt(&stmt, &[&id]).await.map_err(pg_error)?;
        Ok(match row {
            Some(r) => Redeemed::Taken {
                grant: TokenGrant { id: r.get(0), session_id: r.get(1), tool: r.get(2), args_mac: r.get(3) },
                expired: r.get(4),
            },
            None => Redeemed::Unknown,
        })
    })
}

/// [`Store::revoke_session_tokens`](crate::Store::revoke_session_tokens).
pub(super) fn revoke_session_tokens<'a>(
    store: &'a PostgresStore,
    session_id: &'a str,
) -> BoxFuture<'a, StoreResult<u64>> {
    Box::pin(async move {
        let client = store.client().await?;
        client.execute("DELETE FROM agents_tokens WHERE session_id = $1", &[&session_id]).await.map_err(pg_error)
    })
}

/// [`Store::prune_tokens`](crate::Store::prune_tokens).
pub(super) fn prune_tokens(store: &PostgresStore) -> BoxFuture<'_, StoreResult<u64>> {
    Box::pin(async move {
        let client = store.client().await?;
        client
            .execute("DELETE FROM agents_tokens WHERE redeemed_at IS NOT NULL OR expires_at <= now()", &[])
            .await
            .map_err(pg_error)
    })
}
