//! A handoff call: audited `handed_off` and passed to a person's queue; nothing runs.

use super::checked::Checked;
use crate::audit::AuditStatus;
use crate::events::{Event, HandoffRecord};
use crate::run::call::CallOutcome;
use crate::run::record::{RecordOf, now_rfc3339};
use crate::run::scope::Run;
use serde_json::json;

/// Boxed by the gate (like refusals), so the gate's future carries only what a read call needs.
pub(super) async fn call<R: Run>(checked: Checked<'_, R, impl RecordOf>) -> CallOutcome {
    let Checked { ctx, call, spec, base, redacted, .. } = checked;
    let record = HandoffRecord {
        call_id: call.id.to_owned(),
        tool: spec.name.to_owned(),
        description: spec.description.to_owned(),
        args: redacted.as_value().clone(),
        user_id: ctx.principal().user_id.clone(),
        org_id: ctx.principal().org_id.clone(),
        session_id: ctx.recorder().ids.session_id.to_string(),
        created_at: now_rfc3339(),
    };
    if ctx.recorder().audit(base(AuditStatus::HandedOff, redacted.clone())).await.is_err() {
        return CallOutcome::err("the audit log is unavailable; the request was not handed off");
    }
    ctx.recorder().emit(|| Event::Handoff { run_id: ctx.recorder().ids.run_id.to_string(), record });
    CallOutcome::ok(json!({
        "status": "handed_off",
        "message": format!("`{}` is done by a person, not by this assistant. The request was passed to a human queue; nothing ran.", spec.name)
    }))
}
