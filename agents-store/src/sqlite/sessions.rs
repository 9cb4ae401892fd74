//! Sessions: saved with a version check, loaded while not idle too long, deleted and pruned.

use super::connection::{SqliteStore, execute, json_text, json_value, now_ms, query_row, sql_error};
use crate::millis;
use agents_runtime::BoxFuture;
use agents_runtime::store::{SessionRecord, SessionSaved, StoreError, StoreResult};
use rusqlite::{OptionalExtension, params};
use std::time::Duration;

/// [`Store::save_session`](crate::Store::save_session).
pub(super) fn save_session<'a>(
    store: &'a SqliteStore,
    session: &'a SessionRecord,
    idle: Duration,
) -> BoxFuture<'a, StoreResult<SessionSaved>> {
    let s = session.clone();
    store.run(move |conn| {
        // Under the batch's write lock (`BEGIN IMMEDIATE`): the revision is read and advanced
        // so that of two writers (connections or processes) of one revision exactly one stores.
        // Nothing is written before a refusal, so the operation's own savepoint (the batch's)
        // is all it needs.
        let now = now_ms();
        let held: Option<(String, String, i64, i64)> = query_row(
            conn,
            "SELECT org_id, user_id, version, used_at FROM agents_sessions WHERE session_id = ?1",
            [&s.session_id],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
        )
        .optional()
        .map_err(sql_error)?;
        let expected = i64::try_from(s.version).map_err(|_| StoreError::Invalid("session version".into()))?;
        let version = match held {
            Some((org, user, _, _)) if org != s.org_id || user != s.user_id => return Ok(SessionSaved::NotYours),
            Some((_, _, version, used_at))
                if version == expected || (expected == 0 && used_at <= now.saturating_sub(millis(idle))) =>
            {
                version + 1
            }
            None if expected == 0 => 1,
            _ => return Ok(SessionSaved::Conflict),
        };
        execute(
            conn,
            "INSERT INTO agents_sessions (session_id, org_id, user_id, role, history, digest, pending, version, used_at) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9) \
             ON CONFLICT (session_id) DO UPDATE SET role = excluded.role, history = excluded.history, \
             digest = excluded.digest, pending = excluded.pending, version = excluded.version, used_at = excluded.used_at",
            params![
                s.session_id,
                s.org_id,
                s.user_id,
                s.role,
                json_text(&s.history),
                json_text(&s.digest),
                json_text(&s.pending),
                version,
                now
            ],
        )
        .map_err(sql_error)?;
        Ok(SessionSaved::Stored { version: version as u64 })
    })
}

/// [`Store::load_session`](crate::Store::load_session).
pub(super) fn load_session<'a>(
    store: &'a SqliteStore,
    session_id: &'a str,
    idle: Duration,
) -> BoxFuture<'a, StoreResult<Option<SessionRecord>>> {
    let session_id = session_id.to_owned();
    store.run(move |conn| {
        query_row(
            conn,
            "SELECT session_id, org_id, user_id, role, history, digest, pending, version FROM agents_sessions \
             WHERE session_id = ?1 AND used_at > ?2",
            params![session_id, now_ms().saturating_sub(millis(idle))],
            |r| {
                let (history, digest, pending): (String, String, String) = (r.get(4)?, r.get(5)?, r.get(6)?);
                Ok(SessionRecord {
                    session_id: r.get(0)?,
                    org_id: r.get(1)?,
                    user_id: r.get(2)?,
                    role: r.get(3)?,
                    history: json_value(&history)?,
                    digest: json_value(&digest)?,
                    pending: json_value(&pending)?,
                    version: r.get::<_, i64>(7)?.max(0) as u64,
                })
            },
        )
        .optional()
        .map_err(sql_error)
    })
}

/// [`Store::delete_session`](crate::Store::delete_session).
pub(super) fn delete_session<'a>(store: &'a SqliteStore, session_id: &'a str) -> BoxFuture<'a, StoreResult<bool>> {
    let session_id = session_id.to_owned();
    store.run(move |conn| {
        execute(conn, "DELETE FROM agents_sessions WHERE session_id = ?1", [session_id])
            .map(|n| n == 1)
            .map_err(sql_error)
    })
}

/// [`Store::prune_sessions`](crate::Store::prune_sessions).
pub(super) fn prune_sessions(store: &SqliteStore, idle: Duration) -> BoxFuture<'_, StoreResult<u64>> {
    store.run(move |conn| {
        execute(conn, "DELETE FROM agents_sessions WHERE used_at <= ?1", [now_ms().saturating_sub(millis(idle))])
            .map(|n| n as u64)
            .map_err(sql_error)
    })
}
