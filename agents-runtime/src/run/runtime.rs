//! The runtime and its builder: the facade an application holds. What its runs share (its
//! settings, services and live state) is in `shared`; a run's slot in `slot`.

use super::decision::{ConfirmMode, Confirmer, DecisionError, Verdict};
use super::ledger::hand_to_waiter;
use super::outcome::StartError;
use super::record::{RecordFields, RecordIds};
use super::shared::{DisabledFallback, DisabledTools, Inner, Live, Services, Settings, ValuesSink};
use super::sync::lock;
use crate::audit::{AuditError, AuditSink, AuditStatus};
use crate::budget::{BudgetFallback, BudgetStore};
use crate::classifier::{ConfirmationClassifier, KeywordClassifier};
use crate::interceptor::Interceptor;
use crate::provider::Provider;
use crate::store::{MemoryStore, Store, answer_now};
use crate::token::TokenStore;
use crate::tool::Registry;
use agents_core::redact::RedactionKeys;
use agents_core::{Limits, Principal, RoleMap};
use std::sync::Arc;
use std::time::Duration;

/// Configures a [`Runtime`].
pub struct RuntimeBuilder {
    roles: RoleMap,
    audit: Arc<dyn AuditSink>,
    provider: Arc<dyn Provider>,
    disabled: Option<Arc<dyn DisabledTools>>,
    disabled_fallback: DisabledFallback,
    interceptors: Vec<Arc<dyn Interceptor>>,
    budget: Option<Arc<dyn BudgetStore>>,
    budget_fallback: BudgetFallback,
    classifier: Arc<dyn ConfirmationClassifier>,
    confirm_mode: ConfirmMode,
    key: Option<[u8; 32]>,
    store: Option<Arc<dyn Store>>,
    redaction: RedactionKeys,
    values: agents_core::audit::AuditValues,
    limits: Option<Limits>,
    tree_limit: Option<super::limit::TreeLimit>,
    system_prompt: String,
    tool_timeout: Duration,
    max_result_bytes: usize,
    max_model_result_bytes: usize,
    isolation: Option<crate::isolate::Isolation>,
    max_tool_calls_per_answer: usize,
    session_idle_timeout: Duration,
    max_sessions: usize,
    sweep_every: Option<Duration>,
    proposal_retention: Duration,
    settle_lease: Duration,
    history_bytes: usize,
    decision_poll: Duration,
    confirmer: Option<Arc<dyn Confirmer>>,
    slot_lease: Duration,
    mcp_imports: Option<Arc<dyn crate::imported::ImportedTools>>,
    state: crate::tool::AppState,
    principals: Option<Arc<dyn crate::authority::PrincipalSource>>,
    budget_thresholds: Vec<f64>,
    untrusted: crate::untrusted::UntrustedPolicies,
    #[cfg(feature = "knowledge")]
    knowledge: crate::knowledge::KnowledgeSettings,
}

/// The default of [`RuntimeBuilder::decision_poll`]: half a second.
pub const DEFAULT_DECISION_POLL: Duration = Duration::from_millis(500);

/// How long a run's slot is leased in the store: a live run renews it every third of this;
/// the slots of a process that died come back once it runs out.
pub const RUN_SLOT_LEASE: Duration = Duration::from_secs(60);
/// The default of [`RuntimeBuilder::tool_timeout`]: five minutes.
pub const DEFAULT_TOOL_TIMEOUT: Duration = Duration::from_secs(300);
/// The default of [`RuntimeBuilder::max_tool_calls_per_answer`]: 8.
pub const DEFAULT_MAX_TOOL_CALLS_PER_ANSWER: usize = 8;
/// The default of [`RuntimeBuilder::session_idle_timeout`]: 30 minutes.
pub const DEFAULT_SESSION_IDLE_TIMEOUT: Duration = Duration::from_secs(30 * 60);
/// The default of [`RuntimeBuilder::max_sessions`]: 10 000 (about 13 MB at the 1.3 KiB a
/// short finished session was measured to hold; see the builder for the worst case).
pub const DEFAULT_MAX_SESSIONS: usize = 10_000;
/// The default of [`RuntimeBuilder::sweep_every`]: one minute.
pub const DEFAULT_SWEEP_EVERY: Duration = Duration::from_secs(60);
/// The default of [`RuntimeBuilder::proposal_retention`]: 7 days.
pub const DEFAULT_PROPOSAL_RETENTION: Duration = Duration::from_secs(7 * 24 * 3600);
/// The default of [`RuntimeBuilder::settle_lease`]: 15 minutes (its holder renews a claim
/// every 5 minutes while it carries it out).
pub const DEFAULT_SETTLE_LEASE: Duration = Duration::from_secs(15 * 60);
/// The default of [`RuntimeBuilder::history_bytes`]: 64 KiB.
pub const DEFAULT_HISTORY_BYTES: usize = 64 * 1024;
/// The default of [`RuntimeBuilder::max_result_bytes`]: 1 MiB.
pub const DEFAULT_MAX_RESULT_BYTES: usize = 1 << 20;
/// The default of [`RuntimeBuilder::max_model_result_bytes`]: 64 KiB.
pub const DEFAULT_MAX_MODEL_RESULT_BYTES: usize = 64 * 1024;

impl std::fmt::Debug for RuntimeBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RuntimeBuilder").field("confirm_mode", &self.confirm_mode).finish_non_exhaustive()
    }
}

impl RuntimeBuilder {
    /// Roles and their permissions.
    pub fn roles(mut self, roles: RoleMap) -> Self {
        self.roles = roles;
        self
    }
    /// The administrator's disable list.
    pub fn disabled_tools(mut self, d: Arc<dyn DisabledTools>) -> Self {
        self.disabled = Some(d);
        self
    }
    /// What to do when the disable list cannot be read.
    pub fn disabled_fallback(mut self, f: DisabledFallback) -> Self {
        self.disabled_fallback = f;
        self
    }
    /// Adds an interceptor (they run in the order added).
    pub fn interceptor(mut self, i: Arc<dyn Interceptor>) -> Self {
        self.interceptors.push(i);
        self
    }
    /// The budget store.
    pub fn budget(mut self, b: Arc<dyn BudgetStore>) -> Self {
        self.budget = Some(b);
        self
    }
    /// What to do when the budget store cannot answer before a paid call (default
    /// [`BudgetFallback::FailClosed`]: the call is not made and the run fails, audited).
    pub fn budget_fallback(mut self, f: BudgetFallback) -> Self {
        self.budget_fallback = f;
        self
    }
    /// The confirmation classifier (conversational mode). Its model calls go through the
    /// run's budget gate ([`ConfirmationClassifier::classify_metered`]).
    pub fn classifier(mut self, c: Arc<dyn ConfirmationClassifier>) -> Self {
        self.classifier = c;
        self
    }
    /// How actions wait for a person.
    pub fn confirm_mode(mut self, m: ConfirmMode) -> Self {
        self.confirm_mode = m;
        self
    }
    /// The server key for token and argument MACs (random per process by default).
    pub fn server_key(mut self, key: [u8; 32]) -> Self {
        self.key = Some(key);
        self
    }
    /// The state store that keeps confirmation tokens, per-user run slots, proposals and
    /// conversation sessions (default: a [`MemoryStore`] of this process). Give every node of
    /// a service the same shared store (`agents_store::PostgresStore`, or
    /// `agents_store::SqliteStore` on one host) and a token is single-use, the per-user cap of
    /// concurrent runs holds, and a session goes on, across all of them (see
    /// [Sessions](super#sessions-durable-and-shared)).
    ///
    /// A store that answers at once (the in-memory one) refuses a user's run beyond the cap in
    /// [`Runtime::start`] itself. A shared store answers later: `start` then returns the
    /// handle at once and the run first waits for its slot; a refusal ends it with
    /// [`RunError::NotStarted`](super::RunError::NotStarted) holding
    /// [`StartError::TooManyRuns`], before anything ran or was recorded.
    pub fn store(mut self, store: Arc<dyn Store>) -> Self {
        self.store = Some(store);
        self
    }
    /// Hands the tools a value of the application's (a database pool, a service client, a
    /// store): a tool reads it with [`ToolContext::state`](crate::ToolContext::state), by its
    /// type. One value per type; a second value of the same type replaces the first. A tool
    /// that runs in a worker process ([`RuntimeBuilder::isolation`]) has no state.
    ///
    /// ```
    /// # use agents_runtime::{Runtime, audit::MemorySink, provider::ScriptedProvider};
    /// # use std::sync::Arc;
    /// struct Db { url: String }
    /// let rt = Runtime::builder(Arc::new(MemorySink::new()), Arc::new(ScriptedProvider::new([])))
    ///     .state(Db { url: "postgres://localhost/app".into() })
    ///     .build();
    /// # drop(rt);
    /// ```
    pub fn state<T: Send + Sync + 'static>(self, value: T) -> Self {
        self.shared_state(Arc::new(value))
    }
    /// [`RuntimeBuilder::state`] for a value the application shares with others (the
    /// tools read it as `T`, the application keeps its `Arc`).
    pub fn shared_state<T: Send + Sync + 'static>(mut self, value: Arc<T>) -> Self {
        self.state.insert(value);
        self
    }
    /// Keys redacted wherever they appear.
    pub fn redaction_keys(mut self, k: RedactionKeys) -> Self {
        self.redaction = k;
        self
    }
    /// What the audit records keep of a call's argument and result values (default
    /// [`AuditValues::Omitted`](agents_core::audit::AuditValues::Omitted): the arguments' names
    /// with a keyed digest of each value, and the result's keyed digest; no value of a call is
    /// in the log). [`AuditValues::Masked`](agents_core::audit::AuditValues::Masked) keeps the
    /// argument values with secret positions masked;
    /// [`AuditValues::Full`](agents_core::audit::AuditValues::Full) the result's (redacted)
    /// value too. The digests are HMAC-SHA-256 under the server key
    /// ([`RuntimeBuilder::server_key`]; see
    /// [`TokenStore::value_mac`](crate::token::TokenStore::value_mac) and
    /// [`TokenStore::result_mac`](crate::token::TokenStore::result_mac)): only a holder of the
    /// key can check a value against the log.
    ///
    /// An agent opts in to what this keeps: a run (or a direct session) of an agent whose
    /// `agent!` declares less (`audit: { values: masked }`, or nothing for `omitted`) is
    /// refused with [`StartError::AuditValuesNotDeclared`], so the manifest a reviewer
    /// approved says the most the log may hold.
    ///
    /// The manifest's setting is a ceiling, not the runtime's default: without this call a
    /// runtime keeps `Omitted` even for an agent that declares `full`. The setting belongs to
    /// the deployment (one log, one sink, every agent the runtime runs), and keeping less than
    /// the manifest allows is always within it; keeping more is the decision the operator
    /// makes here, which the manifest must then allow.
    ///
    /// The person deciding on an action still sees its values on the card
    /// ([`PendingDecision::decider_arguments`](super::PendingDecision)): the state store keeps
    /// them for the decision, the log does not.
    ///
    /// ```
    /// # use agents_runtime::{Runtime, audit::MemorySink, provider::ScriptedProvider};
    /// # use std::sync::Arc;
    /// use agents_runtime::agents_core::audit::AuditValues;
    /// let rt = Runtime::builder(Arc::new(MemorySink::new()), Arc::new(ScriptedProvider::new([])))
    ///     .audit_values(AuditValues::Masked)
    ///     .build();
    /// # drop(rt);
    /// ```
    pub fn audit_values(mut self, values: agents_core::audit::AuditValues) -> Self {
        self.values = values;
        self
    }
    /// `true`: [`RuntimeBuilder::audit_values`] with
    /// [`AuditValues::Full`](agents_core::audit::AuditValues::Full) (results are recorded as
    /// their redacted value). `false` narrows a `Full` setting to `Masked` and leaves a
    /// narrower one as it is.
    pub fn record_raw_results(mut self, yes: bool) -> Self {
        use agents_core::audit::AuditValues;
        self.values = if yes { AuditValues::Full } else { self.values.narrowed_to(AuditValues::Masked) };
        self
    }
    /// Overrides the agent's declared limits.
    pub fn limits(mut self, l: Limits) -> Self {
        self.limits = Some(l);
        self
    }
    /// A limit on the spend of a whole composite's run tree, across its nodes (see
    /// [`crate::compose`]); each node keeps its own agent's limits too. None by default.
    pub fn tree_limit(mut self, limit: super::limit::TreeLimit) -> Self {
        self.tree_limit = Some(limit);
        self
    }
    /// What happens to a proposal of `tool` one of whose values came from content the user did
    /// not write (a tool result, an imported tool's result, a retrieved document): flagged on
    /// its card (the default) or refused before anyone is asked. See [`crate::untrusted`].
    pub fn untrusted_policy(mut self, tool: &str, policy: crate::untrusted::UntrustedPolicy) -> Self {
        self.untrusted.set(tool, None, policy);
        self
    }
    /// As [`untrusted_policy`](Self::untrusted_policy), for one top-level argument of `tool`
    /// (`to`: every value within it); it wins over the tool's own policy.
    pub fn untrusted_argument_policy(
        mut self,
        tool: &str,
        argument: &str,
        policy: crate::untrusted::UntrustedPolicy,
    ) -> Self {
        self.untrusted.set(tool, Some(argument), policy);
        self
    }
    /// The system prompt.
    pub fn system_prompt(mut self, p: impl Into<String>) -> Self {
        self.system_prompt = p.into();
        self
    }
    /// How long one tool call may run (default [`DEFAULT_TOOL_TIMEOUT`]). A call still
    /// running then is ended (its future dropped) and recorded as `failed` with reason
    /// `timeout`; the model is told its outcome is unknown. A stop of the run ends a running
    /// tool the same way, with reason `stopped`.
    pub fn tool_timeout(mut self, deadline: Duration) -> Self {
        self.tool_timeout = deadline;
        self
    }
    /// The largest tool result, in bytes of compact JSON, that reaches the model, the events
    /// and the audit log whole (default [`DEFAULT_MAX_RESULT_BYTES`]). A larger result is
    /// replaced by `{"truncated": true, "notice": ..., "start": ...}` (the start of its text),
    /// and its `executed` record's reason says it was cut.
    pub fn max_result_bytes(mut self, max: usize) -> Self {
        self.max_result_bytes = max;
        self
    }
    /// The most of one tool result, in bytes of its compact JSON text, that the model reads
    /// (default [`DEFAULT_MAX_MODEL_RESULT_BYTES`]), so that one large result cannot fill the
    /// model's context (or its bill). The model reads the first `max` bytes of a longer
    /// result, cut on a character boundary, then a notice that says how many bytes were cut
    /// and that they are not visible to it. Only the model's view is bounded: the tool's
    /// value reaches the application whole (events, a tool calling another tool), and the
    /// `executed` record keeps the digest of the whole result and says in its reason how much
    /// the model was shown. Results longer than [`RuntimeBuilder::max_result_bytes`] are cut
    /// for everyone first. `0` shows the model only the notice.
    pub fn max_model_result_bytes(mut self, max: usize) -> Self {
        self.max_model_result_bytes = max;
        self
    }
    /// How many tool calls of one model answer run (default
    /// [`DEFAULT_MAX_TOOL_CALLS_PER_ANSWER`]). The first `max` pass the gate in order; each
    /// further call does not run: it is audited as `denied`, emitted as `tool_denied`, and
    /// answered to the model as refused, so a hijacked model cannot fan one answer out into
    /// thousands of calls. `0` refuses every call.
    pub fn max_tool_calls_per_answer(mut self, max: usize) -> Self {
        self.max_tool_calls_per_answer = max;
        self
    }
    /// How long a session may go unused (no run or direct session starting or ending in it)
    /// before it expires (default [`DEFAULT_SESSION_IDLE_TIMEOUT`]): the next run in it starts
    /// afresh, [`Runtime::purge_expired`] drops it, and the confirmation tokens minted in it
    /// are revoked either way. [`Runtime::end_session`] ends a session at once.
    pub fn session_idle_timeout(mut self, idle: Duration) -> Self {
        self.session_idle_timeout = idle;
        self
    }
    /// The most sessions this node holds in memory (default [`DEFAULT_MAX_SESSIONS`]; `0` is
    /// read as `1`). A session new to this node that would go over the cap first evicts the
    /// least recently used sessions without a model run under way here: with the in-process
    /// store such a session ends as [`Runtime::end_session`] ends one (its open proposals
    /// recorded `skipped`, reason "cancelled: the session was ended to keep the runtime within
    /// its cap on sessions", its tokens revoked; its user's next message starts afresh); with
    /// a shared store only this node's own state of it goes, and it goes on from the store. A
    /// new session is never refused for the cap, and sessions with runs under way are never
    /// evicted, so the count may exceed the cap by those (at most the concurrent runs the
    /// users have). Eviction makes room for anyone's new session, so one user opening many
    /// sessions can end other users' idle ones: give authenticated users, and a cap sized for
    /// them.
    ///
    /// Memory: a finished session of one short turn was measured at about 1.3 KiB of resident
    /// memory, with the in-process store (1344 bytes each over 100 000 sessions, debug build;
    /// `cargo test -p agents-runtime --test suite session_memory:: -- --nocapture` prints it).
    /// A session's stored history is bounded by four times `history_messages` messages and
    /// four times [`RuntimeBuilder::history_bytes`] bytes of text (256 KiB by default), and its
    /// digest by 12 results of 280 characters, so the worst case is about 260 KiB a session:
    /// size the cap (or `history_bytes`) for the memory you give the sessions.
    pub fn max_sessions(mut self, max: usize) -> Self {
        self.max_sessions = max.max(1);
        self
    }
    /// How often the runtime sweeps on its own (default [`DEFAULT_SWEEP_EVERY`]): expired
    /// confirmation tokens go, and sessions idle for longer than the
    /// [idle timeout](RuntimeBuilder::session_idle_timeout) end as
    /// [`Runtime::purge_expired`] ends them (in the store too). The timer is a task on the
    /// tokio runtime of the first run or direct session (started again by a later one if that
    /// runtime went away); it holds the runtime weakly and ends when the runtime is dropped.
    /// `None`: no timer; the application calls [`Runtime::purge_expired`] itself.
    pub fn sweep_every(mut self, every: Option<Duration>) -> Self {
        self.sweep_every = every.map(|e| e.max(Duration::from_millis(10)));
        self
    }
    /// How long a proposal that is over (carried out, or rejected, withdrawn or expired, its
    /// final record written) stays in the state store before [`Runtime::prune_state`] drops
    /// it (default [`DEFAULT_PROPOSAL_RETENTION`]). Its records stay in the audit log.
    pub fn proposal_retention(mut self, retention: Duration) -> Self {
        self.proposal_retention = retention;
        self
    }
    /// How long a claim of a proposal's final record (its execution, its rejection's record,
    /// its closing) may stay without that record marked written, and without its holder
    /// renewing it, before [`Runtime::resume_orphaned`] takes it over and writes the record
    /// itself (default [`DEFAULT_SETTLE_LEASE`]): the window a node that died between its
    /// claim and its record leaves open. A live run's claims are never taken over while its
    /// slot is held, and a holder renews its claim every third of the lease while it carries
    /// out an execution or writes a resumption's record, so a call may run longer than the
    /// lease; the lease must exceed the longest time a live node may go without reaching the
    /// state store (a pause of its process, a cut-off), or a call's outcome may be recorded
    /// twice (see [`Runtime::resume_orphaned`]). Give every node the same value.
    ///
    /// It is also how long a `proposed` record may stay without its final record in a store's
    /// audit stream before a resumption writes that record (`abandoned: ...`, see
    /// [`AuditSink::owed_finals`](crate::audit::AuditSink::owed_finals)): it must exceed the
    /// longest a read call's tool runs, or that call gets two final records.
    pub fn settle_lease(mut self, lease: Duration) -> Self {
        self.settle_lease = lease;
        self
    }
    /// The most bytes of text the replayed history of a session may carry (default
    /// [`DEFAULT_HISTORY_BYTES`]), besides the agent's `history_messages`: the latest messages
    /// that fit are replayed, starting on a user message.
    pub fn history_bytes(mut self, max: usize) -> Self {
        self.history_bytes = max;
        self
    }
    /// How often this runtime looks in the state store, in one lookup for all the calls
    /// waiting on it ([`Store::decided`](crate::store::Store::decided)), for decisions made
    /// through another node (default [`DEFAULT_DECISION_POLL`]). A decision made through this
    /// runtime reaches its call at once, and so does one made through another node when the
    /// store signals decisions ([`Store::watch_decisions`](crate::store::Store::watch_decisions):
    /// PostgreSQL does); the lookup is then the fallback for a lost signal.
    pub fn decision_poll(mut self, every: Duration) -> Self {
        self.decision_poll = every.max(Duration::from_millis(1));
        self
    }
    /// Asks a person for the actions of model runs (dialog mode) through `confirmer` (for
    /// example a push to the user's device), besides [`Runtime::decide`] and
    /// [`Runtime::decide_async`]: whichever decision the state store records first holds.
    /// Direct sessions take their own confirmer ([`Runtime::direct`]).
    pub fn confirmer(mut self, confirmer: Arc<dyn Confirmer>) -> Self {
        self.confirmer = Some(confirmer);
        self
    }
    /// The lease of a run's slot in the state store (default [`RUN_SLOT_LEASE`]); a live run
    /// renews it every third of it. A shorter lease frees the slots of a node that died
    /// sooner, and lets [`Runtime::resume_orphaned`] carry out its approved calls sooner.
    pub fn run_slot_lease(mut self, lease: Duration) -> Self {
        self.slot_lease = lease.max(Duration::from_millis(30));
        self
    }
    /// The MCP servers that tools declared with [`mcp_import!`](crate::mcp_import) are called
    /// on, by the server names the declarations give (see [`crate::imported`]; the MCP
    /// implementation is `McpImports`). Without it, a call of an imported tool is refused and
    /// audited, and nothing is sent anywhere.
    pub fn mcp_imports(mut self, imports: Arc<dyn crate::imported::ImportedTools>) -> Self {
        self.mcp_imports = Some(imports);
        self
    }
    /// This runtime's isolated tools: its own settings and warm workers, and tools isolated
    /// although their code does not mark them (see [`crate::isolate::Isolation`]). Without
    /// it, isolated tools use the settings of [`crate::isolate::init_with`].
    pub fn isolation(mut self, isolation: crate::isolate::Isolation) -> Self {
        self.isolation = Some(isolation);
        self
    }
    /// Reads who a run acts for again, from `source`, before each call the gate admits, each
    /// decision recorded through [`Runtime::decide_async`] and each approved action's run (a
    /// resumption's included), instead of trusting the principal the run started with: a user
    /// deactivated or a role changed mid-run stops the next call (`denied`, reason `authority
    /// changed: ...`) and ends the proposals waiting under the old role. Without it (the
    /// default) a run holds its snapshot until it ends. See [`crate::authority`].
    ///
    /// ```no_run
    /// # fn f(b: agents_runtime::RuntimeBuilder, directory: std::sync::Arc<dyn agents_runtime::authority::PrincipalSource>) {
    /// let runtime = b.reread_principal(directory).build();
    /// # }
    /// ```
    pub fn reread_principal(mut self, source: Arc<dyn crate::authority::PrincipalSource>) -> Self {
        self.principals = Some(source);
        self
    }
    /// The fractions of the user's and the organisation's budget caps whose crossing is
    /// reported, once per crossing, by the run whose paid call crossed it: an
    /// [`Event::BudgetThreshold`](crate::events::Event::BudgetThreshold) and a `notice` record
    /// (default
    /// [`DEFAULT_BUDGET_THRESHOLDS`](crate::budget::DEFAULT_BUDGET_THRESHOLDS): 0.5, 0.8, 1.0;
    /// an empty list reports none). It needs a budget ([`RuntimeBuilder::budget`]) whose store
    /// says its usage ([`BudgetStore::usage`](crate::budget::BudgetStore::usage)). A fraction
    /// that is not greater than 0 and at most 1 is refused with an error naming it.
    ///
    /// ```
    /// # fn f(b: agents_runtime::RuntimeBuilder) -> Result<(), agents_runtime::budget::InvalidThreshold> {
    /// let runtime = b.budget_thresholds([0.75, 0.9])?.build();
    /// # Ok(()) }
    /// ```
    pub fn budget_thresholds(
        mut self,
        fractions: impl IntoIterator<Item = f64>,
    ) -> Result<Self, crate::budget::InvalidThreshold> {
        let mut fractions: Vec<f64> = fractions.into_iter().collect();
        if let Some(bad) = fractions.iter().find(|f| !(f.is_finite() && **f > 0.0 && **f <= 1.0)) {
            return Err(crate::budget::InvalidThreshold(*bad));
        }
        fractions.sort_by(f64::total_cmp);
        fractions.dedup();
        self.budget_thresholds = fractions;
        Ok(self)
    }
    /// Where the agents' `file` and `dir` knowledge sources are read, how their passages are
    /// ranked (an embedder for hybrid ranking) and bounded: see [`crate::knowledge`].
    #[cfg(feature = "knowledge")]
    #[cfg_attr(docsrs, doc(cfg(feature = "knowledge")))]
    pub fn knowledge(mut self, settings: crate::knowledge::KnowledgeSettings) -> Self {
        self.knowledge = settings;
        self
    }
    /// Builds the runtime.
    pub fn build(self) -> Runtime {
        let store = self.store.unwrap_or_else(|| Arc::new(MemoryStore::new()));
        let key = self.key.unwrap_or_else(crate::token::random_bytes::<32>);
        let audit = Arc::new(ValuesSink::new(self.audit, self.values, TokenStore::with_store(key, store.clone())));
        Runtime {
            inner: Arc::new(Inner {
                settings: Settings {
                    roles: self.roles,
                    disabled_fallback: self.disabled_fallback,
                    budget_fallback: self.budget_fallback,
                    confirm_mode: self.confirm_mode,
                    redaction: self.redaction,
                    values: self.values,
                    limits: self.limits,
                    tree_limit: self.tree_limit,
                    system_prompt: self.system_prompt,
                    untrusted: self.untrusted,
                    node_id: format!("node-{}", uuid::Uuid::new_v4().simple()),
                    decision_poll: self.decision_poll,
                    slot_lease: self.slot_lease,
                    tool_timeout: self.tool_timeout,
                    max_result_bytes: self.max_result_bytes,
                    max_model_result_bytes: self.max_model_result_bytes,
                    max_tool_calls_per_answer: self.max_tool_calls_per_answer,
                    session_idle_timeout: self.session_idle_timeout,
                    max_sessions: self.max_sessions,
                    sweep_every: self.sweep_every,
                    proposal_retention: self.proposal_retention,
                    settle_lease: self.settle_lease,
                    history_bytes: self.history_bytes,
                    budget_thresholds: self.budget_thresholds,
                },
                services: Services {
                    audit,
                    provider: self.provider,
                    disabled: self.disabled,
                    interceptors: self.interceptors,
                    budget: self.budget,
                    classifier: self.classifier,
                    tokens: TokenStore::with_store(key, store.clone()),
                    store,
                    confirmer: self.confirmer,
                    isolation: self.isolation,
                    mcp_imports: self.mcp_imports,
                    state: self.state,
                    principals: self.principals,
                    #[cfg(feature = "knowledge")]
                    knowledge: crate::knowledge::Knowledge::new(self.knowledge),
                },
                live: Live::default(),
            }),
        }
    }
}

/// Runs agents for principals. Cheap to clone.
#[derive(Clone)]
pub struct Runtime {
    pub(super) inner: Arc<Inner>,
}

impl std::fmt::Debug for Runtime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Runtime").field("confirm_mode", &self.inner.settings.confirm_mode).finish_non_exhaustive()
    }
}

impl Runtime {
    /// A builder with the audit sink and the model provider, the two things every runtime
    /// needs. Everything else has a default.
    pub fn builder(audit: Arc<dyn AuditSink>, provider: Arc<dyn Provider>) -> RuntimeBuilder {
        RuntimeBuilder {
            roles: RoleMap::new(),
            audit,
            provider,
            disabled: None,
            disabled_fallback: DisabledFallback::default(),
            interceptors: Vec::new(),
            budget: None,
            budget_fallback: BudgetFallback::default(),
            classifier: Arc::new(KeywordClassifier),
            confirm_mode: ConfirmMode::default(),
            key: None,
            store: None,
            redaction: RedactionKeys::default(),
            values: agents_core::audit::AuditValues::Omitted,
            limits: None,
            tree_limit: None,
            system_prompt: "You are an assistant inside an application. You act with the user's own authority \
                            through the tools you are given. Every fact you state about a record must come from a \
                            tool result in this conversation; never fabricate data."
                .to_owned(),
            tool_timeout: DEFAULT_TOOL_TIMEOUT,
            max_result_bytes: DEFAULT_MAX_RESULT_BYTES,
            max_model_result_bytes: DEFAULT_MAX_MODEL_RESULT_BYTES,
            isolation: None,
            max_tool_calls_per_answer: DEFAULT_MAX_TOOL_CALLS_PER_ANSWER,
            session_idle_timeout: DEFAULT_SESSION_IDLE_TIMEOUT,
            max_sessions: DEFAULT_MAX_SESSIONS,
            sweep_every: Some(DEFAULT_SWEEP_EVERY),
            proposal_retention: DEFAULT_PROPOSAL_RETENTION,
            settle_lease: DEFAULT_SETTLE_LEASE,
            history_bytes: DEFAULT_HISTORY_BYTES,
            decision_poll: DEFAULT_DECISION_POLL,
            confirmer: None,
            slot_lease: RUN_SLOT_LEASE,
            mcp_imports: None,
            state: crate::tool::AppState::default(),
            principals: None,
            budget_thresholds: crate::budget::DEFAULT_BUDGET_THRESHOLDS.to_vec(),
            untrusted: crate::untrusted::UntrustedPolicies::default(),
            #[cfg(feature = "knowledge")]
            knowledge: crate::knowledge::KnowledgeSettings::default(),
        }
    }

    /// The roles and the permissions each holds, as given to [`RuntimeBuilder::roles`]
    /// (what a capability report's role × tool table shows).
    pub fn roles(&self) -> &RoleMap {
        &self.inner.settings.roles
    }

    /// Runs this runtime (this process) is running for a user. With a shared store, the
    /// user's runs on all nodes are `Store::active_slots`.
    pub fn active_runs(&self, principal: &Principal) -> u32 {
        lock(&self.inner.live.active).get(&(principal.org_id.clone(), principal.user_id.clone())).copied().unwrap_or(0)
    }

    /// Waits until every final record the runtime wrote on its own (for a call whose caller
    /// went away, or a direct session that was dropped) is stored. A server calls this after
    /// its sessions have ended, before it reports that it stopped.
    pub async fn records_settled(&self) {
        self.inner.live.detached.settled().await;
    }

    /// Drops what the runtime keeps for decisions that can no longer be used: expired
    /// confirmation tokens. Cheap when nothing expired; servers call it on a timer.
    pub fn purge_expired(&self) -> usize {
        self.inner.purge_expired()
    }

    /// Ends a session of `principal` now: its history, digest, pending proposal and approval
    /// are dropped and its confirmation tokens revoked; the next run with this id starts
    /// afresh. Every proposal of the session ends with one final record: one waiting for the
    /// user's next message is recorded `skipped` (reason `cancelled`, or `expired` for an
    /// approval not yet used) by the runtime on its own (see [`Runtime::records_settled`]); a
    /// call waiting for a decision ends `skipped` (reason `stopped`); none of them can be
    /// approved or start running any more. Refused ([`StartError::SessionNotYours`]) for a session of another user or
    /// organisation; `Ok(false)` when no such session was held.
    ///
    /// This call does not wait: with a store that does not answer at once (a shared store) it
    /// is refused with [`StartError::StateUnavailable`]; use [`Runtime::end_session_async`].
    pub fn end_session(&self, principal: &Principal, session_id: &str) -> Result<bool, StartError> {
        match answer_now(Box::pin(self.end_session_async(principal, session_id))) {
            Ok(answer) => answer,
            Err(_) => Err(StartError::StateUnavailable(
                "the state store does not answer at once; end the session with `Runtime::end_session_async`".into(),
            )),
        }
    }

    /// [`Runtime::end_session`] through any state store: the session is dropped from the
    /// store, so it ends for every node sharing it.
    pub async fn end_session_async(&self, principal: &Principal, session_id: &str) -> Result<bool, StartError> {
        self.inner.end_session(session_id, principal).await
    }

    /// Sessions this runtime holds on this node (for monitoring and memory checks): those a
    /// run or direct session used here and that were not purged or ended.
    pub fn session_count(&self) -> usize {
        lock(&self.inner.live.sessions).len()
    }

    /// Audits a refused request that reached no run: `denied`, with the principal who sent
    /// it, the session it named and why (a server's own refusals, e.g. a request on someone
    /// else's MCP session). Fails closed like every record: the caller refuses anyway.
    pub async fn audit_refusal<A: Registry>(
        &self,
        principal: &Principal,
        session_id: &str,
        reason: String,
    ) -> Result<(), AuditError> {
        self.audit_refusal_of((A::SPEC.name, A::MANIFEST_SHA256), principal, session_id, reason).await
    }

    /// [`Runtime::audit_refusal`] of a request to a composite: the record names the composite
    /// and its graph manifest's SHA-256.
    pub async fn audit_composite_refusal<C: agents_core::compose::Composite>(
        &self,
        principal: &Principal,
        session_id: &str,
        reason: String,
    ) -> Result<(), AuditError> {
        self.audit_refusal_of((C::GRAPH.name, C::MANIFEST_SHA256), principal, session_id, reason).await
    }

    async fn audit_refusal_of(
        &self,
        (name, manifest_sha256): (&str, &str),
        principal: &Principal,
        session_id: &str,
        reason: String,
    ) -> Result<(), AuditError> {
        let (run_id, request_id) = (uuid::Uuid::new_v4().to_string(), uuid::Uuid::new_v4().to_string());
        let ids = RecordIds::from_parts(&run_id, session_id, &request_id, principal, name, manifest_sha256);
        let record = ids.record(RecordFields::new(AuditStatus::Denied).reason(reason));
        self.inner.services.audit.append(record).await.map(drop)
    }

    /// Records a person's decision on a pending action, without waiting: for a call waiting
    /// on this runtime (which then records it in the state store, where a decision made first
    /// through another node holds), or through a store that answers at once (the in-memory
    /// one). Any other call is refused with [`DecisionError::NotHere`]: decide it with
    /// [`Runtime::decide_async`], which reaches every node sharing the store. Accepted only
    /// from the principal the run acts for: the same user, organisation *and* role (a
    /// decision from the same user under another role is refused with
    /// [`DecisionError::NotYourRun`] and changes nothing).
    pub fn decide(&self, call_id: &str, decider: &Principal, verdict: Verdict) -> Result<(), DecisionError> {
        if let Some(handed) = hand_to_waiter(&self.inner.live, call_id, decider, verdict) {
            return handed;
        }
        if !self.inner.services.store.answers_at_once() {
            return Err(DecisionError::NotHere(call_id.to_owned()));
        }
        match answer_now(Box::pin(self.decide_async(call_id, decider, verdict, None))) {
            Ok(answer) => answer,
            Err(_) => Err(DecisionError::NotHere(call_id.to_owned())),
        }
    }
}
