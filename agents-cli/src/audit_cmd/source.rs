//! Reading an audit log of any size and content: a regular file only, JSONL line by line with a
//! bound on a line's length, or an SQLite database row by row; every record through the chain
//! verifier; a progress bar on a terminal and a throughput figure at the end.

use super::ChainArgs;
use crate::error::CliError;
use agents_core::audit::lines::{JsonlLines, LineError, RawLine};
use agents_core::audit::sqlite;
use agents_core::audit::{
    AuditRecord, ChainError, ChainKey, ChainSummary, ChainVerifier, Checkpoint, CheckpointVerifyingKey, EpochPolicy,
};
use agents_core::manifest;
use indicatif::{ProgressBar, ProgressStyle};
use std::fs::File;
use std::io::{BufReader, IsTerminal, Read, Write};
use std::ops::ControlFlow;
use std::path::Path;
use std::time::Instant;

/// What a pass over a log found.
pub(crate) struct Scan {
    /// The chain's verdict: where it breaks, or what it proves.
    pub(crate) chain: Result<ChainSummary, ChainError>,
    /// Records that parsed (also after a break).
    pub(crate) records: u64,
    /// Lines that are not records, after the first break (first few kept).
    pub(crate) bad_lines: Vec<(usize, String)>,
    /// How many lines were not records in all.
    pub(crate) bad_line_count: u64,
}

impl Scan {
    /// Before the first line: no record, no verdict yet.
    fn new() -> Self {
        Scan { chain: Err(ChainError::TornTail { line: 0 }), records: 0, bad_lines: Vec::new(), bad_line_count: 0 }
    }
}

/// Whether to go on reading after the chain breaks (`show` and `stats` work on the records as
/// they are; `verify` stops at the first bad line).
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum AfterBreak {
    Stop,
    Continue,
}

/// The first bytes of an SQLite database file.
const SQLITE_MAGIC: &[u8; 16] = b"SQLite format 3\0";

/// Whether an open file begins with SQLite's header (reads 16 bytes, nothing more).
pub(crate) fn starts_as_sqlite(file: &File) -> bool {
    use std::os::unix::fs::FileExt;
    let mut head = [0u8; 16];
    file.read_at(&mut head, 0).is_ok_and(|n| n == 16) && &head == SQLITE_MAGIC
}

/// How many bad lines are kept for the warnings.
const BAD_LINES_KEPT: usize = 10;

/// Reads the log at `path`, verifying its chain as `args` say, and hands every record to `each`
/// with its line (or row) number. An unreadable input (not a regular file, a line over the
/// limit, an I/O error, not an audit log) is an error (exit code 2).
pub(crate) fn scan(
    path: &Path,
    args: &ChainArgs,
    after_break: AfterBreak,
    mut each: impl FnMut(usize, &AuditRecord),
) -> Result<Scan, CliError> {
    let shown = crate::term::path(path);
    let file = open_regular(path, &shown)?;
    let len = file.metadata().map(|m| m.len()).unwrap_or(0);
    let is_sqlite = starts_as_sqlite(&file);
    let verifier = args.verifier()?;
    let progress = Progress::new(len, is_sqlite);
    let started = Instant::now();
    let scan = if is_sqlite {
        drop(file);
        scan_sqlite(path, &shown, verifier, after_break, &progress, &mut each)?
    } else {
        scan_jsonl(file, &shown, args.max_line_bytes, verifier, after_break, &progress, &mut each)?
    };
    progress.finish(scan.records, started);
    Ok(scan)
}

/// Opens `path` for reading, refusing anything that is not a regular file (a device such as
/// `/dev/zero`, a pipe, a directory), which could be endless or block.
pub(crate) fn open_regular(path: &Path, shown: &str) -> Result<File, CliError> {
    let meta = std::fs::metadata(path).map_err(|e| {
        let err = CliError::new(format!("cannot read audit log `{shown}`: {}", io_reason(&e)));
        match e.kind() {
            std::io::ErrorKind::NotFound => err.hint("check the path (it is resolved against the current directory)"),
            std::io::ErrorKind::PermissionDenied => err.hint("check the file's permissions"),
            _ => err,
        }
    })?;
    if !meta.is_file() {
        let kind = if meta.is_dir() { "a directory" } else { "not a regular file (a device, a pipe or a socket)" };
        return Err(CliError::new(format!("`{shown}` is {kind}, not an audit log"))
            .hint("pass the log file itself; to read from a pipe, write it to a file first"));
    }
    File::open(path).map_err(|e| CliError::new(format!("cannot read audit log `{shown}`: {}", io_reason(&e))))
}

fn io_reason(e: &std::io::Error) -> String {
    match e.kind() {
        std::io::ErrorKind::NotFound => "no such file".to_owned(),
        _ => e.to_string(),
    }
}

fn scan_jsonl(
    file: File,
    shown: &str,
    max_line: usize,
    verifier: ChainVerifier,
    after_break: AfterBreak,
    progress: &Progress,
    each: &mut dyn FnMut(usize, &AuditRecord),
) -> Result<Scan, CliError> {
    let mut lines = JsonlLines::new(BufReader::with_capacity(1 << 16, file), max_line);
    let mut pass = JsonlPass { verifier, after_break, broken: None, scan: Scan::new() };
    let mut last_progress = 0u64;
    while let Some(line) = read_line(&mut lines, shown)? {
        if line.offset - last_progress > 1 << 20 {
            progress.set(line.offset);
            last_progress = line.offset;
        }
        let text = pass.decode(&line);
        if line.number == 1
            && let Some(text) = text
            && serde_json::from_str::<AuditRecord>(text).is_err()
        {
            refuse_non_log(text, line.terminated, shown)?;
        }
        if pass.stopped() {
            break;
        }
        let Some(text) = text else { continue };
        if pass.take(text, line.number, line.terminated, each).is_break() {
            break;
        }
    }
    Ok(pass.finish())
}

/// The next line of the log, `None` at its end; a line over the limit or a failed read is an
/// error (nothing after it is checked).
fn read_line<'a>(lines: &'a mut JsonlLines<BufReader<File>>, shown: &str) -> Result<Option<RawLine<'a>>, CliError> {
    lines.next_line().map_err(|e| match e {
        LineError::TooLong { line, limit } => CliError::new(format!(
            "`{shown}`: line {line} is longer than {limit} bytes; it is not read (nothing after it is checked)"
        ))
        .hint("an audit record is far shorter; if this log really holds longer records, raise the limit with --max-line-bytes"),
        LineError::Io { line, source } => {
            CliError::new(format!("cannot read audit log `{shown}` after line {line}: {source}"))
        }
    })
}

/// One pass over a JSONL log: the verifier, the first break, and what was found so far.
struct JsonlPass {
    verifier: ChainVerifier,
    after_break: AfterBreak,
    broken: Option<ChainError>,
    scan: Scan,
}

impl JsonlPass {
    /// The line as text; a line that is not UTF-8 is a break (a torn one when unterminated)
    /// and a bad line.
    fn decode<'a>(&mut self, line: &RawLine<'a>) -> Option<&'a str> {
        let e = match std::str::from_utf8(line.bytes) {
            Ok(text) => return Some(text),
            Err(e) => e,
        };
        let number = line.number;
        let detail = format!("not UTF-8 (invalid byte at column {})", e.valid_up_to() + 1);
        if !line.terminated {
            note_break(&mut self.broken, ChainError::TornTail { line: number });
        } else {
            note_break(&mut self.broken, ChainError::Malformed { line: number, detail: detail.clone() });
        }
        note_bad(&mut self.scan, number, detail);
        None
    }

    /// Whether the pass ends here: the chain broke and `verify` stops at the first bad line.
    fn stopped(&self) -> bool {
        self.broken.is_some() && self.after_break == AfterBreak::Stop
    }

    /// Takes line `number`: verified while the chain holds (an unterminated line breaks it);
    /// after a break, the record as it is, or a bad line.
    fn take(
        &mut self,
        text: &str,
        number: usize,
        terminated: bool,
        each: &mut dyn FnMut(usize, &AuditRecord),
    ) -> ControlFlow<()> {
        if self.broken.is_none() {
            let verified =
                if terminated { self.verifier.line(text, number) } else { Err(ChainError::TornTail { line: number }) };
            match verified {
                Ok(record) => {
                    self.scan.records += 1;
                    each(number, &record);
                    return ControlFlow::Continue(());
                }
                Err(e) => {
                    note_break(&mut self.broken, e);
                    if self.stopped() {
                        return ControlFlow::Break(());
                    }
                }
            }
        }
        // After a break: the records as they are.
        match serde_json::from_str::<AuditRecord>(text) {
            Ok(record) => {
                self.scan.records += 1;
                each(number, &record);
            }
            Err(e) if terminated => note_bad(&mut self.scan, number, e.to_string()),
            Err(_) => note_bad(&mut self.scan, number, "torn (a write was cut off)".to_owned()),
        }
        ControlFlow::Continue(())
    }

    /// The scan, with the chain's verdict: the first break, or the verifier's summary.
    fn finish(mut self) -> Scan {
        self.scan.chain = match self.broken {
            Some(e) => Err(e),
            None => self.verifier.finish(),
        };
        self.scan
    }
}

fn note_break(broken: &mut Option<ChainError>, e: ChainError) {
    if broken.is_none() {
        *broken = Some(e);
    }
}

fn note_bad(scan: &mut Scan, line: usize, detail: String) {
    scan.bad_line_count += 1;
    if scan.bad_lines.len() < BAD_LINES_KEPT {
        scan.bad_lines.push((line, detail));
    }
}

/// The first line is not a record: say what the file is instead (exit code 2), unless it is a
/// lone torn record (a log that crashed during its first write).
fn refuse_non_log(first: &str, terminated: bool, shown: &str) -> Result<(), CliError> {
    let value = serde_json::from_str::<serde_json::Value>(first).ok();
    let is_manifest = value
        .as_ref()
        .and_then(|v| v.get("format").and_then(serde_json::Value::as_str))
        .is_some_and(|f| f == manifest::FORMAT);
    if is_manifest {
        return Err(CliError::new(format!("`{shown}` is a permission manifest, not an audit log")).hint(
            "use `agents manifest show|diff|verify|hash|render` for manifests; pass it to `agents audit verify --manifest`",
        ));
    }
    if !terminated && first.trim_start().starts_with('{') && value.is_none() {
        return Ok(());
    }
    let detail = match serde_json::from_str::<AuditRecord>(first) {
        Err(e) => e.to_string(),
        Ok(_) => String::new(),
    };
    Err(CliError::new(format!("`{shown}` is not an audit log: line 1 is not an audit record ({detail})"))
        .hint("an audit log is the JSONL file (or SQLite database) an audit sink writes: one chained record per line"))
}

fn scan_sqlite(
    path: &Path,
    shown: &str,
    mut verifier: ChainVerifier,
    after_break: AfterBreak,
    progress: &Progress,
    each: &mut dyn FnMut(usize, &AuditRecord),
) -> Result<Scan, CliError> {
    use rusqlite::{Connection, OpenFlags};
    let sqlite_error = |e: rusqlite::Error| {
        CliError::new(format!("cannot read audit database `{shown}`: {e}"))
            .hint("an audit database is the SQLite file the SQLite audit sink writes, with an `audit_log` table")
    };
    let conn = Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX)
        .map_err(sqlite_error)?;
    progress.set_length(sqlite::count_records(&conn).map_err(sqlite_error)?);
    let mut scan = Scan::new();
    let mut broken = None;
    let stop = |broken: &Option<ChainError>| {
        if broken.is_some() && after_break == AfterBreak::Stop {
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        }
    };
    sqlite::for_each_record(&conn, |row_number, record| {
        if row_number % 4096 == 0 {
            progress.set(row_number as u64);
        }
        let record = match record {
            Ok(record) => record,
            Err(e) => {
                let detail = e.to_string();
                note_break(&mut broken, ChainError::Malformed { line: row_number, detail: detail.clone() });
                note_bad(&mut scan, row_number, detail);
                return stop(&broken);
            }
        };
        if broken.is_none()
            && let Err(e) = verifier.record(&record, row_number)
        {
            note_break(&mut broken, e);
        }
        stop(&broken)?;
        scan.records += 1;
        each(row_number, &record);
        ControlFlow::Continue(())
    })
    .map_err(sqlite_error)?;
    scan.chain = match broken {
        Some(e) => Err(e),
        None => verifier.finish(),
    };
    Ok(scan)
}

/// A progress bar on standard error when it is a terminal, and the throughput at the end.
pub(crate) struct Progress {
    bar: Option<ProgressBar>,
    bytes: u64,
    rows: bool,
}

impl Progress {
    pub(crate) fn new(len: u64, rows: bool) -> Self {
        let bar = std::io::stderr().is_terminal().then(|| {
            let bar = ProgressBar::new(len);
            let template = if rows {
                "{bar:40} {pos}/{len} rows ({per_sec}, {eta} left)"
            } else {
                "{bar:40} {bytes}/{total_bytes} ({bytes_per_sec}, {eta} left)"
            };
            bar.set_style(ProgressStyle::with_template(template).unwrap_or_else(|_| ProgressStyle::default_bar()));
            bar
        });
        Progress { bar, bytes: len, rows }
    }

    fn set_length(&self, len: u64) {
        if let Some(bar) = &self.bar {
            bar.set_length(len);
        }
    }

    fn set(&self, pos: u64) {
        if let Some(bar) = &self.bar {
            bar.set_position(pos);
        }
    }

    fn finish(&self, records: u64, started: Instant) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
        let secs = started.elapsed().as_secs_f64().max(1e-9);
        let mut err = std::io::stderr().lock();
        if self.rows {
            let _ = writeln!(err, "read {records} record(s) in {secs:.2} s ({:.0} records/s)", records as f64 / secs);
        } else {
            let mb = self.bytes as f64 / 1e6;
            let _ = writeln!(
                err,
                "read {records} record(s), {mb:.1} MB in {secs:.2} s ({:.1} MB/s, {:.0} records/s)",
                mb / secs,
                records as f64 / secs
            );
        }
    }
}

impl ChainArgs {
    /// The verifier these options ask for: a key, an epoch policy, trusted checkpoints.
    pub(crate) fn verifier(&self) -> Result<ChainVerifier, CliError> {
        let mut v = ChainVerifier::new()
            .epochs(EpochPolicy { records: self.epoch_records.max(1), seconds: self.epoch_seconds.max(1) });
        if let Some(key) = self.chain_key()? {
            v = v.key(&key);
        }
        let checkpoints = self.checkpoints()?;
        if !checkpoints.is_empty() {
            v = v.checkpoints(checkpoints);
        }
        if let Some(m) = &self.expected_manifest {
            v = v.manifest(m.clone());
        }
        Ok(v)
    }

    fn chain_key(&self) -> Result<Option<ChainKey>, CliError> {
        if let Some(path) = &self.key {
            let text = read_small(path, "chain key")?;
            return ChainKey::from_hex(&text).map(Some).map_err(|e| {
                CliError::new(format!("`{}`: {e}", path.display()))
                    .hint("the chain key file holds the 64 hex digits `ChainKey::to_hex` gave when the log was set up")
            });
        }
        if let Some(path) = &self.passphrase_file {
            let text = read_small(path, "passphrase file")?;
            let passphrase = text.trim_end_matches(['\n', '\r']);
            return ChainKey::from_passphrase(passphrase)
                .map(Some)
                .map_err(|e| CliError::new(format!("`{}`: {e}", path.display())));
        }
        Ok(None)
    }

    fn checkpoints(&self) -> Result<Vec<Checkpoint>, CliError> {
        let Some(path) = &self.checkpoints else {
            return Ok(Vec::new());
        };
        let Some(key) = &self.checkpoint_key else {
            return Err(CliError::new("--checkpoints needs --checkpoint-key")
                .hint("pass the Ed25519 public key the writer's checkpoints are signed with (64 hex digits, or a file holding them)"));
        };
        let key_text =
            if Path::new(key).is_file() { read_small(Path::new(key), "checkpoint key")? } else { key.clone() };
        let trusted =
            CheckpointVerifyingKey::from_hex(&key_text).map_err(|e| CliError::new(format!("--checkpoint-key: {e}")))?;
        let shown = path.display();
        let file = open_regular(path, &shown.to_string())?;
        let mut out = Vec::new();
        let mut lines = JsonlLines::new(BufReader::new(file), 64 * 1024);
        while let Some(line) = lines.next_line().map_err(|e| CliError::new(format!("checkpoints `{shown}`: {e}")))? {
            let number = line.number;
            let text = std::str::from_utf8(line.bytes)
                .map_err(|_| CliError::new(format!("checkpoints `{shown}`: line {number} is not UTF-8")))?;
            if text.trim().is_empty() {
                continue;
            }
            let c = Checkpoint::parse(text)
                .map_err(|e| CliError::new(format!("checkpoints `{shown}`: line {number}: {e}")))?;
            c.verify(&trusted).map_err(|e| {
                CliError::new(format!("checkpoints `{shown}`: line {number}: {e}"))
                    .hint("a checkpoint that does not verify was forged or edited, or the key is not the writer's")
            })?;
            out.push(c);
        }
        Ok(out)
    }
}

fn read_small(path: &Path, what: &str) -> Result<String, CliError> {
    let shown = crate::term::path(path);
    let file = open_regular(path, &shown)?;
    let mut text = String::new();
    file.take(64 * 1024)
        .read_to_string(&mut text)
        .map_err(|e| CliError::new(format!("cannot read {what} `{shown}`: {e}")))?;
    Ok(text)
}
