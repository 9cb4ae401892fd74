//! Signed checkpoints of audit chains in PostgreSQL: a second place for a writer to publish the
//! head of its chain to, and where a verifier reads them back.
//!
//! A keyed chain ([`agents_runtime::audit::SealingKey`]) detects every edit of its records, but
//! not records cut off its end: the shorter log is itself a valid chain. A writer that publishes
//! signed [`Checkpoint`]s of its head to a database the log's host cannot rewrite lets a verifier
//! detect a log cut below (or rewritten up to) the last checkpoint.
//!
//! The table `agents_audit_checkpoints` is append-only (a trigger refuses `UPDATE`, `DELETE` and
//! `TRUNCATE`, as on the audit table); give the writer's database role `INSERT` and `SELECT` on it
//! only, and nobody but an administrator the right to drop the trigger. Each row keeps the
//! checkpoint's exact line; what its signature covers. Someone who can insert rows but does not
//! hold the writer's Ed25519 key can add rows, but not rows that verify:
//! [`PostgresStore::trusted_checkpoints`] refuses the whole set when one row does not.
//!
//! The lines can also be exported for the command-line verifier:
//!
//! ```text
//! psql -At -c "SELECT line FROM agents_audit_checkpoints WHERE stream = 'main' ORDER BY seq" > main.checkpoints
//! agents audit verify audit.jsonl --key chain.key --checkpoints main.checkpoints --checkpoint-key checkpoint.pub
//! ```

use super::connection::{PostgresStore, pg_error};
use crate::{StoreError, StoreResult};
use agents_core::audit::{Checkpoint, CheckpointError, CheckpointVerifyingKey};
use agents_runtime::audit::CheckpointPublisher;
use std::io;
use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::Duration;

/// Why the checkpoints of a stream could not be read as trusted.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CheckpointReadError {
    /// The database could not be read.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A row is not a checkpoint signed by the trusted key (forged, edited, or signed by another
    /// key), or its columns disagree with its line. None of the stream's checkpoints is used.
    #[error(
        "audit checkpoints of stream `{stream}`: the row of record {seq} is refused: {error}. Someone who does not \
         hold the writer's checkpoint key wrote to agents_audit_checkpoints: treat the log as unverified and find out \
         who (the database's own logs), or check that --checkpoint-key is the writer's public key"
    )]
    Refused {
        /// The stream.
        stream: String,
        /// The row's `seq`.
        seq: i64,
        /// What is wrong with it.
        error: CheckpointError,
    },
}

impl PostgresStore {
    /// Stores a signed checkpoint of the audit chain `stream` (any name the writer and the
    /// verifier agree on, one per log). Publishing the same checkpoint again changes nothing;
    /// a checkpoint of a record that already has one with another hash is refused
    /// ([`StoreError::Invalid`]): the chain it names was rewritten.
    pub async fn publish_checkpoint(&self, stream: &str, checkpoint: &Checkpoint) -> StoreResult<()> {
        let seq = i64::try_from(checkpoint.seq)
            .map_err(|_| StoreError::Invalid(format!("checkpoint sequence number {} is too large", checkpoint.seq)))?;
        let line = checkpoint.to_line();
        let client = self.client().await?;
        let inserted = client
            .execute(
                "INSERT INTO agents_audit_checkpoints (stream, seq, hash, line) VALUES ($1, $2, $3, $4) \
                 ON CONFLICT (stream, seq) DO NOTHING",
                &[&stream, &seq, &checkpoint.hash, &line],
            )
            .await
            .map_err(pg_error)?;
        if inserted == 1 {
            return Ok(());
        }
        let row = client
            .query_one("SELECT hash FROM agents_audit_checkpoints WHERE stream = $1 AND seq = $2", &[&stream, &seq])
            .await
            .map_err(pg_error)?;
        let published: String = row.get(0);
        if published == checkpoint.hash {
            Ok(())
        } else {
            Err(StoreError::Invalid(format!(
                "audit stream `{stream}` already has a checkpoint of record {seq} with hash {published}, not {}: \
                 the chain was rewritten (or two writers use one stream name)",
                checkpoint.hash
            )))
        }
    }

    /// The checkpoint lines of `stream` in sequence order, as published and unchecked (for an
    /// export to `agents audit verify --checkpoints`).
    pub async fn checkpoint_lines(&self, stream: &str) -> StoreResult<Vec<String>> {
        let client = self.client().await?;
        let rows = client
            .query("SELECT line FROM agents_audit_checkpoints WHERE stream = $1 ORDER BY seq", &[&stream])
            .await
            .map_err(pg_error)?;
        Ok(rows.iter().map(|r| r.get(0)).collect())
    }

    /// The checkpoints of `stream` in sequence order, each parsed and its signature checked
    /// against `trusted`, ready for [`ChainVerifier::checkpoints`]. Every row must hold: one
    /// that does not (forged, edited, signed by another key, columns that disagree with its
    /// line) refuses them all, since a verifier that skipped it would trust a table someone
    /// tampered with.
    ///
    /// [`ChainVerifier::checkpoints`]: agents_core::audit::ChainVerifier::checkpoints
    pub async fn trusted_checkpoints(
        &self,
        stream: &str,
        trusted: &CheckpointVerifyingKey,
    ) -> Result<Vec<Checkpoint>, CheckpointReadError> {
        let client = self.client().await?;
        let rows = client
            .query("SELECT seq, hash, line FROM agents_audit_checkpoints WHERE stream = $1 ORDER BY seq", &[&stream])
            .await
            .map_err(pg_error)?;
        let mut out = Vec::with_capacity(rows.len());
        for row in &rows {
            let (seq, hash, line): (i64, String, String) = (row.get(0), row.get(1), row.get(2));
            let refused = |error| CheckpointReadError::Refused { stream: stream.to_owned(), seq, error };
            let checkpoint = Checkpoint::parse(&line).map_err(refused)?;
            checkpoint.verify(trusted).map_err(refused)?;
            if i64::try_from(checkpoint.seq) != Ok(seq) || checkpoint.hash != hash {
                return Err(refused(CheckpointError::Malformed(format!(
                    "the row says record {seq} with hash {hash}, its signed line record {} with hash {}",
                    checkpoint.seq, checkpoint.hash
                ))));
            }
            out.push(checkpoint);
        }
        Ok(out)
    }
}

/// One checkpoint to store, and where to say how it went.
type Request = (Checkpoint, mpsc::SyncSender<StoreResult<()>>);

/// A [`CheckpointPublisher`] that stores checkpoints in PostgreSQL
/// ([`PostgresStore::publish_checkpoint`]), for [`agents_runtime::audit::Checkpoints`].
///
/// A chain's writer publishes from its own thread and waits for the answer; this publisher
/// keeps one connection on a thread of its own (with its own small async runtime), so it works
/// from any thread, inside an async runtime or not. A publish that takes longer than the timeout
/// (default 5 s) fails (the checkpoint is retried at the writer's next commit), so a slow
/// database delays the audit writer by at most that much.
///
/// ```no_run
/// # fn demo(signer: agents_runtime::audit::CheckpointSigningKey, key: agents_runtime::audit::SealingKey) -> Result<(), Box<dyn std::error::Error>> {
/// use agents_runtime::audit::{ChainOptions, Checkpoints, JsonlSink};
/// use agents_store::postgres::PostgresCheckpoints;
/// let published = PostgresCheckpoints::connect("host=db.internal user=audit_writer dbname=audit", "node-1")?;
/// let sink = JsonlSink::open_with(
///     "/var/lib/app/audit.jsonl",
///     ChainOptions { key: Some(key), checkpoints: Some(Checkpoints::new(signer, published, 1000)) },
/// )?;
/// # Ok(()) }
/// ```
pub struct PostgresCheckpoints {
    requests: Option<mpsc::Sender<Request>>,
    thread: Option<JoinHandle<()>>,
    timeout: Duration,
    stream: String,
    /// A publish timed out: its request may still hang on the database.
    stuck: bool,
}

impl std::fmt::Debug for PostgresCheckpoints {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PostgresCheckpoints").field("stream", &self.stream).field("timeout", &self.timeout).finish()
    }
}

impl PostgresCheckpoints {
    /// Connects to the database (libpq-style string or `postgresql://` URL), applies the
    /// schema migrations it lacks, and publishes the checkpoints of the chain `stream`.
    /// Blocks until connected; call it outside an async context, or in `spawn_blocking`.
    pub fn connect(conninfo: &str, stream: impl Into<String>) -> StoreResult<Self> {
        let stream = stream.into();
        if stream.is_empty() {
            return Err(StoreError::Invalid("the checkpoints' stream name is empty: name the log".to_owned()));
        }
        let (requests, receiver) = mpsc::channel::<Request>();
        let (ready_tx, ready_rx) = mpsc::sync_channel::<StoreResult<()>>(1);
        let (conninfo, name) = (conninfo.to_owned(), stream.clone());
        let thread = std::thread::Builder::new()
            .name("agents-checkpoints-pg".to_owned())
            .spawn(move || serve(&conninfo, &name, receiver, ready_tx))
            .map_err(|e| StoreError::Unavailable(format!("cannot start the checkpoint publisher's thread: {e}")))?;
        match ready_rx.recv() {
            Ok(Ok(())) => {}
            Ok(Err(e)) => {
                let _ = thread.join();
                return Err(e);
            }
            Err(_) => {
                let _ = thread.join();
                return Err(StoreError::Unavailable("the checkpoint publisher's thread stopped".to_owned()));
            }
        }
        Ok(PostgresCheckpoints {
            requests: Some(requests),
            thread: Some(thread),
            timeout: Duration::from_secs(5),
            stream,
            stuck: false,
        })
    }

    /// How long a publish waits for the database (default 5 s).
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }
}

/// The publisher's thread: one connection, one checkpoint at a time, until the publisher goes.
fn serve(conninfo: &str, stream: &str, requests: mpsc::Receiver<Request>, ready: mpsc::SyncSender<StoreResult<()>>) {
    let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            let _ = ready.send(Err(StoreError::Unavailable(format!("cannot start an async runtime: {e}"))));
            return;
        }
    };
    let store = match runtime.block_on(PostgresStore::connect(conninfo, 1)) {
        Ok(store) => store,
        Err(e) => {
            let _ = ready.send(Err(e));
            return;
        }
    };
    let _ = ready.send(Ok(()));
    while let Ok((checkpoint, answer)) = requests.recv() {
        let outcome = runtime.block_on(store.publish_checkpoint(stream, &checkpoint));
        // The writer may have stopped waiting (timeout): then nobody reads the answer.
        let _ = answer.try_send(outcome);
    }
}

impl CheckpointPublisher for PostgresCheckpoints {
    fn publish(&mut self, checkpoint: &Checkpoint) -> io::Result<()> {
        let (answer, outcome) = mpsc::sync_channel(1);
        let gone = || io::Error::other("the PostgreSQL checkpoint publisher's thread stopped");
        let requests = self.requests.as_ref().ok_or_else(gone)?;
        requests.send((checkpoint.clone(), answer)).map_err(|_| gone())?;
        match outcome.recv_timeout(self.timeout) {
            Ok(Ok(())) => Ok(()),
            Ok(Err(e)) => Err(io::Error::other(format!("publishing checkpoint {} to PostgreSQL: {e}", checkpoint.seq))),
            Err(mpsc::RecvTimeoutError::Timeout) => {
                self.stuck = true;
                Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    format!("publishing checkpoint {} to PostgreSQL took over {:?}", checkpoint.seq, self.timeout),
                ))
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => Err(gone()),
        }
    }
}

impl Drop for PostgresCheckpoints {
    fn drop(&mut self) {
        // Closing the channel ends the thread once the checkpoints already sent are stored; a
        // thread still waiting on a database that timed out is left to finish on its own.
        self.requests = None;
        if let Some(thread) = self.thread.take()
            && !self.stuck
        {
            let _ = thread.join();
        }
    }
}
