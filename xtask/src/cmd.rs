//! Running commands: cargo (the one that runs this program), timed steps, and the workspace's
//! own layout from `cargo metadata`.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

/// The workspace root (the parent of this crate's directory).
pub(crate) fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("xtask lives in the workspace").to_path_buf()
}

/// A `cargo` command in the workspace root: the cargo that runs `cargo xtask` (`$CARGO`), so
/// that the pinned toolchain is used throughout.
pub(crate) fn cargo() -> Command {
    let mut command = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    command.current_dir(root());
    command
}

/// Runs `command`, failing with its rendering when it cannot start or exits unsuccessfully.
pub(crate) fn run(command: &mut Command) -> Result<(), String> {
    let shown = show(command);
    eprintln!("$ {shown}");
    let status = command.status().map_err(|e| format!("`{shown}` could not be started: {e}"))?;
    if status.success() { Ok(()) } else { Err(format!("`{shown}` failed ({status})")) }
}

/// Runs `step` and prints how long it took (each CI step reports its own time).
pub(crate) fn timed<T>(name: &str, step: impl FnOnce() -> Result<T, String>) -> Result<T, String> {
    let start = Instant::now();
    let outcome = step();
    let secs = start.elapsed().as_secs();
    let verdict = if outcome.is_ok() { "done" } else { "FAILED" };
    eprintln!("xtask: {name}: {verdict} in {}m{:02}s", secs / 60, secs % 60);
    outcome
}

/// A command as a person would type it (environment assignments first).
pub(crate) fn show(command: &Command) -> String {
    let mut words: Vec<String> = command
        .get_envs()
        .filter_map(|(k, v)| Some(format!("{}={}", k.to_string_lossy(), v?.to_string_lossy())))
        .collect();
    words.push(command.get_program().to_string_lossy().into_owned());
    words.extend(command.get_args().map(|a| {
        let a = a.to_string_lossy();
        if a.contains([' ', '"', '\'']) { format!("'{a}'") } else { a.into_owned() }
    }));
    words.join(" ")
}

/// The workspace as `cargo metadata --no-deps` describes it.
pub(crate) struct Workspace {
    pub(crate) target_dir: PathBuf,
    pub(crate) packages: Vec<Package>,
}

/// One member of the workspace.
pub(crate) struct Package {
    pub(crate) name: String,
    pub(crate) published: bool,
    /// The library target's crate name (`agents_core`), when the package has a library.
    pub(crate) lib: Option<String>,
    /// Its features, `default` excluded, sorted.
    pub(crate) features: Vec<String>,
    /// The names of the workspace members it depends on (normal and build dependencies).
    pub(crate) depends_on: Vec<String>,
}

pub(crate) fn workspace() -> Result<Workspace, String> {
    let out = cargo()
        .args(["metadata", "--no-deps", "--format-version", "1"])
        .output()
        .map_err(|e| format!("`cargo metadata` could not be started: {e}"))?;
    if !out.status.success() {
        return Err(format!("`cargo metadata` failed: {}", String::from_utf8_lossy(&out.stderr)));
    }
    let meta: serde_json::Value =
        serde_json::from_slice(&out.stdout).map_err(|e| format!("`cargo metadata` printed no JSON: {e}"))?;
    let text = |v: &serde_json::Value| v.as_str().unwrap_or_default().to_owned();
    let members: Vec<String> = meta["packages"].as_array().into_iter().flatten().map(|p| text(&p["name"])).collect();
    let packages = meta["packages"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|p| {
            // `publish: []` is `publish = false`; `null` is any registry.
            let published = !p["publish"].as_array().is_some_and(Vec::is_empty);
            let lib = p["targets"].as_array().into_iter().flatten().find_map(|t| {
                let kinds = t["kind"].as_array()?;
                kinds.iter().any(|k| k == "lib" || k == "proc-macro").then(|| text(&t["name"]).replace('-', "_"))
            });
            let mut features: Vec<String> = p["features"]
                .as_object()
                .into_iter()
                .flatten()
                .map(|(k, _)| k.clone())
                .filter(|k| k != "default")
                .collect();
            features.sort();
            let depends_on = p["dependencies"]
                .as_array()
                .into_iter()
                .flatten()
                .filter(|d| d["kind"].as_str() != Some("dev"))
                .map(|d| text(&d["name"]))
                .filter(|n| members.contains(n))
                .collect();
            Package { name: text(&p["name"]), published, lib, features, depends_on }
        })
        .collect();
    Ok(Workspace { target_dir: PathBuf::from(text(&meta["target_directory"])), packages })
}

impl Workspace {
    /// The published packages, each after the workspace members it depends on.
    pub(crate) fn published_in_dependency_order(&self) -> Vec<&Package> {
        let mut ordered: Vec<&Package> = Vec::new();
        let mut left: Vec<&Package> = self.packages.iter().filter(|p| p.published).collect();
        left.sort_by(|a, b| a.name.cmp(&b.name));
        while !left.is_empty() {
            let ready = left
                .iter()
                .position(|p| {
                    p.depends_on
                        .iter()
                        .all(|d| ordered.iter().any(|o| &o.name == d) || !left.iter().any(|l| &l.name == d))
                })
                .unwrap_or(0);
            ordered.push(left.remove(ready));
        }
        ordered
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn package(name: &str, depends_on: &[&str]) -> Package {
        Package {
            name: name.to_owned(),
            published: true,
            lib: Some(name.replace('-', "_")),
            features: Vec::new(),
            depends_on: depends_on.iter().map(|d| (*d).to_owned()).collect(),
        }
    }

    #[test]
    fn each_published_crate_comes_after_the_members_it_depends_on() {
        let mut unpublished = package("examples", &["agents-runtime"]);
        unpublished.published = false;
        let ws = Workspace {
            target_dir: PathBuf::new(),
            packages: vec![
                package("agents-service", &["agents-runtime", "agents-core"]),
                unpublished,
                package("agents-runtime", &["agents-core", "agents-macros"]),
                package("agents-macros", &["agents-core"]),
                package("agents-core", &[]),
                // Before the others by name, after them by what it needs.
                package("agents-cli", &["agents-runtime"]),
            ],
        };
        let order: Vec<&str> = ws.published_in_dependency_order().iter().map(|p| p.name.as_str()).collect();
        assert_eq!(order, ["agents-core", "agents-macros", "agents-runtime", "agents-cli", "agents-service"]);
    }
}
