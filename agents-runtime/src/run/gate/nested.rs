//! What a tool runs with: its call context, and through it the way back into this gate for
//! the tools it calls in turn (a nested call passes every check a model's call passes).

use super::action::Ask;
use super::{InPlace, gate_call};
use crate::BoxFuture;
use crate::provider::ToolCallRequest;
use crate::run::call::CallRef;
use crate::tool::{NestedInvoker, ToolError};
use serde_json::Value;
use std::sync::{Arc, Weak};

/// Gives the run its way back into this gate for the tools its tools call in turn: the
/// nested invoker every call context of the run carries. The code that makes a run (above
/// the gate) arms it once; the layers below only read it.
pub(in crate::run) fn arm_nested<R: Ask>(ctx: &Arc<R>) {
    ctx.arm(nested_invoker(Arc::downgrade(ctx)));
}

/// How a tool calls another granted tool: through the gate of the run it belongs to. Built
/// once per run, it holds the run weakly (the run holds it, so a strong reference would keep
/// the run alive for ever). A tool only has its context while the run is calling it, so the
/// run is always there when the tool invokes; the refusal covers the impossible case.
fn nested_invoker<R: Ask>(run: Weak<R>) -> NestedInvoker {
    Arc::new(move |name: &'static str, args: Value| {
        let run = run.upgrade();
        Box::pin(async move {
            let Some(me) = run else {
                return Err(ToolError::new("the run this call belongs to has ended; nothing ran"));
            };
            let call = ToolCallRequest { id: me.nested_call_id(), name: name.to_owned(), arguments: args.to_string() };
            let out = gate_call::<R, InPlace>(&me, CallRef::from(&call)).await;
            if out.is_error {
                Err(ToolError::new(
                    out.content.get("error").and_then(Value::as_str).unwrap_or("the call failed").to_owned(),
                ))
            } else {
                Ok(out.content)
            }
        }) as BoxFuture<'static, Result<Value, ToolError>>
    })
}
