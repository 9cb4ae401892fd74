//! The crate's integration tests, one module per topic, linked into one test binary.
//!
//! To add tests: write `tests/suite/<topic>.rs` (its `//!` says what it shows) and add
//! `mod <topic>;` below in alphabetical order. Run one topic with
//! `cargo test -p agents-eval --test suite <topic>::`.

// Each topic is a private module: a `pub` item there is as reachable as it was in a binary of
// its own.
#![allow(unreachable_pub)]

mod fixture;
mod judge;
mod probe_set;
mod run;
mod stats;
