//! Runs `cargo` on the generated workspace and times it.

use crate::generate::Workspace;
use std::ffi::OsString;
use std::process::Command;
use std::time::{Duration, Instant};

/// A cargo profile.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Profile {
    /// `dev` (incremental).
    Dev,
    /// `release` (not incremental).
    Release,
}

impl Profile {
    fn flag(self) -> Option<&'static str> {
        match self {
            Profile::Dev => None,
            Profile::Release => Some("--release"),
        }
    }
}

/// One finished build.
#[derive(Debug)]
pub(crate) struct Build {
    /// Wall-clock time of the `cargo build` process.
    pub(crate) elapsed: Duration,
    /// The targets cargo compiled (not fresh), by name.
    pub(crate) compiled: Vec<String>,
}

/// Runs cargo against the generated workspace with its own target directory.
#[derive(Debug)]
pub(crate) struct Cargo {
    program: OsString,
    ws: Workspace,
    offline: bool,
    fetched: bool,
}

impl Cargo {
    /// The cargo that runs this program (`$CARGO`), or `cargo` from `PATH`.
    pub(crate) fn new(ws: Workspace) -> Self {
        let program = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
        Cargo { program, ws, offline: true, fetched: false }
    }

    /// Whether a first build had to go online to fetch a dependency.
    pub(crate) fn fetched(&self) -> bool {
        self.fetched
    }

    fn command(&self, sub: &str, krate: &str, profile: Profile) -> Command {
        let mut cmd = Command::new(&self.program);
        cmd.arg(sub).arg("-p").arg(krate);
        if let Some(flag) = profile.flag() {
            cmd.arg(flag);
        }
        if self.offline {
            cmd.arg("--offline");
        }
        // The variables `cargo run` sets for this program describe it, not the workspace.
        for (key, _) in std::env::vars_os() {
            let key = key.to_string_lossy();
            if key.starts_with("CARGO_PKG_")
                || key.starts_with("CARGO_MANIFEST_")
                || key.starts_with("CARGO_BIN_")
                || key == "CARGO_CRATE_NAME"
                || key == "CARGO_PRIMARY_PACKAGE"
            {
                cmd.env_remove(key.as_ref());
            }
        }
        cmd.current_dir(&self.ws.root)
            .env("CARGO_TARGET_DIR", &self.ws.target)
            .env("CARGO_TERM_QUIET", "true")
            .env("CARGO_TERM_COLOR", "never");
        cmd
    }

    /// `cargo build -p <krate>`, timed; fails if cargo fails.
    pub(crate) fn build(&self, krate: &str, profile: Profile) -> Result<Build, String> {
        let mut cmd = self.command("build", krate, profile);
        cmd.arg("--message-format=json");
        let start = Instant::now();
        let output = cmd.output().map_err(|e| format!("cannot run cargo: {e}"))?;
        let elapsed = start.elapsed();
        if !output.status.success() {
            return Err(format!(
                "`cargo build -p {krate}` ({profile:?}) failed:\n{}{}",
                compiler_messages(&output.stdout),
                String::from_utf8_lossy(&output.stderr)
            ));
        }
        Ok(Build { elapsed, compiled: compiled_targets(&output.stdout) })
    }

    /// The first build: tries `--offline`, and goes online once if a package is missing.
    pub(crate) fn build_first(&mut self, krate: &str, profile: Profile) -> Result<Build, String> {
        match self.build(krate, profile) {
            Err(e) if self.offline && e.contains("offline") => {
                eprintln!("compile-bench: a dependency is not in the local cache; fetching once");
                self.offline = false;
                self.fetched = true;
                let first = self.build(krate, profile);
                self.offline = true;
                first
            }
            other => other,
        }
    }

    /// `cargo clean -p <krate>` for `profile`: removes the crate's artifacts and its
    /// incremental state, keeping every dependency.
    pub(crate) fn clean(&self, krate: &str, profile: Profile) -> Result<(), String> {
        let output = self.command("clean", krate, profile).output().map_err(|e| format!("cannot run cargo: {e}"))?;
        if output.status.success() {
            Ok(())
        } else {
            Err(format!("`cargo clean -p {krate}` failed:\n{}", String::from_utf8_lossy(&output.stderr)))
        }
    }
}

/// The names of targets a `--message-format=json` build compiled rather than found fresh.
fn compiled_targets(stdout: &[u8]) -> Vec<String> {
    String::from_utf8_lossy(stdout)
        .lines()
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .filter(|m| m["reason"] == "compiler-artifact" && m["fresh"] == false)
        .filter_map(|m| m["target"]["name"].as_str().map(str::to_owned))
        .collect()
}

/// The rendered compiler diagnostics in a `--message-format=json` stream.
fn compiler_messages(stdout: &[u8]) -> String {
    String::from_utf8_lossy(stdout)
        .lines()
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .filter(|m| m["reason"] == "compiler-message")
        .filter_map(|m| m["message"]["rendered"].as_str().map(str::to_owned))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_compiled_targets() {
        let stream = concat!(
            r#"{"reason":"compiler-artifact","target":{"name":"serde"},"fresh":true}"#,
            "\n",
            r#"{"reason":"compiler-artifact","target":{"name":"bench_agents"},"fresh":false}"#,
            "\n",
            r#"{"reason":"build-finished","success":true}"#,
            "\n"
        );
        assert_eq!(compiled_targets(stream.as_bytes()), vec!["bench_agents".to_owned()]);
    }
}
