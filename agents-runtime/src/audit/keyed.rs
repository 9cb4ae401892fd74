//! The writer's side of a keyed chain: the sealing key that steps every epoch, and signed
//! checkpoints published to a second place.

use agents_core::audit::{ChainKey, Checkpoint, CheckpointSigningKey, EpochKey, EpochPolicy};
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

/// The writer's sealing key of a keyed chain (see [`agents_core::audit::keyed`]): the key of
/// the current epoch, stepped one way after [`EpochPolicy::records`] records or
/// [`EpochPolicy::seconds`] seconds, whichever comes first. A step overwrites the old key in
/// memory and, for a key kept in a file, in the file (in place, then synced), before the new key
/// seals anything.
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
    key: EpochKey,
    policy: EpochPolicy,
    records_in_epoch: u64,
    epoch_started: Instant,
    file: Option<(File, PathBuf)>,
}

impl std::fmt::Debug for SealingKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SealingKey")
            .field("epoch", &self.key.epoch())
            .field("policy", &self.policy)
            .field("file", &self.file.as_ref().map(|(_, p)| p))
            .finish_non_exhaustive()
    }
}

impl SealingKey {
    /// A key held in memory only: the chain cannot be continued after the process ends (a new
    /// process would need a key it no longer has). For tests and short-lived writers.
    pub fn in_memory(key: EpochKey, policy: EpochPolicy) -> Self {
        SealingKey { key, policy, records_in_epoch: 0, epoch_started: Instant::now(), file: None }
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

    /// Opens the writer's key file at `path` (its current epoch's key).
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

    /// The current epoch.
    pub fn epoch(&self) -> u64 {
        self.key.epoch()
    }

    /// Steps forward to `epoch` (when a log already holds records of a later epoch than the
    /// key file, say after the file was restored from a backup).
    pub(crate) fn catch_up(&mut self, epoch: u64) -> io::Result<()> {
        if epoch > self.key.epoch() {
            self.key.advance_to(epoch);
            self.records_in_epoch = 0;
            self.epoch_started = Instant::now();
            self.persist()?;
        }
        Ok(())
    }

    /// Readies the key for one more record, stepping first when the epoch is over; then
    /// [`SealingKey::current`] seals it.
    pub(crate) fn before_record(&mut self) -> io::Result<()> {
        if self.records_in_epoch >= self.policy.records || self.epoch_started.elapsed() >= self.period() {
            self.step()?;
        }
        self.records_in_epoch += 1;
        Ok(())
    }

    /// The current epoch's key.
    pub(crate) fn current(&self) -> &EpochKey {
        &self.key
    }

    /// Steps when the epoch's time is over even though no record came (the writer calls it
    /// when it wakes at [`SealingKey::deadline`]), so an idle writer does not keep an old key.
    pub(crate) fn tick(&mut self) -> io::Result<()> {
        if self.epoch_started.elapsed() >= self.period() { self.step() } else { Ok(()) }
    }

    /// When the current epoch's time runs out.
    pub(crate) fn deadline(&self) -> Instant {
        self.epoch_started + self.period()
    }

    fn period(&self) -> Duration {
        Duration::from_secs(self.policy.seconds)
    }

    fn step(&mut self) -> io::Result<()> {
        self.key.step();
        self.records_in_epoch = 0;
        self.epoch_started = Instant::now();
        self.persist()
    }

    /// Overwrites the key file in place with the current key and syncs it.
    fn persist(&self) -> io::Result<()> {
        let Some((file, _)) = &self.file else { return Ok(()) };
        let mut text = Zeroizing::new(String::with_capacity(KEY_FILE_LEN));
        text.push_str(KEY_FILE_MAGIC);
        text.push_str(&format!(" {:020} ", self.key.epoch()));
        text.push_str(&hex::encode(self.key.key_bytes()));
        text.push('\n');
        debug_assert_eq!(text.len(), KEY_FILE_LEN);
        file.write_all_at(text.as_bytes(), 0)?;
        file.sync_data()
    }
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
            Err(error) => tracing::error!(seq, %error, "publishing an audit checkpoint failed; retried at the next commit"),
        }
    }
}

fn now_rfc3339() -> String {
    time::OffsetDateTime::now_utc()
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_else(|_| "1970-01-01T00:00:00Z".to_owned())
}
