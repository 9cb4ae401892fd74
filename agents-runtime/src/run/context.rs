//! One run's context: who it acts for, its availability snapshot, its ids and how it writes
//! records and events. A direct session has one too (with a confirmer instead of a loop).

use super::conversation::{Conversation, Delta, push_digest};
use super::decision::{ConfirmMode, DirectConfirm, Undecided};
use super::lock;
use super::outcome::{CallStatus, CallSummary};
use super::record::{RESULT_TEXT_KEPT, RecordFields, RecordIds};
use super::secrets::CallSecrets;
use super::shared::{DisabledFallback, Inner, mark_recorded, settles};
use crate::BoxFuture;
use crate::audit::{AuditError, AuditResult, AuditStatus};
use crate::events::{Event, EventBus};
use crate::provenance::{Ledger, Provenance};
use crate::provider::ToolCallRequest;
use crate::token::ConfirmationToken;
use crate::tool::{CallContext, NestedInvoker, RegisteredTool, Registry};
use agents_core::redact::{SecretSchema, redact};
use agents_core::{Limits, Principal, SharedStr, SharedValue, Tier, ToolSpec};
use serde_json::{Value, json};
use std::marker::PhantomData;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

pub(super) struct RunCtx<A> {
    pub(super) inner: Arc<Inner>,
    pub(super) principal: Arc<Principal>,
    pub(super) bus: Arc<EventBus>,
    pub(super) cancel: CancellationToken,
    pub(super) limits: Limits,
    /// The run's ids and who it acts for, as every audit record repeats them.
    pub(super) ids: Arc<RecordIds>,
    /// The availability snapshot, by position in `A::tools()`; set once when the run starts
    /// (empty until then: nothing is available).
    pub(super) snapshot: OnceLock<Vec<bool>>,
    pub(super) awaiting: Mutex<bool>,
    /// How many nested calls the run made (their ids count them).
    pub(super) nested: std::sync::atomic::AtomicU64,
    pub(super) direct: Option<DirectConfirm>,
    /// Why `cancel` was cancelled, when someone said (a direct session's owner); a plain stop
    /// otherwise.
    pub(super) stop_reason: OnceLock<Undecided>,
    /// The run's slot in the store, once granted (direct sessions hold none): a proposal
    /// keeps it, so a resumption can tell whether the run that proposed it is alive.
    pub(super) slot: OnceLock<crate::store::SlotId>,
    /// What the run's tools call other granted tools through: made by the gate the first time
    /// one of the run's tools runs (see `gate::nested`), holding the run weakly.
    pub(super) invoker: OnceLock<NestedInvoker>,
    /// Per tool, by position in `A::tools()`: what its records repeat, worked out on its first
    /// call in this run.
    facts: Box<[OnceLock<ToolFacts>]>,
    /// The secret values of every call of the run so far, masked in the texts the run's end
    /// derives (its outcome's error, the provider failures it records).
    secrets: Mutex<CallSecrets>,
    /// The session's tool results and user messages, for the egress provenance check; only
    /// when the agent has a tool that reaches the outside world (shared with the session, so
    /// later turns see earlier results).
    ledger: Option<Arc<Mutex<Ledger>>>,
    /// The run's tool calls with their last status the log took (runs only: a direct
    /// session, which may live long, keeps none).
    pub(super) calls: Mutex<Vec<CallSummary>>,
    /// Set when a confirmation's timeout ended the run (not a stop by the user).
    pub(super) confirmation_timed_out: std::sync::atomic::AtomicBool,
    /// The session's conversation as the store held it when the run bound it (runs only).
    pub(super) conversation: Mutex<Conversation>,
    /// What the run changed in its session, saved when it ends (runs only).
    pub(super) delta: Mutex<Delta>,
    /// The approval the user's answer granted in this turn (conversational mode): a token for
    /// the exact proposal, its tool and the proposal's call id. Used at most once, and only in
    /// this turn.
    pub(super) approved: Mutex<Option<(ConfirmationToken, String, String)>>,
    /// Set when the state store failed while a proposal's final record was being claimed.
    pub(super) state_failed: OnceLock<String>,
    _agent: PhantomData<fn() -> A>,
}

/// What the gate needs of one tool on every call: the shared text its records carry and its
/// input schema with whether that marks anything secret.
pub(super) struct ToolFacts {
    pub(super) name: SharedStr,
    pub(super) title: Option<SharedStr>,
    pub(super) schema: SecretSchema<'static>,
    /// Whether the run's role holds the tool's permission, read from the role map (which does
    /// not change while the runtime lives), not from the availability snapshot.
    pub(super) permitted: bool,
    /// For a tool imported from an MCP server: what each record of its calls says of the
    /// server, its tool and the pin.
    pub(super) import: Option<crate::audit::AuditImport>,
}

/// One tool call as the gate reads it, borrowed from the request that carries it.
#[derive(Clone, Copy)]
pub(super) struct CallRef<'a> {
    /// The id the call is known by in records, events and decisions: for an action, one the
    /// runtime minted; otherwise the caller's.
    pub(super) id: &'a str,
    /// The id the caller gave (the model provider's, or a direct session caller's).
    pub(super) given_id: &'a str,
    pub(super) name: &'a str,
    pub(super) arguments: &'a str,
}

impl<'a> From<&'a ToolCallRequest> for CallRef<'a> {
    fn from(call: &'a ToolCallRequest) -> Self {
        CallRef { id: &call.id, given_id: &call.id, name: &call.name, arguments: &call.arguments }
    }
}

/// What the gate hands back to the model for one call.
pub(super) struct CallOutcome {
    pub(super) content: Value,
    pub(super) is_error: bool,
    /// The tool ran and this is its result (not a refusal, substitute or handoff notice).
    pub(super) executed: bool,
}

impl CallOutcome {
    pub(super) fn ok(v: Value) -> Self {
        CallOutcome { content: v, is_error: false, executed: false }
    }
    pub(super) fn err(msg: impl Into<String>) -> Self {
        CallOutcome { content: json!({"error": msg.into()}), is_error: true, executed: false }
    }
}

/// Whether the log took a record ([`RunCtx::audit`]): known at once, or by a boxed future
/// (a sink that writes later, or a record that settles a stored proposal).
#[must_use = "a record's answer says whether anything may run"]
pub(super) struct Audited<'a>(Option<AuditedState<'a>>);

enum AuditedState<'a> {
    Now(Result<(), AuditError>),
    Later(BoxFuture<'a, Result<(), AuditError>>),
}

impl Future for Audited<'_> {
    type Output = Result<(), AuditError>;

    fn poll(mut self: std::pin::Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> std::task::Poll<Self::Output> {
        match self.0.take() {
            Some(AuditedState::Now(answer)) => std::task::Poll::Ready(answer),
            Some(AuditedState::Later(mut later)) => {
                let polled = later.as_mut().poll(cx);
                if polled.is_pending() {
                    self.0 = Some(AuditedState::Later(later));
                }
                polled
            }
            None => panic!("`Audited` polled after it resolved"),
        }
    }
}

impl<A: Registry> RunCtx<A> {
    /// The context a tool of the run runs with: who it acts for, the call, the application's
    /// state, and the way back into this gate for the tools it calls in turn.
    pub(super) fn call_context(&self, spec: &'static ToolSpec, call_id: SharedStr) -> CallContext {
        let invoker = self.invoker.get().cloned();
        CallContext {
            principal: self.principal.clone(),
            run_id: self.ids.run_id.clone(),
            session_id: self.ids.session_id.clone(),
            call_id,
            spec,
            invoker,
            approved: None,
            state: self.inner.services.state.clone(),
            imports: self.inner.services.mcp_imports.clone(),
            listed_sha256: std::sync::OnceLock::new(),
        }
    }

    /// A new run (or direct session) of `A` for `principal` in `session_id`, with fresh ids.
    pub(super) fn new(
        inner: &Arc<Inner>,
        principal: Principal,
        session_id: &str,
        limits: Limits,
        bus: Arc<EventBus>,
        cancel: CancellationToken,
        direct: Option<DirectConfirm>,
    ) -> Arc<Self> {
        let (run_id, request_id) = (uuid::Uuid::new_v4().to_string(), uuid::Uuid::new_v4().to_string());
        let ids = RecordIds::new::<A>(&run_id, session_id, &request_id, &principal);
        Self::with_ids(inner, principal, ids, limits, bus, cancel, direct)
    }

    /// A run (or direct session) of `A` under the given ids.
    pub(super) fn with_ids(
        inner: &Arc<Inner>,
        principal: Principal,
        ids: RecordIds,
        limits: Limits,
        bus: Arc<EventBus>,
        cancel: CancellationToken,
        direct: Option<DirectConfirm>,
    ) -> Arc<Self> {
        let reaches_out = A::tools().iter().any(|t| t.policy.reaches_out() && t.tier != Tier::Handoff);
        let ledger = reaches_out
            .then(|| lock(&inner.live.sessions).entry(ids.session_id.to_string()).or_default().provenance.clone());
        Arc::new(RunCtx::<A> {
            inner: inner.clone(),
            ids: Arc::new(ids),
            principal: Arc::new(principal),
            bus,
            cancel,
            limits,
            snapshot: OnceLock::new(),
            awaiting: Mutex::new(false),
            nested: std::sync::atomic::AtomicU64::new(0),
            stop_reason: OnceLock::new(),
            slot: OnceLock::new(),
            direct,
            invoker: OnceLock::new(),
            facts: A::tools().iter().map(|_| OnceLock::new()).collect(),
            secrets: Mutex::new(CallSecrets::default()),
            ledger,
            calls: Mutex::new(Vec::new()),
            confirmation_timed_out: std::sync::atomic::AtomicBool::new(false),
            conversation: Mutex::new(Conversation::default()),
            delta: Mutex::new(Delta::default()),
            approved: Mutex::new(None),
            state_failed: OnceLock::new(),
            _agent: PhantomData,
        })
    }

    /// Publishes an event; it is built only when someone subscribes (events are a view, the
    /// audit log is the record).
    pub(super) fn emit(&self, e: impl FnOnce() -> Event) {
        if self.bus.has_subscribers() {
            self.bus.publish(e());
        }
    }

    /// The position of `name` in `A::tools()` when it is in this run's availability snapshot.
    pub(super) fn available_index(&self, name: &str) -> Option<usize> {
        let i = A::tool_index(name)?;
        self.snapshot.get()?.get(i).copied().unwrap_or(false).then_some(i)
    }

    /// The positions in `A::tools()` of the available tools, in name order.
    pub(super) fn available(&self) -> impl Iterator<Item = usize> + '_ {
        let on = self.snapshot.get().map(Vec::as_slice).unwrap_or_default();
        on.iter().enumerate().filter(|(_, on)| **on).map(|(i, _)| i)
    }

    pub(super) fn token_ttl(&self) -> Duration {
        Duration::from_secs(self.limits.token_ttl_secs)
    }

    /// Emits a `tool_result` event with the result redacted.
    pub(super) fn emit_result(&self, call_id: &str, tool: &str, status: AuditStatus, result: Option<&Value>) {
        self.emit(|| Event::ToolResult {
            run_id: self.ids.run_id.to_string(),
            call_id: call_id.to_owned(),
            tool: tool.to_owned(),
            status,
            result: result.map(|v| redact(v, None, &self.inner.settings.redaction)),
        });
    }

    /// Builds the record now and hands it to the sink; the future only waits for the sink
    /// (it holds no record, so the gate's own future stays small). The sealed record the sink
    /// returns is not needed here: it is dropped where it arrives rather than passed up.
    ///
    /// A sink that answers at once, for a record that settles no stored proposal (every read
    /// call's), is answered here: the run's list of calls follows the record now, and the
    /// future only hands the answer over (a few words, moved with the gate's future at no
    /// cost). Otherwise the rest waits in a boxed future.
    pub(super) fn audit(&self, f: RecordFields) -> Audited<'_> {
        crate::telemetry::audited(f.status, f.tool.as_deref(), f.tier);
        // A record that moves a call: the run's list of calls follows it once the log took it.
        let moved = match (&f.call_id, CallStatus::of_audit(f.status)) {
            (Some(id), Some(status)) if self.direct.is_none() => Some((id.clone(), f.tool.clone(), f.tier, status)),
            _ => None,
        };
        let settled = settles(&self.inner.live, f.call_id.as_ref(), f.status);
        let record = self.ids.record(f);
        // A sink that answers at once has its sealed record dropped here.
        let answer = self.inner.services.audit.append(record).outcome_now();
        let answer = match answer {
            Ok(answer) if settled.is_none() => {
                self.took(&answer, moved);
                return Audited(Some(AuditedState::Now(answer)));
            }
            Ok(answer) => Ok(answer),
            Err(pending) => Err(pending),
        };
        Audited(Some(AuditedState::Later(Box::pin(async move {
            let answer = match answer {
                Ok(answer) => answer,
                Err(pending) => pending.await.map(drop),
            };
            self.took(&answer, moved);
            if let Some(id) = settled {
                if answer.is_ok() {
                    mark_recorded(&self.inner.services, &id).await;
                } else {
                    // Still owed: a later final record of the call marks it.
                    self.inner.live.settling.insert(id);
                }
            }
            answer
        }))))
    }

    /// What follows the log's answer to a record: a refusal is logged; a record taken moves its
    /// call in the run's list (`moved`).
    fn took(
        &self,
        answer: &Result<(), AuditError>,
        moved: Option<(SharedStr, Option<SharedStr>, Option<Tier>, CallStatus)>,
    ) {
        match answer {
            Err(e) => tracing::error!(run_id = %self.ids.run_id, error = %e, "audit write failed"),
            Ok(()) => {
                if let Some((id, tool, tier, status)) = moved {
                    self.note_call(&id, tool, tier, status);
                }
            }
        }
    }

    /// Notes a call's new status in the run's list (a call first seen is added when its tool
    /// is known).
    fn note_call(&self, call_id: &str, tool: Option<SharedStr>, tier: Option<Tier>, status: CallStatus) {
        let mut calls = lock(&self.calls);
        if let Some(c) = calls.iter_mut().rev().find(|c| c.call_id == call_id) {
            c.status = status;
            if c.tier.is_none() {
                c.tier = tier;
            }
        } else if let Some(tool) = tool {
            calls.push(CallSummary { call_id: call_id.to_owned(), tool: tool.to_string(), tier, status });
        }
    }

    /// Audits and tells the model a call was refused; nothing ran.
    /// Boxed: refusals are the rare path, and the gate's future should not carry their state.
    pub(super) fn deny<'a>(
        &'a self,
        call: CallRef<'a>,
        spec: Option<&'static ToolSpec>,
        args: Option<Value>,
        reason: String,
    ) -> BoxFuture<'a, CallOutcome> {
        Box::pin(async move {
            let mut f = RecordFields::new(AuditStatus::Denied);
            f.call_id = Some(call.id.into());
            f.tool = Some(call.name.into());
            f.tier = spec.map(|s| s.tier);
            f.import = spec.and_then(|s| self.import_of(s));
            f.reason = Some(reason.clone());
            f.args = args.map(SharedValue::from);
            let _ = self.audit(f).await;
            self.emit(|| Event::ToolDenied {
                run_id: self.ids.run_id.to_string(),
                call_id: call.id.to_owned(),
                tool: call.name.to_owned(),
                reason: reason.clone(),
            });
            CallOutcome::err(reason)
        })
    }

    /// Remembers a call's secret values for the texts the run derives later.
    pub(super) fn remember_secrets(&self, secrets: &CallSecrets) {
        if !secrets.is_empty() {
            lock(&self.secrets).extend(secrets.clone());
        }
    }

    /// `text` with the secret values of every call of the run so far masked.
    pub(super) fn mask_run_text(&self, text: &str) -> String {
        lock(&self.secrets).text(text)
    }

    pub(super) fn redact_args(&self, schema: SecretSchema<'_>, args: &Value) -> Value {
        schema.redact(args, &self.inner.settings.redaction)
    }

    /// Keeps a tool result for the egress provenance check (when the agent has a tool that
    /// reaches out).
    pub(super) fn note_result(&self, call_id: &str, tool: &str, result: &Value) {
        if let Some(l) = &self.ledger {
            lock(l).result(tool, call_id, result);
        }
    }

    /// Keeps the user's message for the egress provenance check.
    pub(super) fn note_user(&self, text: &str) {
        if let Some(l) = &self.ledger {
            lock(l).user(text);
        }
    }

    /// Where the values of `args` came from (a tool that reaches out).
    pub(super) fn provenance_of(&self, args: &Value) -> Provenance {
        let application = crate::provenance::normalise(&self.inner.settings.system_prompt);
        match &self.ledger {
            Some(l) => lock(l).assess(args, &application),
            None => Ledger::default().assess(args, &application),
        }
    }

    /// The approval a conversational call that a person confirms (`confirmed`: an action, or
    /// a read carrying a value copied from a tool result) redeems (taken from the turn, so it
    /// is used at most once), and the call id its records carry: the proposal's when the
    /// call carries out an approved proposal, so proposal, confirmation and execution join in
    /// the audit log; otherwise the call's own.
    pub(super) fn approval(
        &self,
        spec: &'static ToolSpec,
        call_id: &str,
        confirmed: bool,
    ) -> (Option<(ConfirmationToken, String, String)>, SharedStr) {
        let approved =
            if self.inner.settings.confirm_mode == ConfirmMode::Conversational && confirmed && self.direct.is_none() {
                lock(&self.approved).take()
            } else {
                None
            };
        let records_call_id = match &approved {
            Some((_, tool, proposal_call)) if tool == spec.name => proposal_call.as_str().into(),
            _ => call_id.into(),
        };
        (approved, records_call_id)
    }

    /// The facts of the tool at `index` in `A::tools()`.
    pub(super) fn facts(&self, index: usize, entry: &RegisteredTool<A>) -> &ToolFacts {
        self.facts[index].get_or_init(|| ToolFacts {
            name: entry.spec.name.into(),
            title: entry.spec.title.map(Into::into),
            schema: SecretSchema::new((entry.schema)()),
            permitted: self.inner.settings.roles.has_permission(&self.principal.role, entry.spec.permission),
            import: self.import_of(entry.spec),
        })
    }

    /// What the records of a call of `spec` say of the MCP server it is imported from (none
    /// for a tool of this program): the server, where this runtime reaches it, its tool and
    /// the pin.
    pub(super) fn import_of(&self, spec: &ToolSpec) -> Option<crate::audit::AuditImport> {
        let import = spec.import?;
        let source = self.inner.services.mcp_imports.as_ref().and_then(|i| i.source_of(import.server));
        Some(crate::audit::AuditImport {
            server: import.server.to_owned(),
            source,
            tool: import.tool.to_owned(),
            sha256: import.sha256.to_owned(),
            listed_sha256: None,
        })
    }

    /// What a record keeps of a result: its keyed digest ([`TokenStore::result_mac`]), or the
    /// redacted value when the runtime records raw results.
    ///
    /// [`TokenStore::result_mac`]: crate::token::TokenStore::result_mac
    pub(super) fn result_for_audit(&self, schema_free: &Value) -> AuditResult {
        if self.inner.settings.raw_results {
            AuditResult::Value(redact(schema_free, None, &self.inner.settings.redaction))
        } else {
            self.digest_within(schema_free, usize::MAX).expect("no canonical text is longer than usize::MAX")
        }
    }

    /// The keyed digest of a result whose canonical JSON text is at most `max` bytes long;
    /// `None` when it is longer, or when the runtime records raw results. The text is written
    /// once, for both the length and the digest, into a buffer each thread keeps between calls
    /// (dropped when a large result grew it).
    pub(super) fn digest_within(&self, schema_free: &Value, max: usize) -> Option<AuditResult> {
        if self.inner.settings.raw_results {
            return None;
        }
        thread_local! {
            static TEXT: std::cell::RefCell<String> = const { std::cell::RefCell::new(String::new()) };
        }
        TEXT.with_borrow_mut(|text| {
            text.clear();
            agents_core::canonical::write_to(schema_free, text);
            let digest = (text.len() <= max)
                .then(|| AuditResult::Sha256(self.inner.services.tokens.result_mac(text.as_bytes())));
            if text.capacity() > RESULT_TEXT_KEPT {
                *text = String::new();
            }
            digest
        })
    }

    /// Remembers an executed result for the session's digest (saved when the turn ends).
    pub(super) fn push_digest(&self, tool: &str, result: &Value) {
        push_digest(&mut lock(&self.delta), tool, result);
    }
}

/// Availability: grants ∩ role ∩ not disabled, audited as `run_started`. `None` when that
/// record could not be written: nothing may run (fail closed).
pub(super) async fn availability<A: Registry>(ctx: &Arc<RunCtx<A>>) -> Option<Vec<bool>> {
    let (snapshot, notice) = snapshot_of::<A>(ctx).await;
    let mut started = RecordFields::new(AuditStatus::RunStarted);
    let names: Vec<&str> = A::tools().iter().zip(&snapshot).filter(|(_, on)| **on).map(|(t, _)| t.name).collect();
    started.result = Some(AuditResult::Value(json!({"available_tools": names})));
    ctx.audit(started).await.ok()?;
    if let Some(n) = notice {
        let _ = ctx.audit(RecordFields::new(AuditStatus::Notice).reason(n)).await;
    }
    Some(snapshot)
}

/// Grants ∩ role ∩ not disabled, by position in `A::tools()`, and the notice to record when
/// the disable list could not be read.
pub(super) async fn snapshot_of<A: Registry>(ctx: &RunCtx<A>) -> (Vec<bool>, Option<String>) {
    let inner = &ctx.inner;
    let role_set: Vec<bool> =
        A::tools().iter().map(|t| inner.settings.roles.has_permission(&ctx.principal.role, t.permission)).collect();
    let Some(d) = &inner.services.disabled else { return (role_set, None) };
    match d.disabled().await {
        Ok(off) => (A::tools().iter().zip(role_set).map(|(t, held)| held && !off.contains(t.name)).collect(), None),
        Err(e) => match inner.settings.disabled_fallback {
            DisabledFallback::RoleOnly => {
                tracing::warn!(error = %e, "disable list unreadable; using the role-only tool set");
                (role_set, Some(format!("disable list unreadable ({e}); fell back to the role-only tool set")))
            }
            DisabledFallback::FailClosed => {
                tracing::warn!(error = %e, "disable list unreadable; offering no tools");
                let notice = format!("disable list unreadable ({e}); offering no tools (fail closed)");
                (vec![false; A::tools().len()], Some(notice))
            }
        },
    }
}
