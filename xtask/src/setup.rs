//! `cargo xtask setup` and `cargo xtask test`: what the test suites need beyond Rust, found or
//! installed before any test runs.
//!
//! | what | who needs it | found as | Debian package |
//! |---|---|---|---|
//! | Chromium | the capability report's and the web console's browser tests | `AGENTS_CHROMIUM`, else `chromium`, `chromium-browser`, ... on `PATH` | `chromium` |
//! | PostgreSQL's server binaries | the state store's tests (throwaway clusters) | `/usr/lib/postgresql/*/bin/{initdb,pg_ctl}` | `postgresql` |
//! | GNU time | the CLI's peak-memory tests | `/usr/bin/time` | `time` |
//! | Node.js and npm | the MCP import tests, the console's browser test | `node` and `npm` on `PATH` | `nodejs npm` |
//! | the npm fixtures | the same tests | `node_modules` newer than `package-lock.json` | `npm ci --no-audit --no-fund` |
//!
//! Missing system packages are installed with `apt-get` when running as root, through
//! `sudo -n` when that works without a password, and otherwise not at all: the command stops
//! before any test and prints the exact commands to run. `--no-install` (or
//! `AGENTS_NO_INSTALL=1`) always stops that way. Only what is missing is installed (a `node`
//! already on `PATH` is kept: Debian's `nodejs` would conflict with one installed otherwise).

use crate::cmd::{self, run};
use std::path::{Path, PathBuf};
use std::process::Command;

/// The environment variable that stands for `--no-install`.
const NO_INSTALL_VAR: &str = "AGENTS_NO_INSTALL";

/// The npm fixtures, relative to the workspace root, each installed from its lock file.
const NPM_FIXTURES: [&str; 2] = ["agents-mcp/tests/fixtures/ts-mcp-server", "agents-service/tests/console-e2e"];

/// One thing the tests need from the system.
struct Prerequisite {
    what: &'static str,
    needed_by: &'static str,
    apt_packages: &'static [&'static str],
    found: fn() -> Option<String>,
}

const PREREQUISITES: [Prerequisite; 4] = [
    Prerequisite {
        what: "Chromium",
        needed_by: "the browser tests of the capability report and the web console",
        apt_packages: &["chromium"],
        found: chromium,
    },
    Prerequisite {
        what: "PostgreSQL's server binaries",
        needed_by: "the state store's PostgreSQL tests",
        apt_packages: &["postgresql"],
        found: postgres,
    },
    Prerequisite {
        what: "GNU time",
        needed_by: "the CLI's peak-memory tests",
        apt_packages: &["time"],
        found: gnu_time,
    },
    Prerequisite {
        what: "Node.js and npm",
        needed_by: "the MCP import tests and the web console's browser test",
        apt_packages: &["nodejs", "npm"],
        found: node_and_npm,
    },
];

fn chromium() -> Option<String> {
    let found =
        agents_test_support::find_chromium(std::env::var_os(agents_test_support::ENV_VAR), std::env::var_os("PATH"));
    found.ok().map(|p| p.display().to_string())
}

/// The newest `/usr/lib/postgresql/<version>/bin` with `initdb` and `pg_ctl`, where the state
/// store's harness looks for them.
fn postgres() -> Option<String> {
    let mut found: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .filter_map(Result::ok)
        .filter_map(|entry| {
            let version: u32 = entry.file_name().to_str()?.parse().ok()?;
            let bin = entry.path().join("bin");
            (bin.join("initdb").is_file() && bin.join("pg_ctl").is_file()).then_some((version, bin))
        })
        .collect();
    found.sort();
    found.pop().map(|(_, bin)| bin.display().to_string())
}

fn gnu_time() -> Option<String> {
    let time = Path::new("/usr/bin/time");
    time.is_file().then(|| time.display().to_string())
}

fn node_and_npm() -> Option<String> {
    let node = on_path("node")?;
    on_path("npm")?;
    let version = Command::new(&node).arg("--version").output().ok().filter(|o| o.status.success())?;
    Some(format!("{} {}", node.display(), String::from_utf8_lossy(&version.stdout).trim()))
}

fn on_path(name: &str) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|dir| dir.join(name))
        .find(|p| std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0))
}

/// How system packages can be installed here.
enum Installer {
    /// Running as root: `apt-get` directly.
    Root,
    /// `sudo -n` works without a password.
    Sudo,
    /// Neither: only the commands can be printed.
    None,
}

fn installer() -> Installer {
    if on_path("apt-get").is_none() {
        return Installer::None;
    }
    if running_as_root() {
        return Installer::Root;
    }
    let sudo = Command::new("sudo").args(["-n", "true"]).output();
    if sudo.is_ok_and(|o| o.status.success()) { Installer::Sudo } else { Installer::None }
}

/// `--no-install` from the arguments (removed from them) or the environment.
fn take_no_install(args: &mut Vec<String>) -> bool {
    let before = args.len();
    args.retain(|a| a != "--no-install");
    let from_env = std::env::var(NO_INSTALL_VAR).is_ok_and(|v| !v.is_empty() && v != "0");
    args.len() != before || from_env
}

/// `cargo xtask setup [--no-install]`.
pub(crate) fn setup_command(mut args: Vec<String>) -> Result<(), String> {
    let no_install = take_no_install(&mut args);
    if let Some(extra) = args.first() {
        return Err(format!("`setup` takes only `--no-install`, got `{extra}`"));
    }
    cmd::timed("setup", || setup(no_install))
}

/// `cargo xtask test [--no-install] [ARGS...]`: [`setup`], then `cargo test` over the whole
/// workspace (or the packages `ARGS` names) with `ARGS` passed through.
pub(crate) fn test(mut args: Vec<String>) -> Result<(), String> {
    let no_install = take_no_install(&mut args);
    cmd::timed("setup", || setup(no_install))?;
    let mut command = cmd::cargo();
    command.arg("test");
    // `-p`/`--package`/`--workspace`/`--manifest-path` choose the packages themselves.
    let chooses = chooses_packages(&args);
    if !chooses {
        command.arg("--workspace");
    }
    command.args(&args);
    cmd::timed("cargo test", || run(&mut command))
}

/// Whether `args` (for `cargo test`) choose the packages themselves (`-p`, `--package`,
/// `--workspace`, `--manifest-path`), so that `--workspace` must not be added.
fn chooses_packages(args: &[String]) -> bool {
    args.iter().take_while(|a| *a != "--").any(|a| {
        a.starts_with("-p") || a.starts_with("--package") || a == "--workspace" || a.starts_with("--manifest-path")
    })
}

/// Finds every prerequisite, installs what is missing (unless `no_install`), then installs the
/// npm fixtures whose `node_modules` is missing or older than their lock file. Stops before
/// anything runs when something is missing and cannot be installed, printing the commands.
pub(crate) fn setup(no_install: bool) -> Result<(), String> {
    let mut missing: Vec<&Prerequisite> = Vec::new();
    for p in &PREREQUISITES {
        match (p.found)() {
            Some(at) => eprintln!("xtask: {}: {at}", p.what),
            None => {
                eprintln!("xtask: {}: missing (needed by {})", p.what, p.needed_by);
                missing.push(p);
            }
        }
    }
    let root = cmd::root();
    let stale: Vec<&str> = NPM_FIXTURES.into_iter().filter(|dir| npm_fixture_is_stale(&root.join(dir))).collect();
    if missing.is_empty() && stale.is_empty() {
        return Ok(());
    }

    let packages: Vec<&str> = missing.iter().flat_map(|p| p.apt_packages.iter().copied()).collect();
    let how = if no_install { Installer::None } else { installer() };
    if !packages.is_empty() {
        let sudo = match how {
            Installer::Root => Some(false),
            Installer::Sudo => Some(true),
            Installer::None => None,
        };
        let Some(sudo) = sudo else {
            return Err(stop_with_commands(&packages, &stale, no_install));
        };
        apt_get(sudo, &["update", "-qq"])?;
        let mut install = vec!["install", "-y", "-qq", "--no-install-recommends"];
        install.extend(&packages);
        apt_get(sudo, &install)?;
        let still: Vec<&str> = missing.iter().filter(|p| (p.found)().is_none()).map(|p| p.what).collect();
        if !still.is_empty() {
            return Err(format!(
                "installed {} but still missing: {}. Install them yourself (see `cargo xtask setup --no-install`)",
                packages.join(" "),
                still.join(", ")
            ));
        }
    }
    for dir in NPM_FIXTURES {
        let dir = root.join(dir);
        if !npm_fixture_is_stale(&dir) {
            continue;
        }
        if no_install {
            return Err(stop_with_commands(&[], &stale, no_install));
        }
        eprintln!("xtask: installing the npm fixture in {} from its lock file", dir.display());
        run(Command::new("npm").args(["ci", "--no-audit", "--no-fund"]).current_dir(&dir)).map_err(|e| {
            format!("{e}: the npm fixture in {} could not be installed (is the npm registry reachable?)", dir.display())
        })?;
    }
    Ok(())
}

fn apt_get(sudo: bool, args: &[&str]) -> Result<(), String> {
    let mut command = if sudo {
        let mut c = Command::new("sudo");
        c.args(["-n", "env", "DEBIAN_FRONTEND=noninteractive", "apt-get"]);
        c
    } else {
        let mut c = Command::new("apt-get");
        c.env("DEBIAN_FRONTEND", "noninteractive");
        c
    };
    run(command.args(args))
}

/// A fixture whose `node_modules` is missing, or older than its `package-lock.json`.
fn npm_fixture_is_stale(dir: &Path) -> bool {
    let modified = |p: PathBuf| std::fs::metadata(p).and_then(|m| m.modified()).ok();
    match (modified(dir.join("node_modules")), modified(dir.join("package-lock.json"))) {
        (Some(installed), Some(lock)) => installed < lock,
        _ => true,
    }
}

/// The error that stops `setup`: what is missing and the exact commands that install it.
fn stop_with_commands(packages: &[&str], stale: &[&str], no_install: bool) -> String {
    let root = cmd::root();
    let mut text = String::from(if no_install {
        "stopped before running any test (--no-install); to set up this machine, run:\n\n"
    } else {
        "stopped before running any test: the missing packages cannot be installed from here (that needs `apt-get`, \
         and root or `sudo -n` without a password); run:\n\n"
    });
    if !packages.is_empty() {
        let sudo = if running_as_root() { "" } else { "sudo " };
        text.push_str(&format!(
            "    {sudo}apt-get update\n    {sudo}apt-get install -y --no-install-recommends {}\n",
            packages.join(" ")
        ));
        if packages.contains(&"nodejs") {
            text.push_str(
                "    (Node.js 20 or later: if your distribution's is older, install it from nodejs.org instead)\n",
            );
        }
    }
    let mut fixtures: Vec<&str> = stale.to_vec();
    if !packages.is_empty() {
        // Once node and npm exist, every fixture still to install needs `npm ci`.
        fixtures = NPM_FIXTURES.into_iter().filter(|d| npm_fixture_is_stale(&root.join(d))).collect();
    }
    for dir in fixtures {
        text.push_str(&format!("    (cd {} && npm ci --no-audit --no-fund)\n", root.join(dir).display()));
    }
    text.push_str("\nthen run `cargo xtask test` again");
    if no_install {
        text.push_str(
            " (or without --no-install and AGENTS_NO_INSTALL, to let it install them as root or through `sudo -n`)",
        );
    }
    text
}

/// Whether this process's real user is root (`Uid:` in `/proc/self/status`, which needs no
/// program on `PATH`).
fn running_as_root() -> bool {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status.lines().find_map(|l| l.strip_prefix("Uid:")).and_then(|ids| ids.split_whitespace().next()) == Some("0")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(args: &[&str]) -> Vec<String> {
        args.iter().map(|a| (*a).to_owned()).collect()
    }

    #[test]
    fn arguments_that_choose_packages_keep_cargo_test_off_the_whole_workspace() {
        for chooses in
            [&["-p", "agents-core"][..], &["-pagents-core"], &["--package=agents-core"], &["--workspace", "--no-run"]]
        {
            assert!(chooses_packages(&strings(chooses)), "{chooses:?}");
        }
        // Test names and arguments for the test binaries choose nothing.
        for not in [&[][..], &["run_confirm::"], &["--", "-p"], &["--release", "--", "--nocapture"]] {
            assert!(!chooses_packages(&strings(not)), "{not:?}");
        }
    }

    #[test]
    fn a_fixture_is_installed_again_when_its_lock_file_is_newer() {
        let dir = std::env::temp_dir().join(format!("xtask-fixture-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        assert!(npm_fixture_is_stale(&dir), "no lock file, no node_modules");
        std::fs::write(dir.join("package-lock.json"), "{}").unwrap();
        assert!(npm_fixture_is_stale(&dir), "no node_modules");
        std::fs::create_dir(dir.join("node_modules")).unwrap();
        let lock = std::fs::File::options().write(true).open(dir.join("package-lock.json")).unwrap();
        let earlier = std::time::SystemTime::now() - std::time::Duration::from_secs(60);
        lock.set_modified(earlier).unwrap();
        assert!(!npm_fixture_is_stale(&dir), "node_modules newer than the lock file");
        lock.set_modified(std::time::SystemTime::now() + std::time::Duration::from_secs(60)).unwrap();
        assert!(npm_fixture_is_stale(&dir), "the lock file changed after the install");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn the_stop_message_holds_the_commands_and_no_sudo_for_root() {
        let text = stop_with_commands(&["chromium", "time"], &[], true);
        assert!(text.contains("apt-get install -y --no-install-recommends chromium time"), "{text}");
        assert!(text.contains("apt-get update") && text.contains("cargo xtask test"), "{text}");
        assert_eq!(text.contains("sudo apt-get"), !running_as_root(), "{text}");
    }
}
