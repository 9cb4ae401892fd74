//! Starting a run: the checks before anything is recorded (the registry, the declared model,
//! the knowledge's hashes, the audit values, the skill), then the run's context and its task.

use super::context::{RunCtx, availability};
use super::conversation::Conversation;
use super::decision::Confirmer;
use super::decision::DirectConfirm;
use super::driver::{AnswerType, run_loop};
use super::limit::NodeScope;
use super::outcome::{Ending, Failure};
use super::outcome::{RunHandle, RunStatus, StartError};
use super::runtime::Runtime;
use super::session::DirectSession;
use super::skill::Scope;
use super::slot::{PendingSlot, SlotGuard};
use super::sync::lock;
use crate::events::{Event, EventBus};
use crate::provider::Provider;
use crate::store::answer_now;
use crate::tool::Registry;
use agents_core::Skill;
use agents_core::skill::SkillChooser;
use agents_core::{Principal, SkillSpec};
use serde_json::Value;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

/// The `invoke_agent` span of a run (see [`crate::telemetry::run_span`]).
fn run_span<A: Registry>(ctx: &RunCtx<A>) -> tracing::Span {
    let (ids, provider) = (&ctx.ids, &ctx.inner.services.provider);
    crate::telemetry::run_span(
        A::SPEC.name,
        &ids.run_id,
        &ids.session_id,
        &ids.manifest_sha256,
        provider.name(),
        provider.model(),
        &ids.user_id,
        &ids.org_id,
        &ids.role,
    )
}

/// How a run refused before anything ran ends: subscribers see it end, as a run the audit
/// log refused.
fn not_started<A: Registry, O>(ctx: &RunCtx<A>, e: StartError) -> Ending<O> {
    let (run_id, error) = (ctx.ids.run_id.to_string(), e.to_string());
    ctx.emit(|| Event::Error { run_id: run_id.clone(), message: error.clone() });
    ctx.emit(|| Event::Done { run_id: run_id.clone(), status: RunStatus::Failed });
    let mut ending = Ending::empty(run_id, RunStatus::Failed);
    ending.failure = Some(Failure::NotStarted(e));
    if let Some(e) = ending.error_occurred() {
        ctx.emit(|| e);
    }
    ending
}

/// The store's pending answer about the session (when it answered at once, the run's
/// context already holds the conversation), the run's slot (or the store's pending grant),
/// and what `A` does with `input`: the body of a run's task, the future it holds for as
/// long as the run lives (sized by its largest state; see `run::size_tests`).
#[allow(
    clippy::manual_async_fn,
    reason = "as an `async fn` its arguments are kept beside its state for as long as the run lives (368 bytes more)"
)]
pub(super) fn run_task<A: Registry, O: AnswerType>(
    ctx: Arc<RunCtx<A>>,
    bound: Option<crate::BoxFuture<'static, Result<Conversation, StartError>>>,
    mut slot: Result<SlotGuard, PendingSlot>,
    session: String,
    max_runs: u32,
    input_text: String,
) -> impl Future<Output = Ending<O>> + Send {
    async move {
        let refused = |e: StartError| not_started(&ctx, e);
        if let Some(pending) = bound {
            match pending.await {
                Ok(conversation) => *lock(&ctx.conversation) = conversation,
                Err(e) => return refused(e),
            }
        }
        // The guard stays where it was handed over (a copy of it would be kept beside it).
        if let Err(pending) = &mut slot {
            match SlotGuard::settle(&ctx.inner, &ctx.principal, &session, max_runs, pending).await {
                Ok(granted) => slot = Ok(granted),
                Err(e) => return refused(e),
            }
        }
        if let Ok(guard) = &mut slot {
            guard.keep_renewed(ctx.cancel.clone());
            if let Some(id) = &guard.slot {
                let _ = ctx.slot.set(id.clone());
            }
        }
        run_loop(ctx, input_text).await
    }
}

impl Runtime {
    /// Starts a run of agent `A` for `principal` in `session_id` (created on first use and
    /// bound to the principal). The fourth concurrent run of a user is refused, not queued.
    /// Outside a tokio runtime it returns [`StartError::NoAsyncRuntime`] and changes nothing.
    ///
    /// An agent with skills works within the one its model chooses first (see
    /// [`Runtime::start_in_skill`] to choose it in code, and [`crate::run::CHOICE_TOOL`]).
    pub fn start<A: Registry>(
        &self,
        principal: Principal,
        session_id: &str,
        input: A::Input,
    ) -> Result<RunHandle<A::Output>, StartError> {
        self.start_in_tree::<A>(principal, session_id, input, None, None)
    }

    /// Starts a run of the agent of `skill` that works within that skill: only the tools the
    /// skill offers are offered to the model, a call of any other granted tool is denied
    /// (`outside skill`), and no skill-choice step is made. Its `skill_chosen` record and
    /// event say the application chose it. Otherwise as [`Runtime::start`].
    ///
    /// ```ignore
    /// let handle = runtime.start_in_skill(principal, "session-1", KycReviewerSkill::Review, input)?;
    /// ```
    pub fn start_in_skill<S>(
        &self,
        principal: Principal,
        session_id: &str,
        skill: S,
        input: <S::Agent as agents_core::Agent>::Input,
    ) -> Result<RunHandle<<S::Agent as agents_core::Agent>::Output>, StartError>
    where
        S: Skill,
        S::Agent: Registry,
    {
        let spec = <S::Agent as agents_core::Agent>::SPEC;
        let declared =
            spec.skill(skill.name()).ok_or(StartError::UnknownSkill { agent: spec.name, skill: skill.name() })?;
        if declared.io.is_some() {
            return Err(StartError::TypedSkill { agent: spec.name, skill: declared.name });
        }
        self.start_in_tree::<S::Agent>(principal, session_id, input, Some(declared), None)
    }

    /// [`Runtime::start`], within `skill` when the application named one, and as a node of a
    /// run tree when `node` says where (see [`super::child`]).
    pub(super) fn start_in_tree<A: Registry>(
        &self,
        principal: Principal,
        session_id: &str,
        input: A::Input,
        skill: Option<&'static SkillSpec>,
        node: Option<NodeScope>,
    ) -> Result<RunHandle<A::Output>, StartError> {
        self.start_run::<A, A::Input, A::Output>(principal, session_id, &input, skill, node)
    }

    /// [`Runtime::start_in_tree`], its input of type `I` and its answer parsed into `O`: the
    /// agent's, or a typed skill's (see [`Runtime::start_skill`]).
    pub(super) fn start_run<A: Registry, I: serde::Serialize, O: AnswerType>(
        &self,
        principal: Principal,
        session_id: &str,
        input: &I,
        skill: Option<&'static SkillSpec>,
        node: Option<NodeScope>,
    ) -> Result<RunHandle<O>, StartError> {
        crate::tool::verified_registry::<A>()?;
        crate::declared::check_provider::<A>(&*self.inner.services.provider)?;
        #[cfg(feature = "knowledge")]
        self.inner
            .services
            .knowledge
            .load_fresh(A::MANIFEST_SHA256, A::SPEC.knowledge)
            .map_err(StartError::Knowledge)?;
        #[cfg(not(feature = "knowledge"))]
        if !A::SPEC.knowledge.is_empty() {
            return Err(StartError::KnowledgeNotBuilt { agent: A::SPEC.name });
        }
        crate::audit::declared::check_values(&A::SPEC, self.inner.settings.values)?;
        principal.validate()?;
        let handle = tokio::runtime::Handle::try_current().map_err(|_| StartError::NoAsyncRuntime)?;
        let limits = self.inner.settings.limits.unwrap_or(A::SPEC.limits);
        let input_text = match serde_json::to_value(input) {
            Ok(Value::String(s)) => s,
            Ok(v) => v.to_string(),
            Err(e) => return Err(StartError::Input(e.to_string())),
        };
        // A store that answers at once binds the session (or refuses it) here; a shared store
        // is asked in the run's task, which then ends not started when it refuses.
        let (bound, pending) = match answer_now(self.inner.bind_session(session_id, &principal)) {
            Ok(bound) => (Some(bound?), None),
            Err(pending) => (None, Some(pending)),
        };
        let max_runs = limits.max_concurrent_runs;
        let slot = SlotGuard::take(&self.inner, &principal, session_id, max_runs)?;
        self.inner.keep_swept(&handle);
        let bus = Arc::new(EventBus::new());
        let events = bus.subscribe_feed();
        let ctx = RunCtx::<A>::in_tree(&self.inner, principal, session_id, limits, bus.clone(), node);
        if let Some(conversation) = bound {
            *lock(&ctx.conversation) = conversation;
        }
        let cancel = ctx.cancel.clone();
        if let Some(skill) = skill {
            let _ = ctx.scope.set(Scope::of::<A>(skill, SkillChooser::Application));
        }
        super::gate::arm_nested(&ctx);
        let run_id = ctx.ids.run_id.to_string();
        let span = run_span(&ctx);
        let session = session_id.to_owned();
        let join = handle.spawn(run_task(ctx, pending, slot, session, max_runs, input_text).instrument(span));
        Ok(RunHandle { run_id, events, bus, cancel, join })
    }

    /// Opens a direct session. `confirmer` asks a person for action tools; with `None`, an
    /// action call returns a structured "confirmation required" result and nothing runs.
    ///
    /// A direct session neither reads nor retrieves the agent's knowledge: it has no model
    /// turn (the client's model, as over MCP, sees only what the tools return), so no message
    /// is there to retrieve for and no passage reaches a model. Nor does it offer a search of
    /// the documents: that would be a tool no manifest lists, steered by the model's query;
    /// an application that wants its documents searched that way grants a read tool for it,
    /// reviewed like any other.
    pub async fn direct<A: Registry>(
        &self,
        principal: Principal,
        session_id: &str,
        confirmer: Option<Arc<dyn Confirmer>>,
    ) -> Result<DirectSession<A>, StartError> {
        crate::tool::verified_registry::<A>()?;
        crate::audit::declared::check_values(&A::SPEC, self.inner.settings.values)?;
        principal.validate()?;
        self.inner.bind_session(session_id, &principal).await?;
        let limits = self.inner.settings.limits.unwrap_or(A::SPEC.limits);
        let confirm = match confirmer {
            Some(c) => DirectConfirm::Ask(c),
            None => DirectConfirm::Unavailable,
        };
        let bus = Arc::new(EventBus::new());
        let ctx =
            RunCtx::<A>::new(&self.inner, principal, session_id, limits, bus, CancellationToken::new(), Some(confirm));
        super::gate::arm_nested(&ctx);
        let snapshot = availability(&ctx).await.ok_or(StartError::AuditUnavailable)?;
        let _ = ctx.snapshot.set(snapshot);
        if let Ok(handle) = tokio::runtime::Handle::try_current() {
            self.inner.keep_swept(&handle);
        }
        Ok(DirectSession::new(ctx))
    }
}
