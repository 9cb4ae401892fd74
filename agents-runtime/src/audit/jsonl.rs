//! The JSONL audit log: one canonical JSON record per line, hash-chained, the embedded default.

use super::Appended;
use super::group_commit::{ChainOptions, DurableStore, GroupCommitSink};
use super::{AuditRecord, AuditSink, ChainError, ChainSummary};
use agents_core::audit::lines::{JsonlLines, LineError};
use agents_core::audit::{ChainVerifier, SealCheck};
use std::fs::{File, OpenOptions, TryLockError};
use std::io::{self, BufRead, BufReader, Write};
use std::path::{Path, PathBuf};

/// An append-only JSONL audit log with group commit.
///
/// Each record is one line: the record's canonical JSON ([`AuditRecord::to_line`]) and `\n`.
/// Concurrent `append`s are sealed in arrival order by one writer thread, written as one batch
/// and made durable with one `fdatasync` per batch; each `append` resolves only after the sync
/// that covers its record (see [`GroupCommitSink`] for what happens when a write fails).
///
/// [`JsonlSink::open`] verifies the whole existing file before appending and refuses a file
/// that does not verify. It also takes an exclusive advisory lock on the file, so a second
/// writer (another process, or a second sink in this one) is refused instead of forking the
/// chain.
///
/// What an operator does when `open` refuses:
///
/// - [`JsonlOpenError::TornTail`]: the process stopped in the middle of a write. The torn
///   line's record was never acknowledged, so no tool ran because of it. Keep a copy of the
///   file, call [`JsonlSink::truncate_torn_tail`] (it removes only the torn bytes after the last
///   complete line, and only when everything before them verifies), then open again.
/// - [`JsonlOpenError::Broken`]: the file was edited, truncated in the middle, reordered or
///   damaged after it was written. Do not repair it: keep it unchanged as evidence, start a new
///   log at another path, and investigate from the reported line.
/// - [`JsonlOpenError::Locked`]: another writer holds the log; stop it or use another path.
///
/// ```no_run
/// # async fn demo(record: agents_runtime::audit::AuditRecord) -> Result<(), Box<dyn std::error::Error>> {
/// use agents_runtime::audit::{AuditSink, JsonlSink};
/// let sink = JsonlSink::open("audit.jsonl")?;
/// let sealed = sink.append(record).await?; // durable when this resolves
/// println!("record {} has hash {}", sealed.seq, sealed.hash);
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct JsonlSink {
    path: PathBuf,
    inner: GroupCommitSink,
}

/// Why [`JsonlSink::open`] (or a verification of a file) refused a log.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum JsonlOpenError {
    /// The file could not be opened, read, locked, synced or truncated.
    #[error("audit log `{}`: {source}; check that the path exists and is readable and writable", path.display())]
    Io {
        /// The log.
        path: PathBuf,
        /// What the operating system said.
        source: io::Error,
    },
    /// Another writer holds the log's lock.
    #[error(
        "audit log `{}` is open for writing elsewhere (its lock is held); only one writer may append to a chain: stop the other writer or use another path",
        path.display()
    )]
    Locked {
        /// The log.
        path: PathBuf,
    },
    /// The last line was cut off by a crash during a write.
    #[error(
        "audit log `{}`: line {line} is torn (a write was cut off); its record was never acknowledged, so nothing ran because of it. \
         Keep a copy of the file, then remove the torn line with `JsonlSink::truncate_torn_tail` and open the log again",
        path.display()
    )]
    TornTail {
        /// The log.
        path: PathBuf,
        /// 1-based number of the torn line.
        line: usize,
        /// Byte offset where the torn line starts (the length the file has without it).
        offset: u64,
    },
    /// The log's chain is plain and a key was given, or keyed and none was: one log holds one
    /// kind of chain.
    #[error("audit log `{}`: {detail}", path.display())]
    Mode {
        /// The log.
        path: PathBuf,
        /// What does not fit.
        detail: String,
    },
    /// The chain does not verify: the file was changed after it was written.
    #[error(
        "audit log `{}` fails verification: {source}. The file was edited or damaged after it was written: keep it unchanged as \
         evidence, start a new log at another path, and investigate from that line",
        path.display()
    )]
    Broken {
        /// The log.
        path: PathBuf,
        /// Where and how the chain breaks.
        source: ChainError,
    },
}

impl JsonlOpenError {
    /// The 1-based line where the chain stops verifying, for [`JsonlOpenError::TornTail`] and
    /// [`JsonlOpenError::Broken`].
    pub fn line(&self) -> Option<usize> {
        match self {
            JsonlOpenError::TornTail { line, .. } => Some(*line),
            JsonlOpenError::Broken { source, .. } => Some(source.line()),
            JsonlOpenError::Io { .. } | JsonlOpenError::Locked { .. } | JsonlOpenError::Mode { .. } => None,
        }
    }
}

/// What [`JsonlSink::truncate_torn_tail`] removed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RemovedTail {
    /// 1-based number of the torn line.
    pub line: usize,
    /// The file's length now (where the torn line started).
    pub offset: u64,
    /// The bytes that were removed.
    pub removed: Vec<u8>,
}

impl JsonlSink {
    /// Opens (or creates) the log at `path`, verifies every line in it, locks it, and continues
    /// its chain. Refuses a torn or broken log with the line number; see the type's docs for
    /// what to do then.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, JsonlOpenError> {
        Self::open_with(path, ChainOptions::default())
    }

    /// [`JsonlSink::open`] for a keyed chain and/or with signed checkpoints: `options.key`
    /// seals every record with the writer's [`SealingKey`](super::SealingKey) (the log must be
    /// empty or keyed already); `options.checkpoints` publishes the head to a second place.
    /// Opening checks the existing records' form and links (the seals of past epochs need the
    /// chain key, which the writer does not hold: verify those with `agents audit verify --key`).
    pub fn open_with(path: impl AsRef<Path>, mut options: ChainOptions) -> Result<Self, JsonlOpenError> {
        let path = path.as_ref().to_path_buf();
        let io_error = |source| JsonlOpenError::Io { path: path.clone(), source };
        let existed = path.exists();
        let mut file = OpenOptions::new().read(true).append(true).create(true).open(&path).map_err(io_error)?;
        lock(&file, &path)?;
        if !existed {
            sync_parent_dir(&path).map_err(io_error)?;
        }
        let verifier = match &options.key {
            Some(key) => ChainVerifier::new().epochs(key.policy()),
            None => ChainVerifier::new(),
        };
        let head = verify_stream(BufReader::new(&mut file), verifier, &path, None)?;
        let mode_error = |detail: &str| JsonlOpenError::Mode { path: path.clone(), detail: detail.to_owned() };
        match (&mut options.key, head.seals) {
            (Some(_), SealCheck::Integrity) => {
                return Err(mode_error(
                    "it holds a plain chain, so it cannot continue as a keyed one; start the keyed chain in a new log",
                ));
            }
            (None, SealCheck::KeyedUnchecked { .. }) => {
                return Err(mode_error(
                    "it holds a keyed chain: open it with its sealing key (`JsonlSink::open_with`)",
                ));
            }
            (Some(key), _) => key.resume(&head).map_err(io_error)?,
            (None, _) => {}
        }
        // The chain this sink continues must itself be durable (a crashed writer may have left
        // complete but unsynced lines).
        file.sync_data().map_err(io_error)?;
        let label = format!("audit log `{}`", path.display());
        let store = JsonlStore { file, buffer: Vec::new() };
        let inner = GroupCommitSink::spawn_with(label, store, head, options).map_err(io_error)?;
        Ok(JsonlSink { path, inner })
    }

    /// The log's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether a failed write stopped the sink; a poisoned sink refuses every record until the
    /// log is opened again.
    pub fn is_poisoned(&self) -> bool {
        self.inner.is_poisoned()
    }

    /// Removes a torn last line, and nothing else: the log must verify up to the last complete
    /// line, and must not be open for writing. Returns `None` when there is no torn line. The
    /// removed bytes are returned so they can be kept with the incident record.
    pub fn truncate_torn_tail(path: impl AsRef<Path>) -> Result<Option<RemovedTail>, JsonlOpenError> {
        let path = path.as_ref();
        let io_error = |source| JsonlOpenError::Io { path: path.to_path_buf(), source };
        let mut file = OpenOptions::new().read(true).write(true).open(path).map_err(io_error)?;
        lock(&file, path)?;
        match verify_stream(BufReader::new(&mut file), ChainVerifier::new(), path, None) {
            Ok(_) => Ok(None),
            Err(JsonlOpenError::TornTail { line, offset, .. }) => {
                use std::os::unix::fs::FileExt;
                let len = file.metadata().map_err(io_error)?.len();
                let mut removed = vec![0u8; (len - offset) as usize];
                file.read_exact_at(&mut removed, offset).map_err(io_error)?;
                file.set_len(offset).map_err(io_error)?;
                file.sync_all().map_err(io_error)?;
                Ok(Some(RemovedTail { line, offset, removed }))
            }
            Err(other) => Err(other),
        }
    }
}

impl AuditSink for JsonlSink {
    fn append(&self, record: AuditRecord) -> Appended<'_> {
        self.inner.append(record)
    }

    /// Reads the file line by line (on the blocking pool when a tokio runtime runs).
    fn holds_final<'a>(&'a self, call_id: &'a str) -> crate::BoxFuture<'a, Result<Option<bool>, super::AuditError>> {
        let (path, call_id) = (self.path.clone(), call_id.to_owned());
        let look = move || -> Result<Option<bool>, super::AuditError> {
            let mut lines = JsonlLines::new(BufReader::new(File::open(&path)?), usize::MAX);
            // A cheap filter first: the canonical line holds the id as written here.
            let needle = crate::store::call_id_needle(&call_id);
            loop {
                match lines.next_line() {
                    Ok(Some(line)) if line.terminated => {
                        if let Ok(text) = std::str::from_utf8(line.bytes)
                            && text.contains(&needle)
                            && super::line_is_final_of(text, &call_id)
                        {
                            return Ok(Some(true));
                        }
                    }
                    Ok(_) => return Ok(Some(false)),
                    Err(LineError::Io { source, .. }) => return Err(source.into()),
                    Err(LineError::TooLong { .. }) => return Ok(None),
                }
            }
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

/// Verifies a JSONL log file: the same checks as [`agents_core::audit::verify_jsonl`], read
/// line by line in constant memory (a line that is not UTF-8 is reported as malformed, or as
/// torn when it is the unterminated last line). Does not lock or change the file.
pub fn verify_jsonl_file(
    path: impl AsRef<Path>,
    manifest_sha256: Option<&str>,
) -> Result<ChainSummary, JsonlOpenError> {
    let path = path.as_ref();
    let file = File::open(path).map_err(|source| JsonlOpenError::Io { path: path.to_path_buf(), source })?;
    let mut verifier = ChainVerifier::new();
    if let Some(m) = manifest_sha256 {
        verifier = verifier.manifest(m);
    }
    verify_stream(BufReader::new(file), verifier, path, None)
}

/// Verifies the log at `path` like [`verify_jsonl_file`], and in the same pass hands `each`
/// every record of it, in order: the verified ones, and after a break the records that still
/// parse (a line that does not is skipped), up to a torn last line. A caller that also looks
/// at every record (counts, findings) reads the file once.
pub fn verify_jsonl_file_with(
    path: impl AsRef<Path>,
    manifest_sha256: Option<&str>,
    each: &mut dyn FnMut(&AuditRecord),
) -> Result<ChainSummary, JsonlOpenError> {
    let path = path.as_ref();
    let file = File::open(path).map_err(|source| JsonlOpenError::Io { path: path.to_path_buf(), source })?;
    let mut verifier = ChainVerifier::new();
    if let Some(m) = manifest_sha256 {
        verifier = verifier.manifest(m);
    }
    verify_stream(BufReader::new(file), verifier, path, Some(each))
}

/// Verifies a JSONL log held as bytes, with the semantics of
/// [`agents_core::audit::verify_jsonl`]: the first bad line is reported, and an unterminated
/// last line is [`ChainError::TornTail`] whatever it holds.
pub fn verify_jsonl_bytes(bytes: &[u8], manifest_sha256: Option<&str>) -> Result<ChainSummary, ChainError> {
    let mut verifier = ChainVerifier::new();
    if let Some(m) = manifest_sha256 {
        verifier = verifier.manifest(m);
    }
    match verify_stream(bytes, verifier, Path::new(""), None) {
        Ok(summary) => Ok(summary),
        Err(JsonlOpenError::TornTail { line, .. }) => Err(ChainError::TornTail { line }),
        Err(JsonlOpenError::Broken { source, .. }) => Err(source),
        Err(other) => unreachable!("reading bytes in memory cannot fail: {other}"),
    }
}

/// Verifies lines from `reader` with `verifier`, one line in memory at a time.
fn verify_stream(
    reader: impl BufRead,
    mut verifier: ChainVerifier,
    path: &Path,
    mut each: Option<&mut dyn FnMut(&AuditRecord)>,
) -> Result<ChainSummary, JsonlOpenError> {
    let broken = |source| JsonlOpenError::Broken { path: path.to_path_buf(), source };
    // The sink's own file: its lines are as long as the records it was given.
    let mut lines = JsonlLines::new(reader, usize::MAX);
    // The first break; after it, a visitor still sees the records that parse.
    let mut found: Option<ChainError> = None;
    loop {
        let line = match lines.next_line() {
            Ok(Some(line)) => line,
            Ok(None) => break,
            Err(LineError::Io { source, .. }) => return Err(JsonlOpenError::Io { path: path.to_path_buf(), source }),
            Err(LineError::TooLong { line, limit }) => {
                let e = ChainError::Malformed { line, detail: format!("longer than {limit} bytes") };
                return Err(broken(found.unwrap_or(e)));
            }
        };
        if !line.terminated {
            return match found {
                Some(e) => Err(broken(e)),
                None => {
                    Err(JsonlOpenError::TornTail { path: path.to_path_buf(), line: line.number, offset: line.offset })
                }
            };
        }
        let text = std::str::from_utf8(line.bytes)
            .map_err(|e| ChainError::Malformed { line: line.number, detail: format!("not UTF-8: {e}") });
        let record = match (&found, text) {
            (None, Ok(text)) => match verifier.line(text, line.number) {
                Ok(record) => Some(record),
                Err(e) => {
                    found = Some(e);
                    serde_json::from_str::<AuditRecord>(text).ok()
                }
            },
            (None, Err(e)) => {
                found = Some(e);
                None
            }
            (Some(_), Ok(text)) => serde_json::from_str::<AuditRecord>(text).ok(),
            (Some(_), Err(_)) => None,
        };
        match (&mut each, record) {
            (Some(each), Some(record)) => each(&record),
            // Without a visitor, the first break is the answer.
            (None, _) if found.is_some() => break,
            _ => {}
        }
    }
    match found {
        Some(e) => Err(broken(e)),
        None => verifier.finish().map_err(broken),
    }
}

fn lock(file: &File, path: &Path) -> Result<(), JsonlOpenError> {
    match file.try_lock() {
        Ok(()) => Ok(()),
        Err(TryLockError::WouldBlock) => Err(JsonlOpenError::Locked { path: path.to_path_buf() }),
        Err(TryLockError::Error(source)) => Err(JsonlOpenError::Io { path: path.to_path_buf(), source }),
    }
}

/// Makes a new file's directory entry durable, so the log itself survives a power loss.
fn sync_parent_dir(path: &Path) -> io::Result<()> {
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    File::open(parent)?.sync_all()
}

struct JsonlStore {
    file: File,
    buffer: Vec<u8>,
}

impl DurableStore for JsonlStore {
    fn commit(&mut self, _records: &[AuditRecord], lines: &[String]) -> io::Result<()> {
        self.buffer.clear();
        for line in lines {
            self.buffer.extend_from_slice(line.as_bytes());
            self.buffer.push(b'\n');
        }
        self.file.write_all(&self.buffer)?;
        self.file.sync_data()
    }
}
