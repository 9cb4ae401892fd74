//! `cargo xtask package`, `docs` and `features`: the published crates as a registry and
//! docs.rs will build them.

use crate::cmd::{self, cargo, run, timed};
use std::process::Command;

/// The workspace's `[profile.dev]` settings, repeated for builds whose root is not this
/// workspace (a packaged crate being verified, the starter), so that they reuse the
/// dependencies already compiled in the shared target directory instead of compiling them
/// again with other settings.
pub(crate) const WORKSPACE_PROFILE: [&str; 5] = [
    "profile.dev.debug=\"line-tables-only\"",
    "profile.dev.package.\"*\".debug=false",
    "profile.dev.package.sha2.opt-level=3",
    "profile.dev.package.hmac.opt-level=3",
    "profile.dev.package.serde_json.opt-level=3",
];

/// Adds [`WORKSPACE_PROFILE`] to `command` as `--config` arguments.
pub(crate) fn with_workspace_profile(command: &mut Command) -> &mut Command {
    for setting in WORKSPACE_PROFILE {
        command.args(["--config", setting]);
    }
    command
}

/// `cargo package` of every published crate in one call, in dependency order: cargo packs
/// each, then verifies that each builds from its `.crate` file alone, against the others as
/// packed (a local overlay of the registry), as crates.io users would get them.
pub(crate) fn package() -> Result<(), String> {
    let ws = cmd::workspace()?;
    let names: Vec<&str> = ws.packages.iter().filter(|p| p.published).map(|p| p.name.as_str()).collect();
    forget_unpacked_copies(&names)?;
    let verify_dir = ws.target_dir.join("package-verify");
    forget_verified_builds(&verify_dir, &names)?;
    let mut command = cargo();
    command.args(["package", "--allow-dirty", "--target-dir"]).arg(&verify_dir);
    for p in ws.published_in_dependency_order() {
        command.args(["-p", &p.name]);
    }
    with_workspace_profile(&mut command);
    timed("package", || run(&mut command))
}

/// Removes cargo's unpacked copies of the workspace's own crates from local registries.
///
/// The overlay `cargo package` verifies against is a local registry in the target directory,
/// and cargo unpacks a registry's `name-version` once, into `$CARGO_HOME/registry/src/-<hash of
/// the registry's path>/`, and never again. Packaging again from the same target directory
/// would therefore verify each crate against the sources of an earlier run's tarballs (a
/// module added since is "not found"). Only directories of local registries (their names start
/// with `-`) are touched, and in them only this workspace's published crates.
fn forget_unpacked_copies(names: &[&str]) -> Result<(), String> {
    let home = match std::env::var_os("CARGO_HOME") {
        Some(home) => std::path::PathBuf::from(home),
        None => match std::env::var_os("HOME") {
            Some(home) => std::path::PathBuf::from(home).join(".cargo"),
            None => return Ok(()),
        },
    };
    let Ok(registries) = std::fs::read_dir(home.join("registry").join("src")) else { return Ok(()) };
    for registry in registries.flatten() {
        if registry.file_name().to_string_lossy().starts_with('-') {
            remove_entries_of(&registry.path(), names, "stale unpacked copy")?;
        }
    }
    Ok(())
}

/// Removes the verification's builds of the workspace's own crates from `verify_dir`, a target
/// directory `cargo package` uses for nothing else. Cargo takes a crate from a registry to be
/// the same as long as its name and version are, so a build of an earlier run's tarball would
/// be reused for this run's; the dependencies' builds stay.
fn forget_verified_builds(verify_dir: &std::path::Path, names: &[&str]) -> Result<(), String> {
    remove_entries_of(&verify_dir.join("debug").join(".fingerprint"), names, "earlier verification's build")
}

/// Removes the entries of `dir` named `<one of names>-<anything without a dash>` (an unpacked
/// `name-version`, a build's `name-hash`); a missing `dir` has none.
fn remove_entries_of(dir: &std::path::Path, names: &[&str], what: &str) -> Result<(), String> {
    let Ok(entries) = std::fs::read_dir(dir) else { return Ok(()) };
    for entry in entries.flatten() {
        let file_name = entry.file_name();
        let ours = file_name.to_string_lossy().rsplit_once('-').is_some_and(|(name, _)| names.contains(&name));
        if ours {
            std::fs::remove_dir_all(entry.path())
                .map_err(|e| format!("cannot remove the {what} {}: {e}", entry.path().display()))?;
        }
    }
    Ok(())
}

/// The API docs of the whole workspace with warnings (broken intra-doc links included) as
/// errors, then the published crates as docs.rs builds them (all features, `--cfg docsrs`,
/// which turns on `doc_cfg`'s feature badges).
pub(crate) fn docs() -> Result<(), String> {
    timed("docs", || run(cargo().env("RUSTDOCFLAGS", "-D warnings").args(["doc", "--no-deps", "--workspace"])))?;
    let ws = cmd::workspace()?;
    let mut command = cargo();
    command.args(["doc", "--no-deps", "--all-features"]);
    for p in ws.packages.iter().filter(|p| p.published && p.lib.is_some()) {
        command.args(["-p", &p.name]);
    }
    rustdoc_unstable(&mut command)?;
    command.env("RUSTDOCFLAGS", "--cfg docsrs -D warnings");
    timed("docs (as docs.rs builds them)", || run(&mut command))
}

/// Each published library crate checked with no default features, then with each of its
/// features alone (cargo-hack's `--each-feature`, with the workspace's own `cargo`); then the
/// runtime's tests that need its default features off (`run_knowledge_off`).
pub(crate) fn features() -> Result<(), String> {
    let ws = cmd::workspace()?;
    timed("features", || {
        for p in ws.packages.iter().filter(|p| p.published && p.lib.is_some()) {
            run(cargo().args(["check", "--lib", "-p", &p.name, "--no-default-features"]))?;
            for feature in &p.features {
                run(cargo().args(["check", "--lib", "-p", &p.name, "--no-default-features", "--features", feature]))?;
            }
        }
        // The runtime without its default features builds its tests too, and an agent that
        // declares knowledge refuses to start there, naming the feature.
        run(cargo().args([
            "test",
            "-p",
            "agents-runtime",
            "--no-default-features",
            "--test",
            "suite",
            "run_knowledge_off::",
        ]))
    })
}

/// The environment variable under which this program runs as rustdoc (see
/// [`rustdoc_unstable`]); its value is the real rustdoc.
pub(crate) const RUSTDOC_WRAPPER_VAR: &str = "AGENTS_XTASK_REAL_RUSTDOC";

/// Makes `command`'s rustdoc runs accept unstable options (`--output-format json`,
/// `feature(doc_cfg)`) on the pinned stable toolchain: cargo runs this program as its rustdoc,
/// which runs the real one with `RUSTC_BOOTSTRAP=1`. Set for the whole cargo command, that
/// variable would also reach build scripts that watch it (proc-macro2's), rebuilding most of
/// the shared target directory twice per run; this way only rustdoc sees it.
pub(crate) fn rustdoc_unstable(command: &mut Command) -> Result<(), String> {
    let me = std::env::current_exe().map_err(|e| format!("cannot find this program to run it as rustdoc: {e}"))?;
    let real = std::env::var_os("RUSTDOC").unwrap_or_else(|| "rustdoc".into());
    command.env("RUSTDOC", me).env(RUSTDOC_WRAPPER_VAR, real);
    Ok(())
}

/// Runs the real rustdoc with this process's arguments and `RUSTC_BOOTSTRAP=1`, when this
/// program was started as rustdoc by [`rustdoc_unstable`]; `None` otherwise.
pub(crate) fn as_rustdoc() -> Option<std::process::ExitCode> {
    let real = std::env::var_os(RUSTDOC_WRAPPER_VAR)?;
    let status = Command::new(&real).args(std::env::args_os().skip(1)).env("RUSTC_BOOTSTRAP", "1").status();
    Some(match status {
        Ok(s) if s.success() => std::process::ExitCode::SUCCESS,
        Ok(s) => std::process::ExitCode::from(u8::try_from(s.code().unwrap_or(1)).unwrap_or(1)),
        Err(e) => {
            eprintln!("xtask as rustdoc: {} could not be started: {e}", real.to_string_lossy());
            std::process::ExitCode::FAILURE
        }
    })
}

#[cfg(test)]
mod tests {
    use super::remove_entries_of;

    #[test]
    fn only_the_named_crates_entries_are_removed() {
        let dir = std::env::temp_dir().join(format!("xtask-remove-entries-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        for entry in
            ["agents-core-0.1.0", "agents-core-0a32664c", "agents-core-extra-1.0", "serde-1.0.228", "agents-macros"]
        {
            std::fs::create_dir(dir.as_path().join(entry)).unwrap();
        }
        remove_entries_of(dir.as_path(), &["agents-core", "agents-macros"], "entry").unwrap();
        let mut left: Vec<String> = std::fs::read_dir(dir.as_path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        left.sort();
        // `agents-macros` alone has no version or hash after it; `agents-core-extra` is another crate.
        assert_eq!(left, ["agents-core-extra-1.0", "agents-macros", "serde-1.0.228"]);
        remove_entries_of(&dir.join("missing"), &["agents-core"], "entry").unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
