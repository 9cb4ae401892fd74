//! The workspace's own commands, run as `cargo xtask <command>` (an alias in
//! `.cargo/config.toml`).
//!
//! | command | what it does |
//! |---|---|
//! | `test [--no-install] [cargo test args]` | `setup`, then `cargo test --workspace` with the arguments |
//! | `setup [--no-install]` | finds or installs what the tests need (Chromium, PostgreSQL, GNU time, Node and npm, the npm fixtures) |
//! | `package` | `cargo package` (with verification) of every published crate, in dependency order |
//! | `docs` | `cargo doc --no-deps --workspace` with warnings as errors, and the docs.rs build of the published crates |
//! | `features` | each library crate checked with no default features and with each feature alone; the runtime's no-default tests |
//! | `api [--check]` | writes (or compares) the public-API listing of each library crate in `api/` |
//! | `starter` | builds and tests `starter/` against the crates of this workspace |
//! | `graph [--check]` | the circles of files in each crate (files that import from each other, directly or through others); `--check` fails on any |
//! | `measures [--check] [--top N]` | the longest functions and largest files of each crate; `--check` fails on a function over 80 lines or a file over 800 |
//!
//! `--no-install` (or `AGENTS_NO_INSTALL=1`) makes `setup` and `test` stop before any test,
//! printing the commands that install what is missing, instead of running them.

mod api;
mod checks;
mod cmd;
mod graph;
mod measures;
mod setup;
mod sources;
mod starter;

use std::process::ExitCode;

const USAGE: &str = "\
usage: cargo xtask <command>

  test [--no-install] [ARGS...]  set up what the tests need, then `cargo test --workspace ARGS...`
  setup [--no-install]           find or install Chromium, PostgreSQL, GNU time, Node/npm and the npm fixtures
  package                        `cargo package` (verified) of every published crate
  docs                           the API docs with warnings as errors, and the docs.rs build
  features                       each library crate with no default features and each feature alone,
                                 and the runtime's tests without its default features
  api [--check]                  write (or compare with) the public-API listings in api/
  starter                        build and test starter/ against this workspace's crates
  graph [--check]                the circles of files in each crate; --check fails on any
  measures [--check] [--top N]   the longest functions and largest files; --check fails on a
                                 function over 80 lines or a file over 800

--no-install (or AGENTS_NO_INSTALL=1) prints the install commands instead of running them.";

fn main() -> ExitCode {
    if let Some(code) = checks::as_rustdoc() {
        return code;
    }
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    if args.is_empty() {
        eprintln!("{USAGE}");
        return ExitCode::from(2);
    }
    let command = args.remove(0);
    let outcome = match command.as_str() {
        "test" => setup::test(args),
        "setup" => setup::setup_command(args),
        "package" => no_args(&command, &args).and_then(|()| checks::package()),
        "docs" => no_args(&command, &args).and_then(|()| checks::docs()),
        "features" => no_args(&command, &args).and_then(|()| checks::features()),
        "api" => api::run_api(args),
        "starter" => no_args(&command, &args).and_then(|()| starter::run_starter()),
        "graph" => graph::run_graph(args),
        "measures" => measures::run_measures(args),
        "help" | "--help" | "-h" => {
            println!("{USAGE}");
            Ok(())
        }
        other => Err(format!(
            "unknown command `{other}`; expected one of `test`, `setup`, `package`, `docs`, `features`, `api`, `starter`, `graph`, `measures`\n\n{USAGE}"
        )),
    };
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(why) => {
            eprintln!("xtask {command}: {why}");
            ExitCode::FAILURE
        }
    }
}

fn no_args(command: &str, args: &[String]) -> Result<(), String> {
    match args.first() {
        None => Ok(()),
        Some(extra) => Err(format!("`{command}` takes no arguments, got `{extra}`\n\n{USAGE}")),
    }
}
