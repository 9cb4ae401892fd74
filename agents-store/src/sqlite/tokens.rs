//! Confirmation tokens: minted on approval, redeemed once, revoked with their session.

use super::connection::{SqliteStore, execute, now_ms, query_row, sql_error};
use crate::millis;
use agents_runtime::BoxFuture;
use agents_runtime::store::{Redeemed, StoreError, StoreResult, TokenGrant};
use rusqlite::{OptionalExtension, params};
use std::time::Duration;

/// [`Store::mint_token`](crate::Store::mint_token).
pub(super) fn mint_token<'a>(
    store: &'a SqliteStore,
    grant: &'a TokenGrant,
    ttl: Duration,
) -> BoxFuture<'a, StoreResult<()>> {
    let grant = grant.clone();
    store.run(move |conn| {
        execute(
            conn,
            "INSERT INTO agents_tokens (id, session_id, tool, args_mac, expires_at) VALUES (?1, ?2, ?3, ?4, ?5)",
            params![grant.id, grant.session_id, grant.tool, grant.args_mac, now_ms().saturating_add(millis(ttl))],
        )
        .map_err(|e| match e.sqlite_error_code() {
            Some(rusqlite::ErrorCode::ConstraintViolation) => {
                StoreError::Invalid(format!("token id `{}` is taken", grant.id))
            }
            _ => sql_error(e),
        })
        .map(drop)
    })
}

/// [`Store::redeem_token`](crate::Store::redeem_token).
pub(super) fn redeem_token<'a>(store: &'a SqliteStore, id: &'a str) -> BoxFuture<'a, StoreResult<Redeemed>> {
    let id = id.to_owned();
    store.run(move |conn| {
        let now = now_ms();
        query_row(
            conn,
            "UPDATE agents_tokens SET redeemed_at = ?2 WHERE id = ?1 AND redeemed_at IS NULL \
             RETURNING id, session_id, tool, args_mac, expires_at <= ?2",
            params![id, now],
            |r| {
                Ok(Redeemed::Taken {
                    grant: TokenGrant { id: r.get(0)?, session_id: r.get(1)?, tool: r.get(2)?, args_mac: r.get(3)? },
                    expired: r.get(4)?,
                })
            },
        )
        .optional()
        .map(|found| found.unwrap_or(Redeemed::Unknown))
        .map_err(sql_error)
    })
}

/// [`Store::revoke_session_tokens`](crate::Store::revoke_session_tokens).
pub(super) fn revoke_session_tokens<'a>(
    store: &'a SqliteStore,
    session_id: &'a str,
) -> BoxFuture<'a, StoreResult<u64>> {
    let session_id = session_id.to_owned();
    store.run(move |conn| {
        execute(conn, "DELETE FROM agents_tokens WHERE session_id = ?1", [session_id])
            .map(|n| n as u64)
            .map_err(sql_error)
    })
}

/// [`Store::prune_tokens`](crate::Store::prune_tokens).
pub(super) fn prune_tokens(store: &SqliteStore) -> BoxFuture<'_, StoreResult<u64>> {
    store.run(move |conn| {
        execute(conn, "DELETE FROM agents_tokens WHERE redeemed_at IS NOT NULL OR expires_at <= ?1", [now_ms()])
            .map(|n| n as u64)
            .map_err(sql_error)
    })
}
