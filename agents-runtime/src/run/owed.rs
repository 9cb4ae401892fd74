//! The final record a call owes once it has begun: written by the call, or, when the call goes
//! away first (its future dropped, its task aborted, a record write failed), on its own.

use super::decision::Undecided;
use super::record::{RecordFields, RecordOf};
use super::scope::Run;
use crate::audit::AuditStatus;
use agents_core::SharedValue;
use std::sync::Arc;

/// The final record a call owes once its `proposed` record is durable (or, for an approved
/// action, once it is about to run). Dropped while still owed (the call's future was dropped,
/// its task aborted, its tool panicked, or a record write failed), it writes that record on
/// its own: the status it was made with, and the reason the run was stopped for or
/// [`Undecided::Abandoned`]. [`FinalOwed::paid`] is called right before the call hands its own
/// final record to the sink.
pub(super) struct FinalOwed<'a, R: Run> {
    ctx: &'a Arc<R>,
    record: Option<RecordFields>,
}

impl<'a, R: Run> FinalOwed<'a, R> {
    pub(super) fn new(ctx: &'a Arc<R>, record: RecordFields) -> Self {
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

impl<R: Run> Drop for FinalOwed<'_, R> {
    fn drop(&mut self) {
        if let Some(f) = self.record.take() {
            write_owed::<R>(self.ctx, f);
        }
    }
}

/// A read call's final record while its tool runs: like [`FinalOwed`], but the record is
/// built only if it is written (from the call's own record builder and arguments), so a call
/// that finishes builds nothing here.
pub(super) struct ReadOwed<'a, R: Run, F: RecordOf> {
    ctx: &'a Arc<R>,
    base: &'a F,
    args: &'a SharedValue,
    owed: bool,
}

impl<'a, R: Run, F: RecordOf> ReadOwed<'a, R, F> {
    /// A `failed` record is owed from now on.
    pub(super) fn new(ctx: &'a Arc<R>, base: &'a F, args: &'a SharedValue) -> Self {
        ReadOwed { ctx, base, args, owed: true }
    }

    /// The call hands its own final record to the sink.
    pub(super) fn paid(mut self) {
        self.owed = false;
    }
}

impl<R: Run, F: RecordOf> Drop for ReadOwed<'_, R, F> {
    fn drop(&mut self) {
        if self.owed {
            write_owed::<R>(self.ctx, (self.base)(AuditStatus::Failed, self.args.clone()));
        }
    }
}

/// Writes a final record a call still owed when it went away, with the reason the run was
/// stopped for or [`Undecided::Abandoned`].
fn write_owed<R: Run>(ctx: &R, mut f: RecordFields) {
    let why = ctx.stop_reason().unwrap_or(Undecided::Abandoned);
    f.reason = Some(why.reason());
    let recorder = ctx.recorder();
    tracing::warn!(run_id = %recorder.ids.run_id, reason = why.code(), "a call ended without its final record; writing it");
    recorder.append_detached(f);
}
