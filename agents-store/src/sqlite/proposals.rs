//! Proposals: stored before the person decides, decided once, read back by call id, by person or
//! by page, and pruned after their retention.

use super::connection::{SqliteStore, execute, json_text, json_value, now_ms, query_row, sql_error};
use crate::millis;
use agents_runtime::BoxFuture;
use agents_runtime::store::{
    DecideOutcome, ProposalCursor, ProposalPage, ProposalRecord, ProposalState, StoreError, StoreResult, StoredVerdict,
};
use rusqlite::{Connection, OptionalExtension, params};
use std::time::Duration;

fn proposal_row(row: &rusqlite::Row<'_>) -> rusqlite::Result<ProposalState> {
    let args: String = row.get(7)?;
    let verdict: Option<String> = row.get(9)?;
    Ok(ProposalState {
        proposal: ProposalRecord {
            call_id: row.get(0)?,
            run_id: row.get(1)?,
            session_id: row.get(2)?,
            org_id: row.get(3)?,
            user_id: row.get(4)?,
            tool: row.get(5)?,
            title: row.get(6)?,
            args: json_value(&args)?,
            args_mac: row.get(8)?,
            detail: json_value(&row.get::<_, String>(12)?)?,
            seal: row.get(14)?,
        },
        verdict: verdict.as_deref().and_then(StoredVerdict::parse),
        reason: row.get(10)?,
        claimed_by: row.get(11)?,
        settled_by: row.get(13)?,
    })
}

pub(super) const PROPOSAL_COLUMNS: &str = "call_id, run_id, session_id, org_id, user_id, tool, title, args, args_mac, verdict, \
                                reason, claimed_by, detail, settled_by, seal";

/// A page of proposals read with `sql` (selecting [`PROPOSAL_COLUMNS`] and then `ord`, with
/// `?1` the cursor, `?2` the limit and `?3` the time bound), and where the next one starts.
pub(super) fn proposal_page(
    conn: &Connection,
    sql: &str,
    after: ProposalCursor,
    limit: u32,
    bound: i64,
) -> StoreResult<ProposalPage> {
    let mut stmt = conn.prepare_cached(sql).map_err(sql_error)?;
    let after = i64::try_from(after.0).unwrap_or(i64::MAX);
    let rows = stmt
        .query_map(params![after, limit, bound], |row| Ok((proposal_row(row)?, row.get::<_, i64>(15)?)))
        .map_err(sql_error)?;
    let found: Vec<(ProposalState, i64)> = rows.collect::<rusqlite::Result<_>>().map_err(sql_error)?;
    let full = found.len() == limit as usize;
    let next = found.last().filter(|_| full).map(|(_, ord)| ProposalCursor(u64::try_from(*ord).unwrap_or(0)));
    Ok(ProposalPage { proposals: found.into_iter().map(|(p, _)| p).collect(), next })
}

/// [`Store::put_proposal`](crate::Store::put_proposal).
pub(super) fn put_proposal<'a>(store: &'a SqliteStore, proposal: &'a ProposalRecord) -> BoxFuture<'a, StoreResult<()>> {
    let p = proposal.clone();
    store.run(move |conn| {
        execute(
            conn,
            "INSERT INTO agents_proposals (call_id, ord, run_id, session_id, org_id, user_id, tool, title, args, args_mac, detail, created_at, seal) \
             VALUES (?1, (SELECT COALESCE(MAX(ord), 0) + 1 FROM agents_proposals), ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
            params![p.call_id, p.run_id, p.session_id, p.org_id, p.user_id, p.tool, p.title, json_text(&p.args), p.args_mac, json_text(&p.detail), now_ms(), p.seal],
        )
        .map_err(|e| match e.sqlite_error_code() {
            Some(rusqlite::ErrorCode::ConstraintViolation) => {
                StoreError::Invalid(format!("call id `{}` is taken", p.call_id))
            }
            _ => sql_error(e),
        })
        .map(drop)
    })
}

/// [`Store::decide`](crate::Store::decide).
pub(super) fn decide<'a>(
    store: &'a SqliteStore,
    call_id: &'a str,
    org_id: &'a str,
    user_id: &'a str,
    verdict: StoredVerdict,
    reason: Option<&'a str>,
    seal: &'a str,
) -> BoxFuture<'a, StoreResult<DecideOutcome>> {
    let (call_id, org_id, user_id, reason, seal) =
        (call_id.to_owned(), org_id.to_owned(), user_id.to_owned(), reason.map(str::to_owned), seal.to_owned());
    store.run(move |conn| {
        let n = execute(
            conn,
            "UPDATE agents_proposals SET verdict = ?4, reason = ?5, seal = ?6 \
                 WHERE call_id = ?1 AND org_id = ?2 AND user_id = ?3 AND verdict IS NULL",
            params![call_id, org_id, user_id, verdict.as_str(), reason, seal],
        )
        .map_err(sql_error)?;
        if n == 1 {
            return Ok(DecideOutcome::Recorded);
        }
        let found: Option<(String, String)> =
            query_row(conn, "SELECT org_id, user_id FROM agents_proposals WHERE call_id = ?1", [&call_id], |r| {
                Ok((r.get(0)?, r.get(1)?))
            })
            .optional()
            .map_err(sql_error)?;
        Ok(match found {
            None => DecideOutcome::Unknown,
            Some((o, u)) if o != org_id || u != user_id => DecideOutcome::NotYours,
            Some(_) => DecideOutcome::AlreadyDecided,
        })
    })
}

/// [`Store::proposal`](crate::Store::proposal).
pub(super) fn proposal<'a>(
    store: &'a SqliteStore,
    call_id: &'a str,
) -> BoxFuture<'a, StoreResult<Option<ProposalState>>> {
    let call_id = call_id.to_owned();
    store.run(move |conn| {
        query_row(
            conn,
            &format!("SELECT {PROPOSAL_COLUMNS} FROM agents_proposals WHERE call_id = ?1"),
            [call_id],
            proposal_row,
        )
        .optional()
        .map_err(sql_error)
    })
}

/// [`Store::pending_for`](crate::Store::pending_for).
pub(super) fn pending_for<'a>(
    store: &'a SqliteStore,
    org_id: &'a str,
    user_id: &'a str,
) -> BoxFuture<'a, StoreResult<Vec<ProposalRecord>>> {
    let (org_id, user_id) = (org_id.to_owned(), user_id.to_owned());
    store.run(move |conn| {
        let mut stmt = conn
            .prepare_cached(&format!(
                "SELECT {PROPOSAL_COLUMNS} FROM agents_proposals WHERE org_id = ?1 AND user_id = ?2 AND verdict IS NULL ORDER BY ord"
            ))
            .map_err(sql_error)?;
        let rows = stmt.query_map(params![org_id, user_id], proposal_row).map_err(sql_error)?;
        rows.map(|r| r.map(|s| s.proposal)).collect::<rusqlite::Result<_>>().map_err(sql_error)
    })
}

/// [`Store::approved_unclaimed`](crate::Store::approved_unclaimed).
pub(super) fn approved_unclaimed(store: &SqliteStore, limit: u32) -> BoxFuture<'_, StoreResult<Vec<ProposalState>>> {
    store.run(move |conn| {
        let mut stmt = conn
            .prepare_cached(&format!(
                "SELECT {PROPOSAL_COLUMNS} FROM agents_proposals \
                 WHERE verdict = 'approved' AND claimed_by IS NULL ORDER BY ord LIMIT ?1"
            ))
            .map_err(sql_error)?;
        let rows = stmt.query_map([limit], proposal_row).map_err(sql_error)?;
        rows.collect::<rusqlite::Result<_>>().map_err(sql_error)
    })
}

/// [`Store::close_undecided`](crate::Store::close_undecided).
pub(super) fn close_undecided<'a>(
    store: &'a SqliteStore,
    call_id: &'a str,
    node: &'a str,
    reason: &'a str,
) -> BoxFuture<'a, StoreResult<bool>> {
    let (call_id, node, reason) = (call_id.to_owned(), node.to_owned(), reason.to_owned());
    store.run(move |conn| {
        execute(
            conn,
            "UPDATE agents_proposals SET verdict = 'rejected', reason = ?3, settled_by = ?2, held_by = ?2, \
             over_at = ?4 WHERE call_id = ?1 AND verdict IS NULL",
            params![call_id, node, reason, now_ms()],
        )
        .map(|n| n == 1)
        .map_err(sql_error)
    })
}

/// [`Store::unsettled`](crate::Store::unsettled).
pub(super) fn unsettled(
    store: &SqliteStore,
    after: ProposalCursor,
    limit: u32,
    undecided_for: Duration,
) -> BoxFuture<'_, StoreResult<ProposalPage>> {
    store.run(move |conn| {
        let sql = format!(
            "SELECT {PROPOSAL_COLUMNS}, ord FROM agents_proposals \
             WHERE ord > ?1 AND recorded_at IS NULL AND ((verdict = 'approved' AND claimed_by IS NULL) \
             OR (verdict = 'rejected' AND settled_by IS NULL) OR (verdict IS NULL AND created_at <= ?3)) \
             ORDER BY ord LIMIT ?2"
        );
        proposal_page(conn, &sql, after, limit, now_ms().saturating_sub(millis(undecided_for)))
    })
}

/// [`Store::prune_proposals`](crate::Store::prune_proposals).
pub(super) fn prune_proposals(store: &SqliteStore, retention: Duration) -> BoxFuture<'_, StoreResult<u64>> {
    store.run(move |conn| {
        execute(
            conn,
            "DELETE FROM agents_proposals WHERE recorded_at IS NOT NULL AND recorded_at <= ?1",
            [now_ms().saturating_sub(millis(retention))],
        )
        .map(|n| n as u64)
        .map_err(sql_error)
    })
}
