//! `agents mcp pin` against a live MCP server: the fixture server of `agents-mcp`
//! (`agents-mcp-import-fixture`), which lists other tools when its state file says so.

use crate::common;

use agents_core::mcp_lock::LockFile;
use common::{agents, code, stderr, stdout};
use std::path::{Path, PathBuf};

/// The fixture server, built beside this crate's binary by `cargo build -p agents-mcp`.
fn fixture_server() -> PathBuf {
    let path = Path::new(env!("CARGO_BIN_EXE_agents")).with_file_name("agents-mcp-import-fixture");
    assert!(
        path.exists(),
        "{} is missing: build it first with `cargo build -p agents-mcp --bin agents-mcp-import-fixture` (same target directory)",
        path.display()
    );
    path
}

fn pin(state: &Path, lock: &Path, extra: &[&str]) -> std::process::Output {
    let server = fixture_server();
    let env = format!("FIXTURE_STATE={}", state.display());
    let mut args = vec!["mcp", "pin", "--server", "notes", "--stdio", server.to_str().unwrap(), "--env", &env, "--out"];
    args.push(lock.to_str().unwrap());
    args.extend_from_slice(extra);
    agents(args)
}

#[test]
fn pin_writes_a_lock_file_that_check_compares_and_a_hand_edit_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let (state, lock) = (dir.path().join("state"), dir.path().join("mcp.lock.json"));
    std::fs::write(&state, "v1").unwrap();

    let o = pin(&state, &lock, &[]);
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    assert!(stdout(&o).contains("+ search"), "{}", stdout(&o));
    let written = LockFile::parse(&std::fs::read_to_string(&lock).unwrap()).unwrap();
    assert_eq!(written.tool("notes", "search").unwrap().description, "Searches the notes for a word.");
    assert_eq!(written.servers["notes"].tools.len(), 3);

    // Unchanged server: `--check` finds nothing.
    let o = pin(&state, &lock, &["--check"]);
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));

    // The server changes a description: `--check` says which and exits 1, writing nothing.
    std::fs::write(&state, "rug-pull").unwrap();
    let before = std::fs::read(&lock).unwrap();
    let o = pin(&state, &lock, &["--check"]);
    assert_eq!(code(&o), 1, "{}{}", stdout(&o), stderr(&o));
    assert!(stdout(&o).contains("~ search") && stdout(&o).contains("evil.example"), "{}", stdout(&o));
    assert_eq!(std::fs::read(&lock).unwrap(), before);

    // A re-pin records the new text (for the reviewer to read in the diff).
    let o = pin(&state, &lock, &[]);
    assert_eq!(code(&o), 0);
    let repinned = LockFile::parse(&std::fs::read_to_string(&lock).unwrap()).unwrap();
    assert_ne!(repinned.tool("notes", "search").unwrap().sha256, written.tool("notes", "search").unwrap().sha256);

    // A hand edit of the description (keeping the hash) is refused, and nothing is written.
    let text = std::fs::read_to_string(&lock).unwrap().replace("https://evil.example", "https://fine.example");
    std::fs::write(&lock, &text).unwrap();
    let o = pin(&state, &lock, &[]);
    assert_eq!(code(&o), 2, "{}{}", stdout(&o), stderr(&o));
    assert!(stderr(&o).contains("edited by hand"), "{}", stderr(&o));
    assert_eq!(std::fs::read_to_string(&lock).unwrap(), text);
}

#[test]
fn a_server_that_does_not_start_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let lock = dir.path().join("mcp.lock.json");
    let o = agents(["mcp", "pin", "--server", "x", "--stdio", "/nonexistent/server", "--out", lock.to_str().unwrap()]);
    assert_eq!(code(&o), 2);
    assert!(stderr(&o).contains("cannot reach MCP server `x`"), "{}", stderr(&o));
    assert!(!lock.exists());
    let o = agents(["mcp", "pin", "--server", "x", "--out", lock.to_str().unwrap()]);
    assert_eq!(code(&o), 2);
    assert!(stderr(&o).contains("exactly one of `--stdio"), "{}", stderr(&o));
}

/// The server written with the official TypeScript SDK that `agents-mcp`'s import tests
/// use; its packages must be installed (`npm ci` there, as `.ci/run` does).
fn ts_server() -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../agents-mcp/tests/fixtures/ts-mcp-server");
    assert!(
        dir.join("node_modules/@modelcontextprotocol/sdk/package.json").is_file(),
        "the TypeScript MCP server's packages are not installed: run `cargo xtask setup` (or `cargo xtask test`), which installs them, or `npm ci --no-audit --no-fund` in {} (node 20 and npm)",
        dir.display()
    );
    dir.join("server.mjs")
}

#[test]
fn pin_reads_a_server_written_with_the_typescript_sdk_over_stdio_and_http() {
    let dir = tempfile::tempdir().unwrap();
    let (state, lock) = (dir.path().join("state"), dir.path().join("mcp.lock.json"));
    std::fs::write(&state, "v1").unwrap();
    let command = format!("node {}", ts_server().display());
    let env = format!("FIXTURE_STATE={}", state.display());
    let pin = |extra: &[&str]| {
        let mut args = vec!["mcp", "pin", "--server", "ts_notes", "--stdio", &command, "--env", &env, "--out"];
        args.push(lock.to_str().unwrap());
        args.extend_from_slice(extra);
        agents(args)
    };

    let o = pin(&[]);
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    assert!(stdout(&o).contains("+ search") && stdout(&o).contains("+ add_note"), "{}", stdout(&o));
    let written = LockFile::parse(&std::fs::read_to_string(&lock).unwrap()).unwrap();
    // The same pins as the import tests of `agents-mcp` compile in.
    let theirs = Path::new(env!("CARGO_MANIFEST_DIR")).join("../agents-mcp/tests/mcp_import.lock.json");
    let theirs = LockFile::parse(&std::fs::read_to_string(theirs).unwrap()).unwrap();
    assert_eq!(written.servers["ts_notes"].tools, theirs.servers["ts_notes"].tools);

    // The server's listing changes: `--check` names the tool and the new text, exits 1.
    std::fs::write(&state, "rug-pull").unwrap();
    let o = pin(&["--check"]);
    assert_eq!(code(&o), 1, "{}{}", stdout(&o), stderr(&o));
    assert!(stdout(&o).contains("~ search") && stdout(&o).contains("evil.example"), "{}", stdout(&o));

    // Over streamable HTTP, the same server gives the same pins.
    std::fs::write(&state, "v1").unwrap();
    let mut child = std::process::Command::new("node")
        .arg(ts_server())
        .arg("--http")
        .env("FIXTURE_STATE", &state)
        .stderr(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .spawn()
        .expect("node starts");
    let mut line = String::new();
    std::io::BufRead::read_line(&mut std::io::BufReader::new(child.stderr.take().unwrap()), &mut line).unwrap();
    let url = line.split("listening on ").nth(1).unwrap_or_else(|| panic!("not listening: {line:?}")).trim().to_owned();
    let o = agents(["mcp", "pin", "--server", "ts_notes", "--http", &url, "--out", lock.to_str().unwrap(), "--check"]);
    let _ = child.kill();
    let _ = child.wait();
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
}

#[test]
fn a_description_that_hides_text_is_refused_unless_allowed_and_then_written_escaped() {
    let dir = tempfile::tempdir().unwrap();
    let (state, lock) = (dir.path().join("state"), dir.path().join("mcp.lock.json"));
    std::fs::write(&state, "hidden").unwrap();

    // Refused: each hiding character is flagged, escaped, and nothing is written.
    let o = pin(&state, &lock, &[]);
    assert_eq!(code(&o), 1, "{}{}", stdout(&o), stderr(&o));
    let said = stdout(&o);
    assert!(said.contains("! search  description holds characters that hide or reorder text"), "{said}");
    for shown in ["\\u{202e}", "\\u{202c}", "\\u{e0073}", "\\u{e006e}"] {
        assert!(said.contains(shown), "{shown} is not shown: {said}");
    }
    assert!(said.contains("--allow-hidden-characters") && said.contains("nothing was written"), "{said}");
    assert!(!said.contains('\u{202e}') && !said.contains('\u{e0073}'), "the output shows them raw: {said}");
    assert!(!lock.exists(), "a refused pin wrote the lock file");

    // Allowed: written, every such character a JSON escape the diff shows, and it reads back.
    let o = pin(&state, &lock, &["--allow-hidden-characters"]);
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    assert!(stdout(&o).contains("! search  description"), "{}", stdout(&o));
    let text = std::fs::read_to_string(&lock).unwrap();
    assert!(!text.contains('\u{202e}') && !text.contains('\u{202c}'), "bidi controls written raw: {text}");
    assert!(!text.chars().any(|c| ('\u{e0000}'..='\u{e007f}').contains(&c)), "tag characters written raw");
    assert!(text.contains("\\u202e") && text.contains("\\udb40\\udc73"), "{text}");
    let read = LockFile::parse(&text).unwrap();
    let description = &read.tool("notes", "search").unwrap().description;
    assert!(description.contains('\u{202e}') && description.contains('\u{e0073}'), "{description:?}");

    // `--check` against the accepted pins: unchanged, but the characters are still flagged.
    let o = pin(&state, &lock, &["--check"]);
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    assert!(stdout(&o).contains("! search"), "{}", stdout(&o));
}
