//! The crate's integration tests, one module per topic, linked into one test binary (one
//! link of the crate and its dependencies instead of one per file).
//!
//! To add tests: write `tests/suite/<topic>.rs` (its `//!` says what it shows) and add
//! `mod <topic>;` below in alphabetical order; shared helpers are reached with
//! `use crate::<helper>;` (declared here with `#[path]`). Run one topic with `cargo test -p examples --test suite <topic>::`.
//!
//! A test that changes the whole process (environment variables, resource limits, a panic
//! hook, a sandbox, a custom `main`) stays a file of its own at `tests/<name>.rs`, its own
//! binary (`kyc_isolated` is one).

// Each topic is a private module: a `pub` item there is as reachable as it was in a binary of
// its own.
#![allow(unreachable_pub)]

// The runtime's helpers for tests of runs (a tree's confirmations, a call's statuses, the chain).
#[path = "../../../agents-runtime/tests/run_common/mod.rs"]
mod run_common;

mod clinic;
mod composite;
mod console;
mod eval;
mod helpdesk;
mod kyc;
mod kyc_supervisor;
mod kyc_typed_skill;
mod manifest_baseline;
mod second_card;
