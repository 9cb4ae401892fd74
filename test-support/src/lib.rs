//! What the workspace's test suites share.
//!
//! [`chromium`] finds the browser that the capability report's test (`agents-cli`) and the web
//! console's test (`agents-service`, through playwright-core) drive, the same way for both:
//! the binary [`ENV_VAR`] names, else the first of [`NAMES`] on `PATH`. A test that needs the
//! browser and finds none fails and says what it looked for and how to install one; it never
//! passes without having run.

#![forbid(unsafe_code)]

use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// The environment variable that names the browser binary, ahead of `PATH`. The console's
/// browser driver reads the found path from it too.
pub const ENV_VAR: &str = "AGENTS_CHROMIUM";

/// The names Chromium and Chrome are installed under, searched on `PATH` in this order.
pub const NAMES: [&str; 5] = ["chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "chrome"];

/// How to install the browser on Debian by hand.
pub const INSTALL: &str = "apt-get update && apt-get install -y chromium";

/// The command that finds or installs everything the test suites need (the browser,
/// PostgreSQL, GNU time, Node and the npm fixtures); `cargo xtask test` runs it first.
pub const SETUP: &str = "cargo xtask setup";

/// Where the browser is: the file `named` names (which must be an executable file), else the
/// first of [`NAMES`] found in the directories of `path`. An empty `named` counts as unset.
/// The error says what was looked for.
pub fn find_chromium(named: Option<OsString>, path: Option<OsString>) -> Result<PathBuf, String> {
    if let Some(named) = named.filter(|n| !n.is_empty()) {
        let named = PathBuf::from(named);
        return if is_executable(&named) {
            Ok(named)
        } else {
            Err(format!("{ENV_VAR}={} is not an executable file", named.display()))
        };
    }
    let dirs: Vec<PathBuf> = path.as_deref().map(|p| std::env::split_paths(p).collect()).unwrap_or_default();
    for name in NAMES {
        if let Some(found) = dirs.iter().map(|d| d.join(name)).find(|c| is_executable(c)) {
            return Ok(found);
        }
    }
    Err(format!("none of {} is on PATH and {ENV_VAR} is not set", NAMES.join(", ")))
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// The browser for `test`, found in this process's environment ([`find_chromium`] on
/// [`ENV_VAR`] and `PATH`).
///
/// # Panics
///
/// When there is none: the message names the test, what was looked for and how to install
/// a browser or point [`ENV_VAR`] at one.
#[track_caller]
pub fn chromium(test: &str) -> PathBuf {
    chromium_in(test, std::env::var_os(ENV_VAR), std::env::var_os("PATH"))
}

#[track_caller]
fn chromium_in(test: &str, named: Option<OsString>, path: Option<OsString>) -> PathBuf {
    match find_chromium(named, path) {
        Ok(found) => found,
        Err(why) => panic!(
            "{test} needs Chromium or Chrome, and found none: {why}.\n\
             Run `{SETUP}` (or `cargo xtask test`), which installs it; or install Chromium yourself \
             (`{INSTALL}`), or point {ENV_VAR} at a Chromium or Chrome binary."
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_browser_is_found_as_users_install_it() {
        let dir = tempfile::tempdir().unwrap();
        let bin = |sub: &str, name: &str, mode: u32| {
            use std::os::unix::fs::PermissionsExt;
            let d = dir.path().join(sub);
            std::fs::create_dir_all(&d).unwrap();
            let f = d.join(name);
            std::fs::write(&f, "#!/bin/sh\n").unwrap();
            std::fs::set_permissions(&f, std::fs::Permissions::from_mode(mode)).unwrap();
            f
        };
        let path = |subs: &[&str]| Some(std::env::join_paths(subs.iter().map(|s| dir.path().join(s))).unwrap());
        let debian = bin("usr-bin", "chromium", 0o755);
        let ubuntu = bin("snap-bin", "chromium-browser", 0o755);
        let chrome = bin("opt-bin", "google-chrome", 0o755);
        bin("not-executable", "chromium", 0o644);
        assert_eq!(find_chromium(None, path(&["usr-bin"])), Ok(debian.clone()));
        assert_eq!(find_chromium(None, path(&["snap-bin"])), Ok(ubuntu.clone()));
        assert_eq!(find_chromium(None, path(&["opt-bin"])), Ok(chrome.clone()));
        // A file that cannot run is passed over; the earlier name wins across directories.
        assert_eq!(find_chromium(None, path(&["not-executable", "opt-bin", "snap-bin"])), Ok(ubuntu));
        // The variable wins over PATH, and must name a browser that runs.
        assert_eq!(find_chromium(Some(chrome.clone().into()), path(&["usr-bin"])), Ok(chrome));
        let wrong = find_chromium(Some(dir.path().join("nowhere").into()), path(&["usr-bin"])).unwrap_err();
        assert!(wrong.contains(ENV_VAR) && wrong.contains("nowhere"), "{wrong}");
        assert_eq!(find_chromium(Some(OsString::new()), path(&["usr-bin"])), Ok(debian));
        // Nothing found: the reason names every name searched.
        let none = find_chromium(None, path(&["not-executable"])).unwrap_err();
        assert!(NAMES.iter().all(|n| none.contains(n)) && none.contains(ENV_VAR), "{none}");
        assert!(find_chromium(Some(OsString::new()), None).is_err());
    }

    #[test]
    fn a_missing_browser_fails_the_test_and_says_how_to_get_one() {
        let dir = tempfile::tempdir().unwrap();
        let empty = Some(dir.path().as_os_str().to_owned());
        let failed = std::panic::catch_unwind(|| chromium_in("the console's browser test", None, empty)).unwrap_err();
        let message = failed.downcast_ref::<String>().expect("a formatted message");
        for part in ["the console's browser test", "chromium-browser", SETUP, INSTALL, ENV_VAR] {
            assert!(message.contains(part), "{part} missing from: {message}");
        }
        let named = Some(dir.path().join("nowhere").into_os_string());
        assert!(std::panic::catch_unwind(|| chromium_in("t", named, None)).is_err());
    }
}
