//! `cargo xtask starter`: builds and tests `starter/` as a user's project, against the crates
//! of this workspace instead of crates.io.
//!
//! The starter is copied to `<target>/xtask/starter` with a `[patch.crates-io]` naming this
//! workspace's crates by path and this workspace's `Cargo.lock` (so it resolves to the very
//! dependency versions already compiled in the shared target directory), then `cargo test`
//! runs there. `starter/` itself stays as a user copies it: crates by version, no patch.

use crate::checks::with_workspace_profile;
use crate::cmd::{self, cargo, run, timed};
use std::path::Path;

/// The crates the starter may depend on, patched to this workspace's copies.
const PATCHED: [&str; 5] = ["agents-core", "agents-macros", "agents-provider", "agents-sandbox", "agents-runtime"];

pub(crate) fn run_starter() -> Result<(), String> {
    let ws = cmd::workspace()?;
    let root = cmd::root();
    let from = root.join("starter");
    let to = ws.target_dir.join("xtask").join("starter");
    if to.exists() {
        std::fs::remove_dir_all(&to).map_err(|e| format!("{}: {e}", to.display()))?;
    }
    copy_tree(&from, &to)?;
    let manifest = to.join("Cargo.toml");
    let mut text = std::fs::read_to_string(&manifest).map_err(|e| format!("{}: {e}", manifest.display()))?;
    // Its own workspace: the copy may sit inside this one's directory (the default target dir).
    text.push_str("\n# Written by `cargo xtask starter`.\n[workspace]\n\n[patch.crates-io]\n");
    for name in PATCHED {
        text.push_str(&format!("{name} = {{ path = {:?} }}\n", root.join(name).display().to_string()));
    }
    std::fs::write(&manifest, text).map_err(|e| format!("{}: {e}", manifest.display()))?;
    std::fs::copy(root.join("Cargo.lock"), to.join("Cargo.lock")).map_err(|e| format!("Cargo.lock: {e}"))?;
    let mut command = cargo();
    command.current_dir(&to).arg("test").arg("--target-dir").arg(&ws.target_dir);
    with_workspace_profile(&mut command);
    timed("starter", || run(&mut command))
}

fn copy_tree(from: &Path, to: &Path) -> Result<(), String> {
    std::fs::create_dir_all(to).map_err(|e| format!("{}: {e}", to.display()))?;
    for entry in std::fs::read_dir(from).map_err(|e| format!("{}: {e}", from.display()))? {
        let entry = entry.map_err(|e| format!("{}: {e}", from.display()))?;
        let name = entry.file_name();
        if name == "target" || name == "Cargo.lock" {
            continue;
        }
        let (src, dst) = (entry.path(), to.join(&name));
        if entry.file_type().map_err(|e| format!("{}: {e}", src.display()))?.is_dir() {
            copy_tree(&src, &dst)?;
        } else {
            std::fs::copy(&src, &dst).map_err(|e| format!("{}: {e}", src.display()))?;
        }
    }
    Ok(())
}
