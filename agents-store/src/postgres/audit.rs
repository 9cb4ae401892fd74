//! The audit streams: appends sealed into each stream's hash chain under its head's row lock,
//! verification, and the final records still owed for calls that were proposed.

use super::connection::{Head, PostgresStore, abandon, lock, outcome_unknown, pg_error};
use crate::millis;
use agents_runtime::BoxFuture;
use agents_runtime::audit::{AuditRecord, ChainSummary, GENESIS_HASH};
use agents_runtime::store::{
    Debts, StoreError, StoreResult, call_id_needle, line_is_final_of, owed_records, seal_after, verify_lines,
};
use deadpool_postgres::Object;
use futures::future::{join, join4, join5};
use std::time::Duration;

/// A batch sent to the database in an append: the sealed records and the head they leave.
type Sent = (Vec<AuditRecord>, Head);

/// [`Store::append_audit`](crate::Store::append_audit).
pub(super) fn append_audit<'a>(
    store: &'a PostgresStore,
    stream: &'a str,
    records: Vec<AuditRecord>,
) -> BoxFuture<'a, StoreResult<Vec<AuditRecord>>> {
    let owned = store.clone();
    let stream = stream.to_owned();
    store.spawned(async move {
        let store = owned;
        if records.is_empty() {
            return Ok(Vec::new());
        }
        let client = store.client().await?;
        let cached = lock(&store.heads).get(&stream).cloned();
        if let Some(head) = cached {
            match append_after(&client, &stream, &head, records.clone()).await {
                Ok((sealed, new_head)) => {
                    lock(&store.heads).insert(stream, new_head);
                    return Ok(sealed);
                }
                // Another node appended since: read the head under its lock below.
                Err((e, _)) if e.code() == Some(&tokio_postgres::error::SqlState::T_R_SERIALIZATION_FAILURE) => {
                    abandon(&client).await;
                }
                Err((e, sent)) => return store.append_failed(&client, &stream, e, sent).await,
            }
        }
        match append_locked(&client, &stream, records).await {
            Ok((sealed, new_head)) => {
                lock(&store.heads).insert(stream, new_head);
                Ok(sealed)
            }
            Err((e, sent)) => store.append_failed(&client, &stream, e, sent).await,
        }
    })
}

/// [`Store::verify_audit`](crate::Store::verify_audit).
pub(super) fn verify_audit<'a>(store: &'a PostgresStore, stream: &'a str) -> BoxFuture<'a, StoreResult<ChainSummary>> {
    Box::pin(async move {
        let client = store.client().await?;
        let rows = client
            .query("SELECT line FROM agents_audit WHERE stream = $1 ORDER BY seq", &[&stream])
            .await
            .map_err(pg_error)?;
        verify_lines(stream, rows.iter().map(|r| r.get::<_, &str>(0)))
    })
}

/// [`Store::holds_final`](crate::Store::holds_final).
pub(super) fn holds_final<'a>(
    store: &'a PostgresStore,
    stream: &'a str,
    call_id: &'a str,
) -> BoxFuture<'a, StoreResult<Option<bool>>> {
    Box::pin(async move {
        let client = store.client().await?;
        let needle = call_id_needle(call_id);
        let rows = client
            .query("SELECT line FROM agents_audit WHERE stream = $1 AND strpos(line, $2) > 0", &[&stream, &needle])
            .await
            .map_err(pg_error)?;
        Ok(Some(rows.iter().any(|r| line_is_final_of(r.get::<_, &str>(0), call_id))))
    })
}

/// [`Store::owed_finals`](crate::Store::owed_finals).
pub(super) fn owed_finals<'a>(
    store: &'a PostgresStore,
    stream: &'a str,
    older_than: Duration,
    limit: u32,
) -> BoxFuture<'a, StoreResult<Vec<AuditRecord>>> {
    Box::pin(async move {
        let client = store.client().await?;
        let rows = client
            .query(
                "SELECT d.line FROM agents_audit_debts d WHERE d.stream = $1 \
                 AND d.owed_since <= now() - $2::BIGINT * interval '1 millisecond' \
                 AND (d.held_at IS NULL OR d.held_at <= now() - $2::BIGINT * interval '1 millisecond') \
                 AND NOT EXISTS (SELECT 1 FROM agents_proposals p WHERE p.call_id = d.call_id) \
                 ORDER BY d.owed_since, d.call_id LIMIT $3",
                &[&stream, &millis(older_than), &i64::from(limit)],
            )
            .await
            .map_err(pg_error)?;
        owed_records(rows.iter().map(|r| r.get::<_, &str>(0)))
    })
}

/// [`Store::claim_owed`](crate::Store::claim_owed).
pub(super) fn claim_owed<'a>(
    store: &'a PostgresStore,
    stream: &'a str,
    call_id: &'a str,
    run_id: &'a str,
    node: &'a str,
    lease: Duration,
) -> BoxFuture<'a, StoreResult<bool>> {
    Box::pin(async move {
        let client = store.client().await?;
        // One conditional update: a concurrent claimer waits for the row's lock, then
        // re-checks the lapse on the claimed row, which fails.
        let n = client
            .execute(
                "UPDATE agents_audit_debts SET held_by = $3, held_at = now() \
                 WHERE stream = $1 AND call_id = $2 AND run_id = $5 \
                 AND (held_at IS NULL OR held_at <= now() - $4::BIGINT * interval '1 millisecond')",
                &[&stream, &call_id, &node, &millis(lease), &run_id],
            )
            .await
            .map_err(pg_error)?;
        Ok(n == 1)
    })
}

/// The insert of one batch of sealed records.
const INSERT_RECORDS: &str = "INSERT INTO agents_audit (stream, seq, prev_hash, hash, line) \
                              SELECT $1, * FROM unnest($2::BIGINT[], $3::TEXT[], $4::TEXT[], $5::TEXT[])";

/// Seals `records` after `head` as this node last saw it and stores them, in one pipeline
/// (one round trip): `BEGIN`, advance the head from exactly `head` (which takes the head
/// row's lock, waiting for another node's append to end, and fails with SQLSTATE 40001 if the
/// head moved on), insert, `COMMIT`. On failure the transaction stored nothing.
async fn append_after(
    client: &Object,
    stream: &str,
    head: &Head,
    records: Vec<AuditRecord>,
) -> Result<Sent, (tokio_postgres::Error, Option<Sent>)> {
    let unsent = |e| (e, None);
    let advance =
        client.prepare_cached("SELECT agents_audit_advance_fenced($1, $2, $3, $4, $5, $6)").await.map_err(unsent)?;
    let insert = client.prepare_cached(INSERT_RECORDS).await.map_err(unsent)?;
    let (sealed, lines, last_seq, last_hash) = seal_after(head.0 as u64, &head.1, records);
    let columns = Columns::of(&sealed);
    let last_seq = last_seq as i64;
    let debts = Debts::of(&sealed, &lines);
    let (begin, advanced, inserted, kept, commit) = join5(
        client.batch_execute("BEGIN"),
        client.execute(&advance, &[&stream, &head.0, &head.1, &head.2, &last_seq, &last_hash]),
        client.execute(&insert, &[&stream, &columns.seqs, &columns.prevs, &columns.hashes, &lines]),
        keep_debts(client, stream, &debts).await.map_err(unsent)?,
        client.batch_execute("COMMIT"),
    )
    .await;
    // A failed statement aborts the transaction and COMMIT then rolls it back, so the first
    // error is the answer and nothing was stored; unless the server's answer was lost.
    let head = (last_seq, last_hash, head.2);
    match begin.and(advanced).and(inserted).and(kept).and(commit) {
        Ok(()) => Ok((sealed, head)),
        Err(e) => Err((e, Some((sealed, head)))),
    }
}

/// Reads the head under its row lock (creating a new stream's head), seals `records` after
/// it, inserts them and advances the head, in one transaction of two round trips. A writer
/// on another node blocks on the lock until this transaction ends, then reads the head it
/// left.
async fn append_locked(
    client: &Object,
    stream: &str,
    records: Vec<AuditRecord>,
) -> Result<Sent, (tokio_postgres::Error, Option<Sent>)> {
    let unsent = |e| (e, None);
    let head = client
        .prepare_cached(
            "INSERT INTO agents_audit_heads (stream, seq, hash) VALUES ($1, 0, $2) \
             ON CONFLICT (stream) DO UPDATE SET stream = EXCLUDED.stream RETURNING seq, hash, fence",
        )
        .await
        .map_err(unsent)?;
    let insert = client.prepare_cached(INSERT_RECORDS).await.map_err(unsent)?;
    let advance = client
        .prepare_cached("UPDATE agents_audit_heads SET seq = $2, hash = $3 WHERE stream = $1")
        .await
        .map_err(unsent)?;
    let (begin, head) = join(client.batch_execute("BEGIN"), client.query_one(&head, &[&stream, &GENESIS_HASH])).await;
    begin.map_err(unsent)?;
    let head = head.map_err(unsent)?;
    let (seq, prev, fence): (i64, String, i64) = (head.get(0), head.get(1), head.get(2));
    let (sealed, lines, last_seq, last_hash) = seal_after(seq as u64, &prev, records);
    let columns = Columns::of(&sealed);
    let last_seq = last_seq as i64;
    let debts = Debts::of(&sealed, &lines);
    let (inserted, advanced, kept, commit) = join4(
        client.execute(&insert, &[&stream, &columns.seqs, &columns.prevs, &columns.hashes, &lines]),
        client.execute(&advance, &[&stream, &last_seq, &last_hash]),
        keep_debts(client, stream, &debts).await.map_err(unsent)?,
        client.batch_execute("COMMIT"),
    )
    .await;
    let head = (last_seq, last_hash, fence);
    match inserted.and(advanced).and(kept).and(commit) {
        Ok(()) => Ok((sealed, head)),
        Err(e) => Err((e, Some((sealed, head)))),
    }
}

/// The statements that keep a batch's debts (see [`Debts`]), prepared (a round trip the first
/// time on a connection only); the future they return sends them when first polled, so
/// polled between the batch's insert and its COMMIT they run in its transaction, in the same
/// pipeline. A batch without calls sends nothing.
async fn keep_debts<'a>(
    client: &'a Object,
    stream: &'a str,
    debts: &'a Debts<'a>,
) -> Result<impl Future<Output = Result<(), tokio_postgres::Error>> + 'a, tokio_postgres::Error> {
    let (owe, pay) = if debts.is_empty() {
        (None, None)
    } else {
        let owe = client
            .prepare_cached(
                "INSERT INTO agents_audit_debts (stream, call_id, run_id, line) \
                 SELECT $1, * FROM unnest($2::TEXT[], $3::TEXT[], $4::TEXT[]) ON CONFLICT DO NOTHING",
            )
            .await?;
        let pay = client
            .prepare_cached(
                "DELETE FROM agents_audit_debts WHERE stream = $1 AND (call_id = ANY($2::TEXT[]) \
                 OR (call_id, run_id) IN (SELECT * FROM unnest($3::TEXT[], $4::TEXT[])))",
            )
            .await?;
        (Some(owe), Some(pay))
    };
    let owe = owe.filter(|_| !debts.owed.is_empty());
    let pay = pay.filter(|_| !debts.paid.is_empty() || !debts.paid_calls.is_empty());
    let owed = futures::future::OptionFuture::from(owe.map(|owe| async move {
        client.execute(&owe, &[&stream, &debts.owed, &debts.owed_runs, &debts.owed_lines]).await
    }));
    let paid = futures::future::OptionFuture::from(pay.map(|pay| async move {
        client.execute(&pay, &[&stream, &debts.paid_calls, &debts.paid, &debts.paid_runs]).await
    }));
    Ok(async move {
        let (owed, paid) = join(owed, paid).await;
        owed.transpose().and(paid.transpose()).map(drop)
    })
}

/// The chain columns of sealed records, as arrays for `unnest`.
struct Columns<'a> {
    seqs: Vec<i64>,
    prevs: Vec<&'a str>,
    hashes: Vec<&'a str>,
}

impl<'a> Columns<'a> {
    fn of(sealed: &'a [AuditRecord]) -> Self {
        Columns {
            seqs: sealed.iter().map(|r| r.seq as i64).collect(),
            prevs: sealed.iter().map(|r| r.prev_hash.as_str()).collect(),
            hashes: sealed.iter().map(|r| r.hash.as_str()).collect(),
        }
    }
}

impl PostgresStore {
    /// Answers an append that failed with `e` after sending `sent` (or before sending any
    /// records). When the server's answer was lost, the batch is read back instead of taken as
    /// not written: a `proposed` record whose COMMIT went through but whose reply was lost is
    /// then acknowledged, so its call goes on to its final record.
    async fn append_failed(
        &self,
        client: &Object,
        stream: &str,
        e: tokio_postgres::Error,
        sent: Option<Sent>,
    ) -> StoreResult<Vec<AuditRecord>> {
        lock(&self.heads).remove(stream);
        if !client.is_closed() {
            abandon(client).await;
        }
        let Some((sealed, head)) = sent.filter(|_| outcome_unknown(&e)) else { return Err(pg_error(e)) };
        match self.landed(stream, &head).await {
            Ok(Some(fence)) => {
                tracing::warn!(stream, seq = head.0, "an audit append's reply was lost; it was read back as stored");
                lock(&self.heads).insert(stream.to_owned(), (head.0, head.1, fence));
                Ok(sealed)
            }
            Ok(None) => Err(pg_error(e)),
            Err(read) => Err(StoreError::Unavailable(format!(
                "PostgreSQL: an audit append's reply was lost ({e}) and reading it back failed too ({read}); whether it \
                 was stored is unknown"
            ))),
        }
    }

    /// Whether a batch that left `head` (its last record's `seq` and `hash`) is stored, and the
    /// stream's fence then: read after moving the stream head's fence on, under its row lock
    /// (created if the stream is new), so a transaction of the lost connection that holds the
    /// lock (or is inserting the head) ends first, and one that reaches the server later fails
    /// on the fence and stores nothing. The record's identity decides (a hash covers the whole
    /// record); nothing is written again.
    async fn landed(&self, stream: &str, head: &Head) -> StoreResult<Option<i64>> {
        let mut client = self.client().await?;
        let tx = client.transaction().await.map_err(pg_error)?;
        let fence: i64 = tx
            .query_one(
                "INSERT INTO agents_audit_heads (stream, seq, hash) VALUES ($1, 0, $2) \
                 ON CONFLICT (stream) DO UPDATE SET fence = agents_audit_heads.fence + 1 RETURNING fence",
                &[&stream, &GENESIS_HASH],
            )
            .await
            .map_err(pg_error)?
            .get(0);
        let row = tx
            .query_opt("SELECT hash FROM agents_audit WHERE stream = $1 AND seq = $2", &[&stream, &head.0])
            .await
            .map_err(pg_error)?;
        tx.commit().await.map_err(pg_error)?;
        Ok(row.is_some_and(|r| r.get::<_, &str>(0) == head.1).then_some(fence))
    }
}
