//! A run's events as server-sent events: numbered per run, resumable with `Last-Event-ID`.

use crate::Shared;
use crate::runs::{Numbered, RunEntry, lock};
use agents_runtime::audit::AuditRecord;
use axum::response::sse::Event as SseEvent;
use futures::Stream;
use serde_json::json;
use std::collections::VecDeque;
use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

/// Events taken from the journal per step.
const BATCH: usize = 64;
/// The most audit records a gap is filled with.
pub(crate) const GAP_RECORDS: usize = 1000;

/// One open event stream of a principal, counted against the per-user cap while it lives.
pub(crate) struct StreamSlot {
    shared: Arc<Shared>,
    key: (String, String),
}

impl StreamSlot {
    /// A slot for `key` (organisation, user), or `None` when the user holds `max` already.
    pub(crate) fn take(shared: &Arc<Shared>, key: (String, String), max: usize) -> Option<Self> {
        let mut streams = lock(&shared.streams);
        let n = streams.entry(key.clone()).or_insert(0);
        if *n >= max {
            return None;
        }
        *n += 1;
        Some(StreamSlot { shared: shared.clone(), key })
    }
}

impl Drop for StreamSlot {
    fn drop(&mut self) {
        let mut streams = lock(&self.shared.streams);
        if let Some(n) = streams.get_mut(&self.key) {
            *n -= 1;
            if *n == 0 {
                streams.remove(&self.key);
            }
        }
    }
}

fn numbered(e: &Numbered) -> SseEvent {
    SseEvent::default().id(e.id.to_string()).event(e.kind).data(&*e.data)
}

/// A record of the run, as an event without an id (the client's last id stays where it was).
pub(crate) fn record_event(r: &AuditRecord) -> SseEvent {
    SseEvent::default().event("record").data(r.to_line())
}

struct State {
    shared: Arc<Shared>,
    entry: Arc<RunEntry>,
    cursor: u64,
    progress: tokio::sync::watch::Receiver<(u64, bool)>,
    pending: VecDeque<SseEvent>,
    idle: Duration,
    done: bool,
    _slot: StreamSlot,
}

/// The events of `entry` after `cursor`. Events the journal no longer holds are announced by
/// a `gap` event (code `events_lost`) followed by the run's audit records from the log.
pub(crate) fn run_events(
    shared: Arc<Shared>,
    entry: Arc<RunEntry>,
    cursor: u64,
    slot: StreamSlot,
) -> impl Stream<Item = Result<SseEvent, Infallible>> {
    let idle = shared.limits.sse_idle_timeout;
    let progress = entry.progress.subscribe();
    let state = State { shared, entry, cursor, progress, pending: VecDeque::new(), idle, done: false, _slot: slot };
    futures::stream::unfold(state, |mut s| async move {
        loop {
            if let Some(e) = s.pending.pop_front() {
                return Some((Ok(e), s));
            }
            if s.done {
                return None;
            }
            let ended = s.progress.borrow_and_update().1;
            let (first_held, batch) = {
                let journal = lock(&s.entry.journal);
                (journal.first_held(), journal.after(s.cursor, BATCH))
            };
            if s.cursor + 1 < first_held {
                let resume_at = first_held - 1;
                let records = run_records(&s.shared, &s.entry.run_id).await;
                let (count, truncated) =
                    (records.as_ref().map_or(0, Vec::len), records.as_ref().is_ok_and(|r| r.len() >= GAP_RECORDS));
                s.pending.push_back(
                    SseEvent::default().id(resume_at.to_string()).event("gap").data(
                        json!({
                            "code": "events_lost",
                            "message": "events after your last id are no longer held; the run's audit records follow, then the events still held",
                            "from": s.cursor + 1,
                            "to": resume_at,
                            "records": count,
                            "records_truncated": truncated,
                            "records_error": records.as_ref().err(),
                        })
                        .to_string(),
                    ),
                );
                for r in records.iter().flatten() {
                    s.pending.push_back(record_event(r));
                }
                s.cursor = resume_at;
                continue;
            }
            if let Some(last) = batch.last() {
                s.cursor = last.id;
                s.pending.extend(batch.iter().map(numbered));
                continue;
            }
            if ended {
                return None;
            }
            match tokio::time::timeout(s.idle, s.progress.changed()).await {
                Ok(Ok(())) => {}
                // The entry is gone (cannot happen while we hold it) or nothing for too long:
                // the client reconnects with its last id.
                Ok(Err(_)) | Err(_) => {
                    s.pending.push_back(SseEvent::default().event("idle").data(
                        json!({"code": "idle_timeout", "message": "no event for a while; reconnect with Last-Event-ID to go on"}).to_string(),
                    ));
                    s.done = true;
                }
            }
        }
    })
}

/// The audit records of a run, in log order (at most [`GAP_RECORDS`]).
pub(crate) async fn run_records(shared: &Arc<Shared>, run_id: &str) -> Result<Vec<AuditRecord>, String> {
    let reader = shared.audit_reader.clone();
    let run_id = run_id.to_owned();
    tokio::task::spawn_blocking(move || {
        let mut out = Vec::new();
        reader
            .scan(&mut |r| {
                if *r.run_id == *run_id {
                    out.push(r.clone());
                    if out.len() >= GAP_RECORDS {
                        return std::ops::ControlFlow::Break(());
                    }
                }
                std::ops::ControlFlow::Continue(())
            })
            .map(|()| out)
            .map_err(|e| e.to_string())
    })
    .await
    .map_err(|e| e.to_string())?
}
