//! The crate's integration tests, one module per topic, linked into one test binary (one
//! link of the crate and its dependencies instead of one per file).
//!
//! To add tests: write `tests/suite/<topic>.rs` (its `//!` says what it shows) and add
//! `mod <topic>;` below in alphabetical order; shared helpers are reached with
//! `use crate::common;`. Run one topic with `cargo test -p agents-service --test suite <topic>::`.
//!
//! A test that changes the whole process (environment variables, resource limits, a panic
//! hook, a sandbox, a custom `main`) stays a file of its own at `tests/<name>.rs`, its own
//! binary.

// Each topic is a private module: a `pub` item there is as reachable as it was in a binary of
// its own.
#![allow(unreachable_pub)]

#[path = "../common/mod.rs"]
mod common;

mod answer;
mod composite;
mod composite_resume;
mod console_browser;
mod console_composite;
mod console_sessions;
mod hosts;
mod http;
mod jwt;
mod listener;
mod mcp_http;
mod org_scope;
mod reread;
mod second_confirmation;
mod sqlite;
mod store_reader;
