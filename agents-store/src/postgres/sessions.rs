//! Sessions: saved with a version check, loaded while not idle too long, deleted and pruned.

use super::connection::{PostgresStore, pg_error};
use crate::millis;
use agents_runtime::BoxFuture;
use agents_runtime::store::{SessionRecord, SessionSaved, StoreError, StoreResult};
use std::time::Duration;

/// [`Store::save_session`](crate::Store::save_session).
pub(super) fn save_session<'a>(
    store: &'a PostgresStore,
    s: &'a SessionRecord,
    idle: Duration,
) -> BoxFuture<'a, StoreResult<SessionSaved>> {
    Box::pin(async move {
        let client = store.client().await?;
        let expected = i64::try_from(s.version).map_err(|_| StoreError::Invalid("session version".into()))?;
        // Each step is one statement: of two writers of one revision (on any nodes),
        // exactly one matches it.
        if expected == 0 {
            let stmt = client
                .prepare_cached(
                    "INSERT INTO agents_sessions (session_id, org_id, user_id, role, history, digest, pending, version, used_at) \
                     VALUES ($1, $2, $3, $4, $5, $6, $7, 1, now()) ON CONFLICT (session_id) DO NOTHING RETURNING version",
                )
                .await
                .map_err(pg_error)?;
            let created = client
                .query_opt(&stmt, &[&s.session_id, &s.org_id, &s.user_id, &s.role, &s.history, &s.digest, &s.pending])
                .await
                .map_err(pg_error)?;
            if let Some(row) = created {
                return Ok(SessionSaved::Stored { version: row.get::<_, i64>(0) as u64 });
            }
        }
        let stmt = client
            .prepare_cached(
                "UPDATE agents_sessions SET role = $4, history = $5, digest = $6, pending = $7, \
                 version = version + 1, used_at = now() \
                 WHERE session_id = $1 AND org_id = $2 AND user_id = $3 AND (version = $8 OR \
                 ($8 = 0 AND used_at <= now() - $9::BIGINT * interval '1 millisecond')) RETURNING version",
            )
            .await
            .map_err(pg_error)?;
        let replaced = client
            .query_opt(
                &stmt,
                &[
                    &s.session_id,
                    &s.org_id,
                    &s.user_id,
                    &s.role,
                    &s.history,
                    &s.digest,
                    &s.pending,
                    &expected,
                    &millis(idle),
                ],
            )
            .await
            .map_err(pg_error)?;
        if let Some(row) = replaced {
            return Ok(SessionSaved::Stored { version: row.get::<_, i64>(0) as u64 });
        }
        let owner = client
            .query_opt("SELECT org_id, user_id FROM agents_sessions WHERE session_id = $1", &[&s.session_id])
            .await
            .map_err(pg_error)?;
        Ok(match owner {
            Some(r) if r.get::<_, String>(0) != s.org_id || r.get::<_, String>(1) != s.user_id => {
                SessionSaved::NotYours
            }
            _ => SessionSaved::Conflict,
        })
    })
}

/// [`Store::load_session`](crate::Store::load_session).
pub(super) fn load_session<'a>(
    store: &'a PostgresStore,
    session_id: &'a str,
    idle: Duration,
) -> BoxFuture<'a, StoreResult<Option<SessionRecord>>> {
    Box::pin(async move {
        let client = store.client().await?;
        let stmt = client
            .prepare_cached(
                "SELECT session_id, org_id, user_id, role, history, digest, pending, version FROM agents_sessions \
                 WHERE session_id = $1 AND used_at > now() - $2::BIGINT * interval '1 millisecond'",
            )
            .await
            .map_err(pg_error)?;
        let row = client.query_opt(&stmt, &[&session_id, &millis(idle)]).await.map_err(pg_error)?;
        Ok(row.map(|r| SessionRecord {
            session_id: r.get(0),
            org_id: r.get(1),
            user_id: r.get(2),
            role: r.get(3),
            history: r.get(4),
            digest: r.get(5),
            pending: r.get(6),
            version: r.get::<_, i64>(7).max(0) as u64,
        }))
    })
}

/// [`Store::delete_session`](crate::Store::delete_session).
pub(super) fn delete_session<'a>(store: &'a PostgresStore, session_id: &'a str) -> BoxFuture<'a, StoreResult<bool>> {
    Box::pin(async move {
        let client = store.client().await?;
        let n = client
            .execute("DELETE FROM agents_sessions WHERE session_id = $1", &[&session_id])
            .await
            .map_err(pg_error)?;
        Ok(n == 1)
    })
}

/// [`Store::prune_sessions`](crate::Store::prune_sessions).
pub(super) fn prune_sessions(store: &PostgresStore, idle: Duration) -> BoxFuture<'_, StoreResult<u64>> {
    Box::pin(async move {
        let client = store.client().await?;
        let stmt = client
            .prepare_cached(
                "DELETE FROM agents_sessions WHERE used_at <= now() - $1::BIGINT * interval '1 millisecond'",
            )
            .await
            .map_err(pg_error)?;
        client.execute(&stmt, &[&millis(idle)]).await.map_err(pg_error)
    })
}
