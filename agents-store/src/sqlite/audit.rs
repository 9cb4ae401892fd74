//! The audit streams: appends sealed into each stream's hash chain in one transaction,
//! verification, and the final records still owed for calls that were proposed.

use super::connection::{SqliteStore, execute, now_ms, query_row, sql_error};
use crate::millis;
use agents_runtime::BoxFuture;
use agents_runtime::audit::{AuditRecord, ChainSummary, GENESIS_HASH};
use agents_runtime::store::{
    Debts, StoreResult, call_id_needle, line_is_final_of, owed_records, seal_after, verify_lines,
};
use rusqlite::{OptionalExtension, params};
use std::time::Duration;

/// [`Store::append_audit`](crate::Store::append_audit).
pub(super) fn append_audit<'a>(
    store: &'a SqliteStore,
    stream: &'a str,
    records: Vec<AuditRecord>,
) -> BoxFuture<'a, StoreResult<Vec<AuditRecord>>> {
    let stream = stream.to_owned();
    store.run(move |conn| {
        // Under the batch's write lock (`BEGIN IMMEDIATE`): the head is read so that another
        // connection or process appending to the stream waits and then continues it. Every
        // failure below is an error, which rolls back the operation's own savepoint (the
        // batch's): nothing of a refused append stays.
        let head: Option<(i64, String)> =
            query_row(conn, "SELECT seq, hash FROM agents_audit_heads WHERE stream = ?1", [&stream], |r| {
                Ok((r.get(0)?, r.get(1)?))
            })
            .optional()
            .map_err(sql_error)?;
        let (seq, prev) = head.unwrap_or_else(|| (0, GENESIS_HASH.to_owned()));
        let (sealed, lines, seq, prev) = seal_after(seq as u64, &prev, records);
        {
            let mut insert = conn
                .prepare_cached(
                    "INSERT INTO agents_audit (stream, seq, prev_hash, hash, line) VALUES (?1, ?2, ?3, ?4, ?5)",
                )
                .map_err(sql_error)?;
            for (record, line) in sealed.iter().zip(&lines) {
                insert
                    .execute(params![stream, record.seq as i64, record.prev_hash, record.hash, line])
                    .map_err(sql_error)?;
            }
        }
        // An update of the head, or the first head of a new stream: the heads table refuses
        // `INSERT OR REPLACE` and upserts on a taken stream (see migration 7).
        let moved = execute(
            conn,
            "UPDATE agents_audit_heads SET seq = ?2, hash = ?3 WHERE stream = ?1",
            params![stream, seq as i64, prev],
        )
        .map_err(sql_error)?;
        if moved == 0 {
            execute(
                conn,
                "INSERT INTO agents_audit_heads (stream, seq, hash) VALUES (?1, ?2, ?3)",
                params![stream, seq as i64, prev],
            )
            .map_err(sql_error)?;
        }
        // The calls this batch settles and leaves owed, in its transaction (paid ones first).
        let debts = Debts::of(&sealed, &lines);
        if !debts.is_empty() {
            let mut pay_call = conn
                .prepare_cached("DELETE FROM agents_audit_debts WHERE stream = ?1 AND call_id = ?2")
                .map_err(sql_error)?;
            for call_id in &debts.paid_calls {
                pay_call.execute(params![stream, call_id]).map_err(sql_error)?;
            }
            let mut pay = conn
                .prepare_cached("DELETE FROM agents_audit_debts WHERE stream = ?1 AND call_id = ?2 AND run_id = ?3")
                .map_err(sql_error)?;
            for (call_id, run_id) in debts.paid.iter().zip(&debts.paid_runs) {
                pay.execute(params![stream, call_id, run_id]).map_err(sql_error)?;
            }
            let mut owe = conn
                .prepare_cached(
                    "INSERT INTO agents_audit_debts (stream, call_id, run_id, line, owed_since) \
                     VALUES (?1, ?2, ?3, ?4, ?5) ON CONFLICT DO NOTHING",
                )
                .map_err(sql_error)?;
            let owed = debts.owed.iter().zip(&debts.owed_runs).zip(&debts.owed_lines);
            for ((call_id, run_id), line) in owed {
                owe.execute(params![stream, call_id, run_id, line, now_ms()]).map_err(sql_error)?;
            }
        }
        Ok(sealed)
    })
}

/// [`Store::verify_audit`](crate::Store::verify_audit).
pub(super) fn verify_audit<'a>(store: &'a SqliteStore, stream: &'a str) -> BoxFuture<'a, StoreResult<ChainSummary>> {
    let stream = stream.to_owned();
    store.run(move |conn| {
        let mut stmt =
            conn.prepare_cached("SELECT line FROM agents_audit WHERE stream = ?1 ORDER BY seq").map_err(sql_error)?;
        let lines: Vec<String> = stmt
            .query_map([&stream], |r| r.get(0))
            .map_err(sql_error)?
            .collect::<rusqlite::Result<_>>()
            .map_err(sql_error)?;
        verify_lines(&stream, lines.iter().map(String::as_str))
    })
}

/// [`Store::audit_lines`](crate::Store::audit_lines).
pub(super) fn audit_lines<'a>(
    store: &'a SqliteStore,
    stream: &'a str,
    after_seq: u64,
    limit: u32,
) -> BoxFuture<'a, StoreResult<Vec<(u64, String)>>> {
    let stream = stream.to_owned();
    store.run(move |conn| {
        let mut stmt = conn
            .prepare_cached("SELECT seq, line FROM agents_audit WHERE stream = ?1 AND seq > ?2 ORDER BY seq LIMIT ?3")
            .map_err(sql_error)?;
        let after = i64::try_from(after_seq).unwrap_or(i64::MAX);
        stmt.query_map(params![stream, after, limit], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?)))
            .map_err(sql_error)?
            .map(|row| row.map(|(seq, line)| (seq.max(0) as u64, line)))
            .collect::<rusqlite::Result<_>>()
            .map_err(sql_error)
    })
}

/// [`Store::holds_final`](crate::Store::holds_final).
pub(super) fn holds_final<'a>(
    store: &'a SqliteStore,
    stream: &'a str,
    call_id: &'a str,
) -> BoxFuture<'a, StoreResult<Option<bool>>> {
    let (stream, call_id) = (stream.to_owned(), call_id.to_owned());
    store.run(move |conn| {
        let mut stmt = conn
            .prepare_cached("SELECT line FROM agents_audit WHERE stream = ?1 AND instr(line, ?2) > 0")
            .map_err(sql_error)?;
        let lines: Vec<String> = stmt
            .query_map(params![stream, call_id_needle(&call_id)], |r| r.get(0))
            .map_err(sql_error)?
            .collect::<rusqlite::Result<_>>()
            .map_err(sql_error)?;
        Ok(Some(lines.iter().any(|l| line_is_final_of(l, &call_id))))
    })
}

/// [`Store::owed_finals`](crate::Store::owed_finals).
pub(super) fn owed_finals<'a>(
    store: &'a SqliteStore,
    stream: &'a str,
    older_than: Duration,
    limit: u32,
) -> BoxFuture<'a, StoreResult<Vec<AuditRecord>>> {
    let stream = stream.to_owned();
    store.run(move |conn| {
        let before = now_ms() - millis(older_than);
        let mut stmt = conn
            .prepare_cached(
                "SELECT d.line FROM agents_audit_debts d WHERE d.stream = ?1 AND d.owed_since <= ?2 \
                 AND (d.held_at IS NULL OR d.held_at <= ?2) \
                 AND NOT EXISTS (SELECT 1 FROM agents_proposals p WHERE p.call_id = d.call_id) \
                 ORDER BY d.owed_since, d.call_id LIMIT ?3",
            )
            .map_err(sql_error)?;
        let lines: Vec<String> = stmt
            .query_map(params![stream, before, i64::from(limit)], |r| r.get(0))
            .map_err(sql_error)?
            .collect::<rusqlite::Result<_>>()
            .map_err(sql_error)?;
        owed_records(lines.iter().map(String::as_str))
    })
}

/// [`Store::claim_owed`](crate::Store::claim_owed).
pub(super) fn claim_owed<'a>(
    store: &'a SqliteStore,
    stream: &'a str,
    call_id: &'a str,
    run_id: &'a str,
    node: &'a str,
    lease: Duration,
) -> BoxFuture<'a, StoreResult<bool>> {
    let (stream, call_id, run_id, node) = (stream.to_owned(), call_id.to_owned(), run_id.to_owned(), node.to_owned());
    store.run(move |conn| {
        let now = now_ms();
        // One conditional statement under the database's write lock.
        let n = execute(
            conn,
            "UPDATE agents_audit_debts SET held_by = ?3, held_at = ?4 \
                 WHERE stream = ?1 AND call_id = ?2 AND run_id = ?6 AND (held_at IS NULL OR held_at <= ?5)",
            params![stream, call_id, node, now, now - millis(lease), run_id],
        )
        .map_err(sql_error)?;
        Ok(n == 1)
    })
}
