//! Carrying out approved calls whose run is gone: the run that proposed an action waits for
//! the decision while its process lives; when the process died (a crash, `kill -9`, a
//! restart) the proposal stays in the state store, listed and decidable on every node, and
//! [`Runtime::resume_orphaned`] carries out the approved ones, exactly once.
//!
//! A call is orphaned when it is approved, nobody claimed its execution, and the run slot of
//! the run that proposed it has lapsed (its process stopped renewing the lease, see
//! [`RuntimeBuilder::run_slot_lease`](super::RuntimeBuilder::run_slot_lease)). The execution is
//! claimed in the store first (one conditional update: of any number of nodes resuming, and
//! the original run should it come back, exactly one runs it), then carried out as the run
//! would have: under the run's own principal and session, with a token bound to the stored
//! arguments' MAC minted and redeemed, the permission and the availability (role and disable
//! list) checked again, and its records (`confirmed`, then `executed` or `failed`) written
//! under the run's id and the runtime's call id.
//!
//! What is not resumed: the model's conversation (the run's turn is over; the session's
//! next turn starts afresh), proposals of direct sessions (their caller is gone with them),
//! and rejected proposals of a gone run (nothing runs; their `proposed` record has no final
//! record beside the store's verdict).

use super::Runtime;
use super::context::{CallRef, RunCtx, snapshot_of};
use super::gate::{Checked, execute_approved};
use super::pending::{detail, detail_str, principal_of};
use super::record::{FinalOwed, RecordFields, RecordIds};
use super::secrets::CallSecrets;
use crate::audit::AuditStatus;
use crate::events::EventBus;
use crate::store::{ProposalRecord, SlotId, StoreError};
use crate::tool::{Handler, Registry};
use agents_core::{SharedStr, SharedValue};
use serde_json::Value;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// How many approved calls one [`Runtime::resume_orphaned`] looks at.
pub const RESUME_BATCH: u32 = 100;

/// What [`Runtime::resume_orphaned`] did with one approved call whose run is gone.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ResumedCall {
    /// The runtime's call id (the proposal's).
    pub call_id: String,
    /// The run that proposed it.
    pub run_id: String,
    /// The tool.
    pub tool: String,
    /// How it ended: `Executed`, `Failed` (it ran and failed, or could not run: see
    /// `reason`), `Denied` (its token was refused) or `Skipped` (its approval could not be
    /// recorded).
    pub status: AuditStatus,
    /// Why it did not execute.
    pub reason: Option<String>,
}

impl Runtime {
    /// Carries out the approved calls of agent `A` whose run is gone (see the rules in
    /// [`ResumedCall`]'s module: approved, unclaimed, the proposing run's slot lapsed), each
    /// exactly once across every node sharing the state store, and returns what happened to
    /// each call this node claimed. Calls of other agents, or of another build of `A` (another
    /// manifest), are left alone. A service calls it on start and on a timer, for every agent
    /// it serves.
    ///
    /// The stored arguments must hash to the approved MAC under this runtime's server key:
    /// give every node the same [`RuntimeBuilder::server_key`](super::RuntimeBuilder::server_key)
    /// (a random per-process key cannot resume anything; such a call ends `failed`, nothing
    /// ran).
    pub async fn resume_orphaned<A: Registry>(&self) -> Result<Vec<ResumedCall>, StoreError> {
        crate::tool::verified_registry::<A>().map_err(|e| StoreError::Invalid(e.to_string()))?;
        let store = &self.inner.store;
        let mut done = Vec::new();
        for found in store.approved_unclaimed(RESUME_BATCH).await? {
            let p = found.proposal;
            if detail_str(&p, detail::AGENT) != A::SPEC.name || detail_str(&p, detail::MANIFEST) != A::MANIFEST_SHA256 {
                continue;
            }
            // A direct session's proposal has no slot: its caller is gone with it.
            let Some(slot) = p.detail.get(detail::SLOT).and_then(Value::as_str) else { continue };
            // A live run (its lease renewed) picks its decision up itself.
            if store.slot_held(&SlotId(slot.to_owned())).await? {
                continue;
            }
            if !store.claim_execution(&p.call_id, &self.inner.node_id).await? {
                continue;
            }
            done.push(self.carry_out::<A>(p).await);
        }
        Ok(done)
    }

    /// Runs one claimed call as its run would have.
    async fn carry_out<A: Registry>(&self, p: ProposalRecord) -> ResumedCall {
        let inner = &self.inner;
        let principal = principal_of(&p);
        let limits = inner.limits.unwrap_or(A::SPEC.limits);
        let request_id = uuid::Uuid::new_v4().to_string();
        let ids = RecordIds::new::<A>(&p.run_id, &p.session_id, &request_id, &principal);
        let bus = Arc::new(EventBus::new());
        let ctx = RunCtx::<A>::with_ids(inner, principal, ids, limits, bus, CancellationToken::new(), None);
        let (snapshot, _) = snapshot_of(&ctx).await;
        let _ = ctx.snapshot.set(snapshot);
        let call_id: SharedStr = p.call_id.as_str().into();
        let ended = |status: AuditStatus, reason: Option<String>| ResumedCall {
            call_id: p.call_id.clone(),
            run_id: p.run_id.clone(),
            tool: p.tool.clone(),
            status,
            reason,
        };
        let refuse = |status: AuditStatus, reason: String| {
            let ctx = &ctx;
            let record = RecordFields {
                call_id: Some(call_id.clone()),
                tool: Some(p.tool.as_str().into()),
                args: Some(SharedValue::from(p.args.clone())),
                ..RecordFields::new(status)
            }
            .reason(reason.clone());
            async move {
                let _ = ctx.audit(record).await;
                ended(status, Some(reason))
            }
        };
        // Available to the run's role now, not disabled meanwhile, and with an execution path.
        let found = ctx.available_index(&p.tool).and_then(|i| Some((i, A::entry_at(i)?)));
        let Some((index, entry)) = found else {
            let reason = "the tool is no longer available to the run's role; nothing ran".to_owned();
            return refuse(AuditStatus::Failed, reason).await;
        };
        // An action, or a read that reaches out and was proposed for a copied value.
        let run = match entry.handler {
            Handler::Action(run) | Handler::Read(run) => run,
            Handler::Handoff(_) => {
                return refuse(AuditStatus::Failed, "a handoff has no execution path; nothing ran".to_owned()).await;
            }
        };
        let raw = p.detail.get(detail::ARGUMENTS).cloned().unwrap_or(Value::Null);
        let typed = match agents_core::strict::check_value(&raw)
            .map_err(|e| e.to_string())
            .and_then(|()| (entry.parse)(&raw))
        {
            Ok(typed) => typed,
            Err(e) => {
                return refuse(AuditStatus::Failed, format!("the stored arguments do not parse ({e}); nothing ran"))
                    .await;
            }
        };
        let args_mac = inner.tokens.args_mac(&raw);
        if args_mac != p.args_mac {
            let reason = "the stored arguments do not match the approved ones under this node's server key (give every \
                          node the same server key); nothing ran";
            return refuse(AuditStatus::Failed, reason.to_owned()).await;
        }
        let facts = ctx.facts(index, &entry);
        let spec = entry.spec;
        let secrets = if facts.schema.marks_secrets() {
            CallSecrets::of(&raw, &ctx.redact_args(facts.schema, &raw))
        } else {
            CallSecrets::default()
        };
        let (name, title) = (facts.name.clone(), facts.title.clone());
        let base = |status: AuditStatus, args: SharedValue| {
            let mut f = RecordFields::new(status);
            f.call_id = Some(call_id.clone());
            f.tool = Some(name.clone());
            f.tier = Some(spec.tier);
            f.title = title.clone();
            f.args = Some(args);
            f.args_hash = Some(args_mac.clone());
            f
        };
        let redacted = SharedValue::from(p.args.clone());
        let session = p.session_id.as_str();
        let token = match inner.tokens.mint(session, spec.name, &args_mac, ctx.token_ttl()).await {
            Ok(token) => token,
            Err(e) => return refuse(AuditStatus::Skipped, format!("{e}; nothing ran")).await,
        };
        let reason = format!(
            "approved by the user; carried out by {} after the run's process ended; token {}",
            inner.node_id,
            token.id()
        );
        if ctx.audit(base(AuditStatus::Confirmed, redacted.clone()).reason(reason)).await.is_err() {
            return ended(AuditStatus::Skipped, Some("the approval could not be recorded; nothing ran".to_owned()));
        }
        if let Err(e) = inner.tokens.redeem(&token, session, spec.name, &args_mac).await {
            return refuse(AuditStatus::Denied, format!("confirmation token refused: {e}")).await;
        }
        let owed = FinalOwed::new(&ctx, base(AuditStatus::Failed, redacted.clone()));
        let call = CallRef { id: &p.call_id, given_id: &p.call_id, name: &p.tool, arguments: "" };
        let checked = Checked { ctx: &ctx, call, spec, base, redacted, secrets };
        let out = execute_approved(checked, run, typed, &token, owed).await;
        if out.executed {
            ended(AuditStatus::Executed, None)
        } else {
            let why = out.content.get("error").and_then(Value::as_str).map(str::to_owned);
            ended(AuditStatus::Failed, why)
        }
    }
}
