//! A call past the gate's checks ([`Checked`]) and the recording of its outcome
//! ([`finish_call`]): what the tiers, the confirmation channels and an approved action's run
//! share, below the gate itself.

use super::contain;
use crate::audit::AuditStatus;
use crate::events::{ErrorKind, Event};
use crate::run::call::{CallOutcome, CallRef};
use crate::run::record::RecordOf;
use crate::run::scope::Run;
use crate::run::secrets::CallSecrets;
use crate::tool::ToolError;
use agents_core::{SharedValue, ToolSpec};
use serde_json::Value;
use std::sync::Arc;

/// One call past the gate's checks: what the rest of it and its records share.
pub(in crate::run) struct Checked<'a, R, F> {
    pub(in crate::run) ctx: &'a Arc<R>,
    pub(in crate::run) call: CallRef<'a>,
    pub(in crate::run) spec: &'static ToolSpec,
    /// Builds a record of this call with a status and its (redacted) arguments.
    pub(in crate::run) base: F,
    pub(in crate::run) redacted: SharedValue,
    /// The values of the call's secrets, masked in every text derived from the call.
    pub(in crate::run) secrets: CallSecrets,
}

/// Records a call's outcome and hands the model its answer. The record is built before the
/// future is first polled; the future holds only the sink's answer to wait for and the outcome.
pub(in crate::run) fn finish_call<'a, R: Run>(
    checked: Checked<'a, R, impl RecordOf>,
    result: Result<Value, ToolError>,
) -> impl Future<Output = CallOutcome> + 'a {
    let Checked { ctx, call, spec, base, redacted, secrets } = checked;
    let (record, status, outcome) = match result {
        Ok(value) => {
            // A result that echoes a secret shows it to nobody; then it is bounded. Its canonical
            // text is written once: its length is the bound's measure and the digest covers it;
            // only a result over the bound (or a raw-results runtime) is measured again and cut.
            let value = secrets.value(value);
            ctx.note_result(call.id, spec, &value);
            let max = ctx.settings().max_result_bytes;
            let (value, cut, kept) = match ctx.recorder().digest_within(&value, max) {
                Some(kept) => (value, None, kept),
                None => {
                    let (value, cut) = contain::bounded(value, max);
                    let kept = ctx.recorder().result_for_audit(&value);
                    (value, cut, kept)
                }
            };
            let mut f = base(AuditStatus::Executed, redacted);
            // The model reads at most its bound of the result (see `Turn::dispatch_calls`); the
            // record says so, and its digest covers the whole result.
            let size = contain::json_size(&value);
            let shown = ctx.settings().max_model_result_bytes;
            f.reason = match (cut, size > shown) {
                (cut, false) => cut,
                (None, true) => Some(contain::model_cut_reason(size, shown)),
                (Some(cut), true) => Some(format!("{cut}; {}", contain::model_cut_reason(size, shown))),
            };
            f.result = Some(kept);
            (f, AuditStatus::Executed, CallOutcome { executed: true, ..CallOutcome::ok(value) })
        }
        Err(e) => {
            let mut f = base(AuditStatus::Failed, redacted);
            if let (Some(import), Some(listed)) = (&mut f.import, e.listed_sha256) {
                import.listed_sha256 = Some(listed);
            }
            let message = if secrets.is_empty() { e.message } else { secrets.text(&e.message) };
            (f.reason(message.clone()), AuditStatus::Failed, CallOutcome::err(message))
        }
    };
    let audited = ctx.recorder().audit(record);
    async move {
        let _ = audited.await;
        ctx.recorder().emit_result(call.id, spec.name, status, outcome.executed.then_some(&outcome.content));
        if status == AuditStatus::Failed {
            ctx.recorder().emit(|| Event::ErrorOccurred {
                run_id: ctx.recorder().ids.run_id.to_string(),
                kind: ErrorKind::Tool,
                tool: Some(spec.name.to_owned()),
                message: outcome.content.as_str().map_or_else(|| outcome.content.to_string(), str::to_owned),
            });
        }
        outcome
    }
}
