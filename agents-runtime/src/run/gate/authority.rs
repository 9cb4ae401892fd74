//! A call refused because the principal the run acts for changed since the run started (see
//! [`crate::authority`]): `denied`, reason `authority changed: ...`, and nothing runs.

use super::action::Ask;
use crate::events::Event;
use crate::run::call::{CallOutcome, CallRef};
use agents_core::ToolSpec;
use std::sync::Arc;

/// The call's refusal when the runtime reads principals again and the run's authority no
/// longer holds; `None` otherwise. Without a principal source nothing is read, boxed or
/// waited for: the check's future holds one empty option.
pub(super) fn reread<'a, R: Ask>(
    ctx: &'a Arc<R>,
    call: CallRef<'a>,
    spec: &'static ToolSpec,
) -> impl Future<Output = Option<CallOutcome>> + Send + 'a {
    let asked = ctx.services().principals.is_some().then(|| Box::pin(refuse_changed(ctx, call, spec)));
    async move {
        match asked {
            Some(asked) => asked.await,
            None => None,
        }
    }
}

/// The call's refusal when the run's authority no longer holds (the proposals made under it
/// have ended); `None` when it still holds.
async fn refuse_changed<R: Ask>(ctx: &Arc<R>, call: CallRef<'_>, spec: &'static ToolSpec) -> Option<CallOutcome> {
    let reason = ctx.authority_changed().await?;
    ctx.recorder().emit(|| Event::ToolCall {
        run_id: ctx.recorder().ids.run_id.to_string(),
        call_id: call.id.to_owned(),
        tool: call.name.to_owned(),
        args: None,
    });
    Some(ctx.recorder().deny(call, Some(spec), None, reason).await)
}
