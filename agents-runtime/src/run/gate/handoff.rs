//! A handoff call: audited `handed_off` and passed to a person's queue. A handoff tool that
//! names its target (`#[tool(handoff = Target)]`) then hands the run to that agent: the target
//! starts as a child node of the run (as a granted agent does, see [`crate::run::granted`]),
//! with the call's one argument as its input, and the run's turn ends with the target's
//! answer (see `Turn::dispatch_calls`). The call itself runs nothing of the caller's: whatever
//! the target does passes its own gate, where its actions wait for the person's decision.

use super::checked::Checked;
use crate::audit::{AuditResult, AuditStatus};
use crate::events::{Event, HandoffRecord};
use crate::run::call::CallOutcome;
use crate::run::record::{RecordOf, now_rfc3339};
use crate::run::scope::{HandedOver, Run};
use crate::tool::Registry;
use agents_core::SharedValue;
use serde_json::{Value, json};

/// Boxed by the gate (like refusals), so the gate's future carries only what a read call needs.
/// `raw` is the call's arguments (strictly parsed, typed-checked) for a targeted handoff.
pub(super) async fn call<R: Run>(checked: Checked<'_, R, impl RecordOf>, raw: SharedValue) -> CallOutcome {
    let Checked { ctx, call, spec, base, redacted, .. } = checked;
    let target = spec.handoff.and_then(|_| R::Agent::handoff_to(spec.name));
    if spec.handoff.is_some() && target.is_none() {
        let reason = format!("`{}` names an agent to hand the run to that the registry does not run", spec.name);
        return ctx.recorder().deny(call, Some(spec), None, reason).await;
    }
    let record = HandoffRecord {
        call_id: call.id.to_owned(),
        tool: spec.name.to_owned(),
        description: spec.description.to_owned(),
        args: redacted.as_value().clone(),
        user_id: ctx.principal().user_id.clone(),
        org_id: ctx.principal().org_id.clone(),
        session_id: ctx.recorder().ids.session_id.to_string(),
        created_at: now_rfc3339(),
        target: target.as_ref().map(|t| t.name().to_owned()),
    };
    let mut f = base(AuditStatus::HandedOff, redacted.clone());
    // The target, named on the record only when there is one: older records keep their bytes.
    if let Some(t) = &target {
        f.result = Some(AuditResult::Value(json!({ "target": { "name": t.name, "sha256": t.sha256 } })));
    }
    if ctx.recorder().audit(f).await.is_err() {
        return CallOutcome::err("the audit log is unavailable; the request was not handed off");
    }
    ctx.recorder().emit(|| Event::Handoff { run_id: ctx.recorder().ids.run_id.to_string(), record });
    let Some(target) = target else {
        return CallOutcome::ok(json!({
            "status": "handed_off",
            "message": format!("`{}` is done by a person, not by this assistant. The request was passed to a human queue; nothing ran.", spec.name)
        }));
    };
    // The one argument is the target's input (its type checked where the tool is written).
    let input = match raw.into_value() {
        Value::Object(o) if o.len() == 1 => o.into_iter().next().map(|(_, v)| v).unwrap_or(Value::Null),
        other => other,
    };
    let place = ctx.granted_call(target.name);
    let path = place.scope.node.path.clone();
    let end = (target.run)(place, json!({ "input": input })).await;
    let (handed, outcome) = match end {
        Ok(Value::String(text)) => (HandedOver::Answered(text.clone()), CallOutcome::ok(Value::String(text))),
        Ok(value) => (HandedOver::Answered(value.to_string()), CallOutcome::ok(value)),
        Err(message) => (HandedOver::Failed { path, message: message.clone() }, CallOutcome::err(message)),
    };
    ctx.hand_over(handed);
    outcome
}
