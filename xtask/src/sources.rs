//! The library code of the workspace as `measures` and `graph` read it: each member's `src/`,
//! without its unit tests (`#[cfg(test)]` modules, `tests.rs` and `*_tests.rs` files).

use std::path::{Path, PathBuf};

/// The workspace's member directories, read from its `Cargo.toml` (`members = [...]`).
pub(crate) fn members(root: &Path) -> Result<Vec<String>, String> {
    let path = root.join("Cargo.toml");
    let manifest = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let list = manifest
        .split_once("members")
        .and_then(|(_, rest)| rest.split_once('['))
        .and_then(|(_, rest)| rest.split_once(']'));
    let Some((list, _)) = list else { return Err(format!("no `members = [...]` in {}", path.display())) };
    Ok(list.split(',').map(|m| m.trim().trim_matches('"').to_owned()).filter(|m| !m.is_empty()).collect())
}

/// The `.rs` files under `dir`, sorted, unit-test files left out.
pub(crate) fn library_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    rust_files(dir, &mut out);
    out.retain(|p| !is_test_file(p));
    out
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    let mut entries: Vec<_> = entries.filter_map(Result::ok).map(|e| e.path()).collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// A file of unit tests by its name: `tests.rs` or `*_tests.rs`.
pub(crate) fn is_test_file(path: &Path) -> bool {
    path.file_name().and_then(|n| n.to_str()).is_some_and(|n| n == "tests.rs" || n.ends_with("_tests.rs"))
}

/// Whether `attrs` hold `#[cfg(test)]`.
pub(crate) fn is_cfg_test(attrs: &[syn::Attribute]) -> bool {
    attrs
        .iter()
        .any(|a| a.path().is_ident("cfg") && a.meta.require_list().is_ok_and(|l| l.tokens.to_string().trim() == "test"))
}

/// `path` relative to `root`, as printed.
pub(crate) fn shown(root: &Path, path: &Path) -> String {
    path.strip_prefix(root).unwrap_or(path).display().to_string()
}
