//! An action call (or a read of a tool that reaches out, carrying a value copied from a tool
//! result): a person decides on exactly these arguments before it runs (dialog or
//! conversational mode, or a direct session's confirmer); the approval is a token bound to
//! the arguments, redeemed here, and the permission is checked again before the tool runs.

use super::{Checked, RecordOf, finish_call, run_contained};
use crate::audit::AuditStatus;
use crate::run::ConfirmMode;
use crate::run::confirm::{Confirmation, DirectConfirm};
use crate::run::context::CallOutcome;
use crate::run::record::FinalOwed;
use crate::token::ConfirmationToken;
use crate::tool::{CallContext, ErasedArgs, Registry, ToolFuture};

/// An action tool's handler.
pub(in crate::run) type ActionFn = for<'a> fn(&'a CallContext, ErasedArgs) -> ToolFuture<'a>;

/// Boxed by the gate (like refusals), so the gate's future carries only what a read call needs.
pub(super) async fn call<A: Registry>(
    checked: Checked<'_, A, impl RecordOf>,
    args_hash: &str,
    approved: Option<(ConfirmationToken, String, String)>,
    raw: serde_json::Value,
    run: ActionFn,
    typed: ErasedArgs,
    why: Option<String>,
) -> CallOutcome {
    let ctx = checked.ctx;
    let confirmation = Confirmation::new(checked, args_hash, raw, run, typed, why);
    match &ctx.direct {
        None if ctx.inner.confirm_mode == ConfirmMode::Conversational => confirmation.conversational(approved).await,
        Some(DirectConfirm::Unavailable) => confirmation.unavailable().await,
        Some(DirectConfirm::Ask(confirmer)) => confirmation.dialog(Some(confirmer.clone())).await,
        None => confirmation.dialog(ctx.inner.confirmer.clone()).await,
    }
}

/// Runs an action whose token was just redeemed, once the permission still holds.
pub(in crate::run) async fn execute_approved<A: Registry>(
    checked: Checked<'_, A, impl RecordOf>,
    run: ActionFn,
    typed: ErasedArgs,
    token: &ConfirmationToken,
    mut owed: FinalOwed<'_, A>,
) -> CallOutcome {
    let Checked { ctx, call, spec, base, redacted, .. } = &checked;
    // Defence in depth: the permission is checked again after the wait.
    if !ctx.inner.roles.has_permission(&ctx.principal.role, spec.permission) {
        owed.paid();
        let reason = format!("permission `{}` is no longer held by role `{}`", spec.permission, ctx.principal.role);
        let _ = ctx.audit(base(AuditStatus::Failed, redacted.clone()).reason(reason)).await;
        return CallOutcome::err("permission re-check failed after approval; nothing ran");
    }
    let mut cx = ctx.call_context(spec, call.id.into());
    // The record of the token just redeemed; the handler's witness must carry its nonce.
    cx.approved = Some(crate::tool::ApprovedCall::redeemed(token, spec.name));
    owed.running();
    let result = run_contained(ctx, run, &cx, typed).await;
    owed.paid();
    finish_call(checked, result).await
}
