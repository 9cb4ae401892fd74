//! `agents mcp pin` against a live MCP server: the fixture server of `agents-runtime`
//! (`agents-mcp-import-fixture`), which lists other tools when its state file says so.

mod common;

use agents_core::mcp_lock::LockFile;
use common::{agents, code, stderr, stdout};
use std::path::{Path, PathBuf};

/// The fixture server, built beside this crate's binary by `cargo build -p agents-runtime`.
fn fixture_server() -> PathBuf {
    let path = Path::new(env!("CARGO_BIN_EXE_agents")).with_file_name("agents-mcp-import-fixture");
    assert!(
        path.exists(),
        "{} is missing: build it first with `cargo build -p agents-runtime --bin agents-mcp-import-fixture` (same target directory)",
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
