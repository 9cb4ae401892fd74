//! An approved action's run: its token was just redeemed; the permission is checked again
//! (and who the run acts for is read again, when the runtime is told to), then the tool runs, contained, with the witness of that token, and its outcome is recorded.
//! Every confirmation channel and a resumption end here.

use super::checked::{Checked, finish_call};
use super::contain::run_contained;
use crate::audit::AuditStatus;
use crate::run::call::CallOutcome;
use crate::run::owed::FinalOwed;
use crate::run::record::RecordOf;
use crate::run::scope::Run;
use crate::token::ConfirmationToken;
use crate::tool::{CallContext, ErasedArgs, ToolFuture};

/// An action tool's handler.
pub(in crate::run) type ActionFn = for<'a> fn(&'a CallContext, ErasedArgs) -> ToolFuture<'a>;

/// Runs an action whose token was just redeemed, once the permission still holds.
pub(in crate::run) async fn execute_approved<R: Run>(
    checked: Checked<'_, R, impl RecordOf>,
    run: ActionFn,
    typed: ErasedArgs,
    token: &ConfirmationToken,
    mut owed: FinalOwed<'_, R>,
) -> CallOutcome {
    let Checked { ctx, call, spec, base, redacted, .. } = &checked;
    // Defence in depth: the permission is checked again after the wait.
    if !ctx.settings().roles.has_permission(&ctx.principal().role, spec.permission) {
        owed.paid();
        let reason = format!("permission `{}` is no longer held by role `{}`", spec.permission, ctx.principal().role);
        let _ = ctx.recorder().audit(base(AuditStatus::Failed, redacted.clone()).reason(reason)).await;
        return CallOutcome::err("permission re-check failed after approval; nothing ran");
    }
    // Who the run acts for, read again when the runtime is told to (see `crate::authority`).
    if let Some(source) = ctx.services().principals.as_deref()
        && let Some(reason) = crate::authority::changed(source, ctx.principal()).await
    {
        owed.paid();
        let reason = format!("{reason}; nothing ran");
        let _ = ctx.recorder().audit(base(AuditStatus::Failed, redacted.clone()).reason(reason.clone())).await;
        return CallOutcome::err(format!("{reason}. Do not retry it in this run."));
    }
    let mut cx = ctx.call_context(spec, call.id.into());
    // The record of the token just redeemed; the handler's witness must carry its nonce.
    cx.approved = Some(crate::tool::ApprovedCall::redeemed(token, spec.name));
    owed.running();
    let result = run_contained::<R>(ctx, run, &cx, typed).await;
    owed.paid();
    finish_call(checked, result).await
}
