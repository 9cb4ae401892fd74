//! A read call: audited `proposed`, run, its outcome audited.

use super::checked::{Checked, finish_call};
use super::contain::run_contained;
use crate::audit::AuditStatus;
use crate::run::call::CallOutcome;
use crate::run::owed::ReadOwed;
use crate::run::record::RecordOf;
use crate::run::scope::Run;
use crate::tool::{CallContext, ErasedArgs, ToolFuture};
use agents_core::SharedStr;

/// Runs a read tool once its `proposed` record is durable; its records carry its own id
/// (`call_id`: only an approved action's differ).
///
/// Not an `async fn`: its arguments are the future's own state as they are, not moved again
/// into a second copy when it starts (the gate's future carries this one).
#[allow(clippy::manual_async_fn, reason = "an `async fn` copies its arguments into its body's state")]
pub(super) fn call<'a, R: Run>(
    checked: Checked<'a, R, impl RecordOf + 'a>,
    call_id: SharedStr,
    run: for<'c> fn(&'c CallContext, ErasedArgs) -> ToolFuture<'c>,
    typed: ErasedArgs,
) -> impl Future<Output = CallOutcome> + 'a {
    async move {
        let Checked { ctx, spec, base, redacted, .. } = &checked;
        // Bound first, so the record is not kept in the gate's future across the wait.
        let proposed = ctx.recorder().audit(base(AuditStatus::Proposed, redacted.clone()));
        if proposed.await.is_err() {
            return CallOutcome::err("the audit log is unavailable; nothing ran");
        }
        let owed = ReadOwed::new(ctx, base, redacted);
        // The call's context lives while its tool runs, not while its outcome is recorded.
        let result = {
            let cx = ctx.call_context(spec, call_id);
            await_in_place!(run_contained::<R>(ctx, run, &cx, typed))
        };
        owed.paid();
        await_in_place!(finish_call(checked, result))
    }
}
