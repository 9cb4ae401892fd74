//! `agents mcp pin`: pins the tools of an MCP server in a lock file, like a lock file: the
//! name, description and input schema of each tool it lists, with their SHA-256 (see
//! `agents_core::mcp_lock`). `mcp_import!` compiles the pins into the agent's manifest and
//! the runtime refuses a tool whose live description or schema no longer matches its pin.

use crate::error::{CliError, CmdResult, EXIT_FINDING, EXIT_OK};
use agents_core::mcp_lock::{LockFile, LockedServer};
use agents_mcp::{ImportSource, pin_server};
use std::fmt::Write as _;
use std::path::Path;

/// Where the server is, as the command line says.
pub(crate) struct Target<'a> {
    pub(crate) server: &'a str,
    pub(crate) stdio: Option<&'a str>,
    pub(crate) http: Option<&'a str>,
    pub(crate) bearer_env: Option<&'a str>,
    pub(crate) env: &'a [String],
    /// Write pins whose text holds characters that hide text (flagged either way).
    pub(crate) allow_hidden: bool,
}

fn source(t: &Target<'_>) -> Result<ImportSource, CliError> {
    match (t.stdio, t.http) {
        (Some(cmd), None) => {
            let mut words = cmd.split_whitespace();
            let program = words.next().ok_or_else(|| {
                CliError::new("`--stdio` is empty")
                    .hint("give the command that serves MCP on stdio, e.g. `--stdio \"tracker-mcp --stdio\"`")
            })?;
            let mut s = ImportSource::stdio(program);
            for w in words {
                s = s.arg(w);
            }
            for kv in t.env {
                s = match kv.split_once('=') {
                    Some((k, v)) => s.env(k, v),
                    None if !kv.is_empty() => s.inherit_env(kv.as_str()),
                    None => {
                        return Err(CliError::new("`--env` is empty").hint("write `--env KEY=VALUE` or `--env NAME`"));
                    }
                };
            }
            Ok(s)
        }
        (None, Some(url)) => {
            let mut s = ImportSource::http(url);
            if let Some(var) = t.bearer_env {
                let token = std::env::var(var).map_err(|_| {
                    CliError::new(format!("`--bearer-env {var}`: the variable is not set"))
                        .hint("export the bearer token in that variable; it is never written to the lock file")
                })?;
                s = s.bearer(token);
            }
            Ok(s)
        }
        _ => Err(CliError::new("give exactly one of `--stdio <command>` and `--http <url>`")),
    }
}

/// What changed for one tool between the file's pins and the live server's.
fn changes(old: Option<&LockedServer>, new: &LockedServer, out: &mut String) -> bool {
    let mut changed = false;
    for (name, t) in &new.tools {
        match old.and_then(|o| o.tools.get(name)) {
            None => {
                changed = true;
                let _ = writeln!(out, "+ {name}  {}  (new pin)", t.sha256);
            }
            Some(o) if o.sha256 != t.sha256 => {
                changed = true;
                let _ = writeln!(
                    out,
                    "~ {name}  {} -> {}  (description or schema changed: review the diff)",
                    o.sha256, t.sha256
                );
                if o.description != t.description {
                    let _ = writeln!(out, "    description was: {:?}", o.description);
                    let _ = writeln!(out, "    description now: {:?}", t.description);
                }
            }
            Some(_) => {
                let _ = writeln!(out, "= {name}  {}", t.sha256);
            }
        }
    }
    if let Some(o) = old {
        for name in o.tools.keys().filter(|n| !new.tools.contains_key(*n)) {
            changed = true;
            let _ = writeln!(out, "- {name}  (the server no longer lists it)");
        }
    }
    changed
}

/// Flags every live tool whose description or schema holds characters that hide text from the
/// person reviewing it (see `agents_core::mcp_lock::hides_text`); whether there was one.
fn flag_hidden(live: &LockedServer, out: &mut String) -> bool {
    let mut found = false;
    for (name, t) in &live.tools {
        for h in t.hidden_characters() {
            found = true;
            let _ = writeln!(
                out,
                "! {name}  {} holds characters that hide or reorder text: {}",
                h.place,
                h.characters.join(" ")
            );
        }
    }
    found
}

/// Connects, lists, and writes (or, with `check`, compares) the server's pins in `out_file`.
pub(crate) fn pin(t: &Target<'_>, out_file: &Path, check: bool, out: &mut String) -> CmdResult {
    let src = source(t)?;
    let mut lock = match std::fs::read_to_string(out_file) {
        Ok(text) => LockFile::parse(&text).map_err(|e| {
            CliError::new(format!("{}: {e}", out_file.display()))
                .hint("restore the file from version control (or delete it) and pin again")
        })?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => LockFile::default(),
        Err(e) => return Err(CliError::new(format!("cannot read {}: {e}", out_file.display()))),
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| CliError::new(format!("cannot start the async runtime: {e}")))?;
    let live = rt
        .block_on(pin_server(t.server, &src))
        .map_err(|e| CliError::new(e.to_string()).hint("check the command or URL and that the server speaks MCP"))?;
    let _ = writeln!(out, "server `{}` ({}): {} tool(s)", t.server, live.source, live.tools.len());
    let changed = changes(lock.servers.get(t.server), &live, out);
    let hidden = flag_hidden(&live, out);
    if hidden && !t.allow_hidden && !check {
        let _ = writeln!(
            out,
            "refused: a description or schema holds control, bidirectional or invisible characters (flagged `!` above; a model reads them, a reviewer may not see them); nothing was written to {}. Ask the server's operator to remove them, or read them (shown escaped) and pin with `--allow-hidden-characters`",
            out_file.display()
        );
        return Ok(EXIT_FINDING);
    }
    if check {
        if changed {
            let _ = writeln!(out, "the pins in {} differ from the server: re-pin and review", out_file.display());
            return Ok(EXIT_FINDING);
        }
        return Ok(EXIT_OK);
    }
    lock.servers.insert(t.server.to_owned(), live);
    std::fs::write(out_file, lock.to_pretty_string())
        .map_err(|e| CliError::new(format!("cannot write {}: {e}", out_file.display())))?;
    let _ = writeln!(out, "wrote {}", out_file.display());
    Ok(EXIT_OK)
}
