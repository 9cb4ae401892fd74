//! The crate's integration tests, one module per topic, linked into one test binary (one
//! link of the crate and its dependencies instead of one per file).
//!
//! To add tests: write `tests/suite/<topic>.rs` (its `//!` says what it shows) and add
//! `mod <topic>;` below in alphabetical order; shared helpers are reached with
//! `use crate::<helper>;` (declared here with `#[path]`). Run one topic with `cargo test -p agents-core --test suite <topic>::`.
//!
//! A test that changes the whole process (environment variables, resource limits, a panic
//! hook, a sandbox, a custom `main`) stays a file of its own at `tests/<name>.rs`, its own
//! binary.

// Each topic is a private module: a `pub` item there is as reachable as it was in a binary of
// its own.
#![allow(unreachable_pub)]

mod audit_chain;
mod audit_render;
mod canonical_props;
mod diff;
mod diff_agents;
mod diff_audit_values;
mod diff_expose;
mod diff_knowledge;
mod diff_skills;
mod diff_surface;
mod graph_diff;
mod graph_parse;
mod manifest_parse;
mod redact;
mod redact_schema;
mod reviewed;
mod schema_cover;
mod typed_skills;
