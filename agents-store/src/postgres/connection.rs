//! The store's connection pool, its schema migrations, and the helpers every operation uses.

use super::lane::Lane;
use super::settings::PostgresSettings;
use crate::{POSTGRES_MIGRATIONS, VERSION_TABLE, check_version, unavailable};
use agents_runtime::BoxFuture;
use agents_runtime::store::{StoreError, StoreResult};
use deadpool_postgres::{Manager, ManagerConfig, Object, Pool, RecyclingMethod};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use tokio_postgres::NoTls;

/// The advisory lock key that serialises migrations of one database across nodes.
const MIGRATION_LOCK: i64 = 0x6167_656e_7473_0001;

/// The runtime's state in a PostgreSQL database, shared by every node that connects to it.
///
/// Each guarantee of [`Store`](crate::Store) is one conditional statement or one transaction on the
/// server, so it holds across nodes (see the crate documentation for which statement backs
/// which guarantee). Expiry is measured on the database server's clock (`now()`), so nodes
/// whose clocks differ agree on it.
///
/// Connections come from a `deadpool-postgres` pool. A multi-statement operation is sent as
/// one pipeline (one round trip) and runs in its own task, so a caller that gives up half way
/// never leaves a connection inside a transaction.
#[derive(Clone)]
pub struct PostgresStore {
    pub(super) pool: Pool,
    /// Each audit stream's appends from this store, in the order they were called (see
    /// `lane::Lane`).
    pub(super) lanes: Arc<Mutex<HashMap<String, Lane>>>,
    /// How the connection that hears decisions connects (see `listen`).
    pub(super) listen: Arc<Listen>,
}

/// How the connection that hears decisions connects: the pool's configuration, and the first
/// wait before it connects again once lost.
pub(super) struct Listen {
    pub(super) config: tokio_postgres::Config,
    pub(super) retry: std::time::Duration,
}

impl std::fmt::Debug for PostgresStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PostgresStore").field("pool", &self.pool.status()).finish()
    }
}

pub(super) fn pg_error(e: impl std::error::Error) -> StoreError {
    unavailable("PostgreSQL", with_sources(&e))
}

/// An error with its sources (a server's error is a source: its SQLSTATE and message, such as
/// `canceling statement due to lock timeout`, would be lost otherwise).
pub(super) fn with_sources(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}

pub(super) fn is_unique_violation(e: &tokio_postgres::Error) -> bool {
    e.code() == Some(&tokio_postgres::error::SqlState::UNIQUE_VIOLATION)
}

/// Runs `f` in its own task, so a transaction it opens is committed or rolled back even if the
/// caller stops waiting half way (a dropped future would otherwise leave its pooled
/// connection inside the transaction, and the next operation on that connection would run in
/// it and never be committed). `lost` says what a task that panicked answers.
pub(super) fn in_own_task<T: Send + 'static, E: Send + 'static>(
    f: impl Future<Output = Result<T, E>> + Send + 'static,
    lost: fn(tokio::task::JoinError) -> E,
) -> BoxFuture<'static, Result<T, E>> {
    Box::pin(async move { tokio::spawn(f).await.map_err(lost)? })
}

/// Ends a transaction that failed half way, so the connection goes back to the pool clean.
pub(super) async fn abandon(client: &Object) {
    if let Err(e) = client.batch_execute("ROLLBACK").await {
        tracing::warn!(error = %e, "rollback of a failed state-store transaction failed");
    }
}

pub(super) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
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
        let listen = Arc::new(Listen { config: config.clone(), retry: settings.listen_retry });
        let manager = Manager::from_config(config, NoTls, ManagerConfig { recycling_method: RecyclingMethod::Fast });
        let pool = Pool::builder(manager)
            .max_size(settings.max_connections.max(1))
            .runtime(deadpool_postgres::Runtime::Tokio1)
            .wait_timeout(Some(settings.acquire_timeout))
            .create_timeout(Some(settings.connect_timeout))
            .recycle_timeout(Some(settings.connect_timeout))
            .build()
            .map_err(pg_error)?;
        let store = PostgresStore { pool, lanes: Arc::default(), listen };
        store.migrate().await?;
        Ok(store)
    }

    pub(super) async fn client(&self) -> StoreResult<Object> {
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
                .map_err(|e| unavailable(&format!("migration {} ({})", m.version, m.name), with_sources(&e)))?;
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

    /// Runs `f` in its own task, so it completes (or rolls back) even if the caller stops
    /// waiting.
    pub(super) fn spawned<T: Send + 'static>(
        &self,
        f: impl Future<Output = StoreResult<T>> + Send + 'static,
    ) -> BoxFuture<'static, StoreResult<T>> {
        in_own_task(f, |e| unavailable("PostgreSQL task", e))
    }
}

/// Whether a failed statement's outcome is unknown: the server did not answer (the connection
/// broke, or the reply was lost), so what it was sent may have been carried out, COMMIT
/// included. A server's own error (it has a SQLSTATE) rolled the transaction back.
pub(super) fn outcome_unknown(e: &tokio_postgres::Error) -> bool {
    e.code().is_none()
}
