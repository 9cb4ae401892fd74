//! The SQLite audit sink: one append-only table, hash-chained, enforced by triggers.

use super::Appended;
use super::group_commit::{ChainOptions, DurableStore, GroupCommitSink};
use super::{AuditRecord, AuditSink, ChainError, ChainSummary, FileIdentity, GENESIS_HASH};
use agents_core::audit::{ChainVerifier, SealCheck, sqlite};
use rusqlite::{Connection, OpenFlags, TransactionBehavior};
use std::io;
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The table that holds the records.
pub const SQLITE_TABLE: &str = sqlite::TABLE;

fn schema() -> String {
    format!(
        "CREATE TABLE IF NOT EXISTS audit_log (
            seq INTEGER PRIMARY KEY CHECK (seq >= 1),
            ts TEXT NOT NULL,
            run_id TEXT NOT NULL,
            session_id TEXT NOT NULL,
            request_id TEXT NOT NULL,
            call_id TEXT,
            user_id TEXT NOT NULL,
            org_id TEXT NOT NULL,
            role TEXT NOT NULL,
            agent TEXT NOT NULL,
            tool TEXT,
            tier TEXT,
            status TEXT NOT NULL,
            reason TEXT,
            title TEXT,
            args TEXT,
            args_hash TEXT,
            result TEXT,
            manifest_sha256 TEXT NOT NULL,
            prev_hash TEXT NOT NULL,
            hash TEXT NOT NULL UNIQUE,
            epoch INTEGER,
            import TEXT,
            node TEXT
        ) STRICT;
        CREATE TRIGGER IF NOT EXISTS audit_log_no_update BEFORE UPDATE ON audit_log
        BEGIN
            SELECT RAISE(ABORT, 'audit_log is append-only: UPDATE is refused; record a status change as a new record');
        END;
        CREATE TRIGGER IF NOT EXISTS audit_log_no_delete BEFORE DELETE ON audit_log
        BEGIN
            SELECT RAISE(ABORT, 'audit_log is append-only: DELETE is refused');
        END;
        CREATE TRIGGER IF NOT EXISTS audit_log_no_replace BEFORE INSERT ON audit_log
        WHEN EXISTS (SELECT 1 FROM audit_log WHERE hash = NEW.hash)
        BEGIN
            SELECT RAISE(ABORT, 'audit_log is append-only: a record with this hash exists, and is never replaced');
        END;
        CREATE TRIGGER IF NOT EXISTS audit_log_chain BEFORE INSERT ON audit_log
        WHEN NEW.seq IS NOT COALESCE((SELECT MAX(seq) FROM audit_log), 0) + 1
          OR NEW.prev_hash IS NOT COALESCE((SELECT hash FROM audit_log ORDER BY seq DESC LIMIT 1), '{GENESIS_HASH}')
        BEGIN
            SELECT RAISE(ABORT, 'audit_log is a hash chain: a new record needs the next seq and the last record''s hash as prev_hash');
        END;"
    )
}

/// An append-only SQLite audit table with group commit.
///
/// The table `audit_log` has one column per [`AuditRecord`] field (`args` and `result` hold
/// canonical JSON). Triggers make it append-only for every connection, not just this one:
/// `UPDATE` and `DELETE` abort, and an `INSERT` (including `INSERT OR REPLACE`) aborts unless
/// it carries the next `seq` and the last record's hash as `prev_hash`, so a second writer
/// cannot fork the chain, and aborts when its `hash` is a stored record's (`INSERT OR REPLACE`
/// would otherwise delete that record without firing the DELETE trigger). Triggers stop mistakes and application bugs; someone who can drop
/// them can also rewrite the file, which the hash chain then reveals ([`verify_sqlite`]).
///
/// Concurrent appends are committed in batches, one `IMMEDIATE` transaction per batch, in WAL
/// mode with `synchronous = FULL`, so a resolved `append` survives a power loss. Failure handling
/// is that of [`GroupCommitSink`].
#[derive(Debug)]
pub struct SqliteSink {
    path: PathBuf,
    inner: GroupCommitSink,
}

/// Why the SQLite sink or its verifier refused a database.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SqliteAuditError {
    /// SQLite failed (cannot open, not a database, no `audit_log` table, locked).
    #[error("audit database `{}`: {source}; check the path, its permissions, and that it holds an `audit_log` table", path.display())]
    Sqlite {
        /// The database.
        path: PathBuf,
        /// What SQLite said.
        source: rusqlite::Error,
    },
    /// The writer thread could not be started.
    #[error("audit database `{}`: cannot start the writer thread: {source}", path.display())]
    Io {
        /// The database.
        path: PathBuf,
        /// What the operating system said.
        source: io::Error,
    },
    /// The chain does not verify. `line` in the source is the 1-based position of the row in
    /// `seq` order.
    #[error(
        "audit database `{}` fails verification at row {}: {source}. The table was changed outside this sink: keep the \
         file unchanged as evidence, start a new database at another path, and investigate from that row",
        path.display(), source.line()
    )]
    Broken {
        /// The database.
        path: PathBuf,
        /// Where and how the chain breaks (`line` is the row position in `seq` order).
        source: ChainError,
    },
}

impl SqliteSink {
    /// Opens (or creates) the database at `path`, creates the table and triggers if missing,
    /// verifies the existing chain, and continues it. Refuses a chain that does not verify.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, SqliteAuditError> {
        Self::open_with(path, ChainOptions::default())
    }

    /// [`SqliteSink::open`] for a keyed chain and/or with signed checkpoints (see
    /// [`JsonlSink::open_with`](super::JsonlSink::open_with)); a table that holds records of the
    /// other kind of chain is refused.
    pub fn open_with(path: impl AsRef<Path>, mut options: ChainOptions) -> Result<Self, SqliteAuditError> {
        let path = path.as_ref().to_path_buf();
        let sqlite_error = |source| SqliteAuditError::Sqlite { path: path.clone(), source };
        let mut conn = Connection::open(&path).map_err(sqlite_error)?;
        conn.busy_timeout(Duration::from_secs(5)).map_err(sqlite_error)?;
        let mode = |detail: &str| SqliteAuditError::Io {
            path: path.clone(),
            source: io::Error::new(io::ErrorKind::InvalidInput, detail.to_owned()),
        };
        // Everything is checked before anything is written: a refused file is left byte for
        // byte as it was (the transaction rolls back, and the switch to WAL comes after).
        let head = {
            let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate).map_err(sqlite_error)?;
            tx.execute_batch(&schema()).map_err(sqlite_error)?;
            add_missing_columns(&tx).map_err(sqlite_error)?;
            let policy = options.key.as_ref().map(super::SealingKey::policy);
            let head = verify_connection(&tx, None, policy, &path, None)?;
            match (&mut options.key, head.seals) {
                (Some(_), SealCheck::Integrity) => {
                    return Err(mode("the table holds a plain chain; start the keyed chain in a new database"));
                }
                (None, SealCheck::KeyedUnchecked { .. }) => {
                    return Err(mode(
                        "the table holds a keyed chain: open it with its sealing key (`SqliteSink::open_with`)",
                    ));
                }
                (Some(key), _) => {
                    key.resume(&head).map_err(|source| SqliteAuditError::Io { path: path.clone(), source })?
                }
                (None, _) => {}
            }
            tx.commit().map_err(sqlite_error)?;
            head
        };
        let journal: String =
            conn.query_row("PRAGMA journal_mode = WAL", [], |row| row.get(0)).map_err(sqlite_error)?;
        if !journal.eq_ignore_ascii_case("wal") {
            tracing::warn!(path = %path.display(), mode = %journal, "audit database is not in WAL mode");
        }
        conn.pragma_update(None, "synchronous", "FULL").map_err(sqlite_error)?;
        let label = format!("audit database `{}`", path.display());
        let identity =
            FileIdentity::of_database(&path).map_err(|source| SqliteAuditError::Io { path: path.clone(), source })?;
        let inner = GroupCommitSink::spawn_with(label, SqliteStore { conn, identity }, head, options)
            .map_err(|source| SqliteAuditError::Io { path: path.clone(), source })?;
        Ok(SqliteSink { path, inner })
    }

    /// The database's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether a failed commit stopped the sink; a poisoned sink refuses every record until the
    /// database is opened again.
    pub fn is_poisoned(&self) -> bool {
        self.inner.is_poisoned()
    }
}

impl AuditSink for SqliteSink {
    fn append(&self, record: AuditRecord) -> Appended<'_> {
        self.inner.append(record)
    }

    /// One query of the call's rows (on the blocking pool when a tokio runtime
    /// runs), through a read-only connection of its own.
    fn holds_final<'a>(&'a self, call_id: &'a str) -> crate::BoxFuture<'a, Result<Option<bool>, super::AuditError>> {
        let (path, call_id) = (self.path.clone(), call_id.to_owned());
        let look = move || -> Result<Option<bool>, super::AuditError> {
            let refused = |e: rusqlite::Error| super::AuditError::Refused(e.to_string());
            let conn = Connection::open_with_flags(&path, OpenFlags::SQLITE_OPEN_READ_ONLY).map_err(refused)?;
            conn.busy_timeout(std::time::Duration::from_secs(5)).map_err(refused)?;
            let mut stmt = conn.prepare("SELECT status FROM audit_log WHERE call_id = ?1").map_err(refused)?;
            let statuses: Vec<String> = stmt
                .query_map([&call_id], |r| r.get(0))
                .map_err(refused)?
                .collect::<Result<_, _>>()
                .map_err(refused)?;
            Ok(Some(statuses.iter().any(|s| {
                serde_json::from_value::<super::AuditStatus>(serde_json::Value::String(s.clone()))
                    .is_ok_and(super::is_final_status)
            })))
        };
        Box::pin(async move {
            match tokio::runtime::Handle::try_current() {
                Ok(handle) => {
                    handle.spawn_blocking(look).await.unwrap_or_else(|e| Err(super::AuditError::Refused(e.to_string())))
                }
                Err(_) => look(),
            }
        })
    }
}

/// Verifies the chain in the `audit_log` table of the database at `path` (opened read-only):
/// every row matches its hash, links to the previous row and has the next `seq`; optionally
/// every row names `manifest_sha256`.
pub fn verify_sqlite(path: impl AsRef<Path>, manifest_sha256: Option<&str>) -> Result<ChainSummary, SqliteAuditError> {
    let path = path.as_ref();
    let conn = Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX)
        .map_err(|source| SqliteAuditError::Sqlite { path: path.to_path_buf(), source })?;
    verify_connection(&conn, manifest_sha256, None, path, None)
}

/// Verifies the database at `path` like [`verify_sqlite`], and in the same pass hands `each`
/// every record of it, in order: the verified ones, and after a break the rows that still
/// read as records. A caller that also looks at every record reads the table once.
pub fn verify_sqlite_with(
    path: impl AsRef<Path>,
    manifest_sha256: Option<&str>,
    each: &mut dyn FnMut(&AuditRecord),
) -> Result<ChainSummary, SqliteAuditError> {
    let path = path.as_ref();
    let conn = Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX)
        .map_err(|source| SqliteAuditError::Sqlite { path: path.to_path_buf(), source })?;
    // The sink may be writing: wait for its lock rather than fail.
    conn.busy_timeout(std::time::Duration::from_secs(5))
        .map_err(|source| SqliteAuditError::Sqlite { path: path.to_path_buf(), source })?;
    verify_connection(&conn, manifest_sha256, None, path, Some(each))
}

fn verify_connection(
    conn: &Connection,
    manifest_sha256: Option<&str>,
    policy: Option<agents_core::audit::EpochPolicy>,
    path: &Path,
    mut each: Option<&mut dyn FnMut(&AuditRecord)>,
) -> Result<ChainSummary, SqliteAuditError> {
    let mut verifier = ChainVerifier::new().epochs(policy.unwrap_or_default());
    if let Some(m) = manifest_sha256 {
        verifier = verifier.manifest(m);
    }
    let mut broken = None;
    sqlite::for_each_record(conn, |line, record| {
        let checked = match (&broken, &record) {
            (None, Ok(r)) => verifier.record(r, line),
            (None, Err(e)) => Err(ChainError::Malformed { line, detail: e.to_string() }),
            (Some(_), _) => Ok(()),
        };
        if let Err(e) = checked {
            broken = Some(e);
        }
        match (&mut each, record) {
            (Some(each), Ok(record)) => {
                each(&record);
                ControlFlow::Continue(())
            }
            // Without a visitor, the first break is the answer.
            (None, _) if broken.is_some() => ControlFlow::Break(()),
            _ => ControlFlow::Continue(()),
        }
    })
    .map_err(|source| SqliteAuditError::Sqlite { path: path.to_path_buf(), source })?;
    broken
        .map_or_else(|| verifier.finish(), Err)
        .map_err(|source| SqliteAuditError::Broken { path: path.to_path_buf(), source })
}

/// Databases made before keyed chains have no `epoch` column, those made before imported
/// tools no `import` column, and those made before composites ran no `node` column: add them (empty, so their records read as before).
fn add_missing_columns(conn: &Connection) -> rusqlite::Result<()> {
    if !sqlite::has_epoch_column(conn)? {
        conn.execute_batch("ALTER TABLE audit_log ADD COLUMN epoch INTEGER")?;
    }
    if !sqlite::has_import_column(conn)? {
        conn.execute_batch("ALTER TABLE audit_log ADD COLUMN import TEXT")?;
    }
    if !sqlite::has_node_column(conn)? {
        conn.execute_batch("ALTER TABLE audit_log ADD COLUMN node TEXT")?;
    }
    Ok(())
}

struct SqliteStore {
    conn: Connection,
    /// The file as opened: a batch committed after it was deleted, replaced or moved is not
    /// acknowledged (and the sink is poisoned).
    identity: Option<FileIdentity>,
}

impl SqliteStore {
    fn insert(&mut self, records: &[AuditRecord]) -> rusqlite::Result<()> {
        let tx = self.conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        sqlite::insert_records(&tx, records)?;
        tx.commit()
    }
}

impl DurableStore for SqliteStore {
    fn commit(&mut self, records: &[AuditRecord], _lines: &[String]) -> io::Result<()> {
        // Before: a file no longer at the path is not written. After the commit too: a batch
        // that went into a file deleted, replaced or moved meanwhile is not durable where anyone
        // will look.
        self.identity.as_ref().map_or(Ok(()), FileIdentity::check)?;
        self.insert(records).map_err(io::Error::other)?;
        self.identity.as_ref().map_or(Ok(()), FileIdentity::check)
    }
}
