//! The writer's side of a keyed chain: the sealing key that steps every epoch, and signed
//! checkpoints published to a second place.

use agents_core::audit::{ChainKey, Checkpoint, CheckpointSigningKey, EpochKey, EpochPolicy, TIMESTAMP_GRACE};
use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use zeroize::Zeroizing;

/// The first word of a writer's key file.
const KEY_FILE_MAGIC: &str = "agents.audit-sealing-key v1";
/// Every key file has this length, so each step overwrites the previous key in place.
const KEY_FILE_LEN: usize = KEY_FILE_MAGIC.len() + 1 + 20 + 1 + 64 + 1;

/// The writer's sealing key of a keyed chain (see [`agents_core::audit::keyed`]).
///
/// A record's epoch follows from its sequence number and time ([`EpochPolicy`]); the writer
/// holds the key of the oldest epoch a record may still get (the current one, or the previous
/// one for [`TIMESTAMP_GRACE`] after the clock stepped), and steps it one way as records and
/// time pass, also while idle. A step overwrites the old key in memory and, for a key kept in a
/// file, in the file (in place, then synced) before the new key seals anything.
///
/// "Overwritten" holds for the key's own memory and the file's bytes as the file system sees
/// them; copies a compiler leaves on the stack, swap, and flash storage that remaps writes are
/// outside what a process controls. Put the key file on storage you can trust to overwrite, or
/// accept that someone who images that device may read keys of past epochs.
///
/// ```
/// use agents_core::audit::{ChainKey, EpochPolicy};
/// use agents_runtime::audit::SealingKey;
/// let chain_key = ChainKey::from_bytes([7; 32]); // the verifier keeps this one
/// let sealing = SealingKey::in_memory(chain_key.epoch_key(), EpochPolicy::new(100, 60));
/// assert_eq!(sealing.epoch(), 0);
/// ```
pub struct SealingKey {
    /// The oldest epoch's key a future record may need.
    held: EpochKey,
    /// The key of the record being sealed, when it is later than `held`.
    latest: Option<EpochKey>,
    policy: EpochPolicy,
    first_ts: Option<i64>,
    file: Option<(File, PathBuf)>,
}

impl std::fmt::Debug for SealingKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SealingKey")
            .field("epoch", &self.held.epoch())
            .field("policy", &self.policy)
            .field("file", &self.file.as_ref().map(|(_, p)| p))
            .finish_non_exhaustive()
    }
}

impl SealingKey {
    /// A key held in memory only: the chain cannot be continued after the process ends (a new
    /// process would need a key it no longer has). For tests and short-lived writers.
    pub fn in_memory(key: EpochKey, policy: EpochPolicy) -> Self {
        SealingKey { held: key, latest: None, policy, first_ts: None, file: None }
    }

    /// Creates the writer's key file at `path` with the key of epoch 0 of `chain_key` (the
    /// file must not exist; it is created readable by its owner only). Keep `chain_key` for the
    /// verifier, away from this machine.
    pub fn create_file(path: impl AsRef<Path>, chain_key: &ChainKey, policy: EpochPolicy) -> io::Result<Self> {
        use std::os::unix::fs::OpenOptionsExt;
        let path = path.as_ref().to_path_buf();
        let file = OpenOptions::new().read(true).write(true).create_new(true).mode(0o600).open(&path)?;
        let mut key = SealingKey::in_memory(chain_key.epoch_key(), policy);
        key.file = Some((file, path));
        key.persist()?;
        Ok(key)
    }

    /// Opens the writer's key file at `path` (the key it last held).
    pub fn open_file(path: impl AsRef<Path>, policy: EpochPolicy) -> io::Result<Self> {
        let path = path.as_ref().to_path_buf();
        let file = OpenOptions::new().read(true).write(true).open(&path)?;
        let mut text = Zeroizing::new(vec![0u8; KEY_FILE_LEN]);
        file.read_exact_at(&mut text, 0).map_err(|e| bad_key_file(&path, &e.to_string()))?;
        let text = std::str::from_utf8(&text).map_err(|_| bad_key_file(&path, "not text"))?;
        let mut words = text.split_ascii_whitespace();
        let magic = format!("{} {}", words.next().unwrap_or(""), words.next().unwrap_or(""));
        if magic != KEY_FILE_MAGIC {
            return Err(bad_key_file(&path, "it does not start with `agents.audit-sealing-key v1`"));
        }
        let epoch: u64 = words.next().and_then(|w| w.parse().ok()).ok_or_else(|| bad_key_file(&path, "no epoch"))?;
        let mut bytes = Zeroizing::new([0u8; 32]);
        let hex_key = words.next().unwrap_or("");
        if hex_key.len() != 64 || hex::decode_to_slice(hex_key, bytes.as_mut()).is_err() {
            return Err(bad_key_file(&path, "no key"));
        }
        let mut key = SealingKey::in_memory(EpochKey::new(epoch, *bytes), policy);
        key.file = Some((file, path));
        Ok(key)
    }

    /// The epoch of the key it holds.
    pub fn epoch(&self) -> u64 {
        self.held.epoch()
    }

    /// When its epochs step.
    pub fn policy(&self) -> EpochPolicy {
        self.policy
    }

    /// Continues a chain the log already holds (`head`), stepping to where it stands now.
    pub(crate) fn resume(&mut self, head: &agents_core::audit::ChainSummary) -> io::Result<()> {
        self.first_ts = head.first_ts;
        self.after_record(head.records as u64 + 1)
    }

    /// Readies the key of the epoch of record `seq` stamped `ts` (see [`SealingKey::current`]).
    /// Refuses a record whose epoch's key is already gone (stamped more than
    /// [`TIMESTAMP_GRACE`] before it reached the writer) or whose time is not RFC 3339.
    pub(crate) fn before_record(&mut self, seq: u64, ts: &str) -> io::Result<()> {
        let Some(ts_seconds) = agents_core::audit::unix_seconds(ts) else {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, format!("record time `{ts}` is not RFC 3339")));
        };
        let first = *self.first_ts.get_or_insert(ts_seconds);
        let epoch = self.policy.epoch_of(seq, ts_seconds, first);
        if epoch < self.held.epoch() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "record {seq} is stamped {ts}, in sealing epoch {epoch}, whose key was already erased (epoch {} now): \
                     it reached the audit writer more than {} s after it was stamped",
                    self.held.epoch(),
                    TIMESTAMP_GRACE.as_secs()
                ),
            ));
        }
        match &mut self.latest {
            Some(latest) if latest.epoch() <= epoch => latest.advance_to(epoch),
            _ if epoch == self.held.epoch() => self.latest = None,
            _ => {
                let mut key = EpochKey::new(self.held.epoch(), *self.held.key_bytes());
                key.advance_to(epoch);
                self.latest = Some(key);
            }
        }
        Ok(())
    }

    /// The key readied by [`SealingKey::before_record`].
    pub(crate) fn current(&self) -> &EpochKey {
        self.latest.as_ref().unwrap_or(&self.held)
    }

    /// After a record was sealed (the next is `next_seq`), or when the writer wakes while idle:
    /// steps the held key to the oldest epoch a future record may get, erasing the keys before.
    pub(crate) fn after_record(&mut self, next_seq: u64) -> io::Result<()> {
        let Some(first) = self.first_ts else { return Ok(()) };
        let now = unix_now() - TIMESTAMP_GRACE.as_secs() as i64;
        let oldest = self.policy.epoch_of(next_seq, now, first);
        if oldest > self.held.epoch() {
            self.held.advance_to(oldest);
            if self.latest.as_ref().is_some_and(|l| l.epoch() <= oldest) {
                self.latest = None;
            }
            self.persist()?;
        }
        Ok(())
    }

    /// When the clock next moves the oldest epoch a record may get.
    pub(crate) fn deadline(&self) -> Instant {
        let Some(first) = self.first_ts else {
            return Instant::now() + Duration::from_secs(3600);
        };
        let t = self.policy.seconds.max(1) as i64;
        let since = unix_now() - TIMESTAMP_GRACE.as_secs() as i64 - first;
        let next_boundary = (since.div_euclid(t) + 1) * t;
        Instant::now() + Duration::from_secs((next_boundary - since).max(1) as u64)
    }

    /// Overwrites the key file in place with the held key and syncs it.
    fn persist(&self) -> io::Result<()> {
        let Some((file, _)) = &self.file else { return Ok(()) };
        let mut text = Zeroizing::new(String::with_capacity(KEY_FILE_LEN));
        text.push_str(KEY_FILE_MAGIC);
        text.push_str(&format!(" {:020} ", self.held.epoch()));
        text.push_str(&hex::encode(self.held.key_bytes()));
        text.push('\n');
        debug_assert_eq!(text.len(), KEY_FILE_LEN);
        file.write_all_at(text.as_bytes(), 0)?;
        file.sync_data()
    }
}

fn unix_now() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs() as i64)
}

fn bad_key_file(path: &Path, detail: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        format!("`{}` is not an audit sealing key file: {detail}", path.display()),
    )
}

/// A second place that receives signed checkpoints of the chain's head: a file on another
/// volume, standard output for an external log collector, a database of another host.
pub trait CheckpointPublisher: Send + 'static {
    /// Publishes one checkpoint; returns once it is stored as durably as the place allows.
    fn publish(&mut self, checkpoint: &Checkpoint) -> io::Result<()>;
}

/// Appends checkpoints as lines to a file (synced after each), meant for another volume or a
/// mount that the log's writers cannot rewrite.
#[derive(Debug)]
pub struct CheckpointFile {
    file: File,
}

impl CheckpointFile {
    /// Opens (or creates) the file for appending.
    pub fn open(path: impl AsRef<Path>) -> io::Result<Self> {
        Ok(CheckpointFile { file: OpenOptions::new().create(true).append(true).open(path)? })
    }
}

impl CheckpointPublisher for CheckpointFile {
    fn publish(&mut self, checkpoint: &Checkpoint) -> io::Result<()> {
        let mut line = checkpoint.to_line();
        line.push('\n');
        self.file.write_all(line.as_bytes())?;
        self.file.sync_data()
    }
}

/// Writes checkpoints as lines to any writer (standard output for an external log, say).
#[derive(Debug)]
pub struct CheckpointWriter<W>(pub W);

impl<W: Write + Send + 'static> CheckpointPublisher for CheckpointWriter<W> {
    fn publish(&mut self, checkpoint: &Checkpoint) -> io::Result<()> {
        writeln!(self.0, "{}", checkpoint.to_line())?;
        self.0.flush()
    }
}

/// Signs and publishes a checkpoint every `every` records (after the commit that reaches it)
/// and when the sink closes.
pub struct Checkpoints {
    signer: CheckpointSigningKey,
    publisher: Box<dyn CheckpointPublisher>,
    every: u64,
    last_published: u64,
}

impl std::fmt::Debug for Checkpoints {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Checkpoints").field("signer", &self.signer).field("every", &self.every).finish_non_exhaustive()
    }
}

impl Checkpoints {
    /// Checkpoints signed by `signer`, published through `publisher` every `every` records
    /// (at least 1) and at close.
    pub fn new(signer: CheckpointSigningKey, publisher: impl CheckpointPublisher, every: u64) -> Self {
        Checkpoints { signer, publisher: Box::new(publisher), every: every.max(1), last_published: 0 }
    }

    /// Publishes when `every` records were added since the last checkpoint (or `force` and
    /// anything was). A failure is logged and retried at the next commit: checkpoints add
    /// evidence, and their absence is visible to a verifier, so they never stop the record.
    pub(crate) fn after_commit(&mut self, seq: u64, hash: &str, epoch: Option<u64>, force: bool) {
        let due = seq >= self.last_published + self.every || (force && seq > self.last_published);
        if !due {
            return;
        }
        let checkpoint = Checkpoint::sign(seq, hash, epoch, &now_rfc3339(), &self.signer);
        match self.publisher.publish(&checkpoint) {
            Ok(()) => self.last_published = seq,
            Err(error) => {
                tracing::error!(seq, %error, "publishing an audit checkpoint failed; retried at the next commit")
            }
        }
    }
}

fn now_rfc3339() -> String {
    time::OffsetDateTime::now_utc()
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_else(|_| "1970-01-01T00:00:00Z".to_owned())
}
