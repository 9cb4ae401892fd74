//! The crate's integration tests, one module per topic, linked into one test binary.
//!
//! To add tests: write `tests/suite/<topic>.rs` (its `//!` says what it shows), add
//! `mod <topic>;` below in alphabetical order, and reach the shared helpers as
//! `use crate::mcp_common;` (`import_common`, and the runtime's `run_common`). Run one file's
//! tests with `cargo test -p agents-mcp --test suite <topic>::`.
//!
//! A test that changes the whole process (resource limits) stays a file of its own at
//! `tests/<name>.rs`, its own binary: `mcp_http_descriptors` and `mcp_http_limits`.

// Each topic is a private module: a `pub` item there is as reachable as it was in a binary of
// its own.
#![allow(unreachable_pub)]

#[path = "../import_common/mod.rs"]
mod import_common;
#[path = "../mcp_common/mod.rs"]
mod mcp_common;
// The runtime's helpers for tests of runs (execution counts, records by status, events).
#[path = "../../../agents-runtime/tests/run_common/mod.rs"]
mod run_common;

mod mcp_composite;
mod mcp_composite_http;
mod mcp_decider_view;
mod mcp_front_door_expose;
mod mcp_http;
mod mcp_http_cross_user;
mod mcp_import;
mod mcp_import_ts;
mod mcp_origins;
mod mcp_outcomes;
mod mcp_second_confirmation;
mod mcp_stdio;
// The order flow both composite suites serve, its model and the person behind a client.
mod order_flow;
