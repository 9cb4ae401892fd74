//! Carrying out an approved call whose run is gone (or whose approval came through the
//! decisions API): the claim of its execution is this node's; the log is asked first whether
//! it ran already, the stored row must verify under the server key, the approval becomes a
//! token that is recorded and redeemed, and the call runs as its run would have, with exactly
//! one final record. Used by [`Runtime::resume_orphaned`](crate::run::Runtime::resume_orphaned)
//! and by the session's next turn, through `run::carry`, which makes the call's context.

use super::ClaimHeartbeat;
use crate::audit::AuditStatus;
use crate::run::context::{CallRef, RunCtx, ToolFacts};
use crate::run::gate::checked::Checked;
use crate::run::gate::execute::execute_approved;
use crate::run::owed::FinalOwed;
use crate::run::pending::{detail, seal};
use crate::run::record::{RecordFields, RecordOf};
use crate::run::secrets::CallSecrets;
use crate::run::shared::{Inner, mark_recorded};
use crate::store::ProposalRecord;
use crate::token::ConfirmationToken;
use crate::tool::{CallContext, ErasedArgs, Handler, RegisteredTool, Registry, ToolFuture};
use agents_core::{SharedStr, SharedValue, ToolSpec};
use serde_json::Value;
use std::sync::Arc;

/// What [`Runtime::resume_orphaned`](crate::run::Runtime::resume_orphaned) did with one proposal whose run is gone.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ResumedCall {
    /// The runtime's call id (the proposal's).
    pub call_id: String,
    /// The run that proposed it.
    pub run_id: String,
    /// The tool.
    pub tool: String,
    /// How it ended: approved, `Executed`, `Failed` (it ran and failed, or could not run:
    /// see `reason`), `Denied` (its token was refused) or `Skipped` (its approval could not be
    /// recorded); rejected, `Rejected`; undecided past its confirmation window, `Skipped`
    /// (reason `timeout: ...`).
    pub status: AuditStatus,
    /// Why it did not execute (the `rejected` record's reason, with the person's own).
    pub reason: Option<String>,
    /// Whether its final record was written (`false`: the audit log refused it).
    pub recorded: bool,
}

/// Runs one claimed call in `ctx`, a context made for it (see `run::carry`) under a turn of
/// its session that carries it out (`in_turn`) or the ids of the run that proposed it: the
/// claim is kept alive and its final record marked written once in the log; the log is asked
/// whether it ran already; the row must verify and its arguments parse to the approved MAC;
/// the approval becomes a token, recorded and redeemed; the call runs, with one final record.
pub(in crate::run) async fn carry_claimed<A: Registry>(
    ctx: Arc<RunCtx<A>>,
    p: ProposalRecord,
    in_turn: bool,
) -> ResumedCall {
    let inner = &ctx.inner;
    // The claim is this node's until the final record is written, however long the call
    // runs; its final record, once in the log, is marked written in the store.
    let _claim =
        ClaimHeartbeat::start(&inner.services.store, inner.settings.settle_lease, &p.call_id, &inner.settings.node_id);
    inner.live.settling.insert(p.call_id.clone());
    let carried = Carried { ctx: &ctx, p: &p, call_id: p.call_id.as_str().into() };
    if let Err(done) = carried.not_ran_already(inner).await {
        return done;
    }
    let Runnable { index, entry, run, typed, raw, args_mac } = match runnable(&ctx, &p) {
        Ok(runnable) => runnable,
        Err(reason) => return carried.refuse(AuditStatus::Failed, reason).await,
    };
    let facts = ctx.facts(index, &entry);
    let spec = entry.spec;
    let secrets = if facts.schema.marks_secrets() {
        CallSecrets::of(&raw, &ctx.redact_args(facts.schema, &raw))
    } else {
        CallSecrets::default()
    };
    let base = records_of(carried.call_id.clone(), facts, spec, args_mac.clone());
    let redacted = SharedValue::from(p.args.clone());
    let token = match carried.approve(spec, &args_mac, &base, &redacted, in_turn).await {
        Ok(token) => token,
        Err(done) => return done,
    };
    let owed = FinalOwed::new(&ctx, base(AuditStatus::Failed, redacted.clone()));
    let call = CallRef { id: &p.call_id, given_id: &p.call_id, name: &p.tool, arguments: "" };
    let checked = Checked { ctx: &ctx, call, spec, base, redacted, secrets };
    let out = execute_approved(checked, run, typed, &token, owed).await;
    if out.executed {
        carried.ended(AuditStatus::Executed, None)
    } else {
        let why = out.content.get("error").and_then(Value::as_str).map(str::to_owned);
        carried.ended(AuditStatus::Failed, why)
    }
}

/// What builds the records of a claimed call: its proposal's call id, its tool's facts and the
/// approved arguments' MAC.
fn records_of(call_id: SharedStr, facts: &ToolFacts, spec: &'static ToolSpec, args_mac: String) -> impl RecordOf {
    let (name, title, import) = (facts.name.clone(), facts.title.clone(), facts.import.clone());
    move |status: AuditStatus, args: SharedValue| {
        let mut f = RecordFields::new(status);
        f.call_id = Some(call_id.clone());
        f.tool = Some(name.clone());
        f.tier = Some(spec.tier);
        f.title = title.clone();
        f.args = Some(args);
        f.args_hash = Some(args_mac.clone());
        f.import.clone_from(&import);
        f
    }
}

/// One claimed call being carried out, and how it ends.
struct Carried<'a, A> {
    ctx: &'a Arc<RunCtx<A>>,
    p: &'a ProposalRecord,
    call_id: SharedStr,
}

impl<A: Registry> Carried<'_, A> {
    /// What the resumption reports of the call.
    fn ended(&self, status: AuditStatus, reason: Option<String>) -> ResumedCall {
        let p = self.p;
        ResumedCall {
            call_id: p.call_id.clone(),
            run_id: p.run_id.clone(),
            tool: p.tool.clone(),
            status,
            reason,
            recorded: true,
        }
    }

    /// Ends the call without running it: its final record says why.
    async fn refuse(&self, status: AuditStatus, reason: String) -> ResumedCall {
        let record = RecordFields {
            call_id: Some(self.call_id.clone()),
            tool: Some(self.p.tool.as_str().into()),
            args: Some(SharedValue::from(self.p.args.clone())),
            ..RecordFields::new(status)
        }
        .reason(reason.clone());
        let _ = self.ctx.audit(record).await;
        self.ended(status, Some(reason))
    }

    /// A call whose final record is in the log already ran (or ended): its row was put back
    /// to an earlier state (claim columns cleared, or a pruned row written again). It is
    /// never run again, and gets no second final record: the log is asked before the row is
    /// checked, so a forged row of a call that ended gets no `failed` record either.
    async fn not_ran_already(&self, inner: &Inner) -> Result<(), ResumedCall> {
        let call_id = &self.p.call_id;
        match inner.services.audit.holds_final(call_id).await {
            Ok(Some(false) | None) => Ok(()),
            Ok(Some(true)) => {
                tracing::error!(call_id = %call_id, "an approval in the state store whose call has its final record already; not run again");
                mark_recorded(&inner.services, call_id).await;
                let reason = "its final record is in the audit log already (the state store was put back to an \
                              earlier state); nothing ran again";
                Err(ResumedCall { recorded: false, ..self.ended(AuditStatus::Failed, Some(reason.to_owned())) })
            }
            Err(e) => {
                let reason =
                    format!("the audit log could not be asked whether this call ran already ({e}); nothing ran");
                Err(self.refuse(AuditStatus::Failed, reason).await)
            }
        }
    }

    /// The approval as a token bound to the call's arguments: minted, its `confirmed` record
    /// written, then redeemed; or the call's end when one of them fails (nothing ran).
    async fn approve(
        &self,
        spec: &'static ToolSpec,
        args_mac: &str,
        base: &impl RecordOf,
        redacted: &SharedValue,
        in_turn: bool,
    ) -> Result<ConfirmationToken, ResumedCall> {
        let (ctx, inner) = (self.ctx, &self.ctx.inner);
        let session = self.p.session_id.as_str();
        let token = match inner.services.tokens.mint(session, spec.name, args_mac, ctx.token_ttl()).await {
            Ok(token) => token,
            Err(e) => return Err(self.refuse(AuditStatus::Skipped, format!("{e}; nothing ran")).await),
        };
        let when = if in_turn { "by the session's next turn" } else { "after the run's process ended" };
        let reason =
            format!("approved by the user; carried out by {} {when}; token {}", inner.settings.node_id, token.id());
        if ctx.audit(base(AuditStatus::Confirmed, redacted.clone()).reason(reason)).await.is_err() {
            // The proposal still ends, with one final record (if the log takes it).
            let reason = "the approval could not be recorded; nothing ran".to_owned();
            return Err(self.refuse(AuditStatus::Skipped, reason).await);
        }
        if let Err(e) = inner.services.tokens.redeem(&token, session, spec.name, args_mac).await {
            return Err(self.refuse(AuditStatus::Denied, format!("confirmation token refused: {e}")).await);
        }
        Ok(token)
    }
}

/// What a claimed call needs to run as its run would have.
struct Runnable<A> {
    index: usize,
    entry: RegisteredTool<A>,
    run: for<'c> fn(&'c CallContext, ErasedArgs) -> ToolFuture<'c>,
    typed: ErasedArgs,
    raw: Value,
    args_mac: String,
}

/// Whether the claimed call `p` can still run in `ctx`: its row sealed approved under this
/// node's server key as it reads (see [`seal`]), its tool available to the run's role now
/// (not disabled meanwhile) and with an execution path, its stored arguments parsing, and
/// their MAC under this node's server key the approved one. Otherwise the reason its `failed`
/// record gives.
fn runnable<A: Registry>(ctx: &RunCtx<A>, p: &ProposalRecord) -> Result<Runnable<A>, String> {
    // Nothing below is trusted unless a key holder sealed it approved, as it reads now.
    if !seal::holds_approval(&ctx.inner.services.tokens, p) {
        return Err(seal::FORGED.to_owned());
    }
    let found = ctx.available_index(&p.tool).and_then(|i| Some((i, A::entry_at(i)?)));
    let Some((index, entry)) = found else {
        return Err("the tool is no longer available to the run's role; nothing ran".to_owned());
    };
    // An action, or a read that reaches out and was proposed for a copied value.
    let run = match entry.handler {
        Handler::Action(run) | Handler::Read(run) => run,
        Handler::Handoff(_) => return Err("a handoff has no execution path; nothing ran".to_owned()),
    };
    let raw = p.detail.get(detail::ARGUMENTS).cloned().unwrap_or(Value::Null);
    let typed = agents_core::strict::check_value(&raw)
        .map_err(|e| e.to_string())
        .and_then(|()| (entry.parse)(&raw))
        .map_err(|e| format!("the stored arguments do not parse ({e}); nothing ran"))?;
    let args_mac = ctx.inner.services.tokens.args_mac(&raw);
    if args_mac != p.args_mac {
        return Err("the stored arguments do not match the approved ones under this node's server key (give every \
                    node the same server key); nothing ran"
            .to_owned());
    }
    Ok(Runnable { index, entry, run, typed, raw, args_mac })
}
