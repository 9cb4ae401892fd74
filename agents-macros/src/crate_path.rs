//! Finds the path of `agents-runtime` as the calling crate names it (renames included).
//!
//! Every `#[tool]`, `agent!` and `permissions!` asks. When the calling crate's `Cargo.toml`
//! names `agents-runtime` as a plain dependency key and renames nothing to it, the path is
//! `::agents_runtime`; that answer is remembered per manifest (and its modification time).
//! Otherwise (a rename such as `agents = { package = "agents-runtime" }`, or a dependency
//! inherited from a workspace under another name) `proc-macro-crate` resolves it each time:
//! it asks cargo for the workspace root once and keeps its own cache of both manifests.

use proc_macro_crate::{FoundCrate, crate_name};
use proc_macro2::{Span, TokenStream};
use quote::quote;
use std::path::Path;
use std::sync::Mutex;
use std::time::SystemTime;

/// The runtime path, e.g. `::agents_runtime` or `::agents` after a rename.
pub(crate) fn runtime() -> TokenStream {
    let name = runtime_name();
    let ident = syn::Ident::new(&name, Span::call_site());
    quote!(::#ident)
}

/// The calling crate's name for `agents-runtime`.
fn runtime_name() -> String {
    if plain_dependency() { "agents_runtime".to_owned() } else { lookup() }
}

/// Whether the calling crate's manifest names `agents-runtime` plainly, remembered per manifest
/// and modification time: a long-lived proc-macro server may expand several crates, and a
/// manifest may change while it runs.
fn plain_dependency() -> bool {
    static CACHE: Mutex<Option<(String, Option<SystemTime>, bool)>> = Mutex::new(None);
    let Ok(dir) = std::env::var("CARGO_MANIFEST_DIR") else {
        return false;
    };
    let manifest = Path::new(&dir).join("Cargo.toml");
    let mtime = std::fs::metadata(&manifest).and_then(|m| m.modified()).ok();
    let mut cache = CACHE.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    if let Some((d, t, plain)) = cache.as_ref()
        && *d == dir
        && *t == mtime
    {
        return *plain;
    }
    let plain = std::fs::read_to_string(&manifest).is_ok_and(|text| names_runtime_plainly(&text));
    *cache = Some((dir, mtime, plain));
    plain
}

/// The full lookup through `proc-macro-crate`.
fn lookup() -> String {
    match crate_name("agents-runtime") {
        Ok(FoundCrate::Name(name)) => name,
        _ => "agents_runtime".to_owned(),
    }
}

/// Whether `Cargo.toml` text declares `agents-runtime` under its own name (a key
/// `agents-runtime = ...`, `agents-runtime.workspace = ...` or a table
/// `[dependencies.agents-runtime]`) and never renames anything to it (`package =
/// "agents-runtime"`). When unsure, says no: the caller then does the full lookup.
fn names_runtime_plainly(text: &str) -> bool {
    let mut plain = false;
    for line in text.lines() {
        let line = line.trim();
        if line.starts_with('#') {
            continue;
        }
        let compact: String = line.chars().filter(|c| !c.is_whitespace()).collect();
        if compact.contains("package=\"agents-runtime\"") || compact.contains("package='agents-runtime'") {
            return false;
        }
        let key = compact.strip_prefix('[').map_or(compact.as_str(), |rest| {
            rest.trim_start_matches('[').rsplit_once('.').map_or(rest, |(_, last)| last)
        });
        for name in ["agents-runtime", "\"agents-runtime\""] {
            if let Some(rest) = key.strip_prefix(name)
                && (rest.starts_with('=') || rest.starts_with('.') || rest.starts_with(']'))
            {
                plain = true;
            }
        }
    }
    plain
}

#[cfg(test)]
mod tests {
    use super::names_runtime_plainly;

    #[test]
    fn a_plain_dependency_needs_no_lookup() {
        assert!(names_runtime_plainly("[dependencies]\nagents-runtime = \"0.1\"\n"));
        assert!(names_runtime_plainly("[dependencies]\nagents-runtime.workspace = true\n"));
        assert!(names_runtime_plainly("[dependencies]\nagents-runtime = { path = \"../x\" }\n"));
        assert!(names_runtime_plainly("[dependencies.agents-runtime]\npath = \"../x\"\n"));
        assert!(names_runtime_plainly("[dev-dependencies]\n  agents-runtime   =  \"0.1\"\n"));
    }

    #[test]
    fn a_rename_or_an_unknown_form_asks_cargo() {
        // Renamed in the crate.
        assert!(!names_runtime_plainly("[dependencies]\nagents = { package = \"agents-runtime\", path = \"../x\" }\n"));
        assert!(!names_runtime_plainly("[dependencies.agents]\npackage = \"agents-runtime\"\n"));
        // Renamed and plain at once: the full lookup decides.
        assert!(!names_runtime_plainly(
            "[dependencies]\nagents-runtime = \"0.1\"\n[dev-dependencies]\nrt = { package = \"agents-runtime\" }\n"
        ));
        // Inherited under another name: the rename is in the workspace manifest.
        assert!(!names_runtime_plainly("[dependencies]\nagents = { workspace = true }\n"));
        // Mentioned only in a comment or as a prefix of another crate.
        assert!(!names_runtime_plainly("# agents-runtime = \"0.1\"\n[dependencies]\nserde = \"1\"\n"));
        assert!(!names_runtime_plainly("[dependencies]\nagents-runtime-extra = \"0.1\"\n"));
    }
}
