//! `agents`: the command for reviewers and operators of bounded agents.
//!
//! Manifests (an agent's, or a composite's graph): `show`, `diff` (classified; exit 1 on any
//! widening), `verify` (against a baseline), `hash` (what `sha256sum` prints) and `render` (a self-contained HTML report).
//! Audit logs (JSONL or SQLite, read as a stream): `verify` (the chain, and what it proves),
//! `show` (filtered), `stats` (counts and severe failures), `recover` (the records before a
//! torn or corrupt tail, copied to a new log) and `keygen` (the keys of a keyed chain, in new
//! files). MCP imports: `mcp pin` (the pins of a server's tools, in a lock file). Evaluations:
//! `eval check` (a probe set) and `eval score` (a run's report recomputed from its artifacts). Exit codes: 0 nothing found, 1 something found, 2 the command could not run.
//!
//! Every value printed that came from a manifest, an audit record or a file name is escaped
//! for the terminal (see `term`).

mod audit_cmd;
mod composite_cmd;
mod error;
mod eval_cmd;
mod load;
mod manifest_cmd;
mod mcp_cmd;
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
    /// Audit logs (JSONL or SQLite): verify, show, stats, recover; keygen for a keyed chain.
    #[command(subcommand)]
    Audit(Box<audit_cmd::AuditCmd>),
    /// Tools imported from MCP servers: pin their descriptions and schemas in a lock file.
    #[command(subcommand)]
    Mcp(McpCmd),
    /// Evaluations: check a probe set, recompute a run's report from its artifacts.
    #[command(subcommand)]
    Eval(EvalCmd),
}

#[derive(Subcommand)]
enum EvalCmd {
    /// Checks a probe set: valid or not (with what to fix), its SHA-256, and for a held-out
    /// set whether it is spent.
    Check {
        /// The probe set (TOML).
        set: PathBuf,
    },
    /// Recomputes the report of a run from its artifacts, with no model call, and compares it
    /// with the committed report.json and report.md: exit 1 unless both are reproduced byte
    /// for byte.
    Score {
        /// The directory the run wrote.
        dir: PathBuf,
        /// Write report.json and report.md instead of comparing.
        #[arg(long)]
        write: bool,
    },
}

#[derive(Subcommand)]
enum McpCmd {
    /// Connects to an MCP server and pins every tool it lists (name, description, input
    /// schema, SHA-256) under `--server` in the lock file `--out`, keeping other servers'
    /// pins. Prints what changed; review the file's diff before committing it.
    Pin {
        /// The name `mcp_import!` gives the server.
        #[arg(long)]
        server: String,
        /// A command that serves MCP on its stdin/stdout (split on whitespace).
        #[arg(long, value_name = "COMMAND")]
        stdio: Option<String>,
        /// A streamable HTTP endpoint.
        #[arg(long, value_name = "URL")]
        http: Option<String>,
        /// The environment variable holding the HTTP bearer token (never written out).
        #[arg(long, value_name = "VAR")]
        bearer_env: Option<String>,
        /// `KEY=VALUE` set for the stdio command, or `NAME` to pass this process's variable on
        /// (repeatable). The command inherits only HOME, LOGNAME, PATH, SHELL, TERM and USER
        /// besides these.
        #[arg(long, value_name = "KEY=VALUE|NAME")]
        env: Vec<String>,
        /// The lock file (created when absent).
        #[arg(long, value_name = "LOCK_JSON")]
        out: PathBuf,
        /// Compare only: exit 1 when the live server differs from the pins; write nothing.
        #[arg(long)]
        check: bool,
        /// Write pins whose description or schema holds control, bidirectional or invisible
        /// characters (refused without it); they are flagged and written escaped.
        #[arg(long)]
        allow_hidden_characters: bool,
    },
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
        /// For composite manifests: an agent node's permission manifest (repeatable), so a
        /// node whose manifest hash changed is classified by the agent diff.
        #[arg(long = "node-manifest", value_name = "MANIFEST_JSON")]
        node_manifest: Vec<PathBuf>,
    },
    /// Checks CURRENT against a committed BASELINE: any difference fails (exit 1).
    Verify {
        /// The committed baseline.
        baseline: PathBuf,
        /// The current manifest.
        current: PathBuf,
        /// The SHA-256 CURRENT must have (for example the MANIFEST_SHA256 the audit records
        /// carry).
        #[arg(long, value_name = "HEX")]
        sha256: Option<String>,
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

fn run(cli: Cli, out: &mut String, err: &mut String) -> CmdResult {
    match cli.command {
        Command::Manifest(cmd) => match cmd {
            ManifestCmd::Show { file } => manifest_cmd::show(&file, out),
            ManifestCmd::Diff { old, new, json, node_manifest } => {
                manifest_cmd::diff_cmd(&old, &new, &node_manifest, json, out)
            }
            ManifestCmd::Verify { baseline, current, sha256 } => {
                manifest_cmd::verify(&baseline, &current, sha256.as_deref(), out)
            }
            ManifestCmd::Hash { file } => manifest_cmd::hash(&file, out, err),
            ManifestCmd::Render { file, diff, roles, output } => {
                manifest_cmd::render(&file, diff.as_deref(), roles.as_deref(), &output, out)
            }
        },
        Command::Mcp(McpCmd::Pin {
            server,
            stdio,
            http,
            bearer_env,
            env,
            out: file,
            check,
            allow_hidden_characters,
        }) => {
            let target = mcp_cmd::Target {
                server: &server,
                stdio: stdio.as_deref(),
                http: http.as_deref(),
                bearer_env: bearer_env.as_deref(),
                env: &env,
                allow_hidden: allow_hidden_characters,
            };
            mcp_cmd::pin(&target, &file, check, out)
        }
        Command::Eval(EvalCmd::Check { set }) => eval_cmd::check(&set, out),
        Command::Eval(EvalCmd::Score { dir, write }) => eval_cmd::score(&dir, write, out),
        Command::Audit(_) => unreachable!("audit commands write as they go (`audit_cmd::run`)"),
    }
}

fn main() {
    let cli = Cli::parse();
    let cli = match cli.command {
        Command::Audit(cmd) => std::process::exit(audit_cmd::run(*cmd)),
        command => Cli { command },
    };
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
