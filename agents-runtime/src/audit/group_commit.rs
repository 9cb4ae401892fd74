//! Group commit: many producers, one writer, one durability barrier per batch.
//!
//! Each producer renders its record's canonical JSON (all but the chain fields) on its own
//! thread and sends it over a channel to one writer thread. The writer takes everything that is
//! waiting (up to [`MAX_BATCH`] records), seals each record in arrival order onto the chain
//! (splicing in `seq` and `prev_hash`, hashing), hands the batch to a [`DurableStore`] (one
//! write and one sync for the whole batch), and only then answers each producer with its sealed
//! record. While the store syncs, the next batch queues up, so the cost of a sync is shared by
//! every producer that arrived during it.
//!
//! Producers answered by one commit usually append again at once, but not all at the same
//! instant. When fewer records are waiting than the previous commit answered, the writer waits
//! for the rest, at most a quarter of the previous commit's duration (and at most 2 ms), and
//! stops waiting as soon as they are all there. A single producer never waits.

use super::Appended;
use super::keyed::{Checkpoints, SealingKey};
use super::{AuditError, AuditRecord, AuditSink, ChainSummary};
use agents_core::audit::PreparedRecord as Prepared;
use std::io;
use std::sync::{Arc, OnceLock, mpsc};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};
use tokio::sync::oneshot;

/// The most records one batch holds, which bounds the latency a large burst adds to the first
/// producer of the next batch.
pub const MAX_BATCH: usize = 1024;

/// A place that makes sealed records durable: a file, a database table.
///
/// Implement it to give a new backend group commit through [`GroupCommitSink`].
pub trait DurableStore: Send + 'static {
    /// Stores `records` (sealed, in chain order, continuing the previous batch) and returns only
    /// once they are durable. `lines[i]` is `records[i].to_line()`, already rendered. On `Err`,
    /// none, some or all of them may be stored; the sink then reports the error to every
    /// producer of the batch and refuses every later record.
    fn commit(&mut self, records: &[AuditRecord], lines: &[String]) -> io::Result<()>;
}

type Reply = oneshot::Sender<Result<AuditRecord, AuditError>>;

/// An [`AuditSink`] that seals records in arrival order and commits them in batches through a
/// [`DurableStore`] on a dedicated writer thread.
///
/// `append` resolves only after the batch holding the record was committed. When a commit
/// fails, every producer of that batch gets [`AuditError::Io`], and the sink is *poisoned*: it
/// answers every later `append` with [`AuditError::Refused`], because the chain's last durable
/// record is no longer known and a later record must not claim to follow one that may be
/// missing. Open the store again (which verifies what it holds) to continue.
///
/// Dropping the sink waits for the writer to finish the records already sent.
pub struct GroupCommitSink {
    sender: Option<mpsc::Sender<(Prepared, Reply)>>,
    writer: Option<JoinHandle<()>>,
    poison: Arc<OnceLock<String>>,
}

impl GroupCommitSink {
    /// Starts the writer thread. `label` names the store in errors (for example
    /// `audit log /var/lib/app/audit.jsonl`); `head` is the chain the store already holds, so
    /// the first new record gets `seq = head.records + 1` and `prev_hash = head.last_hash`.
    pub fn spawn<S: DurableStore>(label: impl Into<String>, store: S, head: ChainSummary) -> io::Result<Self> {
        Self::spawn_with(label, store, head, ChainOptions::default())
    }

    /// [`GroupCommitSink::spawn`] with a sealing key (a keyed chain) and checkpoints. With a
    /// key, the writer also wakes when the key's epoch runs out, so an idle writer steps too.
    pub fn spawn_with<S: DurableStore>(
        label: impl Into<String>,
        store: S,
        head: ChainSummary,
        options: ChainOptions,
    ) -> io::Result<Self> {
        let label = label.into();
        let ChainOptions { key, checkpoints } = options;
        let (sender, receiver) = mpsc::channel();
        let poison = Arc::new(OnceLock::new());
        let writer = Writer {
            label,
            store,
            next_seq: head.records as u64 + 1,
            prev_hash: head.last_hash,
            last_epoch: head.last_epoch,
            poison: Arc::clone(&poison),
            key,
            checkpoints,
        };
        let writer =
            std::thread::Builder::new().name("agents-audit-writer".to_owned()).spawn(move || writer.run(receiver))?;
        Ok(GroupCommitSink { sender: Some(sender), writer: Some(writer), poison })
    }

    /// Whether a failed commit stopped the sink. A poisoned sink refuses every record.
    pub fn is_poisoned(&self) -> bool {
        self.poison.get().is_some()
    }

    fn refused(&self) -> Option<AuditError> {
        self.poison.get().map(|reason| AuditError::Refused(reason.clone()))
    }
}

impl AuditSink for GroupCommitSink {
    fn append(&self, record: AuditRecord) -> Appended<'_> {
        Appended::pending(async move {
            if let Some(error) = self.refused() {
                return Err(error);
            }
            // Serializing here, on the producer's thread, keeps the shared writer's work small.
            let prepared = Prepared::new(record);
            let (reply, answer) = oneshot::channel();
            let sent = self.sender.as_ref().is_some_and(|sender| sender.send((prepared, reply)).is_ok());
            if !sent {
                return Err(self.refused().unwrap_or_else(writer_gone));
            }
            match answer.await {
                Ok(result) => result,
                Err(_) => Err(self.refused().unwrap_or_else(writer_gone)),
            }
        })
    }
}

fn writer_gone() -> AuditError {
    AuditError::Refused(
        "the audit writer thread stopped unexpectedly, so the record is not known to be stored. \
         Restart the process and open the log again (opening verifies it)"
            .to_owned(),
    )
}

impl Drop for GroupCommitSink {
    fn drop(&mut self) {
        // Closing the channel lets the writer finish what was sent, then stop.
        drop(self.sender.take());
        if let Some(writer) = self.writer.take() {
            let _ = writer.join();
        }
    }
}

impl std::fmt::Debug for GroupCommitSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GroupCommitSink").field("poisoned", &self.poison.get()).finish_non_exhaustive()
    }
}

/// How a [`GroupCommitSink`] seals and vouches for its chain.
#[derive(Debug, Default)]
pub struct ChainOptions {
    /// Seal with this key (a keyed chain); `None`: the plain chain.
    pub key: Option<SealingKey>,
    /// Publish signed checkpoints of the head.
    pub checkpoints: Option<Checkpoints>,
}

/// A batch waits for returning producers at most this fraction of the previous commit's time,
/// so the wait can never cost more than a small part of what it saves (a whole commit).
const GATHER_FRACTION: u32 = 4;

/// And never longer than this.
const MAX_GATHER: Duration = Duration::from_millis(2);

/// Records sealed and waiting for one commit, with their producers' reply channels.
struct Batch {
    records: Vec<AuditRecord>,
    lines: Vec<String>,
    replies: Vec<Reply>,
    /// Hash of the last record sealed into the batch (the chain's head once committed).
    last_hash: String,
}

struct Writer<S> {
    label: String,
    store: S,
    next_seq: u64,
    prev_hash: String,
    last_epoch: Option<u64>,
    poison: Arc<OnceLock<String>>,
    key: Option<SealingKey>,
    checkpoints: Option<Checkpoints>,
}

impl<S: DurableStore> Writer<S> {
    fn run(mut self, receiver: mpsc::Receiver<(Prepared, Reply)>) {
        let mut batch = Batch {
            records: Vec::with_capacity(MAX_BATCH),
            lines: Vec::with_capacity(MAX_BATCH),
            replies: Vec::with_capacity(MAX_BATCH),
            last_hash: String::new(),
        };
        // How many producers the previous commit answered (they are likely to append again
        // soon), and how long that commit took.
        let mut released = 0;
        let mut last_commit = Duration::ZERO;
        while let Some(first) = self.next_request(&receiver) {
            batch.last_hash.clone_from(&self.prev_hash);
            let gather_until = Instant::now() + (last_commit / GATHER_FRACTION).min(MAX_GATHER);
            self.take(first, &mut batch);
            while batch.records.len() < MAX_BATCH {
                let next = match receiver.try_recv() {
                    // Sealing each record as it is taken gives the others time to arrive.
                    Ok(next) => next,
                    // Producers released by the previous commit may still be on their way: wait
                    // briefly for them rather than make them wait a whole commit. A lone producer
                    // never waits, and the wait ends the moment the last of them arrives.
                    Err(mpsc::TryRecvError::Empty) if batch.records.len() < released => {
                        match receiver.recv_timeout(gather_until.saturating_duration_since(Instant::now())) {
                            Ok(next) => next,
                            Err(_) => break,
                        }
                    }
                    Err(_) => break,
                };
                self.take(next, &mut batch);
            }
            released = batch.records.len();
            if released > 0 {
                let started = Instant::now();
                self.commit(&mut batch);
                last_commit = started.elapsed();
            }
            if self.poison.get().is_some() {
                released = 0;
            }
        }
        if self.poison.get().is_none()
            && let Some(checkpoints) = &mut self.checkpoints
        {
            checkpoints.after_commit(self.next_seq - 1, &self.prev_hash, self.last_epoch, true);
        }
    }

    /// Waits for the next record; with a sealing key, wakes at the end of each epoch to step
    /// the key. `None` once every producer is gone.
    fn next_request(&mut self, receiver: &mpsc::Receiver<(Prepared, Reply)>) -> Option<(Prepared, Reply)> {
        loop {
            let Some(key) = &mut self.key else { return receiver.recv().ok() };
            match receiver.recv_timeout(key.deadline().saturating_duration_since(Instant::now())) {
                Ok(next) => return Some(next),
                Err(mpsc::RecvTimeoutError::Disconnected) => return None,
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    if let Err(error) = key.after_record(self.next_seq) {
                        self.poison_key(&error);
                        // Without a key the writer can only refuse; it stops stepping.
                        self.key = None;
                    }
                }
            }
        }
    }

    fn poison_key(&self, error: &io::Error) {
        let _ = self.poison.set(format!(
            "{} refuses records: its sealing key could not step to the next epoch ({error}); the last record \
             known to be durable is seq {}. Fix the key file and restart the process",
            self.label,
            self.next_seq - 1
        ));
    }

    /// Seals a record onto the batch, or refuses it when the sink is poisoned.
    fn take(&mut self, (prepared, reply): (Prepared, Reply), batch: &mut Batch) {
        if let Some(reason) = self.poison.get() {
            let _ = reply.send(Err(AuditError::Refused(reason.clone())));
            return;
        }
        let seq = self.next_seq + batch.records.len() as u64;
        if let Some(key) = &mut self.key
            && let Err(error) = key.before_record(seq, &prepared.record().ts)
        {
            // A record that cannot be sealed is refused alone; the chain goes on.
            let _ = reply.send(Err(AuditError::Refused(format!("{}: {error}", self.label))));
            return;
        }
        let key = self.key.as_ref().map(SealingKey::current);
        let (record, line) = prepared.seal_with(seq, &batch.last_hash, key);
        batch.last_hash.clone_from(&record.hash);
        batch.records.push(record);
        batch.lines.push(line);
        batch.replies.push(reply);
        if let Some(Err(error)) = self.key.as_mut().map(|key| key.after_record(seq + 1)) {
            // The next epoch's key could not be stored: refuse what comes next rather than
            // seal with a key that stays readable.
            self.poison_key(&error);
        }
    }

    /// Makes the sealed batch durable, then answers its producers.
    fn commit(&mut self, batch: &mut Batch) {
        let Batch { records, lines, replies, last_hash } = batch;
        let first_seq = self.next_seq;
        let result = self.store.commit(records, lines);
        lines.clear();
        match result {
            Ok(()) => {
                self.next_seq += records.len() as u64;
                self.prev_hash.clone_from(last_hash);
                if let Some(last) = records.last() {
                    self.last_epoch = last.epoch.or(self.last_epoch);
                }
                if let Some(checkpoints) = &mut self.checkpoints {
                    checkpoints.after_commit(self.next_seq - 1, &self.prev_hash, self.last_epoch, false);
                }
                for (record, reply) in records.drain(..).zip(replies.drain(..)) {
                    // A producer that stopped waiting does not undo its record.
                    let _ = reply.send(Ok(record));
                }
            }
            Err(error) => {
                let last_durable = first_seq - 1;
                let _ = self.poison.set(format!(
                    "{} refuses records after a failed write ({error}); the last record known to be durable is seq \
                     {last_durable}. Restart the process: opening the log again verifies it and reports a torn tail",
                    self.label
                ));
                let last_seq = first_seq + records.len() as u64 - 1;
                for reply in replies.drain(..) {
                    let detail =
                        format!("{}: records {first_seq}..={last_seq} were not made durable: {error}", self.label);
                    let _ = reply.send(Err(AuditError::Io(io::Error::new(error.kind(), detail))));
                }
                records.clear();
            }
        }
    }
}
