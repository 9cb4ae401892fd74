//! `agents audit ...`: verify, show, stats, recover, keygen.
//!
//! Every command streams the log (a JSONL file or an SQLite database) record by record in
//! bounded memory, checks its chain on the way, and exits with the same codes: 0 the chain
//! verifies (and, for `stats`, no severe failure), 1 the chain is broken or tampered with (or a
//! severe failure, or `recover` dropped records), 2 the input could not be read.

mod keygen;
mod recover;
mod show;
mod source;
mod stats;
mod verify;

use crate::error::{CliError, EXIT_ERROR, EXIT_FINDING, EXIT_OK};
use crate::term::{self, esc};
use clap::Subcommand;
use std::io::Write;
use std::path::PathBuf;

pub(crate) use show::ShowFilter;

/// The default longest line read: far above any audit record, far below what could exhaust
/// memory.
pub(crate) const DEFAULT_MAX_LINE_BYTES: usize = 1 << 20;

/// How to check a log's chain: the key of a keyed chain, its epochs, published checkpoints.
#[derive(clap::Args, Debug, Clone)]
pub(crate) struct ChainArgs {
    /// The chain key of a keyed log (a file holding its 64 hex digits): every seal is checked.
    #[arg(long, value_name = "FILE", conflicts_with = "passphrase_file")]
    pub(crate) key: Option<PathBuf>,
    /// Derive the chain key from the passphrase in this file (its first line).
    #[arg(long, value_name = "FILE")]
    pub(crate) passphrase_file: Option<PathBuf>,
    /// Records per sealing epoch, as the writer's `EpochPolicy` says.
    #[arg(long, value_name = "N", default_value_t = 1000)]
    pub(crate) epoch_records: u64,
    /// Seconds per sealing epoch, as the writer's `EpochPolicy` says.
    #[arg(long, value_name = "SECONDS", default_value_t = 60)]
    pub(crate) epoch_seconds: u64,
    /// Signed checkpoints the writer published (one per line); the log must match them all.
    #[arg(long, value_name = "FILE", requires = "checkpoint_key")]
    pub(crate) checkpoints: Option<PathBuf>,
    /// The Ed25519 public key the checkpoints are signed with (64 hex digits, or a file).
    #[arg(long, value_name = "HEX|FILE")]
    pub(crate) checkpoint_key: Option<String>,
    /// Refuse (exit code 2) a line longer than this many bytes.
    #[arg(long, value_name = "BYTES", default_value_t = DEFAULT_MAX_LINE_BYTES)]
    pub(crate) max_line_bytes: usize,
    #[arg(skip)]
    pub(crate) expected_manifest: Option<String>,
}

#[derive(Subcommand)]
pub(crate) enum AuditCmd {
    /// Checks the chain (and, with a key, every seal; with checkpoints, that nothing was cut
    /// off) and the manifest hash of every record; reports the first bad line and what the
    /// check proves.
    Verify {
        /// The audit log: a JSONL file or an SQLite database.
        log: PathBuf,
        /// Require every record to name this manifest's hash.
        #[arg(long, value_name = "FILE")]
        manifest: Option<PathBuf>,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        chain: ChainArgs,
    },
    /// Lists records, filtered, as a table or JSON lines.
    Show {
        /// The audit log: a JSONL file or an SQLite database.
        log: PathBuf,
        #[command(flatten)]
        filter: ShowFilter,
        /// Print the matching records as JSON lines.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        chain: ChainArgs,
    },
    /// Counts by tier and status, and the severe failures; exit code 1 when there are any.
    Stats {
        /// The audit log: a JSONL file or an SQLite database.
        log: PathBuf,
        /// Take each tool's tier from this manifest as well (the stricter tier wins).
        #[arg(long, value_name = "FILE")]
        manifest: Option<PathBuf>,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        chain: ChainArgs,
    },
    /// Copies every record up to a torn or corrupt tail to a new file, leaving the log as it is,
    /// and prints what it dropped (exit code 1 when it dropped anything).
    Recover {
        /// The JSONL audit log (read only).
        log: PathBuf,
        /// The new log to write (must not exist).
        #[arg(long, value_name = "NEW")]
        out: PathBuf,
        #[command(flatten)]
        chain: ChainArgs,
    },
    /// Generates the keys of a keyed chain into DIR: `chain.key` (the chain key, which checks
    /// every seal), `checkpoint.key` (the Ed25519 key checkpoints are signed with), both mode
    /// 0600, and `checkpoint.pub` (its public half). Refuses to overwrite any of them.
    Keygen {
        /// The directory to write the three files into (created, mode 0700, when missing).
        dir: PathBuf,
    },
}

/// Runs an audit command, writing to standard output as it goes; returns the exit code.
pub(crate) fn run(cmd: AuditCmd) -> i32 {
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let result = match cmd {
        AuditCmd::Verify { log, manifest, json, chain } => {
            verify::verify(&log, manifest.as_deref(), json, chain, &mut out)
        }
        AuditCmd::Show { log, filter, json, chain } => show::show(&log, &filter, json, &chain, &mut out),
        AuditCmd::Stats { log, manifest, json, chain } => {
            stats::stats(&log, manifest.as_deref(), json, &chain, &mut out)
        }
        AuditCmd::Recover { log, out: new, chain } => recover::recover(&log, &new, &chain, &mut out),
        AuditCmd::Keygen { dir } => keygen::keygen(&dir, &mut out),
    };
    // A closed pipe (`agents audit show log | head`) is not an error worth a panic.
    let _ = out.flush();
    match result {
        Ok(code) => code,
        Err(e) => {
            let _ = writeln!(std::io::stderr(), "{}", term::final_pass(&e.to_string()));
            EXIT_ERROR
        }
    }
}

/// Exit code for a chain verdict.
fn chain_code<T>(chain: &Result<T, agents_core::audit::ChainError>) -> i32 {
    if chain.is_ok() { EXIT_OK } else { EXIT_FINDING }
}

/// Writes to standard output; a closed pipe ends the output quietly.
fn emit(out: &mut dyn Write, text: std::fmt::Arguments<'_>) {
    let _ = out.write_fmt(text);
}

/// Warnings about the log on standard error (bad lines, a broken chain).
fn warn_about_scan(scan: &source::Scan) {
    let mut err = std::io::stderr().lock();
    for (line, msg) in &scan.bad_lines {
        let _ = writeln!(err, "warning: line {line} is not an audit record and is skipped: {}", esc(msg));
    }
    if scan.bad_line_count > scan.bad_lines.len() as u64 {
        let _ = writeln!(
            err,
            "warning: {} more line(s) are not audit records",
            scan.bad_line_count - scan.bad_lines.len() as u64
        );
    }
    if let Err(e) = &scan.chain {
        let _ = writeln!(
            err,
            "warning: the chain does not verify ({}); records are used as they are. Run `agents audit verify` for details.",
            esc(&e.to_string())
        );
    }
}

impl From<std::io::Error> for CliError {
    fn from(e: std::io::Error) -> Self {
        CliError::new(format!("cannot write the output: {e}"))
    }
}
