//! The answering start: `POST /v1/runs` with RFC 7240's `Prefer: wait=<seconds>` answers
//! with the run's state once the run ends (it answered, failed or was stopped) or waits for a
//! person's decision, if that happens within the bound; otherwise with the usual start answer
//! (run id, where to stream its events).
//!
//! Why a request header and not a field of the start body: the bound is about this one
//! exchange, not about the run (the run is the same whether its starter waits or not), and
//! RFC 7240 names exactly this (`wait`, answered with `Preference-Applied`), so a proxy or a
//! client library that knows the header needs nothing of this service's.
//!
//! What holds:
//! - the answer is the body `GET /v1/runs/{id}` gives ([`RunSummary`]), built by the same
//!   code, never a second rendering of it;
//! - a run that stops for a person's decision is answered at once, `running` with the call
//!   in `waiting_for`: no request is held for a person;
//! - the bound is the service's to cap ([`ServiceLimits::max_answer_wait`], and below
//!   [`ServiceLimits::request_timeout`]): a malformed, repeated or too large `wait` gets 400
//!   `invalid_prefer` before anything starts;
//! - the run is the service's, not the request's: a client that goes away while it waits
//!   drops only its wait; the run goes on, its events journaled and streamable as any run's.
//!
//! [`ServiceLimits::max_answer_wait`]: crate::ServiceLimits::max_answer_wait
//! [`ServiceLimits::request_timeout`]: crate::ServiceLimits::request_timeout

use crate::ServiceLimits;
use crate::error::ApiError;
use crate::runs::{RunEntry, RunSummary, lock};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use std::time::Duration;

/// The header that tells a client the body is the run's state.
pub(crate) const PREFERENCE_APPLIED: &str = "preference-applied";

/// The longest `wait` this service takes: the configured cap, and always under the request
/// timeout (a wait that long would be cut by it).
fn longest(limits: &ServiceLimits) -> u64 {
    let under_timeout = limits.request_timeout.as_secs().saturating_sub(1);
    limits.max_answer_wait.as_secs().min(under_timeout)
}

fn invalid(message: String) -> ApiError {
    ApiError::new(StatusCode::BAD_REQUEST, "invalid_prefer", message)
}

/// The `wait` a start request asks for (`Prefer: wait=<seconds>`, RFC 7240), if any. Other
/// preferences are ignored, as the RFC says; a `wait` that is not a whole number of seconds,
/// is given twice, or exceeds the cap is refused with what to send instead.
pub(crate) fn requested_wait(headers: &HeaderMap, limits: &ServiceLimits) -> Result<Option<u64>, ApiError> {
    let max = longest(limits);
    let mut wait = None;
    for value in headers.get_all("prefer") {
        let text = value.to_str().map_err(|_| invalid("the Prefer header is not visible ASCII".into()))?;
        for preference in text.split(',') {
            let mut parts = preference.split(';').next().unwrap_or("").splitn(2, '=');
            let name = parts.next().unwrap_or("").trim();
            if !name.eq_ignore_ascii_case("wait") {
                continue;
            }
            let given = parts.next().map(str::trim).unwrap_or("");
            let digits = !given.is_empty() && given.bytes().all(|b| b.is_ascii_digit());
            let secs = digits.then(|| given.parse::<u64>().ok()).flatten().ok_or_else(|| {
                invalid(format!("`wait={given}` is not a whole number of seconds; send `Prefer: wait=<0 to {max}>`"))
            })?;
            if wait.replace(secs).is_some() {
                return Err(invalid("`wait` is given more than once; send one `Prefer: wait=<seconds>`".into()));
            }
            if secs > max {
                return Err(invalid(format!(
                    "`wait={secs}` is longer than this service waits ({max} s); send a shorter wait, or none and stream the run's events"
                )));
            }
        }
    }
    Ok(wait)
}

/// The run's state, if it has something to tell now: it ended, or it waits for a decision.
fn settled(entry: &RunEntry) -> Option<RunSummary> {
    let ended = lock(&entry.ended).is_some();
    let waits = !lock(&entry.journal).waiting.is_empty();
    (ended || waits).then(|| entry.summary())
}

/// Waits at most `bound` for `entry` to end or to wait for a decision; its state then, or
/// `None` when the bound passed first. Dropping this future (the client went away) leaves
/// the run as it is.
pub(crate) async fn answer(entry: &RunEntry, bound: Duration) -> Option<RunSummary> {
    // Subscribed before the first look: a change after the look wakes the wait below.
    let mut progress = entry.progress.subscribe();
    let until = tokio::time::Instant::now() + bound;
    loop {
        if let Some(summary) = settled(entry) {
            return Some(summary);
        }
        match tokio::time::timeout_at(until, progress.changed()).await {
            Ok(Ok(())) => {}
            // The entry holds the sender, so it cannot be gone while we hold the entry.
            Ok(Err(_)) => return settled(entry),
            Err(_) => return None,
        }
    }
}

/// The `Preference-Applied` value of an answered `wait`.
pub(crate) fn applied(secs: u64) -> HeaderValue {
    HeaderValue::from_str(&format!("wait={secs}")).unwrap_or_else(|_| HeaderValue::from_static("wait"))
}
