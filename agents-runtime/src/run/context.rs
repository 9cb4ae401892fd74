//! One run's context: who it acts for, its availability snapshot, its ids, its recorder (how
//! it writes records and events), its conversation. A direct session has one too (with a
//! confirmer instead of a loop). It is the run the gate takes (`scope::Run`).

pub(super) use super::call::{CallOutcome, CallRef, ToolFacts};
pub(super) use super::recorder::Audited;

use super::conversation::{Conversation, Delta, push_digest};
use super::decision::{ConfirmMode, DirectConfirm, Undecided};
use super::record::{RecordFields, RecordIds, shared_static};
use super::recorder::Recorder;
use super::scope::Run;
use super::secrets::CallSecrets;
use super::shared::{DisabledFallback, Inner, Services, Settings};
use super::skill::Scope;
use super::sync::lock;
use crate::audit::{AuditResult, AuditStatus};
use crate::events::{Event, EventBus};
use crate::provenance::{Ledger, Provenance};
use crate::token::ConfirmationToken;
use crate::tool::{CallContext, NestedInvoker, RegisteredTool, Registry};
use agents_core::redact::SecretSchema;
use agents_core::{Limits, Principal, SharedStr, Tier, ToolSpec};
use serde_json::{Value, json};
use std::marker::PhantomData;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

pub(super) struct RunCtx<A> {
    pub(super) inner: Arc<Inner>,
    pub(super) principal: Arc<Principal>,
    pub(super) cancel: CancellationToken,
    pub(super) limits: Limits,
    /// The run's ids and who it acts for, as every audit record repeats them.
    pub(super) ids: Arc<RecordIds>,
    /// The availability snapshot, by position in `A::tools()`; set once when the run starts
    /// (empty until then: nothing is available).
    pub(super) snapshot: OnceLock<Vec<bool>>,
    /// The skill the run works within, once chosen (see `skill`); unset for an agent
    /// without skills and for a direct session, which every available tool serves.
    pub(super) scope: OnceLock<Scope>,
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
    /// call in this run; each boxed, so a run holds the facts of the tools it called, not a
    /// place for every tool its agent has.
    facts: Box<[OnceLock<Box<ToolFacts>>]>,
    /// The secret values of every call of the run so far, masked in the texts the run's end
    /// derives (its outcome's error, the provider failures it records).
    secrets: Mutex<CallSecrets>,
    /// The session's tool results and user messages, for the provenance check; only when the
    /// agent has an action or a tool that reaches the outside world (shared with the session, so
    /// later turns see earlier results).
    ledger: Option<Arc<Mutex<Ledger>>>,
    /// How the run writes its records and events (its ids, the event bus, its list of calls).
    pub(super) recorder: Recorder,
    /// Set when a confirmation's timeout ended the run (not a stop by the user).
    pub(super) confirmation_timed_out: std::sync::atomic::AtomicBool,
    /// The session's conversation as the store held it when the run bound it (runs only).
    pub(super) conversation: Mutex<Conversation>,
    /// What the run changed in its session, saved when it ends (runs only).
    pub(super) delta: Mutex<Delta>,
    /// The approval the user's answer granted in this turn (conversational mode): a token for
    /// the exact proposal, its tool and the proposal's call id. Used at most once, and only in
    /// this turn.
    pub(super) approved: Mutex<Option<Box<(ConfirmationToken, String, String)>>>,
    /// Set when the state store failed while a proposal's final record was being claimed.
    pub(super) state_failed: OnceLock<String>,
    /// The spend of the run tree this run is a node of (unset for a run of its own).
    pub(super) tree: OnceLock<Arc<super::limit::TreeAllowance>>,
    /// How the agent a handoff tool handed the run to ended (see `gate/handoff.rs`): the
    /// turn ends with it.
    pub(super) handed: OnceLock<super::scope::HandedOver>,
    _agent: PhantomData<fn() -> A>,
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

    /// A run of `A`, as a node of a run tree when `scope` says where: fresh ids carrying the
    /// node's place, the tree's stop and its allowance.
    pub(super) fn in_tree(
        inner: &Arc<Inner>,
        principal: Principal,
        session_id: &str,
        limits: Limits,
        bus: Arc<EventBus>,
        scope: Option<super::limit::NodeScope>,
    ) -> Arc<Self> {
        let Some(scope) = scope else {
            return Self::new(inner, principal, session_id, limits, bus, CancellationToken::new(), None);
        };
        let (run_id, request_id) = (uuid::Uuid::new_v4().to_string(), uuid::Uuid::new_v4().to_string());
        let mut ids = RecordIds::new::<A>(&run_id, session_id, &request_id, &principal);
        ids.node = Some(scope.node);
        let ctx = Self::with_ids(inner, principal, ids, limits, bus, scope.cancel, None);
        let _ = ctx.tree.set(scope.allowance);
        ctx
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
        // Every proposal's card says where its values came from; a read that reaches out is
        // checked before it runs: the session's results are kept for either.
        let assessed =
            A::tools().iter().any(|t| t.tier == Tier::Action || (t.policy.reaches_out() && t.tier != Tier::Handoff));
        let ledger = assessed
            .then(|| lock(&inner.live.sessions).entry(ids.session_id.to_string()).or_default().provenance.clone());
        let node = ids.node.is_some();
        let ids = Arc::new(ids);
        Arc::new(RunCtx::<A> {
            recorder: Recorder::new(inner, ids.clone(), bus, direct.is_some()),
            inner: inner.clone(),
            ids,
            principal: Arc::new(principal),
            cancel,
            limits,
            snapshot: OnceLock::new(),
            scope: OnceLock::new(),
            awaiting: Mutex::new(false),
            nested: std::sync::atomic::AtomicU64::new(0),
            stop_reason: OnceLock::new(),
            slot: OnceLock::new(),
            direct,
            invoker: OnceLock::new(),
            facts: A::tools().iter().map(|_| OnceLock::new()).collect(),
            secrets: Mutex::new(CallSecrets::default()),
            ledger,
            confirmation_timed_out: std::sync::atomic::AtomicBool::new(false),
            conversation: Mutex::new(Conversation::default()),
            delta: Mutex::new(Delta::default()),
            approved: Mutex::new(None),
            state_failed: OnceLock::new(),
            tree: root_tree::<A>(inner, node),
            handed: OnceLock::new(),
            _agent: PhantomData,
        })
    }

    /// Publishes an event (see [`Recorder::emit`]).
    pub(super) fn emit(&self, e: impl FnOnce() -> Event) {
        self.recorder.emit(e);
    }

    /// Emits a `tool_result` event with the result redacted.
    pub(super) fn emit_result(&self, call_id: &str, tool: &str, status: AuditStatus, result: Option<&Value>) {
        self.recorder.emit_result(call_id, tool, status, result);
    }

    /// Writes a record of the run (see [`Recorder::audit`]).
    pub(super) fn audit(&self, f: RecordFields) -> Audited<'_> {
        self.recorder.audit(f)
    }

    /// What the records of a call of `spec` say of the MCP server it is imported from.
    pub(super) fn import_of(&self, spec: &ToolSpec) -> Option<Box<crate::audit::AuditImport>> {
        self.recorder.import_of(spec)
    }

    pub(super) fn redact_args(&self, schema: SecretSchema<'_>, args: &Value) -> Value {
        self.recorder.redact_args(schema, args)
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

    /// The positions of the available tools the run's skill offers (every available tool
    /// while no skill is chosen), in name order: the tools sent to the model.
    pub(super) fn offered(&self) -> impl Iterator<Item = usize> + '_ {
        self.available().filter(|i| self.scope.get().is_none_or(|s| s.offers(*i)))
    }

    pub(super) fn token_ttl(&self) -> Duration {
        Duration::from_secs(self.limits.token_ttl_secs)
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

    /// Keeps a tool result for the provenance check (when the agent has a tool that reaches
    /// out, or an action).
    pub(super) fn note_result(&self, call_id: &str, spec: &'static ToolSpec, result: &Value) {
        if let Some(l) = &self.ledger {
            lock(l).result(spec.name, call_id, spec.import.is_some(), result);
        }
    }

    /// Keeps a retrieved passage's text as untrusted content, labelled with its source and id.
    #[cfg(feature = "knowledge")]
    pub(super) fn note_passage(&self, source: &str, chunk: &str, text: &str) {
        if let Some(l) = &self.ledger {
            let origin = crate::provenance::Origin::Document { source: source.to_owned(), chunk: chunk.to_owned() };
            lock(l).seen(origin, &Value::String(text.to_owned()));
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
                lock(&self.approved).take().map(|a| *a)
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
        self.facts[index].get_or_init(|| {
            Box::new(ToolFacts {
                name: shared_static(entry.spec.name),
                title: entry.spec.title.map(shared_static),
                schema: SecretSchema::new((entry.schema)()),
                permitted: self.inner.settings.roles.has_permission(&self.principal.role, entry.spec.permission),
                import: self.import_of(entry.spec),
            })
        })
    }

    /// Remembers an executed result for the session's digest (saved when the turn ends).
    pub(super) fn push_digest(&self, tool: &str, result: &Value) {
        push_digest(&mut lock(&self.delta), tool, result);
    }
}

impl<A: Registry> Run for RunCtx<A> {
    type Agent = A;

    fn recorder(&self) -> &Recorder {
        &self.recorder
    }

    fn settings(&self) -> &Settings {
        &self.inner.settings
    }

    fn services(&self) -> &Services {
        &self.inner.services
    }

    fn principal(&self) -> &Principal {
        &self.principal
    }

    fn cancel(&self) -> &CancellationToken {
        &self.cancel
    }

    fn stop_reason(&self) -> Option<Undecided> {
        self.stop_reason.get().copied()
    }

    fn available_index(&self, name: &str) -> Option<usize> {
        RunCtx::available_index(self, name)
    }

    fn outside_skill(&self, index: usize) -> Option<&'static str> {
        self.scope.get().filter(|s| !s.offers(index)).map(|s| s.skill.name)
    }

    fn facts(&self, index: usize, entry: &RegisteredTool<A>) -> &ToolFacts {
        RunCtx::facts(self, index, entry)
    }

    fn remember_secrets(&self, secrets: &CallSecrets) {
        RunCtx::remember_secrets(self, secrets);
    }

    fn provenance_of(&self, args: &Value) -> Provenance {
        RunCtx::provenance_of(self, args)
    }

    fn note_result(&self, call_id: &str, spec: &'static ToolSpec, result: &Value) {
        RunCtx::note_result(self, call_id, spec, result);
    }

    fn approval(
        &self,
        spec: &'static ToolSpec,
        call_id: &str,
        confirmed: bool,
    ) -> (Option<(ConfirmationToken, String, String)>, SharedStr) {
        RunCtx::approval(self, spec, call_id, confirmed)
    }

    fn call_context(&self, spec: &'static ToolSpec, call_id: SharedStr) -> CallContext {
        RunCtx::call_context(self, spec, call_id)
    }

    fn arm(&self, invoker: NestedInvoker) {
        let _ = self.invoker.set(invoker);
    }

    fn nested_call_id(&self) -> String {
        let n = self.nested.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        format!("{}-nested-{n}", self.ids.run_id)
    }

    fn hand_over(&self, end: super::scope::HandedOver) {
        let _ = self.handed.set(end);
    }

    fn granted_call(&self, callee: &'static str) -> super::granted::GrantedCall {
        let (run_id, node) = (self.ids.run_id.to_string(), self.ids.node.as_ref());
        // The tree's root: this run's own root when it is a node, else this run.
        let root = node.and_then(|n| n.parent_run_id.clone()).unwrap_or_else(|| run_id.clone());
        let path = format!("{}/{callee}", node.map_or(A::SPEC.name, |n| n.path.as_str()));
        let allowance = self.tree.get_or_init(|| root_allowance::<A>(&self.inner)).clone();
        super::granted::GrantedCall {
            inner: self.inner.clone(),
            principal: (*self.principal).clone(),
            session_id: self.ids.session_id.to_string(),
            scope: super::limit::NodeScope {
                cancel: self.cancel.child_token(),
                node: crate::audit::AuditNode { parent_run_id: Some(root), path },
                allowance,
            },
            bus: self.recorder.bus.clone(),
            run_id,
        }
    }
}

/// The tree an agent's run grows by calling a granted agent, whose root is that run: the root
/// names the agent where a composite's tree names the composite.
fn root_allowance<A: Registry>(inner: &Inner) -> Arc<super::limit::TreeAllowance> {
    Arc::new(super::limit::TreeAllowance::new(inner.settings.tree_limit, (A::SPEC.name, A::MANIFEST_SHA256)))
}

/// A run's tree ledger from its start: set for the run of an agent that grants agents or hands
/// off to one (not a node already), so its own spend is in the ledger before any callee or
/// handoff target checks it; a node's is set from its scope.
fn root_tree<A: Registry>(inner: &Arc<Inner>, node: bool) -> OnceLock<Arc<super::limit::TreeAllowance>> {
    let tree = OnceLock::new();
    let hands_off = (0..).map_while(A::entry_at).any(|e| e.spec().handoff.is_some());
    let grows = A::agent_at(0).is_some() || hands_off;
    if !node && grows {
        let _ = tree.set(root_allowance::<A>(inner));
    }
    tree
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

/// The run's skill, once chosen, as a `skill_chosen` record and event. `Err` when the record
/// could not be written: the run must not go on (fail closed).
pub(super) async fn announce_skill<A: Registry>(ctx: &RunCtx<A>) -> Result<(), ()> {
    let Some(scope) = ctx.scope.get() else { return Ok(()) };
    let (name, by) = (scope.skill.name, scope.by);
    let mut f =
        RecordFields::new(AuditStatus::SkillChosen).reason(format!("skill `{name}` chosen by the {}", by.as_str()));
    f.result = Some(AuditResult::Value(scope.record_value::<A>()));
    ctx.audit(f).await.map_err(|_| ())?;
    ctx.emit(|| Event::SkillChosen { run_id: ctx.ids.run_id.to_string(), skill: name.to_owned(), by });
    Ok(())
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
