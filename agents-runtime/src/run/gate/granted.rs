//! A call of an agent granted to the run's agent (see [`crate::run::granted`]): recorded like
//! a read call (`proposed`, then `executed` or `failed`, tier `read`, the tool being the
//! granted agent's tool name), and run as a child node of the calling run. The call itself
//! changes nothing: whatever the granted agent does passes its own gate, where its actions
//! wait for the person's decision.

use crate::audit::AuditStatus;
use crate::events::Event;
use crate::run::call::{CallOutcome, CallRef};
use crate::run::granted::GrantedAgent;
use crate::run::record::RecordFields;
use crate::run::scope::Run;
use crate::tool::Registry;
use agents_core::{SharedValue, Tier};
use serde_json::Value;
use std::sync::Arc;

/// The agent the run's agent grants whose tool name is `name`.
pub(super) fn granted_named<A: Registry>(name: &str) -> Option<GrantedAgent> {
    let i = A::AGENTS.iter().position(|g| agents_core::subagent::tool_name(g.name) == name)?;
    A::agent_at(i)
}

/// Records, runs and answers one call of the granted agent `granted`.
pub(super) async fn call<R: Run>(ctx: &Arc<R>, call: CallRef<'_>, granted: GrantedAgent) -> CallOutcome {
    let recorder = ctx.recorder();
    recorder.emit(|| Event::ToolCall {
        run_id: recorder.ids.run_id.to_string(),
        call_id: call.id.to_owned(),
        tool: call.name.to_owned(),
        args: None,
    });
    let args = match agents_core::strict::parse_args(call.arguments) {
        Ok(Value::Object(o)) if o.len() == 1 && o.contains_key("input") => Value::Object(o),
        Ok(Value::Object(o)) if !o.contains_key("input") => {
            return refuse(ctx, call, "the argument `input` is missing".to_owned()).await;
        }
        Ok(Value::Object(o)) => {
            let extra: Vec<&String> = o.keys().filter(|k| k.as_str() != "input").collect();
            return refuse(ctx, call, format!("unknown argument(s) {extra:?}")).await;
        }
        Ok(_) => return refuse(ctx, call, "the arguments are not a JSON object".to_owned()).await,
        Err(e) => return refuse(ctx, call, e.to_string()).await,
    };
    let schema = granted.input_schema();
    let redacted = SharedValue::from(recorder.redact_args(agents_core::redact::SecretSchema::new(&schema), &args));
    let base = |status: AuditStatus| {
        let mut f = RecordFields::new(status);
        f.call_id = Some(call.id.into());
        f.tool = Some(call.name.into());
        f.tier = Some(Tier::Read);
        f.args = Some(redacted.clone());
        f
    };
    if recorder.audit(base(AuditStatus::Proposed)).await.is_err() {
        return CallOutcome::err("the audit log is unavailable; nothing ran");
    }
    let place = ctx.granted_call(granted.name);
    match (granted.run)(place, args).await {
        Ok(answer) => {
            let mut f = base(AuditStatus::Executed);
            f.result = Some(recorder.result_for_audit(&answer));
            let _ = recorder.audit(f).await;
            recorder.emit_result(call.id, call.name, AuditStatus::Executed, Some(&answer));
            CallOutcome { content: answer, is_error: false, executed: true }
        }
        Err(reason) => {
            let _ = recorder.audit(base(AuditStatus::Failed).reason(reason.clone())).await;
            recorder.emit_result(call.id, call.name, AuditStatus::Failed, None);
            CallOutcome::err(reason)
        }
    }
}

/// Arguments that are not a JSON object of the granted agent's input: denied, nothing ran.
async fn refuse<R: Run>(ctx: &Arc<R>, call: CallRef<'_>, why: String) -> CallOutcome {
    let reason = format!("invalid arguments for `{}`: {why}; call it with {{\"input\": ...}}", call.name);
    ctx.recorder().deny(call, None, None, reason).await
}
