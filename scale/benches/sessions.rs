//! The memory of an idle session: heap bytes the process holds per finished one-turn
//! session, counted by a counting global allocator, against the bytes of its history.
//!
//! A runtime on the in-process store (the default) with an audit sink that keeps nothing and
//! the scripted model; `--sessions` sessions (20,000), one user each turn among 1,000, each
//! one turn: a user message of about 60 bytes and the model's short answer. After a warm-up
//! of 1,000 sessions (kept), the heap bytes allocated and not freed while the sessions are
//! made, divided by their number, against the bytes of the two messages' text (the
//! baseline: what the session must keep). The resident set's growth is printed beside it.
//!
//! `cargo bench -p scale --bench sessions`.

use agents_runtime::audit::{Appended, AuditRecord, AuditSink};
use agents_runtime::{Principal, RunResultExt as _, RunStatus, Runtime};
use scale::desk::{Desk, ORG, ROLE, model, roles};
use scale::figures::{arg, machine, rss_bytes};
use stats_alloc::{INSTRUMENTED_SYSTEM, Region, StatsAlloc};
use std::alloc::System;
use std::sync::Arc;

#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

/// Keeps no record: the sessions are measured, not the log.
struct Discard;

impl AuditSink for Discard {
    fn append(&self, record: AuditRecord) -> Appended<'_> {
        Appended::ready(Ok(record))
    }
}

const ANSWER: &str = "hello";

fn input(i: usize) -> String {
    format!("Please remember that my parking spot is number {i:06}.")
}

async fn one(rt: &Runtime, i: usize, session: &str) {
    let who = Principal::new(format!("u{}", i % 1000), ORG, ROLE);
    let out = rt.start::<Desk>(who, session, input(i)).expect("the run starts").wait().await;
    assert_eq!(out.status(), RunStatus::Completed);
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let sessions: usize = arg("sessions", 20_000);
    println!("{}", machine());
    // Idle sessions stay: the idle timeout (30 min) is not reached, and no sweep runs.
    let rt = Runtime::builder(Arc::new(Discard), Arc::new(model()))
        .roles(roles())
        .max_sessions(sessions + 1000)
        .sweep_every(None)
        .build();
    // Warm up: the runtime's own tables and the executor reach their steady size.
    for i in 0..1000 {
        one(&rt, i, &format!("warm-{i}")).await;
    }
    let rss = rss_bytes();
    let region = Region::new(GLOBAL);
    for i in 0..sessions {
        one(&rt, i, &format!("session-{i:06}")).await;
    }
    let change = region.change();
    let grown = rss_bytes().saturating_sub(rss);
    assert_eq!(rt.session_count(), sessions + 1000);
    let held = change.bytes_allocated as f64 - change.bytes_deallocated as f64 + change.bytes_reallocated as f64;
    let per = held / sessions as f64;
    let history = (input(0).len() + ANSWER.len()) as f64;
    println!("{sessions} idle sessions of one turn each (in-process store):");
    println!(
        "  heap held per session        {per:8.0} bytes  ({} allocations live per session)",
        (change.allocations as f64 - change.deallocations as f64) / sessions as f64
    );
    println!("  its history's text           {history:8.0} bytes  (the baseline)");
    println!(
        "  beyond its history           {:8.0} bytes  ({:.1}x the history; target <= 2048 bytes)",
        per - history,
        per / history
    );
    println!("  resident set growth          {:8.0} bytes per session", grown as f64 / sessions as f64);
}
