//! The gate every tool call passes: lookup in the availability snapshot → the run's skill →
//! (with a principal source, who the run acts for, read again: `authority`) → strict parse →
//! typed parse → permission → (a tool that reaches out, an action: its arguments' provenance)
//! → interceptors → (a tool that reaches out: its hosts, the provenance recorded) → the card
//! (an action's warning; the application's policy may refuse it here) → the call's tier
//! (`read`, `action`, `handoff`). A read call of a tool that reaches out with a value copied
//! from a tool result goes the action's way: a person decides first ([`egress`]).
//!
//! The gate takes a run as a [`Run`](super::scope::Run): its recorder (every record the gate
//! writes goes through [`Recorder`](super::recorder::Recorder), borrowed from the run), the
//! runtime's settings and services, and the narrow parts of the run a call needs. It does not
//! know the run's context, nor how a person is asked: an action call is handed to the run's
//! [`Ask`](action::Ask).

pub(in crate::run) mod action;
mod authority;
pub(in crate::run) mod checked;
mod contain;
mod egress;
pub(in crate::run) mod execute;
mod granted;
mod handoff;
mod nested;
mod read;

use checked::Checked;
pub(in crate::run) use contain::model_view;
pub(in crate::run) use nested::arm_nested;

use super::call::{CallOutcome, CallRef, ToolFacts};
use super::record::RecordFields;
use super::scope::Run;
use super::secrets::{self, CallSecrets};
use crate::audit::AuditStatus;
use crate::events::Event;
use crate::interceptor::{Decision, Interception};
use crate::provenance::Provenance;
use crate::tool::{ErasedArgs, Handler, RegisteredTool, Registry};
use action::{Ask, Card};
use agents_core::Agent;
use agents_core::redact::SecretSchema;
use agents_core::{SharedValue, Tier, ToolSpec};
use serde_json::Value;
use std::sync::Arc;
use tracing::Instrument;

/// The arguments of a call that passed the checks: typed for the handler, their MAC (actions
/// only, else empty) and the redacted copy the records hold.
struct Admitted {
    typed: ErasedArgs,
    /// An action's final arguments as the tool receives them (`Null` for other tiers): one
    /// value with `redacted` when redaction left them as they were.
    raw: SharedValue,
    args_hash: String,
    redacted: SharedValue,
    secrets: CallSecrets,
    /// Why a person must decide on this call although it is a read (an argument copied from
    /// a tool result into a tool that reaches out), or, for an action, the card's warning:
    /// the arguments whose values came from content the user did not write.
    why: Option<String>,
    /// Where each argument value came from: every action, and a read a person decides on.
    origins: Option<Provenance>,
}

/// Where the gate keeps the state of its checks and of a read call's execution while it awaits
/// them: in its own future ([`InPlace`]), or boxed apart ([`Apart`]), so that a caller who
/// keeps the gate's future while an action waits for a person (the run loop) does not reserve
/// room for them all that time.
pub(in crate::run) trait Hold {
    type Held<F: Future + Send>: Future<Output = F::Output> + Send;
    fn hold<F: Future + Send>(future: F) -> Self::Held<F>;
}

/// In the gate's own future: no allocation (a direct session's call, a nested call).
pub(in crate::run) struct InPlace;

impl Hold for InPlace {
    type Held<F: Future + Send> = F;
    fn hold<F: Future + Send>(future: F) -> F {
        future
    }
}

/// Boxed apart: a run's call, whose gate future the run keeps for the whole of a person's
/// decision on an action (two allocations more for a read call).
pub(in crate::run) struct Apart;

impl Hold for Apart {
    type Held<F: Future + Send> = std::pin::Pin<Box<F>>;
    fn hold<F: Future + Send>(future: F) -> std::pin::Pin<Box<F>> {
        Box::pin(future)
    }
}

/// The gate for one call, its checks and read calls held as `H` says. Not boxed: a caller
/// awaits it in place (a direct session's call), the run loop boxes it, and a nested call (a
/// tool calling another through the gate) is boxed with its invoker's future.
#[allow(
    clippy::redundant_pattern_matching,
    clippy::redundant_locals,
    reason = "`matches!` reads `why` without borrowing it, and the entry is moved into the checks' block: \
              a local once borrowed is kept in the future until its scope ends"
)]
pub(in crate::run) fn gate_call<'a, R: Ask, H: Hold>(
    ctx: &'a Arc<R>,
    call: CallRef<'a>,
) -> impl Future<Output = CallOutcome> + Send + 'a {
    let span =
        crate::telemetry::tool_span(call.name, call.id, &ctx.recorder().ids.run_id, || R::Agent::tool_spec(call.name));
    async move {
        // 1. lookup: only names in the availability snapshot exist for this run.
        let found = ctx.available_index(call.name).and_then(|i| Some((i, R::Agent::entry_at(i)?)));
        let Some((index, entry)) = found else { return Box::pin(not_a_tool(ctx, call)).await };
        // A granted tool the run's skill does not offer exists, but not for this run.
        if let Some(skill) = ctx.outside_skill(index) {
            return refuse_outside_skill(ctx, call, entry.spec, skill).await;
        }
        let spec = entry.spec;
        // An action's call, and a call of a read that reaches out (a copied value makes it a
        // proposal), is known by an id the runtime mints (a proposal is decided under it); the
        // model keeps its own id for the answer. Other calls keep the provider's id.
        let minted;
        let call = if spec.tier == Tier::Action || (spec.tier == Tier::Read && spec.policy.reaches_out()) {
            minted = crate::run::pending::new_call_id();
            CallRef { id: &minted, ..call }
        } else {
            call
        };
        // 2.-3. parse, permission, interceptors. The registry entry lives in this block only,
        // so it is not kept in the gate's future while the tier below waits.
        let (facts, handler, admitted) = {
            let entry = entry;
            let facts = ctx.facts(index, &entry);
            match await_in_place!(H::hold(check(ctx, call, &entry, facts))) {
                Ok(admitted) => (facts, entry.handler, admitted),
                Err(refused) => return refused,
            }
        };
        let Admitted { typed, raw, args_hash, redacted, secrets, why, origins } = admitted;
        // Conversational mode: the call the model re-issues after the user confirmed carries
        // the proposal's token; its records keep the proposal's call id so the proposal, the
        // confirmation and the execution join in the audit log.
        let confirmed = spec.tier == Tier::Action || (spec.tier == Tier::Read && matches!(why, Some(_)));
        let (approved, shared_call_id) = ctx.approval(spec, call.id, confirmed);
        let (shared_tool, shared_title, import) = (&facts.name, &facts.title, &facts.import);
        // A record of this call; its records share the redacted arguments.
        let base = |status: AuditStatus, args: SharedValue| {
            let mut f = RecordFields::new(status);
            f.call_id = Some(shared_call_id.clone());
            f.tool = Some(shared_tool.clone());
            f.tier = Some(spec.tier);
            f.title = shared_title.clone();
            f.args = Some(args);
            f.args_hash = (!args_hash.is_empty()).then(|| args_hash.clone());
            f.import.clone_from(import);
            f
        };
        let checked = Checked { ctx, call, spec, base, redacted, secrets };
        // 4. tier.
        match handler {
            Handler::Handoff(_) => Box::pin(handoff::call(checked, raw)).await,
            // A read that carries a value copied from a tool result out: decided like an action.
            Handler::Read(run) if matches!(why, Some(_)) => {
                Box::pin(action::call(checked, &args_hash, approved, raw, run, typed, Card::new(why, origins))).await
            }
            Handler::Read(run) => {
                // Only actions are approved, and only they keep their raw arguments; neither is
                // kept in the gate's future across the waits.
                drop((approved, raw, why, origins));
                await_in_place!(H::hold(read::call(checked, shared_call_id.clone(), run, typed)))
            }
            Handler::Action(run) => {
                Box::pin(action::call(checked, &args_hash, approved, raw, run, typed, Card::new(why, origins))).await
            }
        }
    }
    .instrument(span)
}

/// A name that is no tool in the availability snapshot: an agent the run's agent grants (run
/// as a child node of this run), else refused.
async fn not_a_tool<R: Run>(ctx: &Arc<R>, call: CallRef<'_>) -> CallOutcome {
    match granted::granted_named::<R::Agent>(call.name) {
        Some(agent) => granted::call(ctx, call, agent).await,
        None => refuse_unknown(ctx, call).await,
    }
}

/// Refuses a name outside the availability snapshot, saying whether it exists at all.
async fn refuse_unknown<R: Run>(ctx: &Arc<R>, call: CallRef<'_>) -> CallOutcome {
    let reason = if R::Agent::tool_spec(call.name).is_some() {
        format!("unknown tool `{}`: it is not available to you in this session", call.name)
    } else {
        format!("unknown tool `{}`", call.name)
    };
    ctx.recorder().emit(|| Event::ToolCall {
        run_id: ctx.recorder().ids.run_id.to_string(),
        call_id: call.id.to_owned(),
        tool: call.name.to_owned(),
        args: None,
    });
    ctx.recorder().deny(call, None, None, reason).await
}

/// A call of a granted tool that the run's skill does not offer: denied, nothing runs.
async fn refuse_outside_skill<R: Run>(
    ctx: &Arc<R>,
    call: CallRef<'_>,
    spec: &'static ToolSpec,
    skill: &'static str,
) -> CallOutcome {
    let reason = format!(
        "outside skill `{skill}`: this run works within skill `{skill}`, which does not offer `{}`; nothing ran",
        spec.name
    );
    ctx.recorder().emit(|| Event::ToolCall {
        run_id: ctx.recorder().ids.run_id.to_string(),
        call_id: call.id.to_owned(),
        tool: call.name.to_owned(),
        args: None,
    });
    ctx.recorder().deny(call, Some(spec), None, reason).await
}

/// Who the run acts for (read again, with a principal source), the strict parse, the typed
/// parse, the permission and the interceptors. Refusal texts are
/// made before any wait, so the errors they describe are not kept in the gate's future.
async fn check<R: Ask>(
    ctx: &Arc<R>,
    call: CallRef<'_>,
    entry: &RegisteredTool<R::Agent>,
    facts: &ToolFacts,
) -> Result<Admitted, CallOutcome> {
    let (spec, schema) = (entry.spec, facts.schema);
    if let Some(refused) = authority::reread(ctx, call, spec).await {
        return Err(refused);
    }
    let mut args = match agents_core::strict::parse_args(call.arguments) {
        Ok(v) => v,
        Err(e) => {
            let reason = format!("invalid arguments for `{}`: {e}", spec.name);
            let reason = if schema.marks_secrets() {
                mask_refused::<R>(ctx, schema, call.arguments, &e, &reason)
            } else {
                reason
            };
            return Err(ctx.recorder().deny(call, Some(spec), None, reason).await);
        }
    };
    // The values at secret positions, masked wherever else they appear (only a schema that
    // marks secrets has any).
    let mut secrets = CallSecrets::default();
    if schema.marks_secrets() {
        secrets = CallSecrets::of(&args, &ctx.recorder().redact_args(schema, &args));
        ctx.remember_secrets(&secrets);
    }
    // The redacted copy the records hold is made once the arguments are final (below); the
    // event and the refusals before that redact on the spot.
    ctx.recorder().emit(|| Event::ToolCall {
        run_id: ctx.recorder().ids.run_id.to_string(),
        call_id: call.id.to_owned(),
        tool: call.name.to_owned(),
        args: Some(secrets.value(ctx.recorder().redact_args(schema, &args))),
    });
    let parsed = parse_args::<R>(ctx, entry, &args).map_err(|e| format!("invalid arguments for `{}`: {e}", spec.name));
    let mut typed = match parsed {
        Ok(t) => t,
        Err(reason) => {
            // A serde error may quote the argument it refused: a secret one is masked.
            let shown = secrets.value(ctx.recorder().redact_args(schema, &args));
            return Err(ctx.recorder().deny(call, Some(spec), Some(shown), secrets.text(&reason)).await);
        }
    };
    // Permission is decided before any business check (defence in depth on top of the snapshot).
    if !facts.permitted {
        let reason = format!("permission `{}` is not held by role `{}`", spec.permission, ctx.principal().role);
        let shown = secrets.value(ctx.recorder().redact_args(schema, &args));
        return Err(ctx.recorder().deny(call, Some(spec), Some(shown), reason).await);
    }
    // A tool that reaches out, and an action: where its argument values came from, for the
    // interceptors, the egress check and the card.
    let reaches_out = spec.policy.reaches_out() && spec.tier != Tier::Handoff;
    let assessed = reaches_out || spec.tier == Tier::Action;
    let mut provenance = if assessed { Some(ctx.provenance_of(&args)) } else { None };
    // Boxed, and skipped without interceptors: their state is not kept in every call's future.
    let replaced = if ctx.services().interceptors.is_empty() {
        false
    } else {
        Box::pin(intercept(ctx, call, entry, schema, &mut args, &mut typed, &secrets, provenance.as_ref())).await?
    };
    if replaced && assessed {
        provenance = Some(ctx.provenance_of(&args));
    }
    let (why, origins) = Box::pin(card(ctx, call, spec, schema, &args, &secrets, provenance)).await?;
    // Binds a person's approval to the exact arguments: action calls, and reads that wait
    // for a person.
    let (args_hash, raw) = if spec.tier == Tier::Action || why.is_some() {
        (ctx.services().tokens.args_mac(&args), Some(args.clone()))
    } else if spec.handoff.is_some() {
        // A handoff that names its target starts it with the call's argument.
        (String::new(), Some(args.clone()))
    } else {
        (String::new(), None)
    };
    let redacted = final_redacted::<R>(ctx, schema, args, &mut secrets);
    Ok(Admitted { typed, raw: held_once(raw, &redacted), args_hash, redacted, secrets, why, origins })
}

/// The arguments as the tool receives them (`Null` when no one needs them): the records' copy
/// itself when redaction left them as they were, so they are held once while a person decides.
fn held_once(raw: Option<Value>, redacted: &SharedValue) -> SharedValue {
    match raw {
        Some(raw) if *redacted == raw => redacted.clone(),
        Some(raw) => SharedValue::from(raw),
        None => SharedValue::from(Value::Null),
    }
}

/// What a call's card says: for a tool that reaches out, the egress check (its hosts, its
/// `notice`) and why a read must wait for a person; for an action, its warning. Every call a
/// person decides on keeps its origins; a proposal the application's policy refuses for a
/// value from content the user did not write is denied here, before anyone is asked.
async fn card<R: Run>(
    ctx: &Arc<R>,
    call: CallRef<'_>,
    spec: &'static ToolSpec,
    schema: SecretSchema<'static>,
    args: &Value,
    secrets: &CallSecrets,
    provenance: Option<Provenance>,
) -> Result<(Option<String>, Option<Provenance>), CallOutcome> {
    let mut why = None;
    if spec.policy.reaches_out() && spec.tier != Tier::Handoff {
        let p = provenance.clone().unwrap_or_default();
        why = Box::pin(egress_check(ctx, call, spec, schema, args, secrets, p)).await?;
    }
    let origins = if spec.tier == Tier::Action || why.is_some() { provenance } else { None };
    if spec.tier == Tier::Action {
        why = origins.as_ref().and_then(Provenance::warning);
    }
    if let Some(reason) = ctx.settings().untrusted.refusal(spec.name, origins.as_ref()) {
        let shown = secrets.value(ctx.recorder().redact_args(schema, args));
        return Err(ctx.recorder().deny(call, Some(spec), Some(shown), secrets.text(&reason)).await);
    }
    Ok((why, origins))
}

/// The records' redacted copy of a call's final arguments: the value itself when nothing in it
/// is secret; when something is, the secret values are kept in `secrets` to mask derived texts
/// (an interceptor may have replaced the arguments: their secrets are masked too).
fn final_redacted<R: Run>(
    ctx: &R,
    schema: SecretSchema<'static>,
    args: Value,
    secrets: &mut CallSecrets,
) -> SharedValue {
    let redacted = if schema.marks_secrets() {
        let redacted = ctx.recorder().redact_args(schema, &args);
        let replaced = CallSecrets::of(&args, &redacted);
        ctx.remember_secrets(&replaced);
        secrets.extend(replaced);
        secrets.value(redacted)
    } else {
        schema.redact_owned(args, &ctx.settings().redaction)
    };
    SharedValue::from(redacted)
}

/// The typed parse of a call's arguments; a tool the runtime's setting isolates keeps them as
/// JSON for its worker (see `crate::isolate::Isolation`).
fn parse_args<R: Run>(ctx: &R, entry: &RegisteredTool<R::Agent>, args: &Value) -> Result<ErasedArgs, String> {
    match &ctx.services().isolation {
        Some(i) if i.adds(entry.spec.name) => (entry.parse_isolated)(args),
        _ => (entry.parse)(args),
    }
}

/// A tool that reaches out: a URL or host outside its declared hosts is refused; the
/// provenance of its arguments is recorded (a `notice`); and the reason a person must decide
/// on it, when a value was copied from a tool result.
async fn egress_check<R: Run>(
    ctx: &Arc<R>,
    call: CallRef<'_>,
    spec: &'static ToolSpec,
    schema: SecretSchema<'static>,
    args: &Value,
    secrets: &CallSecrets,
    provenance: Provenance,
) -> Result<Option<String>, CallOutcome> {
    // An imported tool's hosts are its server's business, not a policy of ours: its arguments
    // reach only that server, so only their provenance is checked.
    if let Some(reason) = spec.import.is_none().then(|| egress::host_refusal(spec, args)).flatten() {
        let shown = secrets.value(ctx.recorder().redact_args(schema, args));
        return Err(ctx.recorder().deny(call, Some(spec), Some(shown), secrets.text(&reason)).await);
    }
    let notice = RecordFields {
        call_id: Some(call.id.into()),
        tool: Some(spec.name.into()),
        tier: Some(spec.tier),
        result: Some(crate::audit::AuditResult::Value(serde_json::to_value(&provenance).unwrap_or(Value::Null))),
        // An imported tool's notice names its server and pin, as its other records do.
        import: ctx.recorder().import_of(spec),
        ..RecordFields::new(AuditStatus::Notice).reason(provenance.describe())
    };
    if ctx.recorder().audit(notice).await.is_err() {
        return Err(CallOutcome::err("the audit log is unavailable; nothing ran"));
    }
    Ok(provenance.reason())
}

/// The refusal text of arguments the strict parse refused, with the secret values it may
/// quote masked: the values at secret positions of the arguments read leniently (every value
/// of a key given twice), and a number quoted as beyond the exact range when its position is
/// secret. A text that is not JSON at all is quoted by no value, only by where it stopped.
fn mask_refused<R: Run>(
    ctx: &R,
    schema: SecretSchema<'static>,
    text: &str,
    error: &agents_core::strict::StrictError,
    reason: &str,
) -> String {
    let mut secrets = CallSecrets::default();
    if let Some(lenient) = secrets::lenient_args(text) {
        secrets.extend(CallSecrets::of(&lenient, &ctx.recorder().redact_args(schema, &lenient)));
    }
    if let agents_core::strict::StrictError::NumberBeyondExactRange { path, value } = error {
        let at = secrets::at_pointer(path, Value::String(value.clone()));
        secrets.extend(CallSecrets::of(&at, &ctx.recorder().redact_args(schema, &at)));
    }
    ctx.remember_secrets(&secrets);
    secrets.text(reason)
}

/// The interceptors, in the order added: each may let the call through, refuse it, replace
/// its arguments (audited `modified`) or answer in its place (audited `substituted`). Whether
/// one replaced the arguments.
#[allow(clippy::too_many_arguments)]
async fn intercept<R: Run>(
    ctx: &Arc<R>,
    call: CallRef<'_>,
    entry: &RegisteredTool<R::Agent>,
    schema: SecretSchema<'static>,
    args: &mut Value,
    typed: &mut ErasedArgs,
    secrets: &CallSecrets,
    provenance: Option<&Provenance>,
) -> Result<bool, CallOutcome> {
    let spec = entry.spec;
    let mut replaced_any = false;
    for interceptor in &ctx.services().interceptors {
        let interception = Interception {
            principal: ctx.principal(),
            spec,
            args,
            run_id: ctx.recorder().ids.run_id.as_str(),
            provenance,
        };
        let refusal = match interceptor.before_call(interception).await {
            Decision::Proceed => None,
            Decision::Deny(reason) => Some(format!("denied by policy: {reason}")),
            Decision::ProceedWith(new_args) => {
                let replaced = agents_core::strict::check_value(&new_args)
                    .map_err(|e| e.to_string())
                    .and_then(|()| parse_args::<R>(ctx, entry, &new_args));
                match replaced {
                    Err(e) => {
                        // The refusal may quote the replacement's own secret values.
                        let theirs = CallSecrets::of(&new_args, &ctx.recorder().redact_args(schema, &new_args));
                        ctx.remember_secrets(&theirs);
                        Some(theirs.text(&format!("an interceptor produced invalid arguments: {e}")))
                    }
                    Ok(t) => {
                        (*typed, *args) = (t, new_args);
                        replaced_any = true;
                        let modified = ctx.recorder().audit(RecordFields {
                            call_id: Some(call.id.into()),
                            tool: Some(spec.name.into()),
                            tier: Some(spec.tier),
                            args: Some(secrets.value(ctx.recorder().redact_args(schema, args)).into()),
                            reason: Some("an interceptor replaced the arguments".into()),
                            ..RecordFields::new(AuditStatus::Modified)
                        });
                        if modified.await.is_err() {
                            return Err(CallOutcome::err("the audit log is unavailable; nothing ran"));
                        }
                        None
                    }
                }
            }
            Decision::Substitute(result) => {
                let (shown, result) = (secrets.value(ctx.recorder().redact_args(schema, args)), secrets.value(result));
                return Err(substitute(ctx, call, spec, shown, result).await);
            }
        };
        if let Some(reason) = refusal {
            let shown = secrets.value(ctx.recorder().redact_args(schema, args));
            return Err(ctx.recorder().deny(call, Some(spec), Some(shown), secrets.text(&reason)).await);
        }
    }
    Ok(replaced_any)
}

/// An interceptor answered in the tool's place: audited `substituted`, and that answer is the
/// call's result; the tool does not run.
async fn substitute<R: Run>(
    ctx: &Arc<R>,
    call: CallRef<'_>,
    spec: &'static ToolSpec,
    shown_args: Value,
    result: Value,
) -> CallOutcome {
    let substituted = ctx.recorder().audit(RecordFields {
        call_id: Some(call.id.into()),
        tool: Some(spec.name.into()),
        tier: Some(spec.tier),
        args: Some(shown_args.into()),
        result: Some(ctx.recorder().result_for_audit(&result)),
        ..RecordFields::new(AuditStatus::Substituted)
    });
    if substituted.await.is_err() {
        return CallOutcome::err("the audit log is unavailable; nothing ran");
    }
    ctx.note_result(call.id, spec, &result);
    ctx.recorder().emit_result(call.id, spec.name, AuditStatus::Substituted, Some(&result));
    CallOutcome::ok(result)
}
