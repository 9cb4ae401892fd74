//! Memory of many finished sessions: the growth of the resident set for 10^5 of them, bounded
//! per session by the history caps (`history_messages`, `history_bytes`); purging idle
//! sessions drops them.
//!
//! `cargo test -p agents-runtime --test suite session_memory:: -- --nocapture` prints the figures.

use agents_runtime::BoxFuture;
use agents_runtime::RunResultExt as _;
use agents_runtime::audit::{Appended, AuditRecord, AuditSink};
use agents_runtime::provider::scripted::reply;
use agents_runtime::provider::{ChatRequest, ChatResponse, Provider, ProviderError, TokenSink};
use agents_runtime::{Principal, RoleMap, RunStatus, Runtime, agent, permissions, tool};
use std::sync::Arc;
use std::time::Duration;

/// The process's resident set size in bytes (`VmRSS` of `/proc/self/status`).
fn rss() -> isize {
    let status = std::fs::read_to_string("/proc/self/status").expect("this test reads /proc/self/status (Linux)");
    let line = status.lines().find(|l| l.starts_with("VmRSS:")).expect("VmRSS in /proc/self/status");
    let kib: isize = line.split_whitespace().nth(1).and_then(|n| n.parse().ok()).expect("VmRSS in kB");
    kib * 1024
}

permissions! {
    pub mod perms { note.read }
}

/// Reads a note.
#[tool(permission = perms::note::read)]
async fn read_note(id: u32) -> Result<String, String> {
    Ok(format!("note {id}"))
}

agent! {
    /// Notes.
    pub struct Notes;
    tools: [read_note],
}

/// Keeps no record (the sessions are measured, not the log).
struct Discard;
impl AuditSink for Discard {
    fn append(&self, record: AuditRecord) -> Appended<'_> {
        Appended::ready(Ok(record))
    }
}

/// Answers every request with a short reply and keeps nothing.
struct Echo;
impl Provider for Echo {
    fn name(&self) -> &str {
        "echo"
    }
    fn model(&self) -> &str {
        "echo"
    }
    fn is_paid(&self) -> bool {
        false
    }
    fn chat<'a>(
        &'a self,
        _: &'a ChatRequest,
        _: &'a dyn TokenSink,
    ) -> BoxFuture<'a, Result<ChatResponse, ProviderError>> {
        Box::pin(async { Ok(reply("Noted, thank you.")) })
    }
}

const SESSIONS: usize = 100_000;

#[tokio::test(start_paused = true)]
async fn a_hundred_thousand_finished_sessions_are_bounded_and_purged() {
    let rt = Runtime::builder(Arc::new(Discard), Arc::new(Echo))
        .roles(RoleMap::new().role("reader", ["note.read"]))
        .session_idle_timeout(Duration::from_secs(600))
        // Every session is held (the cap) until purged by hand (no sweep).
        .max_sessions(SESSIONS)
        .sweep_every(None)
        .build();
    let who = |i: usize| Principal::new(format!("user-{}", i % 1000), "org1", "reader");
    // Warm up: the runtime's own tables and the executor reach their steady size.
    for i in 0..1000 {
        let out = rt.start::<Notes>(who(i), &format!("warm-{i}"), "hello".into()).unwrap().wait().await;
        assert_eq!(out.status(), RunStatus::Completed);
    }
    tokio::time::advance(Duration::from_secs(601)).await;
    rt.purge_expired();
    let before = rss();
    for i in 0..SESSIONS {
        let input = format!("Please remember that my parking spot is number {i}.");
        let out = rt.start::<Notes>(who(i), &format!("session-{i:06}"), input).unwrap().wait().await;
        assert_eq!(out.status(), RunStatus::Completed);
    }
    let held = rss() - before;
    let per_session = held as f64 / SESSIONS as f64;
    assert_eq!(rt.session_count(), SESSIONS);
    eprintln!("{SESSIONS} finished sessions grew the resident set by {held} bytes: {per_session:.0} bytes per session");
    // Owner (three short strings), two history messages of about 60 and 20 bytes, the map
    // entry and its key, and the allocator's slack: under 2 KiB each.
    assert!(per_session < 2048.0, "{per_session:.0} bytes per finished session");
    tokio::time::advance(Duration::from_secs(601)).await;
    assert_eq!(rt.purge_expired(), SESSIONS);
    assert_eq!(rt.session_count(), 0, "idle sessions are dropped");
}
