//! `agents`: the command for reviewers and operators of bounded agents.
//!
//! Manifests: `show`, `diff` (classified; exit 1 on any widening), `verify` (against a
//! baseline), `hash` (what `sha256sum` prints) and `render` (a self-contained HTML report).
//! Audit logs: `verify` (the hash chain), `show` (filtered) and `stats` (counts and severe
//! failures). Exit codes: 0 nothing found, 1 something found, 2 the command could not run.
//!
//! Every value printed that came from a manifest, an audit record or a file name is escaped
//! for the terminal (see `term`).

mod audit_cmd;
mod error;
mod load;
mod manifest_cmd;
mod render;
mod table;
mod term;

use clap::{Parser, Subcommand};
use error::{CmdResult, EXIT_ERROR};
use std::io::Write as _;
use std::path::PathBuf;

/// Review permission manifests and audit logs of bounded agents.
///
/// Exit codes: 0 = nothing found, 1 = something found (a widening, a mismatch, a broken
/// chain, a severe failure), 2 = the command could not run.
#[derive(Parser)]
#[command(name = "agents", version)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Permission manifests: show, diff, verify, hash, render.
    #[command(subcommand)]
    Manifest(ManifestCmd),
    /// Audit logs (JSONL): verify, show, stats.
    #[command(subcommand)]
    Audit(AuditCmd),
}

#[derive(Subcommand)]
enum ManifestCmd {
    /// A readable summary: agent, limits, tools, policies.
    Show {
        /// The manifest file.
        file: PathBuf,
    },
    /// Classified changes from OLD to NEW; exit code 1 when any change widens.
    Diff {
        /// The earlier manifest.
        old: PathBuf,
        /// The later manifest.
        new: PathBuf,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Checks CURRENT against a committed BASELINE: any difference fails (exit 1).
    Verify {
        /// The committed baseline.
        baseline: PathBuf,
        /// The current manifest.
        current: PathBuf,
    },
    /// SHA-256 of the file's bytes (the value `sha256sum` gives).
    Hash {
        /// The manifest file.
        file: PathBuf,
    },
    /// A self-contained HTML report: capability graph, tools, policies, role reachability.
    Render {
        /// The manifest file.
        file: PathBuf,
        /// A previous manifest: highlight what widened since.
        #[arg(long, value_name = "OLD")]
        diff: Option<PathBuf>,
        /// A JSON file mapping each role to the permissions it holds:
        /// {"nurse": ["patient.read"], ...}.
        #[arg(long, value_name = "ROLES_JSON")]
        roles: Option<PathBuf>,
        /// Where to write the HTML.
        #[arg(short, long, value_name = "REPORT_HTML")]
        output: PathBuf,
    },
}

#[derive(Subcommand)]
enum AuditCmd {
    /// Checks the hash chain and the manifest hash of every record; reports the first bad line.
    Verify {
        /// The JSONL audit log.
        log: PathBuf,
        /// Require every record to name this manifest's hash.
        #[arg(long, value_name = "FILE")]
        manifest: Option<PathBuf>,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Lists records, filtered, as a table or JSON lines.
    Show {
        /// The JSONL audit log.
        log: PathBuf,
        /// Only this run id.
        #[arg(long)]
        run: Option<String>,
        /// Only this session id.
        #[arg(long)]
        session: Option<String>,
        /// Only this user id.
        #[arg(long)]
        user: Option<String>,
        /// Only this tool.
        #[arg(long)]
        tool: Option<String>,
        /// Only this call id.
        #[arg(long)]
        call: Option<String>,
        /// Only these statuses (repeat or separate with commas), e.g. executed,denied.
        #[arg(long, value_delimiter = ',')]
        status: Vec<String>,
        /// Only these tiers (repeat or separate with commas): read, action, handoff.
        #[arg(long, value_delimiter = ',')]
        tier: Vec<String>,
        /// Only records at or after this RFC 3339 time.
        #[arg(long, value_name = "RFC3339")]
        since: Option<String>,
        /// Only records at or before this RFC 3339 time.
        #[arg(long, value_name = "RFC3339")]
        until: Option<String>,
        /// Print the matching records as JSON lines (hidden and control characters written
        /// as JSON escapes: the same values).
        #[arg(long)]
        json: bool,
    },
    /// Counts by tier and status, and the severe failures; exit code 1 when there are any.
    Stats {
        /// The JSONL audit log.
        log: PathBuf,
        /// Take each tool's tier from this manifest as well (the stricter tier wins).
        #[arg(long, value_name = "FILE")]
        manifest: Option<PathBuf>,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
}

fn run(cli: Cli, out: &mut String, err: &mut String) -> CmdResult {
    match cli.command {
        Command::Manifest(cmd) => match cmd {
            ManifestCmd::Show { file } => manifest_cmd::show(&file, out),
            ManifestCmd::Diff { old, new, json } => manifest_cmd::diff_cmd(&old, &new, json, out),
            ManifestCmd::Verify { baseline, current } => manifest_cmd::verify(&baseline, &current, out),
            ManifestCmd::Hash { file } => manifest_cmd::hash(&file, out, err),
            ManifestCmd::Render { file, diff, roles, output } => {
                manifest_cmd::render(&file, diff.as_deref(), roles.as_deref(), &output, out)
            }
        },
        Command::Audit(cmd) => match cmd {
            AuditCmd::Verify { log, manifest, json } => audit_cmd::verify(&log, manifest.as_deref(), json, out, err),
            AuditCmd::Show { log, run, session, user, tool, call, status, tier, since, until, json } => {
                let filter = audit_cmd::ShowFilter { run, session, user, tool, call, status, tier, since, until };
                audit_cmd::show(&log, &filter, json, out, err)
            }
            AuditCmd::Stats { log, manifest, json } => audit_cmd::stats(&log, manifest.as_deref(), json, out, err),
        },
    }
}

fn main() {
    let cli = Cli::parse();
    let mut out = String::new();
    let mut err = String::new();
    let code = match run(cli, &mut out, &mut err) {
        Ok(code) => code,
        Err(e) => {
            err.push_str(&e.to_string());
            err.push('\n');
            EXIT_ERROR
        }
    };
    // A closed pipe (`agents audit show log | head`) is not an error worth a panic.
    let _ = std::io::stdout().lock().write_all(term::final_pass(&out).as_bytes());
    let _ = std::io::stderr().lock().write_all(term::final_pass(&err).as_bytes());
    std::process::exit(code);
}
