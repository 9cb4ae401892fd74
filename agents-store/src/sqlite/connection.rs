//! The store's file: opened and migrated, its one connection, and the helpers every operation
//! uses.

use super::batch::{self, Drainer, Queue};
pub(super) use super::batch::{execute, query_row, sql_error};
use crate::{Migration, SQLITE_MIGRATIONS, VERSION_TABLE, check_version, millis, unavailable};
use agents_runtime::BoxFuture;
use agents_runtime::audit::FileIdentity;
use agents_runtime::store::StoreResult;
use rusqlite::{Connection, TransactionBehavior, params};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use tokio::sync::oneshot;

/// The runtime's state in one SQLite file (WAL mode, `synchronous = FULL`): it survives a
/// restart of the process, and every process that opens the same file shares it (SQLite's
/// file locks serialise their writes).
///
/// Each guarantee of [`Store`](crate::Store) is one operation under the file's write lock (a
/// savepoint inside a `BEGIN IMMEDIATE` transaction), so it holds across connections and
/// processes, not only inside this value. Expiry uses this host's clock.
///
/// Operations run on tokio's blocking pool, one at a time per `SqliteStore`. Those that wait
/// for the connection together commit together: each in a savepoint of its own inside one
/// `BEGIN IMMEDIATE` transaction, each answered once that transaction committed (one `fsync`
/// for all of them instead of one each).
#[derive(Clone)]
pub struct SqliteStore {
    conn: Arc<Mutex<Connection>>,
    queue: Arc<Queue>,
    path: PathBuf,
    /// The file as opened: once it is deleted, replaced or moved, no answer is given.
    identity: Arc<Option<FileIdentity>>,
}

pub(super) fn now_ms() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, millis)
}

impl SqliteStore {
    /// Opens (or creates) the store at `path`, applying the schema migrations it lacks.
    /// Refuses ([`StoreError::NewerSchema`], nothing changed) a file migrated by a newer build.
    ///
    /// [`StoreError::NewerSchema`]: agents_runtime::store::StoreError::NewerSchema
    pub fn open(path: impl AsRef<Path>) -> StoreResult<Self> {
        let path = path.as_ref().to_path_buf();
        let at = |e: rusqlite::Error| unavailable(&format!("SQLite store `{}`", path.display()), e);
        let mut conn = Connection::open(&path).map_err(at)?;
        conn.busy_timeout(Duration::from_secs(30)).map_err(at)?;
        // Room for every statement the store prepares once (its own and the batches': about 60).
        conn.set_prepared_statement_cache_capacity(128);
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
        Ok(SqliteStore { conn: Arc::new(Mutex::new(conn)), queue: Arc::default(), path, identity: Arc::new(identity) })
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
    /// opened (checked before and after its transaction, one `stat` each): a write into a file
    /// deleted, replaced or moved would be lost (or, through the WAL file left at the path,
    /// mixed into the file now there), so it is not made, or not acknowledged, and answers an
    /// error.
    ///
    /// `f` runs in a savepoint inside the transaction of the operations queued with it
    /// (`batch`): its changes are rolled back if it fails or panics, and it is answered once
    /// that transaction committed.
    pub(super) fn run<T: Send + 'static>(
        &self,
        f: impl FnOnce(&mut Connection) -> StoreResult<T> + Send + 'static,
    ) -> BoxFuture<'static, StoreResult<T>> {
        let (conn, identity, queue) = (self.conn.clone(), self.identity.clone(), self.queue.clone());
        Box::pin(async move {
            let (answer, answered) = oneshot::channel();
            if queue.push(batch::job(f, answer)) {
                // No task drains the queue: this one starts one, which commits every operation
                // queued until it finds the queue empty.
                let drainer = Drainer::new(queue);
                tokio::task::spawn_blocking(move || {
                    let mut conn = conn.lock().unwrap_or_else(PoisonError::into_inner);
                    drainer.drain(&mut conn, identity.as_ref().as_ref());
                });
            }
            answered.await.map_err(|_| unavailable("SQLite store", "the operation ended without an answer"))?
        })
    }
}

impl std::fmt::Debug for SqliteStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteStore").field("path", &self.path).finish_non_exhaustive()
    }
}

fn version(conn: &Connection) -> rusqlite::Result<i64> {
    conn.query_row(&format!("SELECT COALESCE(MAX(version), 0) FROM {VERSION_TABLE}"), [], |r| r.get(0))
}

/// Refuses ([`StoreError::NewerSchema`](agents_runtime::store::StoreError::NewerSchema)) a
/// file whose schema is newer than this build knows, by reading it only (nothing is written
/// to the file).
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

pub(super) fn json_text(v: &serde_json::Value) -> String {
    v.to_string()
}

pub(super) fn json_value(text: &str) -> rusqlite::Result<serde_json::Value> {
    serde_json::from_str(text)
        .map_err(|e| rusqlite::Error::FromSqlConversionFailure(0, rusqlite::types::Type::Text, Box::new(e)))
}
