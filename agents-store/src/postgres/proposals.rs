//! Proposals: stored before the person decides, decided once, read back by call id, by person or
//! by page, and pruned after their retention.

use super::connection::{PostgresStore, is_unique_violation, outcome_unknown, pg_error};
use super::listen::NOTIFY_DECIDED;
use crate::millis;
use agents_runtime::BoxFuture;
use agents_runtime::store::{
    DecideOutcome, ProposalCursor, ProposalPage, ProposalRecord, ProposalState, StoreError, StoreResult, StoredVerdict,
};
use std::time::Duration;

/// The insert of one proposal, undecided (parameters: [`proposal_params`]).
const INSERT_PROPOSAL: &str = "INSERT INTO agents_proposals \
                               (call_id, run_id, session_id, org_id, user_id, tool, title, args, args_mac, detail, seal) \
                               VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)";

/// The parameters of [`INSERT_PROPOSAL`].
fn proposal_params(p: &ProposalRecord) -> [&(dyn tokio_postgres::types::ToSql + Sync); 11] {
    [
        &p.call_id,
        &p.run_id,
        &p.session_id,
        &p.org_id,
        &p.user_id,
        &p.tool,
        &p.title,
        &p.args,
        &p.args_mac,
        &p.detail,
        &p.seal,
    ]
}

pub(super) const PROPOSAL_COLUMNS: &str = "call_id, run_id, session_id, org_id, user_id, tool, title, args, args_mac, verdict, \
                                reason, claimed_by, detail, settled_by, seal";

fn proposal_row(row: &tokio_postgres::Row) -> ProposalState {
    let verdict: Option<String> = row.get(9);
    ProposalState {
        proposal: ProposalRecord {
            call_id: row.get(0),
            run_id: row.get(1),
            session_id: row.get(2),
            org_id: row.get(3),
            user_id: row.get(4),
            tool: row.get(5),
            title: row.get(6),
            args: row.get(7),
            args_mac: row.get(8),
            detail: row.get(12),
            seal: row.get(14),
        },
        verdict: verdict.as_deref().and_then(StoredVerdict::parse),
        reason: row.get(10),
        claimed_by: row.get(11),
        settled_by: row.get(13),
    }
}

/// A page of proposals read with `sql` (selecting [`PROPOSAL_COLUMNS`] and then `ord`, with
/// `$1` the cursor, `$2` the limit and `$3` a duration in milliseconds), and where the next one
/// starts.
pub(super) async fn proposal_page(
    store: &PostgresStore,
    sql: &str,
    after: ProposalCursor,
    limit: u32,
    millis: i64,
) -> StoreResult<ProposalPage> {
    let client = store.client().await?;
    let after = i64::try_from(after.0).unwrap_or(i64::MAX);
    let rows = client.query(sql, &[&after, &i64::from(limit), &millis]).await.map_err(pg_error)?;
    let full = rows.len() == limit as usize;
    let next = rows.last().filter(|_| full).map(|r| ProposalCursor(u64::try_from(r.get::<_, i64>(15)).unwrap_or(0)));
    Ok(ProposalPage { proposals: rows.iter().map(proposal_row).collect(), next })
}

/// [`Store::put_proposal`](crate::Store::put_proposal).
pub(super) fn put_proposal<'a>(store: &'a PostgresStore, p: &'a ProposalRecord) -> BoxFuture<'a, StoreResult<()>> {
    Box::pin(async move {
        let client = store.client().await?;
        let insert = client.prepare_cached(INSERT_PROPOSAL).await.map_err(pg_error)?;
        match client.execute(&insert, &proposal_params(p)).await {
            Ok(_) => Ok(()),
            Err(e) if is_unique_violation(&e) => Err(StoreError::Invalid(format!("call id `{}` is taken", p.call_id))),
            // No answer: it may be stored. Settled by the call id, never by a second row.
            Err(e) if outcome_unknown(&e) => {
                drop(client);
                store.put_proposal_again(p).await.map_err(|again| match again {
                    StoreError::Unavailable(read) => StoreError::Unavailable(format!(
                        "PostgreSQL: a proposal's insert got no answer ({e}) and reading it back failed ({read}); \
                         whether it is stored is unknown"
                    )),
                    other => other,
                })
            }
            Err(e) => Err(pg_error(e)),
        }
    })
}

/// [`Store::decide`](crate::Store::decide).
pub(super) fn decide<'a>(
    store: &'a PostgresStore,
    call_id: &'a str,
    org_id: &'a str,
    user_id: &'a str,
    verdict: StoredVerdict,
    reason: Option<&'a str>,
    seal: &'a str,
) -> BoxFuture<'a, StoreResult<DecideOutcome>> {
    Box::pin(async move {
        let client = store.client().await?;
        // The notification goes with the update, in its transaction: sent when it commits,
        // never for a decision refused or rolled back.
        let stmt = client
            .prepare_cached(&format!(
                "WITH decided AS (UPDATE agents_proposals SET verdict = $4, reason = $5, decided_at = now(), seal = $6 \
                 WHERE call_id = $1 AND org_id = $2 AND user_id = $3 AND verdict IS NULL RETURNING call_id) \
                 {NOTIFY_DECIDED}"
            ))
            .await
            .map_err(pg_error)?;
        let decided = client
            .query(&stmt, &[&call_id, &org_id, &user_id, &verdict.as_str(), &reason, &seal])
            .await
            .map_err(pg_error)?;
        if decided.len() == 1 {
            return Ok(DecideOutcome::Recorded);
        }
        let row = client
            .query_opt("SELECT org_id, user_id FROM agents_proposals WHERE call_id = $1", &[&call_id])
            .await
            .map_err(pg_error)?;
        Ok(match row {
            None => DecideOutcome::Unknown,
            Some(r) if r.get::<_, &str>(0) != org_id || r.get::<_, &str>(1) != user_id => DecideOutcome::NotYours,
            Some(_) => DecideOutcome::AlreadyDecided,
        })
    })
}

/// [`Store::proposal`](crate::Store::proposal).
pub(super) fn proposal<'a>(
    store: &'a PostgresStore,
    call_id: &'a str,
) -> BoxFuture<'a, StoreResult<Option<ProposalState>>> {
    Box::pin(async move {
        let client = store.client().await?;
        // Prepared once per connection: a run waiting for a decision asks this at every poll.
        let select = client
            .prepare_cached(&format!("SELECT {PROPOSAL_COLUMNS} FROM agents_proposals WHERE call_id = $1"))
            .await
            .map_err(pg_error)?;
        let row = client.query_opt(&select, &[&call_id]).await.map_err(pg_error)?;
        Ok(row.as_ref().map(proposal_row))
    })
}

/// [`Store::decided`](crate::Store::decided): one query for every id (a node's waiting calls).
pub(super) fn decided<'a>(
    store: &'a PostgresStore,
    call_ids: &'a [String],
) -> BoxFuture<'a, StoreResult<Vec<ProposalState>>> {
    Box::pin(async move {
        let client = store.client().await?;
        let select = client
            .prepare_cached(&format!(
                "SELECT {PROPOSAL_COLUMNS} FROM agents_proposals WHERE call_id = ANY($1) AND verdict IS NOT NULL"
            ))
            .await
            .map_err(pg_error)?;
        let rows = client.query(&select, &[&call_ids]).await.map_err(pg_error)?;
        Ok(rows.iter().map(proposal_row).collect())
    })
}

/// [`Store::pending_for`](crate::Store::pending_for).
pub(super) fn pending_for<'a>(
    store: &'a PostgresStore,
    org_id: &'a str,
    user_id: &'a str,
) -> BoxFuture<'a, StoreResult<Vec<ProposalRecord>>> {
    Box::pin(async move {
        let client = store.client().await?;
        let stmt = client
            .prepare_cached(&format!(
                "SELECT {PROPOSAL_COLUMNS} FROM agents_proposals \
                 WHERE org_id = $1 AND user_id = $2 AND verdict IS NULL ORDER BY ord"
            ))
            .await
            .map_err(pg_error)?;
        let rows = client.query(&stmt, &[&org_id, &user_id]).await.map_err(pg_error)?;
        Ok(rows.iter().map(|r| proposal_row(r).proposal).collect())
    })
}

/// [`Store::approved_unclaimed`](crate::Store::approved_unclaimed).
pub(super) fn approved_unclaimed(store: &PostgresStore, limit: u32) -> BoxFuture<'_, StoreResult<Vec<ProposalState>>> {
    Box::pin(store.proposals_where("verdict = 'approved' AND claimed_by IS NULL", limit, None))
}

/// [`Store::close_undecided`](crate::Store::close_undecided).
pub(super) fn close_undecided<'a>(
    store: &'a PostgresStore,
    call_id: &'a str,
    node: &'a str,
    reason: &'a str,
) -> BoxFuture<'a, StoreResult<bool>> {
    Box::pin(async move {
        let client = store.client().await?;
        // One conditional update: a concurrent decision waits for this row's lock and then
        // re-checks `verdict IS NULL` on the updated row, which fails (and the other way round).
        // It is a decision too: a run waiting for it on another node is told at once.
        let stmt = client
            .prepare_cached(&format!(
                "WITH decided AS (UPDATE agents_proposals SET verdict = 'rejected', reason = $3, decided_at = now(), \
                 settled_by = $2, settled_at = now(), held_at = now(), held_by = $2 \
                 WHERE call_id = $1 AND verdict IS NULL RETURNING call_id) {NOTIFY_DECIDED}"
            ))
            .await
            .map_err(pg_error)?;
        let closed = client.query(&stmt, &[&call_id, &node, &reason]).await.map_err(pg_error)?;
        Ok(closed.len() == 1)
    })
}

/// [`Store::unsettled`](crate::Store::unsettled).
pub(super) fn unsettled(
    store: &PostgresStore,
    after: ProposalCursor,
    limit: u32,
    undecided_for: Duration,
) -> BoxFuture<'_, StoreResult<ProposalPage>> {
    Box::pin(async move {
        let sql = format!(
            "SELECT {PROPOSAL_COLUMNS}, ord FROM agents_proposals \
             WHERE ord > $1 AND recorded_at IS NULL AND ((verdict = 'approved' AND claimed_by IS NULL) \
             OR (verdict = 'rejected' AND settled_by IS NULL) \
             OR (verdict IS NULL AND created_at <= now() - $3::BIGINT * interval '1 millisecond')) \
             ORDER BY ord LIMIT $2"
        );
        proposal_page(store, &sql, after, limit, millis(undecided_for)).await
    })
}

/// [`Store::prune_proposals`](crate::Store::prune_proposals).
pub(super) fn prune_proposals(store: &PostgresStore, retention: Duration) -> BoxFuture<'_, StoreResult<u64>> {
    Box::pin(async move {
        let client = store.client().await?;
        client
            .execute(
                "DELETE FROM agents_proposals \
                 WHERE recorded_at <= now() - $1::BIGINT * interval '1 millisecond'",
                &[&millis(retention)],
            )
            .await
            .map_err(pg_error)
    })
}

impl PostgresStore {
    /// The proposals matching `condition`, oldest first, at most `limit`. The condition reads
    /// the limit as `$1` and, when `age` is given, that age in milliseconds as `$2`.
    async fn proposals_where(
        &self,
        condition: &str,
        limit: u32,
        age: Option<Duration>,
    ) -> StoreResult<Vec<ProposalState>> {
        let client = self.client().await?;
        let sql = format!("SELECT {PROPOSAL_COLUMNS} FROM agents_proposals WHERE {condition} ORDER BY ord LIMIT $1");
        let limit = i64::from(limit);
        let rows = match age.map(millis) {
            Some(age) => client.query(&sql, &[&limit, &age]).await,
            None => client.query(&sql, &[&limit]).await,
        }
        .map_err(pg_error)?;
        Ok(rows.iter().map(proposal_row).collect())
    }

    /// Stores a proposal whose first insert got no answer, keyed by its call id (so it is never
    /// stored twice): inserted if absent, then read back; `Ok` when the stored row is this
    /// proposal, refused when the call id holds another one.
    async fn put_proposal_again(&self, p: &ProposalRecord) -> StoreResult<()> {
        let client = self.client().await?;
        client
            .execute(&format!("{INSERT_PROPOSAL} ON CONFLICT (call_id) DO NOTHING"), &proposal_params(p))
            .await
            .map_err(pg_error)?;
        let row = client
            .query_opt(&format!("SELECT {PROPOSAL_COLUMNS} FROM agents_proposals WHERE call_id = $1"), &[&p.call_id])
            .await
            .map_err(pg_error)?;
        match row.as_ref().map(proposal_row) {
            Some(found) if found.proposal == *p => {
                tracing::warn!(call_id = %p.call_id, "a proposal's insert got no answer; it was read back as stored");
                Ok(())
            }
            Some(_) => Err(StoreError::Invalid(format!("call id `{}` is taken", p.call_id))),
            None => {
                Err(StoreError::Unavailable(format!("PostgreSQL: proposal `{}` could not be read back", p.call_id)))
            }
        }
    }
}
