//! The PostgreSQL store: one database shared by every node of a service.

mod budget;
mod checkpoints;
mod harness;

pub use checkpoints::{CheckpointReadError, PostgresCheckpoints};
pub use harness::{HarnessError, TempCluster};

use crate::{POSTGRES_MIGRATIONS, VERSION_TABLE, check_version, millis, unavailable};
use agents_runtime::BoxFuture;
use agents_runtime::audit::{AuditRecord, ChainSummary, GENESIS_HASH};
use agents_runtime::store::{
    Debts, DecideOutcome, ProposalCursor, ProposalPage, ProposalRecord, ProposalState, Redeemed, SessionRecord,
    SessionSaved, SlotId, SlotOwner, Store, StoreError, StoreResult, StoredVerdict, TokenGrant, call_id_needle,
    line_is_final_of, owed_records, seal_after, verify_lines,
};
use deadpool_postgres::{Manager, ManagerConfig, Object, Pool, RecyclingMethod};
use futures::future::{join, join4, join5};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;
use tokio_postgres::NoTls;

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

/// How a [`PostgresStore`] connects and how long each of its waits may last: every wait ends,
/// and a wait that ends this way fails the operation (the runtime fails closed on it).
///
/// | setting | default | bounds |
/// | --- | --- | --- |
/// | `max_connections` | 16 | connections in the pool |
/// | `acquire_timeout` | 10 s | waiting for a free pooled connection |
/// | `connect_timeout` | 10 s | opening (and recycling) one connection |
/// | `statement_timeout` | 30 s | one statement on the server (`statement_timeout`) |
/// | `lock_timeout` | 10 s | one wait for a row, table or advisory lock (`lock_timeout`) |
/// | `tcp_user_timeout` | 30 s | unacknowledged data on the socket (a silent network, `TCP_USER_TIMEOUT`, Linux) |
///
/// A statement or lock that times out is rolled back by the server (nothing is stored) and
/// answers [`StoreError::Unavailable`]; so does a pool that has no free connection in time.
/// Options given in the connection string (`options=-c ...`) are kept; these are added after
/// them, so they win.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PostgresSettings {
    /// The most connections the pool opens.
    pub max_connections: usize,
    /// How long an operation waits for a free pooled connection.
    pub acquire_timeout: Duration,
    /// How long opening one connection may take (also bounds recycling one).
    pub connect_timeout: Duration,
    /// The server's `statement_timeout` for every statement of the store.
    pub statement_timeout: Duration,
    /// The server's `lock_timeout`: how long a statement waits for a lock another transaction
    /// holds (a node holding a row lock, an operator's open transaction).
    pub lock_timeout: Duration,
    /// How long sent data may stay unacknowledged before the connection is dropped (a peer
    /// that vanished without closing; TCP keepalives start after the same idle time).
    pub tcp_user_timeout: Duration,
}

impl Default for PostgresSettings {
    fn default() -> Self {
        PostgresSettings {
            max_connections: 16,
            acquire_timeout: Duration::from_secs(10),
            connect_timeout: Duration::from_secs(10),
            statement_timeout: Duration::from_secs(30),
            lock_timeout: Duration::from_secs(10),
            tcp_user_timeout: Duration::from_secs(30),
        }
    }
}

impl PostgresSettings {
    /// Puts the timeouts into a connection's configuration; refuses a zero one.
    fn apply(&self, config: &mut tokio_postgres::Config) -> StoreResult<()> {
        let named = [
            ("acquire_timeout", self.acquire_timeout),
            ("connect_timeout", self.connect_timeout),
            ("statement_timeout", self.statement_timeout),
            ("lock_timeout", self.lock_timeout),
            ("tcp_user_timeout", self.tcp_user_timeout),
        ];
        if let Some((name, _)) = named.iter().find(|(_, d)| d.as_millis() == 0) {
            return Err(StoreError::Invalid(format!(
                "PostgresSettings::{name} is zero: give it a positive duration (a zero timeout would disable it on \
                 the server, and every wait must end)"
            )));
        }
        let ours = format!(
            "-c statement_timeout={} -c lock_timeout={}",
            millis(self.statement_timeout),
            millis(self.lock_timeout)
        );
        let options = match config.get_options() {
            Some(given) if !given.trim().is_empty() => format!("{given} {ours}"),
            _ => ours,
        };
        config
            .options(options)
            .connect_timeout(self.connect_timeout)
            .tcp_user_timeout(self.tcp_user_timeout)
            .keepalives(true)
            .keepalives_idle(self.tcp_user_timeout);
        Ok(())
    }
}

/// The advisory lock key that serialises migrations of one database across nodes.
const MIGRATION_LOCK: i64 = 0x6167_656e_7473_0001;

/// The runtime's state in a PostgreSQL database, shared by every node that connects to it.
///
/// Each guarantee of [`Store`] is one conditional statement or one transaction on the
/// server, so it holds across nodes (see the crate documentation for which statement backs
/// which guarantee). Expiry is measured on the database server's clock (`now()`), so nodes
/// whose clocks differ agree on it.
///
/// Connections come from a `deadpool-postgres` pool. A multi-statement operation is sent as
/// one pipeline (one round trip) and runs in its own task, so a caller that gives up half way
/// never leaves a connection inside a transaction.
#[derive(Clone)]
pub struct PostgresStore {
    pool: Pool,
    /// The head of each audit stream as this node last left it: a guess, checked by the
    /// database on every append.
    heads: Arc<Mutex<HashMap<String, Head>>>,
}

impl std::fmt::Debug for PostgresStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PostgresStore").field("pool", &self.pool.status()).finish()
    }
}

fn pg_error(e: impl std::error::Error) -> StoreError {
    unavailable("PostgreSQL", with_sources(&e))
}

/// An error with its sources (a server's error is a source: its SQLSTATE and message, such as
/// `canceling statement due to lock timeout`, would be lost otherwise).
fn with_sources(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}

fn is_unique_violation(e: &tokio_postgres::Error) -> bool {
    e.code() == Some(&tokio_postgres::error::SqlState::UNIQUE_VIOLATION)
}

impl PostgresStore {
    /// Connects with a libpq-style connection string (`host=... port=... user=... dbname=...`
    /// or a `postgresql://` URL) and a pool of at most `max_connections`, then applies the
    /// schema migrations the database lacks (under an advisory lock, so nodes starting
    /// together migrate once). Refuses ([`StoreError::NewerSchema`], nothing changed) a
    /// database migrated by a newer build.
    pub async fn connect(conninfo: &str, max_connections: usize) -> StoreResult<Self> {
        Self::connect_with(conninfo, PostgresSettings { max_connections, ..PostgresSettings::default() }).await
    }

    /// [`PostgresStore::connect`] with every setting given (pool size and the timeouts that
    /// bound each wait, see [`PostgresSettings`]). A zero duration is refused
    /// ([`StoreError::Invalid`], nothing connected): every wait must end.
    pub async fn connect_with(conninfo: &str, settings: PostgresSettings) -> StoreResult<Self> {
        let mut config: tokio_postgres::Config =
            conninfo.parse().map_err(|e| StoreError::Invalid(format!("PostgreSQL connection string: {e}")))?;
        settings.apply(&mut config)?;
        let manager = Manager::from_config(config, NoTls, ManagerConfig { recycling_method: RecyclingMethod::Fast });
        let pool = Pool::builder(manager)
            .max_size(settings.max_connections.max(1))
            .runtime(deadpool_postgres::Runtime::Tokio1)
            .wait_timeout(Some(settings.acquire_timeout))
            .create_timeout(Some(settings.connect_timeout))
            .recycle_timeout(Some(settings.connect_timeout))
            .build()
            .map_err(pg_error)?;
        let store = PostgresStore { pool, heads: Arc::default() };
        store.migrate().await?;
        Ok(store)
    }

    async fn client(&self) -> StoreResult<Object> {
        self.pool.get().await.map_err(|e| match e {
            deadpool_postgres::PoolError::Timeout(_) => StoreError::Unavailable(
                "PostgreSQL: no pooled connection became free within the acquire timeout (raise \
                 `PostgresSettings::max_connections` or `acquire_timeout`, or look for a stuck database)"
                    .to_owned(),
            ),
            e => pg_error(e),
        })
    }

    async fn migrate(&self) -> StoreResult<()> {
        let mut client = self.client().await?;
        let tx = client.transaction().await.map_err(pg_error)?;
        tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK]).await.map_err(pg_error)?;
        tx.batch_execute(&format!(
            "CREATE TABLE IF NOT EXISTS {VERSION_TABLE} (version BIGINT PRIMARY KEY, name TEXT NOT NULL, \
             applied_at TIMESTAMPTZ NOT NULL DEFAULT now())"
        ))
        .await
        .map_err(pg_error)?;
        let found: i64 = tx
            .query_one(&format!("SELECT COALESCE(MAX(version), 0)::BIGINT FROM {VERSION_TABLE}"), &[])
            .await
            .map_err(pg_error)?
            .get(0);
        check_version(found, POSTGRES_MIGRATIONS)?;
        for m in POSTGRES_MIGRATIONS.iter().filter(|m| m.version > found) {
            tx.batch_execute(m.sql)
                .await
                .map_err(|e| unavailable(&format!("migration {} ({})", m.version, m.name), e))?;
            tx.execute(&format!("INSERT INTO {VERSION_TABLE} (version, name) VALUES ($1, $2)"), &[&m.version, &m.name])
                .await
                .map_err(pg_error)?;
        }
        tx.commit().await.map_err(pg_error)
    }

    /// The schema version the database is at.
    pub async fn schema_version(&self) -> StoreResult<i64> {
        let client = self.client().await?;
        let row = client
            .query_one(&format!("SELECT COALESCE(MAX(version), 0)::BIGINT FROM {VERSION_TABLE}"), &[])
            .await
            .map_err(pg_error)?;
        Ok(row.get(0))
    }

    /// Claims `call_id` for `node` (see [`Claim`]); `true` if this call took the claim.
    async fn claim(&self, claim: Claim, call_id: &str, node: &str) -> StoreResult<bool> {
        let client = self.client().await?;
        let n = client.execute(claim.statement(), &[&call_id, &node]).await.map_err(pg_error)?;
        Ok(n == 1)
    }

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

    /// Runs `f` in its own task, so it completes (or rolls back) even if the caller stops
    /// waiting.
    fn spawned<T: Send + 'static>(
        &self,
        f: impl Future<Output = StoreResult<T>> + Send + 'static,
    ) -> BoxFuture<'static, StoreResult<T>> {
        in_own_task(f, |e| unavailable("PostgreSQL task", e))
    }
}

/// A batch sent to the database in an append: the sealed records and the head they leave.
type Sent = (Vec<AuditRecord>, Head);

/// Whether a failed statement's outcome is unknown: the server did not answer (the connection
/// broke, or the reply was lost), so what it was sent may have been carried out, COMMIT
/// included. A server's own error (it has a SQLSTATE) rolled the transaction back.
fn outcome_unknown(e: &tokio_postgres::Error) -> bool {
    e.code().is_none()
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

/// Runs `f` in its own task, so a transaction it opens is committed or rolled back even if the
/// caller stops waiting half way (a dropped future would otherwise leave its pooled
/// connection inside the transaction, and the next operation on that connection would run in
/// it and never be committed). `lost` says what a task that panicked answers.
fn in_own_task<T: Send + 'static, E: Send + 'static>(
    f: impl Future<Output = Result<T, E>> + Send + 'static,
    lost: fn(tokio::task::JoinError) -> E,
) -> BoxFuture<'static, Result<T, E>> {
    Box::pin(async move { tokio::spawn(f).await.map_err(lost)? })
}

/// Ends a transaction that failed half way, so the connection goes back to the pool clean.
async fn abandon(client: &Object) {
    if let Err(e) = client.batch_execute("ROLLBACK").await {
        tracing::warn!(error = %e, "rollback of a failed state-store transaction failed");
    }
}

const PROPOSAL_COLUMNS: &str = "call_id, run_id, session_id, org_id, user_id, tool, title, args, args_mac, verdict, \
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
async fn proposal_page(
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

impl Store for PostgresStore {
    fn mint_token<'a>(&'a self, grant: &'a TokenGrant, ttl: Duration) -> BoxFuture<'a, StoreResult<()>> {
        Box::pin(async move {
            let client = self.client().await?;
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

    fn redeem_token<'a>(&'a self, id: &'a str) -> BoxFuture<'a, StoreResult<Redeemed>> {
        Box::pin(async move {
            let client = self.client().await?;
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

    fn revoke_session_tokens<'a>(&'a self, session_id: &'a str) -> BoxFuture<'a, StoreResult<u64>> {
        Box::pin(async move {
            let client = self.client().await?;
            client.execute("DELETE FROM agents_tokens WHERE session_id = $1", &[&session_id]).await.map_err(pg_error)
        })
    }

    fn prune_tokens(&self) -> BoxFuture<'_, StoreResult<u64>> {
        Box::pin(async move {
            let client = self.client().await?;
            client
                .execute("DELETE FROM agents_tokens WHERE redeemed_at IS NOT NULL OR expires_at <= now()", &[])
                .await
                .map_err(pg_error)
        })
    }

    fn acquire_slot<'a>(
        &'a self,
        owner: &'a SlotOwner,
        cap: u32,
        lease: Duration,
    ) -> BoxFuture<'a, StoreResult<Option<SlotId>>> {
        let store = self.clone();
        let owner = owner.clone();
        self.spawned(async move {
            let client = store.client().await?;
            let lock = client
                .prepare_cached(
                    "INSERT INTO agents_slot_owners (org_id, user_id) VALUES ($1, $2) \
                     ON CONFLICT (org_id, user_id) DO UPDATE SET org_id = EXCLUDED.org_id",
                )
                .await
                .map_err(pg_error)?;
            let expire = client
                .prepare_cached(
                    "DELETE FROM agents_run_slots WHERE org_id = $1 AND user_id = $2 AND lease_until <= now()",
                )
                .await
                .map_err(pg_error)?;
            let take = client
                .prepare_cached(
                    "INSERT INTO agents_run_slots (id, org_id, user_id, lease_until) \
                     SELECT $3, $1, $2, now() + $4::BIGINT * interval '1 millisecond' \
                     WHERE (SELECT count(*) FROM agents_run_slots WHERE org_id = $1 AND user_id = $2) < $5::BIGINT \
                     RETURNING id",
                )
                .await
                .map_err(pg_error)?;
            let id = uuid::Uuid::new_v4().to_string();
            let (org, user, lease_ms, cap) = (&owner.org_id, &owner.user_id, millis(lease), i64::from(cap));
            // One pipeline, one round trip. The statements run in order on the server: the
            // owner's row lock is held before the count is taken, so the count sees every slot
            // committed by whoever held the lock before.
            let (begin, locked, expired, taken, commit) = join5(
                client.batch_execute("BEGIN"),
                client.execute(&lock, &[org, user]),
                client.execute(&expire, &[org, user]),
                client.query_opt(&take, &[org, user, &id, &lease_ms, &cap]),
                client.batch_execute("COMMIT"),
            )
            .await;
            let outcome = begin.and(locked).and(expired).and(taken).and_then(|t| commit.map(|()| t));
            match outcome {
                Ok(taken) => Ok(taken.map(|_| SlotId(id))),
                Err(e) => {
                    abandon(&client).await;
                    Err(pg_error(e))
                }
            }
        })
    }

    fn renew_slot<'a>(&'a self, slot: &'a SlotId, lease: Duration) -> BoxFuture<'a, StoreResult<bool>> {
        Box::pin(async move {
            let client = self.client().await?;
            let n = client
                .execute(
                    "UPDATE agents_run_slots SET lease_until = now() + $2::BIGINT * interval '1 millisecond' \
                     WHERE id = $1",
                    &[&slot.0, &millis(lease)],
                )
                .await
                .map_err(pg_error)?;
            Ok(n == 1)
        })
    }

    fn slot_held<'a>(&'a self, slot: &'a SlotId) -> BoxFuture<'a, StoreResult<bool>> {
        Box::pin(async move {
            let client = self.client().await?;
            let row = client
                .query_one(
                    "SELECT EXISTS (SELECT 1 FROM agents_run_slots WHERE id = $1 AND lease_until > now())",
                    &[&slot.0],
                )
                .await
                .map_err(pg_error)?;
            Ok(row.get(0))
        })
    }

    fn release_slot<'a>(&'a self, slot: &'a SlotId) -> BoxFuture<'a, StoreResult<()>> {
        Box::pin(async move {
            let client = self.client().await?;
            client.execute("DELETE FROM agents_run_slots WHERE id = $1", &[&slot.0]).await.map_err(pg_error).map(drop)
        })
    }

    fn active_slots<'a>(&'a self, owner: &'a SlotOwner) -> BoxFuture<'a, StoreResult<u32>> {
        Box::pin(async move {
            let client = self.client().await?;
            let row = client
                .query_one(
                    "SELECT count(*) FROM agents_run_slots WHERE org_id = $1 AND user_id = $2 AND lease_until > now()",
                    &[&owner.org_id, &owner.user_id],
                )
                .await
                .map_err(pg_error)?;
            Ok(u32::try_from(row.get::<_, i64>(0)).unwrap_or(u32::MAX))
        })
    }

    fn put_proposal<'a>(&'a self, p: &'a ProposalRecord) -> BoxFuture<'a, StoreResult<()>> {
        Box::pin(async move {
            let client = self.client().await?;
            match client.execute(INSERT_PROPOSAL, &proposal_params(p)).await {
                Ok(_) => Ok(()),
                Err(e) if is_unique_violation(&e) => {
                    Err(StoreError::Invalid(format!("call id `{}` is taken", p.call_id)))
                }
                // No answer: it may be stored. Settled by the call id, never by a second row.
                Err(e) if outcome_unknown(&e) => {
                    drop(client);
                    self.put_proposal_again(p).await.map_err(|again| match again {
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

    fn decide<'a>(
        &'a self,
        call_id: &'a str,
        org_id: &'a str,
        user_id: &'a str,
        verdict: StoredVerdict,
        reason: Option<&'a str>,
        seal: &'a str,
    ) -> BoxFuture<'a, StoreResult<DecideOutcome>> {
        Box::pin(async move {
            let client = self.client().await?;
            let n = client
                .execute(
                    "UPDATE agents_proposals SET verdict = $4, reason = $5, decided_at = now(), seal = $6 \
                     WHERE call_id = $1 AND org_id = $2 AND user_id = $3 AND verdict IS NULL",
                    &[&call_id, &org_id, &user_id, &verdict.as_str(), &reason, &seal],
                )
                .await
                .map_err(pg_error)?;
            if n == 1 {
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

    fn proposal<'a>(&'a self, call_id: &'a str) -> BoxFuture<'a, StoreResult<Option<ProposalState>>> {
        Box::pin(async move {
            let client = self.client().await?;
            let row = client
                .query_opt(&format!("SELECT {PROPOSAL_COLUMNS} FROM agents_proposals WHERE call_id = $1"), &[&call_id])
                .await
                .map_err(pg_error)?;
            Ok(row.as_ref().map(proposal_row))
        })
    }

    fn pending_for<'a>(&'a self, org_id: &'a str, user_id: &'a str) -> BoxFuture<'a, StoreResult<Vec<ProposalRecord>>> {
        Box::pin(async move {
            let client = self.client().await?;
            let rows = client
                .query(
                    &format!(
                        "SELECT {PROPOSAL_COLUMNS} FROM agents_proposals \
                         WHERE org_id = $1 AND user_id = $2 AND verdict IS NULL ORDER BY ord"
                    ),
                    &[&org_id, &user_id],
                )
                .await
                .map_err(pg_error)?;
            Ok(rows.iter().map(|r| proposal_row(r).proposal).collect())
        })
    }

    fn claim_execution<'a>(
        &'a self,
        call_id: &'a str,
        node: &'a str,
        seal: &'a str,
    ) -> BoxFuture<'a, StoreResult<bool>> {
        Box::pin(async move {
            let client = self.client().await?;
            let n = client.execute(Claim::Execution.statement(), &[&call_id, &node, &seal]).await.map_err(pg_error)?;
            Ok(n == 1)
        })
    }

    fn approved_unclaimed(&self, limit: u32) -> BoxFuture<'_, StoreResult<Vec<ProposalState>>> {
        Box::pin(self.proposals_where("verdict = 'approved' AND claimed_by IS NULL", limit, None))
    }

    fn claim_settlement<'a>(&'a self, call_id: &'a str, node: &'a str) -> BoxFuture<'a, StoreResult<bool>> {
        Box::pin(self.claim(Claim::Settlement, call_id, node))
    }

    fn close_undecided<'a>(
        &'a self,
        call_id: &'a str,
        node: &'a str,
        reason: &'a str,
    ) -> BoxFuture<'a, StoreResult<bool>> {
        Box::pin(async move {
            let client = self.client().await?;
            // One conditional update: a concurrent decision waits for this row's lock and then
            // re-checks `verdict IS NULL` on the updated row, which fails (and the other way round).
            let n = client
                .execute(
                    "UPDATE agents_proposals SET verdict = 'rejected', reason = $3, decided_at = now(), \
                     settled_by = $2, settled_at = now(), held_at = now(), held_by = $2 \
                     WHERE call_id = $1 AND verdict IS NULL",
                    &[&call_id, &node, &reason],
                )
                .await
                .map_err(pg_error)?;
            Ok(n == 1)
        })
    }

    fn unsettled(
        &self,
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
            proposal_page(self, &sql, after, limit, millis(undecided_for)).await
        })
    }

    fn mark_recorded<'a>(&'a self, call_id: &'a str) -> BoxFuture<'a, StoreResult<()>> {
        Box::pin(async move {
            let client = self.client().await?;
            client
                .execute(
                    "UPDATE agents_proposals SET recorded_at = now() WHERE call_id = $1 AND recorded_at IS NULL",
                    &[&call_id],
                )
                .await
                .map(drop)
                .map_err(pg_error)
        })
    }

    fn stale_claims(
        &self,
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
            proposal_page(self, &sql, after, limit, millis(lease)).await
        })
    }

    fn take_over<'a>(&'a self, call_id: &'a str, node: &'a str, lease: Duration) -> BoxFuture<'a, StoreResult<bool>> {
        Box::pin(async move {
            let client = self.client().await?;
            // One conditional update: a concurrent taker (or the holder renewing) waits for the
            // row's lock, then re-checks the lapse on the renewed row, which fails.
            let n = client
                .execute(
                    "UPDATE agents_proposals SET held_at = now(), held_by = $3 \
                     WHERE call_id = $1 AND held_at IS NOT NULL AND recorded_at IS NULL \
                     AND held_at <= now() - $2::BIGINT * interval '1 millisecond'",
                    &[&call_id, &millis(lease), &node],
                )
                .await
                .map_err(pg_error)?;
            Ok(n == 1)
        })
    }

    fn renew_claim<'a>(&'a self, call_id: &'a str, node: &'a str) -> BoxFuture<'a, StoreResult<bool>> {
        Box::pin(async move {
            let client = self.client().await?;
            // One conditional update: a concurrent take-over waits for the row's lock and then
            // finds the lease restarted, or took it first and this matches nothing.
            let n = client
                .execute(
                    "UPDATE agents_proposals SET held_at = now() \
                     WHERE call_id = $1 AND held_by = $2 AND held_at IS NOT NULL AND recorded_at IS NULL",
                    &[&call_id, &node],
                )
                .await
                .map_err(pg_error)?;
            Ok(n == 1)
        })
    }

    fn prune_proposals(&self, retention: Duration) -> BoxFuture<'_, StoreResult<u64>> {
        Box::pin(async move {
            let client = self.client().await?;
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

    fn save_session<'a>(&'a self, s: &'a SessionRecord, idle: Duration) -> BoxFuture<'a, StoreResult<SessionSaved>> {
        Box::pin(async move {
            let client = self.client().await?;
            let expected = i64::try_from(s.version).map_err(|_| StoreError::Invalid("session version".into()))?;
            // Each step is one statement: of two writers of one revision (on any nodes),
            // exactly one matches it.
            if expected == 0 {
                let created = client
                    .query_opt(
                        "INSERT INTO agents_sessions (session_id, org_id, user_id, role, history, digest, pending, version, used_at) \
                         VALUES ($1, $2, $3, $4, $5, $6, $7, 1, now()) ON CONFLICT (session_id) DO NOTHING RETURNING version",
                        &[&s.session_id, &s.org_id, &s.user_id, &s.role, &s.history, &s.digest, &s.pending],
                    )
                    .await
                    .map_err(pg_error)?;
                if let Some(row) = created {
                    return Ok(SessionSaved::Stored { version: row.get::<_, i64>(0) as u64 });
                }
            }
            let replaced = client
                .query_opt(
                    "UPDATE agents_sessions SET role = $4, history = $5, digest = $6, pending = $7, \
                     version = version + 1, used_at = now() \
                     WHERE session_id = $1 AND org_id = $2 AND user_id = $3 AND (version = $8 OR \
                     ($8 = 0 AND used_at <= now() - $9::BIGINT * interval '1 millisecond')) RETURNING version",
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

    fn load_session<'a>(
        &'a self,
        session_id: &'a str,
        idle: Duration,
    ) -> BoxFuture<'a, StoreResult<Option<SessionRecord>>> {
        Box::pin(async move {
            let client = self.client().await?;
            let row = client
                .query_opt(
                    "SELECT session_id, org_id, user_id, role, history, digest, pending, version FROM agents_sessions \
                     WHERE session_id = $1 AND used_at > now() - $2::BIGINT * interval '1 millisecond'",
                    &[&session_id, &millis(idle)],
                )
                .await
                .map_err(pg_error)?;
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

    fn delete_session<'a>(&'a self, session_id: &'a str) -> BoxFuture<'a, StoreResult<bool>> {
        Box::pin(async move {
            let client = self.client().await?;
            let n = client
                .execute("DELETE FROM agents_sessions WHERE session_id = $1", &[&session_id])
                .await
                .map_err(pg_error)?;
            Ok(n == 1)
        })
    }

    fn prune_sessions(&self, idle: Duration) -> BoxFuture<'_, StoreResult<u64>> {
        Box::pin(async move {
            let client = self.client().await?;
            client
                .execute(
                    "DELETE FROM agents_sessions WHERE used_at <= now() - $1::BIGINT * interval '1 millisecond'",
                    &[&millis(idle)],
                )
                .await
                .map_err(pg_error)
        })
    }

    fn append_audit<'a>(
        &'a self,
        stream: &'a str,
        records: Vec<AuditRecord>,
    ) -> BoxFuture<'a, StoreResult<Vec<AuditRecord>>> {
        let store = self.clone();
        let stream = stream.to_owned();
        self.spawned(async move {
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

    fn verify_audit<'a>(&'a self, stream: &'a str) -> BoxFuture<'a, StoreResult<ChainSummary>> {
        Box::pin(async move {
            let client = self.client().await?;
            let rows = client
                .query("SELECT line FROM agents_audit WHERE stream = $1 ORDER BY seq", &[&stream])
                .await
                .map_err(pg_error)?;
            verify_lines(stream, rows.iter().map(|r| r.get::<_, &str>(0)))
        })
    }

    fn holds_final<'a>(&'a self, stream: &'a str, call_id: &'a str) -> BoxFuture<'a, StoreResult<Option<bool>>> {
        Box::pin(async move {
            let client = self.client().await?;
            let needle = call_id_needle(call_id);
            let rows = client
                .query("SELECT line FROM agents_audit WHERE stream = $1 AND strpos(line, $2) > 0", &[&stream, &needle])
                .await
                .map_err(pg_error)?;
            Ok(Some(rows.iter().any(|r| line_is_final_of(r.get::<_, &str>(0), call_id))))
        })
    }

    fn owed_finals<'a>(
        &'a self,
        stream: &'a str,
        older_than: Duration,
        limit: u32,
    ) -> BoxFuture<'a, StoreResult<Vec<AuditRecord>>> {
        Box::pin(async move {
            let client = self.client().await?;
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

    fn claim_owed<'a>(
        &'a self,
        stream: &'a str,
        call_id: &'a str,
        run_id: &'a str,
        node: &'a str,
        lease: Duration,
    ) -> BoxFuture<'a, StoreResult<bool>> {
        Box::pin(async move {
            let client = self.client().await?;
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
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A stream's head: the last record's `seq` and `hash`, and the stream's fence.
type Head = (i64, String, i64);

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
