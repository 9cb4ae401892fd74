//! The audit records of a run: the fields every record repeats, the parts that vary, the
//! time stamp, and the final record a call owes once it has begun.

use super::Undecided;
use super::context::RunCtx;
use super::runtime::Inner;
use crate::audit::{AuditRecord, AuditResult, AuditStatus};
use crate::core::{Principal, SharedStr, SharedValue, Tier};
use crate::tool::Registry;
use std::sync::Arc;

/// The largest buffer (bytes) a thread keeps for the canonical text of results it hashes.
pub(super) const RESULT_TEXT_KEPT: usize = 64 * 1024;

/// The fields every audit record of one run repeats.
pub(super) struct RecordIds {
    pub(super) run_id: SharedStr,
    pub(super) session_id: SharedStr,
    pub(super) request_id: SharedStr,
    pub(super) user_id: SharedStr,
    pub(super) org_id: SharedStr,
    pub(super) role: SharedStr,
    pub(super) agent: SharedStr,
    pub(super) manifest_sha256: SharedStr,
}

impl RecordIds {
    /// A record of this run with the parts that vary.
    pub(super) fn record(&self, f: RecordFields) -> AuditRecord {
        AuditRecord {
            seq: 0,
            ts: now_rfc3339(),
            run_id: self.run_id.clone(),
            session_id: self.session_id.clone(),
            request_id: self.request_id.clone(),
            call_id: f.call_id,
            epoch: None,
            user_id: self.user_id.clone(),
            org_id: self.org_id.clone(),
            role: self.role.clone(),
            agent: self.agent.clone(),
            tool: f.tool,
            tier: f.tier,
            status: f.status,
            reason: f.reason,
            title: f.title,
            args: f.args,
            args_hash: f.args_hash,
            result: f.result,
            manifest_sha256: self.manifest_sha256.clone(),
            prev_hash: String::new(),
            hash: String::new(),
        }
    }

    pub(super) fn new<A: Registry>(run_id: &str, session_id: &str, request_id: &str, principal: &Principal) -> Self {
        RecordIds {
            run_id: run_id.into(),
            session_id: session_id.into(),
            request_id: request_id.into(),
            user_id: principal.user_id.as_str().into(),
            org_id: principal.org_id.as_str().into(),
            role: principal.role.as_str().into(),
            agent: A::SPEC.name.into(),
            manifest_sha256: A::MANIFEST_SHA256.into(),
        }
    }
}

/// The parts of an audit record that vary; call id, tool and title are shared between the
/// records of one call.
pub(super) struct RecordFields {
    pub(super) call_id: Option<SharedStr>,
    pub(super) tool: Option<SharedStr>,
    pub(super) tier: Option<Tier>,
    pub(super) status: AuditStatus,
    pub(super) reason: Option<String>,
    pub(super) title: Option<SharedStr>,
    pub(super) args: Option<SharedValue>,
    pub(super) args_hash: Option<String>,
    pub(super) result: Option<AuditResult>,
}

impl RecordFields {
    pub(super) fn reason(mut self, reason: impl Into<String>) -> Self {
        self.reason = Some(reason.into());
        self
    }

    pub(super) fn new(status: AuditStatus) -> Self {
        RecordFields {
            call_id: None,
            tool: None,
            tier: None,
            status,
            reason: None,
            title: None,
            args: None,
            args_hash: None,
            result: None,
        }
    }
}

/// Now, in UTC, as RFC 3339 (fraction without trailing zeros, `Z`).
pub(super) fn now_rfc3339() -> String {
    rfc3339(time::OffsetDateTime::now_utc())
}

/// `t` as RFC 3339; empty outside the years RFC 3339 can write (0000 to 9999).
pub(super) fn rfc3339(t: time::OffsetDateTime) -> String {
    t.format(&time::format_description::well_known::Rfc3339).unwrap_or_default()
}

/// The final record a call owes once its `proposed` record is durable (or, for an approved
/// action, once it is about to run). Dropped while still owed (the call's future was dropped,
/// its task aborted, its tool panicked, or a record write failed), it writes that record on
/// its own: the status it was made with, and the reason the run was stopped for or
/// [`Undecided::Abandoned`]. [`FinalOwed::paid`] is called right before the call hands its own
/// final record to the sink.
pub(super) struct FinalOwed<'a, A: Registry> {
    ctx: &'a Arc<RunCtx<A>>,
    record: Option<RecordFields>,
}

impl<'a, A: Registry> FinalOwed<'a, A> {
    pub(super) fn new(ctx: &'a Arc<RunCtx<A>>, record: RecordFields) -> Self {
        FinalOwed { ctx, record: Some(record) }
    }

    /// From now on the outcome is unknown if the call goes away: a `failed` record is owed.
    pub(super) fn running(&mut self) {
        if let Some(r) = &mut self.record {
            r.status = AuditStatus::Failed;
        }
    }

    pub(super) fn paid(mut self) {
        self.record = None;
    }
}

impl<A: Registry> Drop for FinalOwed<'_, A> {
    fn drop(&mut self) {
        if let Some(mut f) = self.record.take() {
            let why = self.ctx.stop_reason.get().copied().unwrap_or(Undecided::Abandoned);
            f.reason = Some(why.reason());
            tracing::warn!(run_id = %self.ctx.ids.run_id, reason = why.code(), "a call ended without its final record; writing it");
            append_detached(&self.ctx.inner, self.ctx.ids.record(f));
        }
    }
}

/// Writes a record nobody waits for. On a tokio runtime it is written by a task the runtime
/// counts (see [`Runtime::records_settled`](super::Runtime::records_settled)); without one, or
/// if that task never runs, the sink is polled once here, which hands the record to a sink that
/// writes on its own thread.
pub(super) fn append_detached(inner: &Arc<Inner>, record: AuditRecord) {
    struct Detached {
        inner: Arc<Inner>,
        record: Option<AuditRecord>,
    }
    impl Drop for Detached {
        fn drop(&mut self) {
            if let Some(record) = self.record.take() {
                let mut append = std::pin::pin!(self.inner.audit.append(record));
                let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
                if append.as_mut().poll(&mut cx).is_pending() {
                    tracing::error!("a final audit record was handed to a sink that did not finish it at once");
                }
            }
            self.inner.detached.leave();
        }
    }
    inner.detached.enter();
    let mut write = Detached { inner: inner.clone(), record: Some(record) };
    match tokio::runtime::Handle::try_current() {
        Ok(handle) => {
            handle.spawn(async move {
                if let Some(record) = write.record.take()
                    && let Err(e) = write.inner.audit.append(record).await
                {
                    tracing::error!(error = %e, "a final audit record could not be written");
                }
                drop(write);
            });
        }
        Err(_) => drop(write),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_keep_their_fraction_and_zone() {
        let at = |nanos: i128| rfc3339(time::OffsetDateTime::from_unix_timestamp_nanos(nanos).unwrap());
        assert_eq!(at(1_796_036_645_120_000_000), "2026-11-30T11:04:05.12Z");
        assert_eq!(at(1_796_036_645_999_999_999), "2026-11-30T11:04:05.999999999Z");
        assert_eq!(at(1_796_036_646_000_000_000), "2026-11-30T11:04:06Z");
        assert_eq!(at(0), "1970-01-01T00:00:00Z");
        assert_eq!(at(7), "1970-01-01T00:00:00.000000007Z");
        assert_eq!(at(-1), "1969-12-31T23:59:59.999999999Z");
        assert_eq!(at(253_402_300_799_000_000_000), "9999-12-31T23:59:59Z");
    }

    #[test]
    fn the_clock_reads_as_rfc3339_now() {
        let before = time::OffsetDateTime::now_utc();
        let text = now_rfc3339();
        let after = time::OffsetDateTime::now_utc();
        let read = time::OffsetDateTime::parse(&text, &time::format_description::well_known::Rfc3339).unwrap();
        assert!(before <= read && read <= after, "{before} <= {text} <= {after}");
    }
}
