//! The audit streams: appends sealed into each stream's hash chain under its head's row lock,
//! verification, and the final records still owed for calls that were proposed.

use super::connection::{PostgresStore, abandon, lock, outcome_unknown, pg_error};
use super::lane::{Head, Lane};
use crate::millis;
use agents_runtime::BoxFuture;
use agents_runtime::audit::{AuditRecord, AuditStatus, ChainSummary, GENESIS_HASH};
use agents_runtime::store::{
    Debts, StoreError, StoreResult, call_id_needle, line_is_final_of, owed_records, seal_after, verify_lines,
};
use deadpool_postgres::Object;
use futures::future::join;
use std::pin::pin;
use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;
use tokio::sync::oneshot;
use tokio_postgres::Statement;
use tokio_postgres::types::ToSql;

/// A batch sent to the database in an append: the sealed records and the head they leave.
type Sent = (Vec<AuditRecord>, Head);

/// [`Store::append_audit`](crate::Store::append_audit). The append takes its turn in the
/// stream's lane now, before its task starts, so batches are sealed in the order of the calls;
/// while the head is known, a batch is sent behind those in flight without waiting for their
/// answers (see [`Lane`]).
pub(super) fn append_audit<'a>(
    store: &'a PostgresStore,
    stream: &'a str,
    records: Vec<AuditRecord>,
) -> BoxFuture<'a, StoreResult<Vec<AuditRecord>>> {
    let (before, turn) = store.lane(stream, Lane::turn);
    let owned = store.clone();
    let stream = stream.to_owned();
    store.spawned(async move {
        let store = owned;
        // The append called before this one has sent its batch (or given up).
        if let Some(before) = before {
            let _ = before.await;
        }
        if records.is_empty() {
            return Ok(Vec::new());
        }
        let mut records = records;
        let (head, pipeline) = store.lane(&stream, |lane| (lane.head.clone(), lane.may_pipeline()));
        if let Some(head) = head {
            // The next append's turn: given once this batch is sent, or (one at a time) held
            // until it is answered.
            let mut next = if pipeline { Some(turn) } else { None };
            match store.append_pipelined(&stream, &head, records, &mut next).await? {
                Ok(sealed) => return Ok(sealed),
                // Another node appended since, or the batch before this one failed (the
                // statement stored nothing): sealed again after the head read under its lock.
                Err(refused) => records = refused,
            }
        }
        // The head is read under its lock. The next append waits for it while this one holds
        // its turn (a batch refused after being sent behind another gave its turn then).
        let client = store.client().await?;
        match append_locked(&client, &stream, records).await {
            Ok((sealed, new_head)) => {
                store.lane(&stream, |lane| lane.head = Some(new_head));
                Ok(sealed)
            }
            Err((e, sent)) => store.append_failed(Some(&client), &stream, e, sent).await,
        }
    })
}

/// [`Store::pipelines_audit`](crate::Store::pipelines_audit): while this store knows the
/// stream's head and no batch of it was refused lately (see [`Lane`]).
pub(super) fn pipelines_audit(store: &PostgresStore, stream: &str) -> bool {
    lock(&store.lanes).get(stream).is_some_and(Lane::pipelines)
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

/// [`Store::audit_lines`](crate::Store::audit_lines).
pub(super) fn audit_lines<'a>(
    store: &'a PostgresStore,
    stream: &'a str,
    after_seq: u64,
    limit: u32,
) -> BoxFuture<'a, StoreResult<Vec<(u64, String)>>> {
    Box::pin(async move {
        let client = store.client().await?;
        let after = i64::try_from(after_seq).unwrap_or(i64::MAX);
        let rows = client
            .query(
                "SELECT seq, line FROM agents_audit WHERE stream = $1 AND seq > $2 ORDER BY seq LIMIT $3",
                &[&stream, &after, &i64::from(limit)],
            )
            .await
            .map_err(pg_error)?;
        Ok(rows.iter().map(|r| (r.get::<_, i64>(0).max(0) as u64, r.get::<_, String>(1))).collect())
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

/// [`Store::owed_finals`](crate::Store::owed_finals): each debt's `proposed` record, read
/// through its pointer (`seq` in the debt's stream).
pub(super) fn owed_finals<'a>(
    store: &'a PostgresStore,
    stream: &'a str,
    older_than: Duration,
    limit: u32,
) -> BoxFuture<'a, StoreResult<Vec<AuditRecord>>> {
    Box::pin(async move {
        let mut client = store.client().await?;
        account(&mut client, stream).await?;
        let rows = client
            .query(
                "SELECT d.call_id, d.run_id, d.seq, a.line FROM agents_audit_debts d \
                 LEFT JOIN agents_audit a ON a.stream = d.stream AND a.seq = d.seq WHERE d.stream = $1 \
                 AND d.owed_since <= now() - $2::BIGINT * interval '1 millisecond' \
                 AND (d.held_at IS NULL OR d.held_at <= now() - $2::BIGINT * interval '1 millisecond') \
                 AND NOT EXISTS (SELECT 1 FROM agents_proposals p WHERE p.call_id = d.call_id) \
                 ORDER BY d.owed_since, d.call_id LIMIT $3",
                &[&stream, &millis(older_than), &i64::from(limit)],
            )
            .await
            .map_err(pg_error)?;
        rows.iter().map(|r| owed_record(stream, r.get(0), r.get(1), r.get(2), r.get(3))).collect()
    })
}

/// The `proposed` record the debt of call `call_id` in run `run_id` points at (`seq`), whose
/// stored line is `line`. A pointer at no record, or at a record that is not that call's
/// `proposed` record, is a broken store: refused, naming the debt.
fn owed_record(stream: &str, call_id: &str, run_id: &str, seq: i64, line: Option<&str>) -> StoreResult<AuditRecord> {
    let broken = |what: &str| {
        StoreError::Invalid(format!(
            "the audit debt of call {call_id} (run {run_id}) in stream {stream} points at record {seq}, {what}: the \
             store is broken (restore the record or delete the debt)"
        ))
    };
    let line = line.ok_or_else(|| broken("which is not stored"))?;
    let record = owed_records([line])?.pop().ok_or_else(|| broken("which does not parse"))?;
    let owed = record.status == AuditStatus::Proposed
        && record.call_id.as_deref() == Some(call_id)
        && &*record.run_id == run_id
        && record.seq == seq as u64;
    if !owed {
        return Err(broken("which is not that call's `proposed` record"));
    }
    Ok(record)
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
        let mut client = store.client().await?;
        // Accounted for first: a final record appended since the debt was read (its writer
        // was slow, not dead) has paid it by then, and the claim finds no debt.
        account(&mut client, stream).await?;
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

/// The append of one sealed batch (migrations 13 and 14): the head advanced under its fence
/// and the records inserted, in one statement. The batch's debts are not written here: the
/// readers of a stream's debts account for its records first ([`account`]).
const APPEND: &str = "SELECT agents_audit_append($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)";

/// The records accounted for in one transaction when a stream's debts catch up with them.
const ACCOUNT_CHUNK: i64 = 1000;

/// Brings the debts of `stream` up to its records (migration 14): the records after the
/// stream's mark up to its head (the records its chain holds; a row beyond the head is not
/// one), in `seq` order and at most [`ACCOUNT_CHUNK`] a transaction, pay the debts their final
/// records pay and open those their `proposed` records leave owed ([`Debts`]), and the mark
/// moves to the last of them, under the mark's row lock (a second reader waits, then finds
/// them accounted for). A stream whose mark is at its head costs one read. A stored line that
/// does not parse, or whose `seq` is not its row's, is a broken store: refused, naming the
/// record, and nothing changes.
async fn account(client: &mut Object, stream: &str) -> StoreResult<()> {
    let behind = client
        .prepare_cached(
            "SELECT h.seq > COALESCE(m.seq, 0) FROM agents_audit_heads h \
             LEFT JOIN agents_audit_debt_marks m ON m.stream = h.stream WHERE h.stream = $1",
        )
        .await
        .map_err(pg_error)?;
    let behind = client.query_opt(&behind, &[&stream]).await.map_err(pg_error)?;
    if !behind.is_some_and(|row| row.get::<_, bool>(0)) {
        return Ok(());
    }
    loop {
        let tx = client.transaction().await.map_err(pg_error)?;
        let mark: i64 = tx
            .query_one(
                "INSERT INTO agents_audit_debt_marks (stream, seq) VALUES ($1, 0) \
                 ON CONFLICT (stream) DO UPDATE SET seq = agents_audit_debt_marks.seq RETURNING seq",
                &[&stream],
            )
            .await
            .map_err(pg_error)?
            .get(0);
        // A window of `seq` rather than a `LIMIT`: a chain's records are numbered without
        // gaps, and the window keeps the server from fetching and sorting every record after
        // the mark for each transaction.
        let rows = tx
            .query(
                "SELECT seq, line FROM agents_audit WHERE stream = $1 AND seq > $2 \
                 AND seq <= LEAST($2 + $3, (SELECT seq FROM agents_audit_heads WHERE stream = $1)) ORDER BY seq",
                &[&stream, &mark, &ACCOUNT_CHUNK],
            )
            .await
            .map_err(pg_error)?;
        let Some(last) = rows.last().map(|row| row.get::<_, i64>(0)) else { return Ok(()) };
        let lines: Vec<String> = rows.iter().map(|row| row.get(1)).collect();
        let records = stored_records(stream, &rows, &lines)?;
        let debts = Debts::of(&records, &lines);
        if !debts.paid_calls.is_empty() || !debts.paid.is_empty() {
            tx.execute(
                "DELETE FROM agents_audit_debts WHERE stream = $1 AND (call_id = ANY($2) \
                 OR (call_id, run_id) IN (SELECT * FROM unnest($3::TEXT[], $4::TEXT[])))",
                &[&stream, &debts.paid_calls, &debts.paid, &debts.paid_runs],
            )
            .await
            .map_err(pg_error)?;
        }
        if !debts.owed.is_empty() {
            tx.execute(
                "INSERT INTO agents_audit_debts (stream, call_id, run_id, seq) \
                 SELECT $1, * FROM unnest($2::TEXT[], $3::TEXT[], $4::BIGINT[]) \
                 ON CONFLICT (stream, call_id, run_id) DO NOTHING",
                &[&stream, &debts.owed, &debts.owed_runs, &debts.owed_seqs],
            )
            .await
            .map_err(pg_error)?;
        }
        tx.execute("UPDATE agents_audit_debt_marks SET seq = $2 WHERE stream = $1", &[&stream, &last])
            .await
            .map_err(pg_error)?;
        tx.commit().await.map_err(pg_error)?;
        if (rows.len() as i64) < ACCOUNT_CHUNK {
            return Ok(());
        }
    }
}

/// The records of `rows` (`seq`, line) of `stream`, parsed from `lines` (their lines).
fn stored_records(stream: &str, rows: &[tokio_postgres::Row], lines: &[String]) -> StoreResult<Vec<AuditRecord>> {
    rows.iter()
        .zip(lines)
        .map(|(row, line)| {
            let seq: i64 = row.get(0);
            match serde_json::from_str::<AuditRecord>(line) {
                Ok(record) if record.seq == seq as u64 => Ok(record),
                parsed => Err(StoreError::Invalid(format!(
                    "audit stream {stream}: the stored record {seq} {}: the store is broken (restore the record)",
                    match parsed {
                        Ok(record) => format!("holds the line of record {}", record.seq),
                        Err(e) => format!("does not parse ({e})"),
                    }
                ))),
            }
        })
        .collect()
}

/// A batch sealed after a head: its records, their canonical lines, and the last record's
/// `seq` and `hash` (the head it leaves).
struct Sealed {
    records: Vec<AuditRecord>,
    lines: Vec<String>,
    to: (i64, String),
}

impl Sealed {
    /// Seals `records` after the record `seq` whose hash is `hash`.
    fn after(seq: i64, hash: &str, records: Vec<AuditRecord>) -> Self {
        let (records, lines, last_seq, last_hash) = seal_after(seq as u64, hash, records);
        Sealed { records, lines, to: (last_seq as i64, last_hash) }
    }

    /// The head the records leave under `fence`.
    fn leaves(&self, fence: i64) -> Head {
        (self.to.0, self.to.1.clone(), fence)
    }

    /// The records, and the head they leave under `fence`.
    fn sent(self, fence: i64) -> Sent {
        let (seq, hash) = self.to;
        (self.records, (seq, hash, fence))
    }
}

/// Sends the append of `batch` after `from` (`append` is [`APPEND`] prepared). Sent alone it
/// is its own transaction; in a pipeline it runs in the transaction the pipeline opened. The
/// request leaves when the future is first polled.
async fn send(
    client: &Object,
    append: &Statement,
    stream: &str,
    from: &Head,
    batch: &Sealed,
) -> Result<(), tokio_postgres::Error> {
    let columns = Columns::of(&batch.records);
    let args: [&(dyn ToSql + Sync); 10] = [
        &stream,
        &from.0,
        &from.1,
        &from.2,
        &batch.to.0,
        &batch.to.1,
        &columns.seqs,
        &columns.prevs,
        &columns.hashes,
        &batch.lines,
    ];
    client.execute(append, &args).await.map(drop)
}

/// Reads the head under its row lock (creating a new stream's head), seals `records` after
/// it and appends them, in one transaction of two round trips. A writer on another node
/// blocks on the lock until this transaction ends, then reads the head it left.
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
    let append = client.prepare_cached(APPEND).await.map_err(unsent)?;
    let (begin, head) = join(client.batch_execute("BEGIN"), client.query_one(&head, &[&stream, &GENESIS_HASH])).await;
    begin.map_err(unsent)?;
    let head = head.map_err(unsent)?;
    let head: Head = (head.get(0), head.get(1), head.get(2));
    let batch = Sealed::after(head.0, &head.1, records);
    let (appended, commit) = join(send(client, &append, stream, &head, &batch), client.batch_execute("COMMIT")).await;
    // A failed statement aborts the transaction and COMMIT then rolls it back, so the first
    // error is the answer and nothing was stored; unless the server's answer was lost.
    match appended.and(commit) {
        Ok(()) => Ok(batch.sent(head.2)),
        Err(e) => Err((e, Some(batch.sent(head.2)))),
    }
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
    /// Runs `f` on `stream`'s lane (created if new).
    fn lane<T>(&self, stream: &str, f: impl FnOnce(&mut Lane) -> T) -> T {
        let mut lanes = lock(&self.lanes);
        match lanes.get_mut(stream) {
            Some(lane) => f(lane),
            None => f(lanes.entry(stream.to_owned()).or_default()),
        }
    }

    /// Seals `records` after `head` (the head the batch before leaves, as this store expects
    /// it) and stores them in one statement, its own transaction: the head advanced from
    /// exactly `head` (which takes the head row's lock, waiting for another node's append to
    /// end, and fails with SQLSTATE 40001 if the head is elsewhere), the records inserted
    /// (their debts are accounted for when read). The statement is sent on the connection of
    /// the batches in flight, behind them; once it has left, the lane's head is the one this
    /// batch leaves and `turn` is given to the next append, which does not wait for this one's
    /// answer. `Err` inside `Ok` gives back the records of a batch refused for its head
    /// (nothing stored).
    async fn append_pipelined(
        &self,
        stream: &str,
        head: &Head,
        records: Vec<AuditRecord>,
        turn: &mut Option<oneshot::Sender<()>>,
    ) -> StoreResult<Result<Vec<AuditRecord>, Vec<AuditRecord>>> {
        let client = match self.lane(stream, |lane| lane.client()) {
            Some(client) => client,
            None => {
                let client = Arc::new(self.client().await?);
                self.lane(stream, |lane| lane.keep_client(&client));
                client
            }
        };
        let append = match client.prepare_cached(APPEND).await {
            Ok(append) => append,
            Err(e) => return self.append_failed(None, stream, e, None).await.map(Ok),
        };
        let batch = Sealed::after(head.0, &head.1, records);
        let answer = {
            let mut request = pin!(send(&client, &append, stream, head, &batch));
            // The first poll sends the statement (the driver queues it on the connection in
            // the order it was polled); only then may the next batch be sealed and sent.
            let first = futures::poll!(request.as_mut());
            let leaves = batch.leaves(head.2);
            self.lane(stream, |lane| lane.head = Some(leaves));
            drop(turn.take());
            match first {
                Poll::Ready(answer) => answer,
                Poll::Pending => request.await,
            }
        };
        let sent = batch.sent(head.2);
        match answer {
            Ok(()) => Ok(Ok(sent.0)),
            Err(e) if e.code() == Some(&tokio_postgres::error::SqlState::T_R_SERIALIZATION_FAILURE) => {
                self.lane(stream, Lane::refused);
                Ok(Err(sent.0))
            }
            Err(e) => self.append_failed(None, stream, e, Some(sent)).await.map(Ok),
        }
    }

    /// Answers an append that failed with `e` after sending `sent` (or before sending any
    /// records). When the server's answer was lost, the batch is read back instead of taken as
    /// not written: a `proposed` record whose COMMIT went through but whose reply was lost is
    /// then acknowledged, so its call goes on to its final record.
    async fn append_failed(
        &self,
        in_transaction: Option<&Object>,
        stream: &str,
        e: tokio_postgres::Error,
        sent: Option<Sent>,
    ) -> StoreResult<Vec<AuditRecord>> {
        self.lane(stream, Lane::reset);
        if let Some(client) = in_transaction.filter(|client| !client.is_closed()) {
            abandon(client).await;
        }
        let Some((sealed, head)) = sent.filter(|_| outcome_unknown(&e)) else { return Err(pg_error(e)) };
        match self.landed(stream, &head).await {
            Ok(Some(fence)) => {
                tracing::warn!(stream, seq = head.0, "an audit append's reply was lost; it was read back as stored");
                self.lane(stream, |lane| lane.head = Some((head.0, head.1, fence)));
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
