//! The SQLite store: one file in WAL mode, for one node.

use crate::{Migration, SQLITE_MIGRATIONS, VERSION_TABLE, budget_amount, check_version, millis, unavailable};
use agents_runtime::BoxFuture;
use agents_runtime::audit::{AuditRecord, ChainSummary, FileIdentity, GENESIS_HASH};
use agents_runtime::budget::{Admission, BudgetError, BudgetStore, Reservation};
use agents_runtime::store::{
    Debts, DecideOutcome, ProposalCursor, ProposalPage, ProposalRecord, ProposalState, Redeemed, SessionRecord,
    SessionSaved, SlotId, SlotOwner, Store, StoreError, StoreResult, StoredVerdict, TokenGrant, call_id_needle,
    line_is_final_of, owed_records, seal_after, verify_lines,
};
use rusqlite::{Connection, OptionalExtension, TransactionBehavior, params};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The runtime's state in one SQLite file (WAL mode, `synchronous = FULL`): it survives a
/// restart of the process, and every process that opens the same file shares it (SQLite's
/// file locks serialise their writes).
///
/// Each guarantee of [`Store`] is one statement or one `BEGIN IMMEDIATE` transaction, so it
/// holds across connections and processes, not only inside this value. Expiry uses this
/// host's clock.
///
/// Operations run on tokio's blocking pool, one at a time per `SqliteStore`.
#[derive(Debug, Clone)]
pub struct SqliteStore {
    conn: Arc<Mutex<Connection>>,
    path: PathBuf,
    /// The file as opened: once it is deleted, replaced or moved, no answer is given.
    identity: Arc<Option<FileIdentity>>,
}

fn now_ms() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, millis)
}

fn sql_error(e: rusqlite::Error) -> StoreError {
    unavailable("SQLite", e)
}

impl SqliteStore {
    /// Opens (or creates) the store at `path`, applying the schema migrations it lacks.
    /// Refuses ([`StoreError::NewerSchema`], nothing changed) a file migrated by a newer build.
    pub fn open(path: impl AsRef<Path>) -> StoreResult<Self> {
        let path = path.as_ref().to_path_buf();
        let at = |e: rusqlite::Error| unavailable(&format!("SQLite store `{}`", path.display()), e);
        let mut conn = Connection::open(&path).map_err(at)?;
        conn.busy_timeout(Duration::from_secs(30)).map_err(at)?;
        // A file migrated by a newer build is refused before anything is written to it: the
        // switch to WAL below rewrites the file's header.
        refuse_newer(&conn)?;
        let mode: String = conn.query_row("PRAGMA journal_mode = WAL", [], |row| row.get(0)).map_err(at)?;
        if !mode.eq_ignore_ascii_case("wal") {
            tracing::warn!(path = %path.display(), %mode, "state store is not in WAL mode");
        }
        conn.pragma_update(None, "synchronous", "FULL").map_err(at)?;
        migrate(&mut conn, SQLITE_MIGRATIONS)?;
        let identity = FileIdentity::of_database(&path)
            .map_err(|e| unavailable(&format!("SQLite store `{}`", path.display()), e))?;
        Ok(SqliteStore { conn: Arc::new(Mutex::new(conn)), path, identity: Arc::new(identity) })
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The schema version the file is at.
    pub fn schema_version(&self) -> StoreResult<i64> {
        let conn = self.conn.lock().unwrap_or_else(PoisonError::into_inner);
        version(&conn).map_err(sql_error)
    }

    /// Runs `f` on the connection on the blocking pool, only while the file is still the one
    /// opened (checked before and after `f`, one `stat` each): a write into a file deleted,
    /// replaced or moved would be lost (or, through the WAL file left at the path, mixed into
    /// the file now there), so it is not made, or not acknowledged, and answers an error.
    fn run<T: Send + 'static>(
        &self,
        f: impl FnOnce(&mut Connection) -> StoreResult<T> + Send + 'static,
    ) -> BoxFuture<'static, StoreResult<T>> {
        let (conn, identity) = (self.conn.clone(), self.identity.clone());
        Box::pin(async move {
            tokio::task::spawn_blocking(move || {
                // A panic inside `f` rolls its transaction back (the transaction is dropped),
                // so the connection is consistent after it.
                let mut conn = conn.lock().unwrap_or_else(PoisonError::into_inner);
                let moved = |e| unavailable("SQLite state store", e);
                identity.as_ref().as_ref().map_or(Ok(()), FileIdentity::check).map_err(moved)?;
                let answer = f(&mut conn)?;
                identity.as_ref().as_ref().map_or(Ok(()), FileIdentity::check).map_err(moved)?;
                Ok(answer)
            })
            .await
            .map_err(|e| unavailable("SQLite task", e))?
        })
    }
}

fn version(conn: &Connection) -> rusqlite::Result<i64> {
    conn.query_row(&format!("SELECT COALESCE(MAX(version), 0) FROM {VERSION_TABLE}"), [], |r| r.get(0))
}

/// Refuses ([`StoreError::NewerSchema`]) a file whose schema is newer than this build knows,
/// by reading it only (nothing is written to the file).
fn refuse_newer(conn: &Connection) -> StoreResult<()> {
    let versioned: bool = conn
        .query_row(
            "SELECT EXISTS (SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?1)",
            [VERSION_TABLE],
            |r| r.get(0),
        )
        .map_err(sql_error)?;
    if versioned { check_version(version(conn).map_err(sql_error)?, SQLITE_MIGRATIONS) } else { Ok(()) }
}

/// Applies the migrations the file lacks, in one `IMMEDIATE` transaction (a second process
/// opening the file at the same time waits, then finds them applied).
pub(crate) fn migrate(conn: &mut Connection, migrations: &[Migration]) -> StoreResult<()> {
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate).map_err(sql_error)?;
    tx.execute_batch(&format!(
        "CREATE TABLE IF NOT EXISTS {VERSION_TABLE} (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL) STRICT"
    ))
    .map_err(sql_error)?;
    let found = version(&tx).map_err(sql_error)?;
    check_version(found, migrations)?;
    for m in migrations.iter().filter(|m| m.version > found) {
        tx.execute_batch(m.sql).map_err(|e| unavailable(&format!("migration {} ({})", m.version, m.name), e))?;
        tx.execute(
            &format!("INSERT INTO {VERSION_TABLE} (version, name, applied_at) VALUES (?1, ?2, ?3)"),
            params![m.version, m.name, now_ms()],
        )
        .map_err(sql_error)?;
    }
    tx.commit().map_err(sql_error)
}

fn json_text(v: &serde_json::Value) -> String {
    v.to_string()
}

fn json_value(text: &str) -> rusqlite::Result<serde_json::Value> {
    serde_json::from_str(text)
        .map_err(|e| rusqlite::Error::FromSqlConversionFailure(0, rusqlite::types::Type::Text, Box::new(e)))
}

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

const PROPOSAL_COLUMNS: &str = "call_id, run_id, session_id, org_id, user_id, tool, title, args, args_mac, verdict, \
                                reason, claimed_by, detail, settled_by, seal";

/// A page of proposals read with `sql` (selecting [`PROPOSAL_COLUMNS`] and then `ord`, with
/// `?1` the cursor, `?2` the limit and `?3` the time bound), and where the next one starts.
fn proposal_page(
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

impl Store for SqliteStore {
    fn mint_token<'a>(&'a self, grant: &'a TokenGrant, ttl: Duration) -> BoxFuture<'a, StoreResult<()>> {
        let grant = grant.clone();
        self.run(move |conn| {
            conn.execute(
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

    fn redeem_token<'a>(&'a self, id: &'a str) -> BoxFuture<'a, StoreResult<Redeemed>> {
        let id = id.to_owned();
        self.run(move |conn| {
            let now = now_ms();
            conn.query_row(
                "UPDATE agents_tokens SET redeemed_at = ?2 WHERE id = ?1 AND redeemed_at IS NULL \
                 RETURNING id, session_id, tool, args_mac, expires_at <= ?2",
                params![id, now],
                |r| {
                    Ok(Redeemed::Taken {
                        grant: TokenGrant {
                            id: r.get(0)?,
                            session_id: r.get(1)?,
                            tool: r.get(2)?,
                            args_mac: r.get(3)?,
                        },
                        expired: r.get(4)?,
                    })
                },
            )
            .optional()
            .map(|found| found.unwrap_or(Redeemed::Unknown))
            .map_err(sql_error)
        })
    }

    fn revoke_session_tokens<'a>(&'a self, session_id: &'a str) -> BoxFuture<'a, StoreResult<u64>> {
        let session_id = session_id.to_owned();
        self.run(move |conn| {
            conn.execute("DELETE FROM agents_tokens WHERE session_id = ?1", [session_id])
                .map(|n| n as u64)
                .map_err(sql_error)
        })
    }

    fn prune_tokens(&self) -> BoxFuture<'_, StoreResult<u64>> {
        self.run(move |conn| {
            conn.execute("DELETE FROM agents_tokens WHERE redeemed_at IS NOT NULL OR expires_at <= ?1", [now_ms()])
                .map(|n| n as u64)
                .map_err(sql_error)
        })
    }

    fn acquire_slot<'a>(
        &'a self,
        owner: &'a SlotOwner,
        cap: u32,
        lease: Duration,
    ) -> BoxFuture<'a, StoreResult<Option<SlotId>>> {
        let owner = owner.clone();
        self.run(move |conn| {
            // IMMEDIATE: the write lock is taken before the count, so no other connection or
            // process can insert between the count and the insert.
            let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate).map_err(sql_error)?;
            let now = now_ms();
            tx.execute(
                "DELETE FROM agents_run_slots WHERE org_id = ?1 AND user_id = ?2 AND lease_until <= ?3",
                params![owner.org_id, owner.user_id, now],
            )
            .map_err(sql_error)?;
            let held: i64 = tx
                .query_row(
                    "SELECT count(*) FROM agents_run_slots WHERE org_id = ?1 AND user_id = ?2",
                    params![owner.org_id, owner.user_id],
                    |r| r.get(0),
                )
                .map_err(sql_error)?;
            if held >= i64::from(cap) {
                return Ok(None);
            }
            let id = uuid::Uuid::new_v4().to_string();
            tx.execute(
                "INSERT INTO agents_run_slots (id, org_id, user_id, lease_until) VALUES (?1, ?2, ?3, ?4)",
                params![id, owner.org_id, owner.user_id, now.saturating_add(millis(lease))],
            )
            .map_err(sql_error)?;
            tx.commit().map_err(sql_error)?;
            Ok(Some(SlotId(id)))
        })
    }

    fn renew_slot<'a>(&'a self, slot: &'a SlotId, lease: Duration) -> BoxFuture<'a, StoreResult<bool>> {
        let id = slot.0.clone();
        self.run(move |conn| {
            let now = now_ms();
            conn.execute(
                "UPDATE agents_run_slots SET lease_until = ?2 WHERE id = ?1",
                params![id, now.saturating_add(millis(lease))],
            )
            .map(|n| n == 1)
            .map_err(sql_error)
        })
    }

    fn slot_held<'a>(&'a self, slot: &'a SlotId) -> BoxFuture<'a, StoreResult<bool>> {
        let id = slot.0.clone();
        self.run(move |conn| {
            conn.query_row(
                "SELECT EXISTS (SELECT 1 FROM agents_run_slots WHERE id = ?1 AND lease_until > ?2)",
                params![id, now_ms()],
                |r| r.get(0),
            )
            .map_err(sql_error)
        })
    }

    fn release_slot<'a>(&'a self, slot: &'a SlotId) -> BoxFuture<'a, StoreResult<()>> {
        let id = slot.0.clone();
        self.run(move |conn| {
            conn.execute("DELETE FROM agents_run_slots WHERE id = ?1", [id]).map(drop).map_err(sql_error)
        })
    }

    fn active_slots<'a>(&'a self, owner: &'a SlotOwner) -> BoxFuture<'a, StoreResult<u32>> {
        let owner = owner.clone();
        self.run(move |conn| {
            conn.query_row(
                "SELECT count(*) FROM agents_run_slots WHERE org_id = ?1 AND user_id = ?2 AND lease_until > ?3",
                params![owner.org_id, owner.user_id, now_ms()],
                |r| r.get(0),
            )
            .map_err(sql_error)
        })
    }

    fn put_proposal<'a>(&'a self, proposal: &'a ProposalRecord) -> BoxFuture<'a, StoreResult<()>> {
        let p = proposal.clone();
        self.run(move |conn| {
            conn.execute(
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

    fn decide<'a>(
        &'a self,
        call_id: &'a str,
        org_id: &'a str,
        user_id: &'a str,
        verdict: StoredVerdict,
        reason: Option<&'a str>,
        seal: &'a str,
    ) -> BoxFuture<'a, StoreResult<DecideOutcome>> {
        let (call_id, org_id, user_id, reason, seal) =
            (call_id.to_owned(), org_id.to_owned(), user_id.to_owned(), reason.map(str::to_owned), seal.to_owned());
        self.run(move |conn| {
            let n = conn
                .execute(
                    "UPDATE agents_proposals SET verdict = ?4, reason = ?5, seal = ?6 \
                     WHERE call_id = ?1 AND org_id = ?2 AND user_id = ?3 AND verdict IS NULL",
                    params![call_id, org_id, user_id, verdict.as_str(), reason, seal],
                )
                .map_err(sql_error)?;
            if n == 1 {
                return Ok(DecideOutcome::Recorded);
            }
            let found: Option<(String, String)> = conn
                .query_row("SELECT org_id, user_id FROM agents_proposals WHERE call_id = ?1", [&call_id], |r| {
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

    fn proposal<'a>(&'a self, call_id: &'a str) -> BoxFuture<'a, StoreResult<Option<ProposalState>>> {
        let call_id = call_id.to_owned();
        self.run(move |conn| {
            conn.query_row(
                &format!("SELECT {PROPOSAL_COLUMNS} FROM agents_proposals WHERE call_id = ?1"),
                [call_id],
                proposal_row,
            )
            .optional()
            .map_err(sql_error)
        })
    }

    fn pending_for<'a>(&'a self, org_id: &'a str, user_id: &'a str) -> BoxFuture<'a, StoreResult<Vec<ProposalRecord>>> {
        let (org_id, user_id) = (org_id.to_owned(), user_id.to_owned());
        self.run(move |conn| {
            let mut stmt = conn
                .prepare_cached(&format!(
                    "SELECT {PROPOSAL_COLUMNS} FROM agents_proposals WHERE org_id = ?1 AND user_id = ?2 AND verdict IS NULL ORDER BY ord"
                ))
                .map_err(sql_error)?;
            let rows = stmt.query_map(params![org_id, user_id], proposal_row).map_err(sql_error)?;
            rows.map(|r| r.map(|s| s.proposal)).collect::<rusqlite::Result<_>>().map_err(sql_error)
        })
    }

    fn claim_execution<'a>(
        &'a self,
        call_id: &'a str,
        node: &'a str,
        seal: &'a str,
    ) -> BoxFuture<'a, StoreResult<bool>> {
        let (call_id, node, seal) = (call_id.to_owned(), node.to_owned(), seal.to_owned());
        self.run(move |conn| {
            conn.execute(
                "UPDATE agents_proposals SET claimed_by = ?2, held_by = ?2, over_at = ?3, seal = ?4 \
                 WHERE call_id = ?1 AND verdict = 'approved' AND claimed_by IS NULL",
                params![call_id, node, now_ms(), seal],
            )
            .map(|n| n == 1)
            .map_err(sql_error)
        })
    }

    fn approved_unclaimed(&self, limit: u32) -> BoxFuture<'_, StoreResult<Vec<ProposalState>>> {
        self.run(move |conn| {
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

    fn claim_settlement<'a>(&'a self, call_id: &'a str, node: &'a str) -> BoxFuture<'a, StoreResult<bool>> {
        let (call_id, node) = (call_id.to_owned(), node.to_owned());
        self.run(move |conn| {
            conn.execute(
                "UPDATE agents_proposals SET settled_by = ?2, held_by = ?2, over_at = ?3 \
                 WHERE call_id = ?1 AND verdict = 'rejected' AND settled_by IS NULL",
                params![call_id, node, now_ms()],
            )
            .map(|n| n == 1)
            .map_err(sql_error)
        })
    }

    fn close_undecided<'a>(
        &'a self,
        call_id: &'a str,
        node: &'a str,
        reason: &'a str,
    ) -> BoxFuture<'a, StoreResult<bool>> {
        let (call_id, node, reason) = (call_id.to_owned(), node.to_owned(), reason.to_owned());
        self.run(move |conn| {
            conn.execute(
                "UPDATE agents_proposals SET verdict = 'rejected', reason = ?3, settled_by = ?2, held_by = ?2, \
                 over_at = ?4 WHERE call_id = ?1 AND verdict IS NULL",
                params![call_id, node, reason, now_ms()],
            )
            .map(|n| n == 1)
            .map_err(sql_error)
        })
    }

    fn unsettled(
        &self,
        after: ProposalCursor,
        limit: u32,
        undecided_for: Duration,
    ) -> BoxFuture<'_, StoreResult<ProposalPage>> {
        self.run(move |conn| {
            let sql = format!(
                "SELECT {PROPOSAL_COLUMNS}, ord FROM agents_proposals \
                 WHERE ord > ?1 AND recorded_at IS NULL AND ((verdict = 'approved' AND claimed_by IS NULL) \
                 OR (verdict = 'rejected' AND settled_by IS NULL) OR (verdict IS NULL AND created_at <= ?3)) \
                 ORDER BY ord LIMIT ?2"
            );
            proposal_page(conn, &sql, after, limit, now_ms().saturating_sub(millis(undecided_for)))
        })
    }

    fn mark_recorded<'a>(&'a self, call_id: &'a str) -> BoxFuture<'a, StoreResult<()>> {
        let call_id = call_id.to_owned();
        self.run(move |conn| {
            conn.execute(
                "UPDATE agents_proposals SET recorded_at = ?2 WHERE call_id = ?1 AND recorded_at IS NULL",
                params![call_id, now_ms()],
            )
            .map(drop)
            .map_err(sql_error)
        })
    }

    fn stale_claims(
        &self,
        after: ProposalCursor,
        limit: u32,
        lease: Duration,
    ) -> BoxFuture<'_, StoreResult<ProposalPage>> {
        self.run(move |conn| {
            let sql = format!(
                "SELECT {PROPOSAL_COLUMNS}, ord FROM agents_proposals \
                 WHERE ord > ?1 AND over_at IS NOT NULL AND recorded_at IS NULL AND over_at <= ?3 ORDER BY ord LIMIT ?2"
            );
            proposal_page(conn, &sql, after, limit, now_ms().saturating_sub(millis(lease)))
        })
    }

    fn take_over<'a>(&'a self, call_id: &'a str, node: &'a str, lease: Duration) -> BoxFuture<'a, StoreResult<bool>> {
        let (call_id, node) = (call_id.to_owned(), node.to_owned());
        self.run(move |conn| {
            let now = now_ms();
            conn.execute(
                "UPDATE agents_proposals SET over_at = ?2, held_by = ?4 \
                 WHERE call_id = ?1 AND over_at IS NOT NULL AND recorded_at IS NULL AND over_at <= ?3",
                params![call_id, now, now.saturating_sub(millis(lease)), node],
            )
            .map(|n| n == 1)
            .map_err(sql_error)
        })
    }

    fn renew_claim<'a>(&'a self, call_id: &'a str, node: &'a str) -> BoxFuture<'a, StoreResult<bool>> {
        let (call_id, node) = (call_id.to_owned(), node.to_owned());
        self.run(move |conn| {
            // One statement under the database's write lock: a take-over commits before it (and
            // it matches nothing) or after it (and finds the lease restarted).
            conn.execute(
                "UPDATE agents_proposals SET over_at = ?3 \
                 WHERE call_id = ?1 AND held_by = ?2 AND over_at IS NOT NULL AND recorded_at IS NULL",
                params![call_id, node, now_ms()],
            )
            .map(|n| n == 1)
            .map_err(sql_error)
        })
    }

    fn prune_proposals(&self, retention: Duration) -> BoxFuture<'_, StoreResult<u64>> {
        self.run(move |conn| {
            conn.execute(
                "DELETE FROM agents_proposals WHERE recorded_at IS NOT NULL AND recorded_at <= ?1",
                [now_ms().saturating_sub(millis(retention))],
            )
            .map(|n| n as u64)
            .map_err(sql_error)
        })
    }

    fn save_session<'a>(
        &'a self,
        session: &'a SessionRecord,
        idle: Duration,
    ) -> BoxFuture<'a, StoreResult<SessionSaved>> {
        let s = session.clone();
        self.run(move |conn| {
            // IMMEDIATE: the revision is read and advanced under the database's write lock, so
            // of two writers (connections or processes) of one revision exactly one stores.
            let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate).map_err(sql_error)?;
            let now = now_ms();
            let held: Option<(String, String, i64, i64)> = tx
                .query_row(
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
            tx.execute(
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
            tx.commit().map_err(sql_error)?;
            Ok(SessionSaved::Stored { version: version as u64 })
        })
    }

    fn load_session<'a>(
        &'a self,
        session_id: &'a str,
        idle: Duration,
    ) -> BoxFuture<'a, StoreResult<Option<SessionRecord>>> {
        let session_id = session_id.to_owned();
        self.run(move |conn| {
            conn.query_row(
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

    fn delete_session<'a>(&'a self, session_id: &'a str) -> BoxFuture<'a, StoreResult<bool>> {
        let session_id = session_id.to_owned();
        self.run(move |conn| {
            conn.execute("DELETE FROM agents_sessions WHERE session_id = ?1", [session_id])
                .map(|n| n == 1)
                .map_err(sql_error)
        })
    }

    fn prune_sessions(&self, idle: Duration) -> BoxFuture<'_, StoreResult<u64>> {
        self.run(move |conn| {
            conn.execute("DELETE FROM agents_sessions WHERE used_at <= ?1", [now_ms().saturating_sub(millis(idle))])
                .map(|n| n as u64)
                .map_err(sql_error)
        })
    }

    fn append_audit<'a>(
        &'a self,
        stream: &'a str,
        records: Vec<AuditRecord>,
    ) -> BoxFuture<'a, StoreResult<Vec<AuditRecord>>> {
        let stream = stream.to_owned();
        self.run(move |conn| {
            // IMMEDIATE: the head is read under the database's write lock, so another
            // connection or process appending to the stream waits and then continues it.
            let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate).map_err(sql_error)?;
            let head: Option<(i64, String)> = tx
                .query_row("SELECT seq, hash FROM agents_audit_heads WHERE stream = ?1", [&stream], |r| {
                    Ok((r.get(0)?, r.get(1)?))
                })
                .optional()
                .map_err(sql_error)?;
            let (seq, prev) = head.unwrap_or_else(|| (0, GENESIS_HASH.to_owned()));
            let (sealed, lines, seq, prev) = seal_after(seq as u64, &prev, records);
            {
                let mut insert = tx
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
            let moved = tx
                .execute(
                    "UPDATE agents_audit_heads SET seq = ?2, hash = ?3 WHERE stream = ?1",
                    params![stream, seq as i64, prev],
                )
                .map_err(sql_error)?;
            if moved == 0 {
                tx.execute(
                    "INSERT INTO agents_audit_heads (stream, seq, hash) VALUES (?1, ?2, ?3)",
                    params![stream, seq as i64, prev],
                )
                .map_err(sql_error)?;
            }
            // The calls this batch opens and settles, in its transaction (opened ones first).
            let debts = Debts::of(&sealed, &lines);
            if !debts.is_empty() {
                let mut owe = tx
                    .prepare_cached(
                        "INSERT INTO agents_audit_debts (stream, call_id, run_id, line, owed_since) \
                         VALUES (?1, ?2, ?3, ?4, ?5) ON CONFLICT DO NOTHING",
                    )
                    .map_err(sql_error)?;
                let owed = debts.owed.iter().zip(&debts.owed_runs).zip(&debts.owed_lines);
                for ((call_id, run_id), line) in owed {
                    owe.execute(params![stream, call_id, run_id, line, now_ms()]).map_err(sql_error)?;
                }
                let mut pay_call = tx
                    .prepare_cached("DELETE FROM agents_audit_debts WHERE stream = ?1 AND call_id = ?2")
                    .map_err(sql_error)?;
                for call_id in &debts.paid_calls {
                    pay_call.execute(params![stream, call_id]).map_err(sql_error)?;
                }
                let mut pay = tx
                    .prepare_cached("DELETE FROM agents_audit_debts WHERE stream = ?1 AND call_id = ?2 AND run_id = ?3")
                    .map_err(sql_error)?;
                for (call_id, run_id) in debts.paid.iter().zip(&debts.paid_runs) {
                    pay.execute(params![stream, call_id, run_id]).map_err(sql_error)?;
                }
            }
            tx.commit().map_err(sql_error)?;
            Ok(sealed)
        })
    }

    fn verify_audit<'a>(&'a self, stream: &'a str) -> BoxFuture<'a, StoreResult<ChainSummary>> {
        let stream = stream.to_owned();
        self.run(move |conn| {
            let mut stmt = conn
                .prepare_cached("SELECT line FROM agents_audit WHERE stream = ?1 ORDER BY seq")
                .map_err(sql_error)?;
            let lines: Vec<String> = stmt
                .query_map([&stream], |r| r.get(0))
                .map_err(sql_error)?
                .collect::<rusqlite::Result<_>>()
                .map_err(sql_error)?;
            verify_lines(&stream, lines.iter().map(String::as_str))
        })
    }

    fn holds_final<'a>(&'a self, stream: &'a str, call_id: &'a str) -> BoxFuture<'a, StoreResult<Option<bool>>> {
        let (stream, call_id) = (stream.to_owned(), call_id.to_owned());
        self.run(move |conn| {
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

    fn owed_finals<'a>(
        &'a self,
        stream: &'a str,
        older_than: Duration,
        limit: u32,
    ) -> BoxFuture<'a, StoreResult<Vec<AuditRecord>>> {
        let stream = stream.to_owned();
        self.run(move |conn| {
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

    fn claim_owed<'a>(
        &'a self,
        stream: &'a str,
        call_id: &'a str,
        run_id: &'a str,
        node: &'a str,
        lease: Duration,
    ) -> BoxFuture<'a, StoreResult<bool>> {
        let (stream, call_id, run_id, node) =
            (stream.to_owned(), call_id.to_owned(), run_id.to_owned(), node.to_owned());
        self.run(move |conn| {
            let now = now_ms();
            // One conditional statement under the database's write lock.
            let n = conn
                .execute(
                    "UPDATE agents_audit_debts SET held_by = ?3, held_at = ?4 \
                     WHERE stream = ?1 AND call_id = ?2 AND run_id = ?6 AND (held_at IS NULL OR held_at <= ?5)",
                    params![stream, call_id, node, now, now - millis(lease), run_id],
                )
                .map_err(sql_error)?;
            Ok(n == 1)
        })
    }
}

/// The budget accounts of `org_id`'s cap (user `''`) and `user_id`'s, in that order of rows
/// written: a user's row first, then the organisation's, on every path.
fn budget_keys<'a>(org_id: &'a str, user_id: &'a str) -> Result<[(&'a str, &'a str); 2], BudgetError> {
    if org_id.is_empty() || user_id.is_empty() {
        return Err(BudgetError("a budget account needs a non-empty organisation and user".to_owned()));
    }
    Ok([(org_id, user_id), (org_id, "")])
}

fn budget_error(e: impl std::fmt::Display) -> BudgetError {
    BudgetError(e.to_string())
}

/// The headroom of `org_id`/`user_id`: the smaller of the caps set, each minus its account's
/// spend and holds; infinite when neither cap is set.
fn sqlite_headroom(conn: &Connection, org_id: &str, user_id: &str) -> rusqlite::Result<f64> {
    let mut stmt = conn.prepare_cached(
        "SELECT c.cap_usd - COALESCE(a.spend_usd, 0) - COALESCE(a.held_usd, 0) FROM agents_budget_caps c \
         LEFT JOIN agents_budget_accounts a ON a.org_id = c.org_id AND a.user_id = c.user_id \
         WHERE c.org_id = ?1 AND c.user_id IN (?2, '')",
    )?;
    let mut rows = stmt.query_map(params![org_id, user_id], |r| r.get::<_, f64>(0))?;
    rows.try_fold(f64::INFINITY, |least, h| Ok(least.min(h?)))
}

impl SqliteStore {
    /// Sets the monthly cap of organisation `org_id` (`user_id` `None`) or of one of its
    /// users, for every process sharing the file. A negative or non-finite cap is refused
    /// and changes nothing.
    pub async fn set_budget_cap(&self, org_id: &str, user_id: Option<&str>, cap_usd: f64) -> Result<(), BudgetError> {
        let user = user_id.unwrap_or("");
        budget_keys(org_id, user_id.unwrap_or("-"))?;
        if !cap_usd.is_finite() || cap_usd < 0.0 {
            return Err(BudgetError(format!("a cap of {cap_usd} USD refused: it must be a finite number, 0 or more")));
        }
        let (org, user) = (org_id.to_owned(), user.to_owned());
        self.run(move |conn| {
            conn.execute(
                "INSERT INTO agents_budget_caps (org_id, user_id, cap_usd) VALUES (?1, ?2, ?3) \
                 ON CONFLICT (org_id, user_id) DO UPDATE SET cap_usd = excluded.cap_usd",
                params![org, user, cap_usd],
            )
            .map(drop)
            .map_err(sql_error)
        })
        .await
        .map_err(budget_error)
    }

    /// The spend and the held headroom of a user's account (`user_id` `None`: the
    /// organisation's), in USD.
    pub async fn budget_account(&self, org_id: &str, user_id: Option<&str>) -> Result<(f64, f64), BudgetError> {
        let (org, user) = (org_id.to_owned(), user_id.unwrap_or("").to_owned());
        self.run(move |conn| {
            conn.query_row(
                "SELECT spend_usd, held_usd FROM agents_budget_accounts WHERE org_id = ?1 AND user_id = ?2",
                params![org, user],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .optional()
            .map(|found| found.unwrap_or((0.0, 0.0)))
            .map_err(sql_error)
        })
        .await
        .map_err(budget_error)
    }
}

/// The budget in the state file, shared by every process that opens it. A reservation is one
/// `BEGIN IMMEDIATE` transaction of two conditional `UPDATE`s (the user's account, then the
/// organisation's), each admitting only while its cap minus spend minus holds is above 0, so
/// the guarantee of [`agents_runtime::budget`] holds across processes.
impl BudgetStore for SqliteStore {
    fn remaining<'a>(&'a self, org_id: &'a str, user_id: &'a str) -> BoxFuture<'a, Result<f64, BudgetError>> {
        let (org, user) = (org_id.to_owned(), user_id.to_owned());
        let read = self.run(move |conn| sqlite_headroom(conn, &org, &user).map_err(sql_error));
        Box::pin(async move { read.await.map_err(budget_error) })
    }

    fn record<'a>(
        &'a self,
        org_id: &'a str,
        user_id: &'a str,
        cost_usd: f64,
    ) -> BoxFuture<'a, Result<(), BudgetError>> {
        Box::pin(async move {
            let keys = budget_keys(org_id, user_id)?.map(|(o, u)| (o.to_owned(), u.to_owned()));
            let cost = budget_amount("a cost", cost_usd)?;
            self.run(move |conn| {
                let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate).map_err(sql_error)?;
                for (org, user) in &keys {
                    tx.execute(
                        "INSERT INTO agents_budget_accounts (org_id, user_id, spend_usd) VALUES (?1, ?2, ?3) \
                         ON CONFLICT (org_id, user_id) DO UPDATE SET spend_usd = spend_usd + excluded.spend_usd",
                        params![org, user, cost],
                    )
                    .map_err(sql_error)?;
                }
                tx.commit().map_err(sql_error)
            })
            .await
            .map_err(budget_error)
        })
    }

    fn reserve<'a>(
        &'a self,
        org_id: &'a str,
        user_id: &'a str,
        estimate_usd: f64,
    ) -> BoxFuture<'a, Result<Admission, BudgetError>> {
        Box::pin(async move {
            let keys = budget_keys(org_id, user_id)?.map(|(o, u)| (o.to_owned(), u.to_owned()));
            let estimate = budget_amount("an estimate", estimate_usd)?;
            let (org, user) = (org_id.to_owned(), user_id.to_owned());
            self.run(move |conn| {
                let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate).map_err(sql_error)?;
                for (o, u) in &keys {
                    // Admits only while this account's cap (if any) has headroom beyond its
                    // spend and holds, and holds the estimate in the same statement.
                    tx.execute(
                        "INSERT INTO agents_budget_accounts (org_id, user_id) VALUES (?1, ?2) ON CONFLICT DO NOTHING",
                        params![o, u],
                    )
                    .map_err(sql_error)?;
                    let admitted = tx
                        .execute(
                            "UPDATE agents_budget_accounts SET held_usd = held_usd + ?3, holds = holds + 1 \
                             WHERE org_id = ?1 AND user_id = ?2 AND COALESCE((SELECT cap_usd FROM agents_budget_caps \
                             WHERE org_id = ?1 AND user_id = ?2) - spend_usd - held_usd > 0, 1)",
                            params![o, u, estimate],
                        )
                        .map_err(sql_error)?;
                    if admitted == 0 {
                        let headroom = sqlite_headroom(&tx, &org, &user).map_err(sql_error)?;
                        // Dropping the transaction rolls the other account's hold back.
                        return Ok(Admission::Refused { headroom });
                    }
                }
                tx.commit().map_err(sql_error)?;
                Ok(Admission::Granted(Reservation { org_id: org, user_id: user, amount: estimate }))
            })
            .await
            .map_err(budget_error)
        })
    }

    fn settle(&self, reservation: Reservation, cost_usd: f64) -> BoxFuture<'_, Result<(), BudgetError>> {
        Box::pin(async move {
            let keys =
                budget_keys(&reservation.org_id, &reservation.user_id)?.map(|(o, u)| (o.to_owned(), u.to_owned()));
            let cost = budget_amount("a cost", cost_usd)?;
            let held = reservation.amount;
            self.run(move |conn| {
                let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate).map_err(sql_error)?;
                for (org, user) in &keys {
                    // `held_usd` is reset to exactly 0 when no hold is left, so rounding does
                    // not accumulate.
                    tx.execute(
                        "UPDATE agents_budget_accounts SET spend_usd = spend_usd + ?4, \
                         held_usd = CASE WHEN holds <= 1 THEN 0 ELSE MAX(held_usd - ?3, 0) END, holds = MAX(holds - 1, 0) \
                         WHERE org_id = ?1 AND user_id = ?2",
                        params![org, user, held, cost],
                    )
                    .map_err(sql_error)?;
                }
                tx.commit().map_err(sql_error)
            })
            .await
            .map_err(budget_error)
        })
    }
}
