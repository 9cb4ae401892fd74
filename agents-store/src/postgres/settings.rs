//! How the store connects, and how long each of its waits may last.

use crate::millis;
use agents_runtime::store::{StoreError, StoreResult};
use std::time::Duration;

/// How a [`PostgresStore`](super::PostgresStore) connects and how long each of its waits may last: every wait ends,
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
/// | `listen_retry` | 500 ms | the first wait before the connection that hears decisions reconnects (doubled after each failure, up to 30 s) |
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
    /// How long the connection that hears decisions ([`Store::watch_decisions`](crate::Store::watch_decisions))
    /// waits before it reconnects once lost, the first time; each failure after doubles it,
    /// up to 30 s. Decisions made meanwhile are looked up once it is back.
    pub listen_retry: Duration,
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
            listen_retry: Duration::from_millis(500),
        }
    }
}

impl PostgresSettings {
    /// Puts the timeouts into a connection's configuration; refuses a zero one.
    pub(super) fn apply(&self, config: &mut tokio_postgres::Config) -> StoreResult<()> {
        let named = [
            ("acquire_timeout", self.acquire_timeout),
            ("connect_timeout", self.connect_timeout),
            ("statement_timeout", self.statement_timeout),
            ("lock_timeout", self.lock_timeout),
            ("tcp_user_timeout", self.tcp_user_timeout),
            ("listen_retry", self.listen_retry),
        ];
        if let Some((name, _)) = named.iter().find(|(_, d)| d.as_millis() == 0) {
            return Err(StoreError::Invalid(format!(
                "PostgresSettings::{name} is zero: give it a positive duration (a zero timeout would disable it on \
                 the server, and every wait must end; a zero retry would reconnect without a pause)"
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
