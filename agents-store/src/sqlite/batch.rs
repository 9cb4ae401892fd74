//! Group commit for the SQLite store: the operations waiting for the connection share one
//! `BEGIN IMMEDIATE` transaction, so one `fsync` makes all of them durable.
//!
//! Each operation still runs alone and in order (one connection), inside a savepoint of its
//! own: an operation that fails or panics rolls back its own changes and no one else's. None
//! is answered before the transaction holding it has committed (and the file is still the one
//! opened); if the commit fails, every operation of that batch answers the error, reads
//! included, so no answer rests on a change that was not stored.
//!
//! Nothing waits for company: one task at a time drains the queue, each batch every operation
//! queued by then (at most [`MAX_BATCH`]), and the next ones queue while its commit waits for
//! the disk. The task starts with the first operation queued while none runs, and stops when
//! it finds the queue empty.

use crate::unavailable;
use agents_runtime::audit::FileIdentity;
use agents_runtime::store::{StoreError, StoreResult};
use rusqlite::Connection;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::{Arc, Mutex, PoisonError};
use tokio::sync::oneshot;

/// The most operations one transaction holds: a long queue is committed in several, so the
/// file's write lock is held for at most this many operations at a time, and an answer waits
/// for at most one such transaction beyond its own.
pub(super) const MAX_BATCH: usize = 256;

/// Hands an operation the batch's outcome once the transaction holding it has ended.
type Answer = Box<dyn FnOnce(&StoreResult<()>) + Send>;

/// One queued operation: run on the connection (`Ok`), or refused without running (`Err`,
/// the batch could not start); what it returns answers its caller once the batch has ended.
pub(super) type Job = Box<dyn FnOnce(Result<&mut Connection, &StoreError>) -> Answer + Send>;

/// The operations waiting for the connection, oldest first, and whether a task is draining
/// them.
#[derive(Default)]
pub(super) struct Queue(Mutex<Pending>);

#[derive(Default)]
struct Pending {
    jobs: Vec<Job>,
    draining: bool,
}

impl Queue {
    fn pending(&self) -> std::sync::MutexGuard<'_, Pending> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Queues `job`. True when no task is draining the queue: the caller must start one
    /// ([`Drainer`]), which drains it until it is empty.
    #[must_use = "a queue nobody drains never answers"]
    pub(super) fn push(&self, job: Job) -> bool {
        let mut pending = self.pending();
        pending.jobs.push(job);
        !std::mem::replace(&mut pending.draining, true)
    }

    /// The oldest queued operations, at most [`MAX_BATCH`]; none when the queue is empty, and
    /// then the draining task stops (in the same lock, so the next push starts another).
    fn take(&self) -> Vec<Job> {
        let mut pending = self.pending();
        let n = pending.jobs.len().min(MAX_BATCH);
        pending.draining = n > 0;
        pending.jobs.drain(..n).collect()
    }
}

/// The one task draining a [`Queue`]. If it ends before the queue is empty (its thread never
/// started, or it panicked), the operations left are dropped, so each caller answers an error
/// instead of waiting for ever, and the next push starts a new drainer.
pub(super) struct Drainer {
    queue: Arc<Queue>,
    done: bool,
}

impl Drainer {
    pub(super) fn new(queue: Arc<Queue>) -> Self {
        Drainer { queue, done: false }
    }

    /// Runs the queued operations until none is left, each batch in one transaction.
    pub(super) fn drain(mut self, conn: &mut Connection, identity: Option<&FileIdentity>) {
        let mut jobs = self.queue.take();
        while !jobs.is_empty() {
            let rest = commit_batch(conn, jobs, identity);
            jobs = if rest.is_empty() { self.queue.take() } else { rest };
        }
        self.done = true;
    }
}

impl Drop for Drainer {
    fn drop(&mut self) {
        if !self.done {
            let mut pending = self.queue.pending();
            pending.draining = false;
            pending.jobs.clear();
        }
    }
}

/// `f` as a queued operation whose answer (its value once its batch committed, or the error)
/// is sent on `answer`.
pub(super) fn job<T: Send + 'static>(
    f: impl FnOnce(&mut Connection) -> StoreResult<T> + Send + 'static,
    answer: oneshot::Sender<StoreResult<T>>,
) -> Job {
    Box::new(move |conn| {
        let result = match conn {
            Ok(conn) => in_savepoint(conn, f),
            Err(e) => Err(copy(e)),
        };
        Box::new(move |committed| {
            // The caller may have stopped waiting (its future dropped); nothing to tell then.
            // Its own error says more than the batch's: its changes were rolled back either way.
            let _ = answer.send(match (result, committed) {
                (Err(e), _) => Err(e),
                (Ok(value), Ok(())) => Ok(value),
                (Ok(_), Err(e)) => Err(copy(e)),
            });
        })
    })
}

/// Runs `f` in a savepoint of its own: released if `f` succeeds, rolled back if it fails or
/// panics.
fn in_savepoint<T>(conn: &mut Connection, f: impl FnOnce(&mut Connection) -> StoreResult<T>) -> StoreResult<T> {
    exec(conn, "SAVEPOINT agents_op")?;
    // Unwind safety: after a panic nothing `f` captured is used again, and its changes are
    // rolled back below (its own savepoints were rolled back as the panic dropped them).
    let result = catch_unwind(AssertUnwindSafe(|| f(conn)))
        .unwrap_or_else(|_| Err(unavailable("SQLite store", "the operation panicked; its changes were rolled back")));
    if conn.is_autocommit() {
        // SQLite ended the whole transaction (an I/O error, a full disk): the batch fails.
        return result;
    }
    if result.is_err() {
        exec(conn, "ROLLBACK TO agents_op")?;
    }
    exec(conn, "RELEASE agents_op")?;
    result
}

/// One transaction over `jobs` (the file checked to be the one opened before it starts and
/// after it commits). Answers every job it ran; returns the ones it did not run because SQLite
/// ended the transaction under them, for a transaction of their own.
fn commit_batch(conn: &mut Connection, jobs: Vec<Job>, identity: Option<&FileIdentity>) -> Vec<Job> {
    let still_the_file =
        || identity.map_or(Ok(()), FileIdentity::check).map_err(|e| unavailable("SQLite state store", e));
    if !conn.is_autocommit() {
        // A transaction left open by a drainer that died in the middle of it: none of its
        // operations was answered with success, so it is rolled back before the next begins.
        let _ = conn.execute_batch("ROLLBACK");
    }
    if let Err(e) = still_the_file().and_then(|()| exec(conn, "BEGIN IMMEDIATE")) {
        for job in jobs {
            job(Err(&e))(&Ok(()));
        }
        return Vec::new();
    }
    let mut jobs = jobs.into_iter();
    let mut answers = Vec::with_capacity(jobs.len());
    for job in jobs.by_ref() {
        answers.push(job(Ok(&mut *conn)));
        if conn.is_autocommit() {
            break;
        }
    }
    let committed = if conn.is_autocommit() {
        Err(unavailable("SQLite state store", "the transaction was rolled back (an I/O error or a full disk); retry"))
    } else {
        exec(conn, "COMMIT").and_then(|()| still_the_file())
    };
    if committed.is_err() && !conn.is_autocommit() {
        // A failed COMMIT can leave the transaction open: end it, changing nothing.
        let _ = conn.execute_batch("ROLLBACK");
    }
    for answer in answers {
        answer(&committed);
    }
    jobs.collect()
}

/// An error of SQLite's, as the store answers it.
pub(super) fn sql_error(e: rusqlite::Error) -> StoreError {
    unavailable("SQLite", e)
}

/// `Connection::execute`, its statement parsed once per connection (kept in the connection's
/// cache) rather than at every call.
pub(super) fn execute(conn: &Connection, sql: &str, params: impl rusqlite::Params) -> rusqlite::Result<usize> {
    conn.prepare_cached(sql)?.execute(params)
}

/// `Connection::query_row`, its statement parsed once per connection.
pub(super) fn query_row<T>(
    conn: &Connection,
    sql: &str,
    params: impl rusqlite::Params,
    row: impl FnOnce(&rusqlite::Row<'_>) -> rusqlite::Result<T>,
) -> rusqlite::Result<T> {
    conn.prepare_cached(sql)?.query_row(params, row)
}

/// Runs one of the batch's own statements (no parameters).
fn exec(conn: &Connection, sql: &str) -> StoreResult<()> {
    execute(conn, sql, []).map(drop).map_err(sql_error)
}

/// The same error again, for each operation of a batch that failed as a whole.
fn copy(e: &StoreError) -> StoreError {
    match e {
        StoreError::Unavailable(detail) => StoreError::Unavailable(detail.clone()),
        other => StoreError::Unavailable(other.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// A connection whose commits are counted, with one table of names.
    fn counted() -> (Connection, Arc<AtomicUsize>) {
        let conn = Connection::open_in_memory().unwrap();
        conn.execute_batch(
            "PRAGMA foreign_keys = ON; CREATE TABLE names (name TEXT PRIMARY KEY); \
             CREATE TABLE parents (id INTEGER PRIMARY KEY); \
             CREATE TABLE children (parent INTEGER REFERENCES parents (id) DEFERRABLE INITIALLY DEFERRED)",
        )
        .unwrap();
        let commits = Arc::new(AtomicUsize::new(0));
        let counter = commits.clone();
        conn.commit_hook(Some(move || {
            counter.fetch_add(1, Ordering::SeqCst);
            false
        }));
        (conn, commits)
    }

    fn insert(name: &'static str) -> impl FnOnce(&mut Connection) -> StoreResult<()> + Send + 'static {
        move |conn| conn.execute("INSERT INTO names VALUES (?1)", [name]).map(drop).map_err(sql_error)
    }

    fn names(conn: &Connection) -> Vec<String> {
        let mut stmt = conn.prepare("SELECT name FROM names ORDER BY name").unwrap();
        stmt.query_map([], |r| r.get(0)).unwrap().map(Result::unwrap).collect()
    }

    /// Queues `f` and keeps the receiving end of its answer.
    fn queue<T: Send + 'static>(
        q: &Queue,
        f: impl FnOnce(&mut Connection) -> StoreResult<T> + Send + 'static,
    ) -> oneshot::Receiver<StoreResult<T>> {
        let (answer, answered) = oneshot::channel();
        let _ = q.push(job(f, answer));
        answered
    }

    fn answer<T>(mut answered: oneshot::Receiver<StoreResult<T>>) -> StoreResult<T> {
        answered.try_recv().expect("answered once its batch ended")
    }

    #[test]
    fn operations_queued_together_commit_once_and_a_failing_one_rolls_back_only_itself() {
        let (mut conn, commits) = counted();
        let q = Arc::new(Queue::default());
        let a = queue(&q, insert("a"));
        let b = queue(&q, |conn| {
            insert("b")(conn)?;
            Err::<(), _>(StoreError::Invalid("b refused after its insert".into()))
        });
        let c = queue(&q, insert("c"));
        let read = queue(&q, |conn| Ok(names(conn)));
        Drainer::new(q.clone()).drain(&mut conn, None);

        assert_eq!(commits.load(Ordering::SeqCst), 1, "four operations, one commit");
        assert!(answer(a).is_ok() && answer(c).is_ok());
        assert!(matches!(answer(b), Err(StoreError::Invalid(e)) if e.contains("refused")), "its own error");
        assert_eq!(answer(read).unwrap(), ["a", "c"], "a read sees the batch before it, without the failed insert");
        assert_eq!(names(&conn), ["a", "c"]);
        assert!(conn.is_autocommit(), "no transaction left open");
    }

    #[test]
    fn a_panicking_operation_answers_an_error_and_leaves_nothing_behind() {
        let (mut conn, commits) = counted();
        let q = Arc::new(Queue::default());
        let a = queue(&q, insert("a"));
        let p = queue(&q, |conn| -> StoreResult<()> {
            insert("p")(conn)?;
            panic!("a bug in an operation");
        });
        let c = queue(&q, insert("c"));
        Drainer::new(q.clone()).drain(&mut conn, None);

        assert_eq!(commits.load(Ordering::SeqCst), 1);
        assert!(answer(p).unwrap_err().to_string().contains("panicked"));
        assert!(answer(a).is_ok() && answer(c).is_ok());
        assert_eq!(names(&conn), ["a", "c"]);
    }

    /// A commit refused (here a deferred foreign key, checked only at `COMMIT`): no operation
    /// of the batch is answered with success, reads included, and nothing is stored.
    #[test]
    fn a_refused_commit_answers_every_operation_of_its_batch_with_the_error() {
        let (mut conn, commits) = counted();
        let q = Arc::new(Queue::default());
        let a = queue(&q, insert("a"));
        let orphan = queue(&q, |conn| conn.execute("INSERT INTO children VALUES (7)", []).map(drop).map_err(sql_error));
        let read = queue(&q, |conn| Ok(names(conn)));
        Drainer::new(q.clone()).drain(&mut conn, None);

        assert_eq!(commits.load(Ordering::SeqCst), 0, "the commit was refused");
        for e in [answer(a).unwrap_err(), answer(orphan).unwrap_err(), answer(read).map(drop).unwrap_err()] {
            assert!(matches!(&e, StoreError::Unavailable(d) if d.contains("FOREIGN KEY")), "{e}");
        }
        assert!(names(&conn).is_empty(), "nothing stored");
        assert!(conn.is_autocommit(), "the refused transaction was rolled back, not left open");

        // The connection serves the next batch.
        let b = queue(&q, insert("b"));
        Drainer::new(q.clone()).drain(&mut conn, None);
        assert!(answer(b).is_ok());
        assert_eq!(names(&conn), ["b"]);
    }

    /// SQLite ending the transaction under the batch (as it does on an I/O error or a full
    /// disk; here an operation's own `ROLLBACK`): the operations it held answer an error, and
    /// the ones after it run in a transaction of their own.
    #[test]
    fn a_transaction_ended_under_the_batch_fails_its_operations_and_the_rest_commit_apart() {
        let (mut conn, commits) = counted();
        let q = Arc::new(Queue::default());
        let a = queue(&q, insert("a"));
        let ender = queue(&q, |conn| conn.execute_batch("ROLLBACK").map_err(sql_error));
        let c = queue(&q, insert("c"));
        Drainer::new(q.clone()).drain(&mut conn, None);

        assert!(answer(a).unwrap_err().to_string().contains("rolled back"));
        assert!(answer(ender).is_err());
        assert!(answer(c).is_ok());
        assert_eq!(commits.load(Ordering::SeqCst), 1, "only the batch after it committed");
        assert_eq!(names(&conn), ["c"]);
    }

    #[test]
    fn a_long_queue_commits_in_batches_of_at_most_max_batch() {
        let (mut conn, commits) = counted();
        let q = Arc::new(Queue::default());
        let answers: Vec<_> = (0..MAX_BATCH * 2 + 1)
            .map(|i| queue(&q, move |conn| conn.execute("INSERT INTO parents VALUES (?1)", [i]).map_err(sql_error)))
            .collect();
        Drainer::new(q.clone()).drain(&mut conn, None);
        assert_eq!(commits.load(Ordering::SeqCst), 3);
        assert!(answers.into_iter().all(|a| answer(a).is_ok()));
    }

    #[test]
    fn one_drainer_at_a_time_and_one_that_never_ran_leaves_no_caller_waiting() {
        let q = Arc::new(Queue::default());
        let (first, mut dropped) = oneshot::channel();
        assert!(q.push(job(insert("a"), first)), "the first operation starts a drainer");
        let (second, _) = oneshot::channel();
        assert!(!q.push(job(insert("b"), second)), "while one drains, nobody starts another");

        // The drainer's thread never ran (a runtime shutting down): its callers are told.
        drop(Drainer::new(q.clone()));
        assert!(matches!(dropped.try_recv(), Err(oneshot::error::TryRecvError::Closed)));

        let (third, stored) = oneshot::channel();
        assert!(q.push(job(insert("c"), third)), "the next operation starts a new drainer");
        let (mut conn, _) = counted();
        Drainer::new(q.clone()).drain(&mut conn, None);
        assert!(answer(stored).is_ok());
        assert_eq!(names(&conn), ["c"], "the abandoned operations were not run");
        let (fourth, _) = oneshot::channel();
        assert!(q.push(job(insert("d"), fourth)), "a drainer that emptied the queue stopped");
    }

    /// A drainer that died inside a transaction (its operations dropped, none answered with
    /// success) leaves it open; the next batch rolls it back and begins its own.
    #[test]
    fn a_transaction_left_open_is_rolled_back_before_the_next_batch() {
        let (mut conn, commits) = counted();
        conn.execute_batch("BEGIN IMMEDIATE; INSERT INTO names VALUES ('left')").unwrap();
        let q = Arc::new(Queue::default());
        let b = queue(&q, insert("b"));
        Drainer::new(q.clone()).drain(&mut conn, None);
        assert!(answer(b).is_ok());
        assert_eq!(commits.load(Ordering::SeqCst), 1);
        assert_eq!(names(&conn), ["b"], "nothing of the abandoned transaction was committed");
    }
}
