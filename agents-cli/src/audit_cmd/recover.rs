//! `agents audit recover LOG --out NEW`: every record up to a torn or corrupt tail, copied to a
//! new log; the original is only read.

use super::source::open_regular;
use super::{ChainArgs, emit};
use crate::error::{CliError, CmdResult, EXIT_FINDING, EXIT_OK};
use agents_core::audit::ChainError;
use agents_core::audit::lines::{JsonlLines, LineError};
use std::fs::OpenOptions;
use std::io::{BufReader, BufWriter, Read, Seek, SeekFrom, Write};
use std::path::Path;

/// Copies the lines of `log` that verify, up to the first that does not, to `new` (which must
/// not exist), and prints what was dropped: exit code 0 when nothing was, 1 when a tail was.
pub(crate) fn recover(log: &Path, new: &Path, chain: &ChainArgs, out: &mut dyn Write) -> CmdResult {
    let shown = crate::term::path(log);
    let shown_new = crate::term::path(new);
    let file = open_regular(log, &shown)?;
    if super::source::starts_as_sqlite(&file) {
        return Err(CliError::new(format!("`{shown}` is an SQLite database; `recover` copies JSONL logs"))
            .hint("an SQLite database keeps whole transactions; use `agents audit verify` to find a bad row"));
    }
    let mut verifier = chain.verifier()?;
    let target = OpenOptions::new().write(true).create_new(true).open(new).map_err(|e| {
        CliError::new(format!("cannot create `{shown_new}`: {e}"))
            .hint("name a new file: `recover` never overwrites, and never changes the log it reads")
    })?;
    let mut writer = BufWriter::new(target);
    let mut lines = JsonlLines::new(BufReader::with_capacity(1 << 16, &file), chain.max_line_bytes);
    let mut kept = 0u64;
    let mut kept_bytes = 0u64;
    let dropped_reason: Option<(usize, String)> = loop {
        let line = match lines.next_line() {
            Ok(Some(line)) => line,
            Ok(None) => break None,
            Err(LineError::TooLong { line, limit }) => break Some((line, format!("longer than {limit} bytes"))),
            Err(LineError::Io { line, source }) => {
                return Err(CliError::new(format!("cannot read `{shown}` after line {line}: {source}")));
            }
        };
        let number = line.number;
        if !line.terminated {
            break Some((number, ChainError::TornTail { line: number }.to_string()));
        }
        let Ok(text) = std::str::from_utf8(line.bytes) else {
            break Some((number, format!("line {number}: not UTF-8")));
        };
        if let Err(e) = verifier.line(text, number) {
            break Some((number, e.to_string()));
        }
        writer
            .write_all(line.bytes)
            .and_then(|()| writer.write_all(b"\n"))
            .map_err(|e| CliError::new(format!("cannot write `{shown_new}`: {e}")))?;
        kept += 1;
        kept_bytes += line.bytes.len() as u64 + 1;
    };
    let target = writer.into_inner().map_err(|e| CliError::new(format!("cannot write `{shown_new}`: {e}")))?;
    target.sync_all().map_err(|e| CliError::new(format!("cannot sync `{shown_new}`: {e}")))?;
    emit(out, format_args!("copied {kept} record(s) ({kept_bytes} bytes) from `{shown}` to `{shown_new}`\n"));
    let Some((line, reason)) = dropped_reason else {
        emit(out, format_args!("nothing dropped: the whole log verifies\n"));
        return Ok(EXIT_OK);
    };
    // Count what is left without holding it: the rest of the file, in chunks.
    let total = file.metadata().map(|m| m.len()).unwrap_or(0);
    let mut rest = &file;
    rest.seek(SeekFrom::Start(kept_bytes)).map_err(|e| CliError::new(format!("cannot read `{shown}`: {e}")))?;
    let (mut dropped_lines, mut last, mut buf) = (0u64, b'\n', vec![0u8; 1 << 16]);
    loop {
        let n = rest.read(&mut buf).map_err(|e| CliError::new(format!("cannot read `{shown}`: {e}")))?;
        if n == 0 {
            break;
        }
        dropped_lines += buf[..n].iter().filter(|b| **b == b'\n').count() as u64;
        last = buf[n - 1];
    }
    if last != b'\n' {
        dropped_lines += 1;
    }
    emit(
        out,
        format_args!(
            "dropped {dropped_lines} line(s), {} bytes, from line {line} on: {reason}\n`{shown}` is unchanged; keep it as evidence\n",
            total - kept_bytes
        ),
    );
    Ok(EXIT_FINDING)
}
