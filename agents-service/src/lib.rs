//! The HTTP service of bounded agents: an axum [`Router`] an application mounts, serving the
//! agents it registers to the principals its [`Authenticator`] names.
//!
//! | method and path | what |
//! |---|---|
//! | `GET /v1/agents` | the agents and composites served, with their manifest hash (a composite's: its graph manifest's) and `kind` (`agent`, `composite`) |
//! | `POST /v1/runs` | start a run: `{"agent", "input", "session_id"?}` → 201 `{"run_id", "session_id", ...}` (session ids are the caller's own: see [Who sees what](#who-sees-what)); with `Prefer: wait=<seconds>`, the run's state once it ends or waits for a decision within that bound (see [The answering start](#the-answering-start)) |
//! | `GET /v1/runs` | the caller's runs |
//! | `GET /v1/runs/{run_id}` | one run: status, final text, last event id, the calls it waits on (`waiting_for`) |
//! | `GET /v1/runs/{run_id}/events` | its events as server-sent events (resume with `Last-Event-ID` or `?last_event_id=`) |
//! | `POST /v1/runs/{run_id}/stop` | stop it (a pending action ends `skipped`) |
//! | `DELETE /v1/sessions/{session_id}` | end one of the caller's conversation sessions on every node: history dropped, tokens revoked, its waiting proposals end (`skipped`); another principal's session is not found |
//! | `GET /v1/decisions` | actions waiting for the caller's decision, as the confirm card shows them: tool, title, risk, `arguments` masked as the audit log holds them, `decider_arguments` as the tool will receive them (secret values included: only the run's own principal is ever listed a proposal), and `why` when a read would carry a copied value out |
//! | `POST /v1/decisions/{call_id}` | decide: `{"verdict": "approve"}` or `{"verdict": "reject", "reason"?}` (the reason is kept in the call's `rejected` record) |
//! | `GET /v1/audit` | audit records, with the filters of `agents audit show` (`run`, `session`, `user`, `tool`, `call`, `status`, `tier`, `since`, `until`) and paging (`after`, `limit`): `{"records", "next_after", "values_omitted"}`, each record as written, and `values_omitted` the `seq` of each record that keeps its arguments' names and keyed digests, not their values (the runtime's default) |
//! | `GET /v1/audit/verify` | the chain's verdict, for the caller's organisation: `{"ok", "org", "records", "head", "guarantee", "severe"}`, where `records` counts the organisation's records, `head` is its latest (`seq`, `hash`) and `severe` its severe failures (total, counts by rule, the first 100; the one definition `agents audit stats` uses) (reviewer roles only) |
//! | `POST`, `GET`, `DELETE /mcp` | an agent over MCP streamable HTTP, when [mounted](ServiceBuilder::mcp) (see [`McpEndpoint`]) |
//!
//! A browser console (chat, decision cards, live audit, reviewer view) is served beside these
//! routes by [`Console`]; see the [`console`] module.
//!
//! # The answering start
//!
//! A client that wants the answer in the response of the `POST /v1/runs` that starts the run
//! sends RFC 7240's `Prefer: wait=<seconds>` (one exchange a turn instead of two). When the
//! run ends (it answered, failed or was stopped) or stops to wait for a person's decision
//! within that bound, the answer is 201 with `Preference-Applied: wait=<seconds>` and the body
//! `GET /v1/runs/{run_id}` gives: `status`, `text`, `error`, `last_event_id` and
//! `waiting_for` (the calls awaiting a decision; the run is still `running`). A run waiting
//! for a person is answered at once: no request is held for a person. Past the bound, the
//! answer is the usual 201 (`run_id`, `events`), without `Preference-Applied`. The bound is the
//! service's to cap ([`ServiceLimits::max_answer_wait`], under the request timeout): a `wait`
//! that is not whole seconds, given twice or above the cap gets 400 `invalid_prefer` and no
//! run starts. Authentication, the strict body and the caller's session scope are the
//! present start's. The run does not depend on the request: a client gone mid-wait leaves it
//! running, its events journaled and streamable as any run's. A header rather than a body
//! field, because the bound concerns this exchange, not the run, and RFC 7240 names it.
//!
//! ```text
//! POST /v1/runs                       HTTP/1.1 201 Created
//! Prefer: wait=10                     Preference-Applied: wait=10
//! {"agent": "Desk", "input": "..."}   {"run_id": "...", "status": "completed", "text": "...", ...}
//! ```
//!
//! # Composites
//!
//! A composite ([`ServiceBuilder::composite`]) is served through the same routes as an agent:
//! `POST /v1/runs` with its name starts one run tree for the caller (every node acts for the
//! caller, in the caller's session), its events stream as a run's do, each node's event as a
//! `node` event (`{"type": "node", "run_id": <the tree's run>, "node": "desk-flow/desk",
//! "node_run_id": ..., "event": {...}}`) and the tree's own `done` last; `stop` ends every node
//! (a pending action ends `skipped`). An action a node proposes is listed by
//! `GET /v1/decisions` for the person the tree acts for, with `node` (the node's path, while
//! this service holds the tree), and decided by `POST /v1/decisions/{call_id}` exactly as a
//! single run's: anyone else gets the same 404, audited `denied`. A tree whose service was
//! killed while a node waited survives it: a service started again on the same durable store
//! lists the node's proposal, takes the decision, and its upkeep settles the proposal once
//! (every agent node's, nested composites' included:
//! [`Runtime::resume_orphaned_composite`]) and closes the tree's root run; the tree does not
//! go on past that node.
//!
//! # Who sees what
//!
//! Every request is authenticated ([`Authenticator`]; there is no service principal). A run,
//! its events and its decisions belong to the principal who started it (user and
//! organisation; deciding also needs the same role, as [`Runtime::decide`] requires). Anyone
//! else gets the same 404 as for an id that does not exist, nothing changes, and the attempt
//! is audited as `denied`. Audit queries see the caller's own records; the
//! [reviewer roles](ServiceBuilder::reviewer_roles) see their organisation's; nobody sees
//! another organisation's.
//!
//! **Session ids are each principal's own.** The `session_id` a client gives (`POST /v1/runs`,
//! `DELETE /v1/sessions/{id}`) names a session of the caller (organisation, user and role):
//! the state store holds it as `<scope>.<id>`, where the scope is 24 hex digits of a SHA-256 of
//! the three. So two users may each have a session `abc` without seeing each other, and another
//! user's id answers exactly as an unused one (a run starts in a new session of the caller;
//! `DELETE` gets the same 404): nobody learns that an id is taken, and nobody can take one
//! first. The service hands the caller's id back (the run, the decision card); the audit log,
//! the state store and a tool's [`ToolContext::session_id`](agents_runtime::ToolContext::session_id)
//! hold the scoped id, and `GET /v1/audit?session=` takes either. The runtime still binds each
//! stored session to the one principal that opened it, a second guard behind this one.
//!
//! **Verifying the chain answers for one organisation.** The chain runs through every
//! organisation's records, so it is checked whole (one pass) or not at all; what a reviewer
//! is told is their organisation's share: how many of its records the verified chain holds,
//! its latest record (`head`: `seq` and `hash`; that record's hash is sealed in the chain the
//! verdict covers, so a reviewer who noted it can tell later that the organisation's records
//! up to it were not changed, as long as the chain verifies) and its severe failures (whose
//! `position` counts the organisation's records only). Never shown: another organisation's
//! records, failures or count, the whole log's head, or where a broken chain breaks (the
//! position and the reason may concern another organisation's record; the operator finds it
//! with `agents audit verify` on the log). A broken chain reads `"ok": false` with its `kind`
//! for every organisation.
//!
//! # Hosts and connections
//!
//! **The `Host` allowlist** is in front of every route: the REST API, its event streams, the
//! MCP endpoints and the [console](Console) with its development login. A request whose `Host`
//! the service does not answer for gets 403 `host_not_allowed` (400 `invalid_host` without a
//! valid one) before authentication: no run starts, no session opens, nothing is recorded.
//! The default names `localhost`, `127.0.0.1`, `[::1]` and the bound address, on the bound
//! port when [`Service::serve`] serves the router (on any port when another server does: the
//! router cannot know its port then); [`ServiceBuilder::allowed_hosts`] replaces it. This holds
//! against a web page the operator visits (DNS rebinding: the browser sends the page's own
//! name as `Host`); it is no authentication, and a proxy in front must pass the client's `Host`
//! through (or be named in the list). The MCP endpoint's own check
//! ([`McpEndpoint::allowed_hosts`], rmcp's) still applies behind this one.
//!
//! **The service's own listener** ([`Service::serve`]) takes the connection limits of the
//! shared [`listener`](agents_mcp::listener) of `agents-mcp`, the same as the MCP HTTP server's
//! ([`ConnectionLimits`], each a setting with a safe default): at most 1024 connections at
//! once (further clients wait in the listen queue, holding nothing of the process), 10 s to
//! send a request's headers (a client sending them byte by byte is cut then), 30 s of quiet
//! between requests and 120 s during one (event streams send a keep-alive comment every
//! [`ServiceLimits::sse_keep_alive`], so a quiet stream stays open; the idle timeout must be
//! longer, or serving is refused). A router served by `axum::serve` has none of these.
//!
//! # Events, numbering and resume: what survives what
//!
//! Each event of a run gets the next number of that run (from 1), sent as the SSE `id`. The
//! service keeps the latest events of each run in a journal bounded by
//! [`ServiceLimits::journal_events`] and [`ServiceLimits::journal_bytes`], filled by a task
//! that only moves events (no I/O, never waits for a reader), so a slow or stalled client
//! never slows its run. A stream resumed with `Last-Event-ID: n` gets every event after `n`
//! the journal holds; when some of them were already dropped, it first gets a `gap` event
//! (code `events_lost`) followed by the run's audit records (`record` events) read from the
//! durable log, then the events still held. Ended runs stay in the journal for
//! [`ServiceLimits::retain_ended_runs`].
//!
//! A restart of the service loses the journals (and, today, the runs themselves: a run lives
//! in the process that started it). What survives is the audit log: the events endpoint of
//! a run the service no longer holds streams that run's audit records, then an `end` event
//! with code `run_not_live`; `GET /v1/audit?run=...` reads them too.
//!
//! # MCP in the same router
//!
//! [`ServiceBuilder::mcp`] also serves an agent over MCP streamable HTTP (the MCP front door of
//! `agents-mcp`, the same as its standalone server's, in front of rmcp's own service) at
//! [`McpEndpoint::path`] (default `/mcp`), for the principals the same [`Authenticator`]
//! names. Its refusals are MCP's, not the JSON ones below: 403 for a foreign `Origin`, 401
//! from the authenticator, 413 over [`McpEndpoint::max_body_bytes`], and for any request on an
//! MCP session its caller did not open the 404 of an unknown session (audited as `denied`).
//!
//! # Decisions after a node died
//!
//! A decision is recorded in the state store, so it is accepted on any node. When the run
//! that asked is gone (its process crashed or was killed), the service settles its proposal
//! itself, on start and every [`ServiceLimits::maintenance_every`]
//! ([`Service::maintain`]): an approved call is carried out, a rejected one gets its
//! `rejected` record with the reason given, and one nobody decided within its confirmation
//! window gets a `skipped` record (reason `timeout: ...`). Every `proposed` record gets exactly
//! one final record: the run, the person and every node race for one claim in the store, and
//! only its winner writes it; a winner that died before writing has its claim taken over
//! once the runtime's settle lease ran out, while a live winner renews its claim however long
//! its call runs (the exact guarantee and the cases it leaves open are in
//! [`Runtime::resume_orphaned`]). The same upkeep
//! prunes the store: redeemed and expired tokens, idle sessions, and proposals over for longer
//! than the runtime's proposal retention.
//!
//! [`Service::shutdown`] ends the confirmations pending on the MCP endpoints as `shutdown`
//! (not `disconnected`); call it when the server's graceful shutdown begins.
//!
//! # The process's allocator
//!
//! A service's memory is often freed on another thread than the one that took it (a run's
//! task, the event pump, the connection's task), and a turn allocates a good deal. On glibc's
//! `malloc`, the default allocator of a Rust binary on Linux, much of a turn goes to the
//! allocator (consolidating its free lists, taking its arenas' locks). In the conversations
//! bench (`cargo bench -p scale --bench conversations`, 1,000 conversations at once; three
//! runs with `--features mimalloc` interleaved with three without) mimalloc answered 1.2–1.5x
//! the turns per second in memory and 1.5–1.7x on SQLite. The bare service in the same process
//! gained 1.2–1.5x as well, so the service's cost against a bare one hardly moves; the
//! throughput is what it buys. Serve from a binary whose global allocator handles this well,
//! as the `serve` example does:
//!
//! ```ignore
//! #[global_allocator]
//! static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;
//! ```
//!
//! # Refusals
//!
//! Every refusal is JSON, `{"error": {"code": "...", "message": "..."}}`, with a stable code:
//! `missing_token`, `invalid_token`, `token_expired`, ... (401), `not_found` (404, also for
//! other principals' runs), `body_too_large` (413), `too_many_streams`, `too_many_runs`
//! (429), `invalid_request`, `invalid_json`, `invalid_prefer`, `invalid_host` (400), `unknown_agent` (404),
//! `reviewer_only`, `host_not_allowed` (403), `request_timeout` (408).
//!
//! # Mounting it
//!
//! ```no_run
//! use agents_runtime::audit::MemorySink;
//! use agents_runtime::provider::ScriptedProvider;
//! use agents_runtime::{Runtime, agent, permissions, tool};
//! use agents_service::{DevAuthenticator, Service};
//! use std::sync::Arc;
//!
//! permissions! { pub mod perms { notes.read } }
//!
//! /// Reads the notes.
//! #[tool(permission = perms::notes::read)]
//! async fn notes() -> Result<String, String> {
//!     Ok("none".into())
//! }
//!
//! agent! {
//!     /// Answers about notes.
//!     pub struct Notes;
//!     tools: [notes],
//! }
//!
//! # async fn demo() -> std::io::Result<()> {
//! let audit = Arc::new(MemorySink::new());
//! let runtime = Runtime::builder(audit.clone(), Arc::new(ScriptedProvider::new([]))).build();
//! let service = Service::builder(Arc::new(DevAuthenticator::enabled()), audit.clone(), audit)
//!     .agent::<Notes>(runtime)
//!     .build();
//! // Mount it beside the application's own routes, and serve it with the connection limits.
//! let app = axum::Router::new().merge(service.router());
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:8080").await?;
//! let server = service
//!     .serve(listener, app, agents_service::ConnectionLimits::default())
//!     .map_err(std::io::Error::other)?;
//! tokio::signal::ctrl_c().await?;
//! server.shutdown();
//! server.wait().await;
//! # Ok(())
//! # }
//! ```
#![cfg_attr(docsrs, feature(doc_cfg))]

mod answer;
mod audit;
mod auth;
mod composite;
pub mod console;
mod error;
mod handlers;
mod host;
mod jwt;
mod maintain;
mod mcp;
mod reread;
mod runs;
mod serve;
mod sessions;
mod sse;

pub use agents_mcp::listener::ConnectionLimits;
pub use audit::{AuditQuery, AuditReadError, AuditReader, JsonlReader, SqliteReader, StoreReader};
pub use auth::{Authenticator, DEV_PRINCIPAL_HEADER, DevAuthenticator, bearer_token, unauthorized};
/// The axum this crate is built on (serve the router with `agents_service::axum::serve`).
pub use axum;
pub use console::{Console, ConsoleLimits, Person};
pub use error::ApiError;
pub use host::InvalidHost;
pub use jwt::{JwtAuthenticator, JwtConfig, JwtConfigError};
pub use mcp::{McpEndpoint, McpEndpointError};
pub use reread::AuthenticatorSource;
pub use runs::RunSummary;
pub use serve::{ServeError, Server};

use agents_core::manifest::Manifest;
use agents_runtime::Runtime;
use agents_runtime::audit::AuditSink;
use agents_runtime::tool::Registry;
use axum::Router;
use runs::{AgentKind, Kind, Runs};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Limits of the service. Every default is safe for a service reachable by untrusted clients.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ServiceLimits {
    /// The largest request body (bytes); larger ones get 413 `body_too_large`. Default 64 KiB.
    pub max_body_bytes: usize,
    /// Event streams one user (in one organisation) may hold open at once; more get 429
    /// `too_many_streams`. Default 8.
    pub max_streams_per_user: usize,
    /// Interval of the keep-alive comments on event streams. Default 15 s.
    pub sse_keep_alive: Duration,
    /// An event stream with no new event for this long ends with an `idle` event (code
    /// `idle_timeout`); the client reconnects with its last id. Default 10 min.
    pub sse_idle_timeout: Duration,
    /// Time a request other than an event stream may take; then 408 `request_timeout`.
    /// Default 30 s.
    pub request_timeout: Duration,
    /// The longest `Prefer: wait=<seconds>` a start request may ask for (the answering start:
    /// the run's state in the `POST`'s response); a longer one gets 400 `invalid_prefer`,
    /// nothing started. Whole seconds, and always under [`Self::request_timeout`] (one second
    /// less at most). Default 20 s.
    pub max_answer_wait: Duration,
    /// Events kept per run for resuming streams. Default 2048.
    pub journal_events: usize,
    /// Bytes of event JSON kept per run. Default 4 MiB.
    pub journal_bytes: usize,
    /// How long an ended run stays readable (status and events). Default 15 min. It is forgotten
    /// at a run's start at most a sixteenth of this later (the sweep runs once per sixteenth).
    pub retain_ended_runs: Duration,
    /// Runs held at most (the oldest ended ones are forgotten first). Default 10 000.
    pub max_retained_runs: usize,
    /// The longest reason a person may give for a rejection (characters). Default 1000.
    pub max_reason_chars: usize,
    /// How often the service settles the proposals of runs whose process is gone and prunes
    /// the state store ([`Service::maintain`]), starting when it is built; `None`: never on its
    /// own. Default 30 s.
    pub maintenance_every: Option<Duration>,
}

impl Default for ServiceLimits {
    fn default() -> Self {
        ServiceLimits {
            max_body_bytes: 64 * 1024,
            max_streams_per_user: 8,
            sse_keep_alive: Duration::from_secs(15),
            sse_idle_timeout: Duration::from_secs(600),
            request_timeout: Duration::from_secs(30),
            max_answer_wait: Duration::from_secs(20),
            journal_events: 2048,
            journal_bytes: 4 << 20,
            retain_ended_runs: Duration::from_secs(900),
            max_retained_runs: 10_000,
            max_reason_chars: 1000,
            maintenance_every: Some(Duration::from_secs(30)),
        }
    }
}

/// What every request of one service shares.
pub(crate) struct Shared {
    pub(crate) agents: BTreeMap<&'static str, Arc<dyn AgentKind>>,
    pub(crate) auth: Arc<dyn Authenticator>,
    pub(crate) runs: Runs,
    pub(crate) audit_sink: Arc<dyn AuditSink>,
    pub(crate) audit_reader: Arc<dyn AuditReader>,
    pub(crate) limits: ServiceLimits,
    pub(crate) streams: Mutex<HashMap<(String, String), usize>>,
    pub(crate) reviewer_roles: BTreeSet<String>,
    /// The MCP endpoints ([`ServiceBuilder::mcp`]), each with its own layers.
    pub(crate) mcp: Vec<Router>,
    /// Per agent: the manifest its capability report compares against, and its name.
    pub(crate) baselines: BTreeMap<&'static str, (String, Manifest)>,
    /// Cancelled by [`Service::shutdown`].
    pub(crate) shutdown: tokio_util::sync::CancellationToken,
    /// The `Host` values answered ([`ServiceBuilder::allowed_hosts`]).
    pub(crate) hosts: host::AllowedHosts,
}

/// Configures a [`Service`].
pub struct ServiceBuilder {
    agents: BTreeMap<&'static str, Arc<dyn AgentKind>>,
    auth: Arc<dyn Authenticator>,
    audit_sink: Arc<dyn AuditSink>,
    audit_reader: Arc<dyn AuditReader>,
    limits: ServiceLimits,
    reviewer_roles: BTreeSet<String>,
    /// The MCP endpoints, by path.
    mcp: Vec<(String, Router)>,
    baselines: BTreeMap<&'static str, (String, Manifest)>,
    /// What [`Service::shutdown`] cancels (the MCP endpoints hold it from their mounting).
    shutdown: tokio_util::sync::CancellationToken,
    hosts: host::AllowedHosts,
}

impl std::fmt::Debug for ServiceBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServiceBuilder")
            .field("agents", &self.agents.keys().collect::<Vec<_>>())
            .field("limits", &self.limits)
            .finish_non_exhaustive()
    }
}

impl ServiceBuilder {
    /// Serves agent `A` (under its name, `A::SPEC.name`) with `runtime`. Several agents may
    /// share one runtime. A second agent of the same name replaces the first.
    pub fn agent<A>(mut self, runtime: Runtime) -> Self
    where
        A: Registry,
        A::Input: serde::de::DeserializeOwned,
    {
        self.agents.insert(A::SPEC.name, Arc::new(Kind::<A> { runtime, _agent: std::marker::PhantomData }));
        self
    }

    /// The limits (default [`ServiceLimits::default`]).
    pub fn limits(mut self, limits: ServiceLimits) -> Self {
        self.limits = limits;
        self
    }

    /// Roles that may read their whole organisation's audit records and verify the chain
    /// (default: `auditor`). Everyone else reads only their own records.
    pub fn reviewer_roles<I, S>(mut self, roles: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.reviewer_roles = roles.into_iter().map(Into::into).collect();
        self
    }

    /// The `Host` values the service answers for, on every route (the REST API, its event
    /// streams, the MCP endpoints, the console and its login): `name` (any port) or
    /// `name:port`, IPv6 addresses in brackets. A request for any other host gets 403
    /// `host_not_allowed` before anything runs (the defence against DNS rebinding: a page the
    /// operator visits cannot drive the service through a name of its own). This list replaces
    /// the default: `localhost`, `127.0.0.1`, `[::1]` and the bound address, on the bound port
    /// when [`Service::serve`] serves it, on any port otherwise. Name every name clients use,
    /// including a public one behind a proxy. An empty list or an entry that is not a host is
    /// refused.
    pub fn allowed_hosts<I, S>(mut self, hosts: I) -> Result<Self, InvalidHost>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        self.hosts = host::AllowedHosts::configured(hosts)?;
        Ok(self)
    }

    /// The manifest the console's capability report of agent `A` is compared against (for
    /// example the baseline committed beside the code, `examples/baselines/...`), and the
    /// name the report gives it. The report then shows the classified changes and marks every
    /// widened tool. Without one the report shows the agent as it is.
    pub fn report_baseline<A: Registry>(mut self, name: impl Into<String>, baseline: Manifest) -> Self {
        self.baselines.insert(A::SPEC.name, (name.into(), baseline));
        self
    }

    /// Builds the service. Inside a tokio runtime, its upkeep of the state store starts now
    /// (see [`ServiceLimits::maintenance_every`]) and stops when the last clone of the service
    /// is dropped.
    pub fn build(self) -> Service {
        let limits = self.limits;
        let every = limits.maintenance_every;
        let service = Service {
            shared: Arc::new(Shared {
                agents: self.agents,
                auth: self.auth,
                runs: Runs::new(limits.retain_ended_runs, limits.max_retained_runs.max(1)),
                audit_sink: self.audit_sink,
                audit_reader: self.audit_reader,
                limits,
                streams: Mutex::new(HashMap::new()),
                reviewer_roles: self.reviewer_roles,
                mcp: self.mcp.into_iter().map(|(_, router)| router).collect(),
                baselines: self.baselines,
                shutdown: self.shutdown,
                hosts: self.hosts,
            }),
        };
        if let Some(every) = every {
            maintain::start(&service.shared, every);
        }
        service
    }
}

/// The service: agents, an authenticator, the audit log, limits. Cheap to clone.
#[derive(Clone)]
pub struct Service {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for Service {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Service")
            .field("agents", &self.shared.agents.keys().collect::<Vec<_>>())
            .finish_non_exhaustive()
    }
}

impl Service {
    /// A builder. `audit_sink` is where the service records its own refusals (a rejection's
    /// reason is in the runtime's `rejected` record); `audit_reader` reads the log back for queries, verification and
    /// resuming streams. Give both the log the agents' runtimes write to (a
    /// [`JsonlSink`](agents_runtime::audit::JsonlSink) with a [`JsonlReader`] of its path, a
    /// [`SqliteSink`](agents_runtime::audit::SqliteSink) with a [`SqliteReader`], a
    /// [`StoreAuditSink`](agents_runtime::store::StoreAuditSink) with a [`StoreReader`] of its
    /// stream (several nodes over one state store), or one
    /// [`MemorySink`](agents_runtime::audit::MemorySink) as both).
    pub fn builder(
        auth: Arc<dyn Authenticator>,
        audit_sink: Arc<dyn AuditSink>,
        audit_reader: Arc<dyn AuditReader>,
    ) -> ServiceBuilder {
        ServiceBuilder {
            agents: BTreeMap::new(),
            auth,
            audit_sink,
            audit_reader,
            limits: ServiceLimits::default(),
            reviewer_roles: ["auditor".to_owned()].into_iter().collect(),
            mcp: Vec::new(),
            baselines: BTreeMap::new(),
            shutdown: tokio_util::sync::CancellationToken::new(),
            hosts: host::AllowedHosts::default(),
        }
    }

    /// Settles the proposals of runs whose process is gone, for every agent served
    /// ([`Runtime::resume_orphaned`]: an approved call is carried out, a rejection recorded
    /// `rejected` with the reason given, an undecided proposal past its confirmation window
    /// recorded `skipped`; each exactly once across the nodes sharing the state store), and
    /// prunes the state store ([`Runtime::prune_state`]). The service does this on its own on
    /// start and every [`ServiceLimits::maintenance_every`].
    pub async fn maintain(&self) {
        maintain::once(&self.shared).await;
    }

    /// Says the service is shutting down: every confirmation pending on its MCP endpoints
    /// ends now, recorded `skipped` with reason `shutdown` (never `disconnected`, though the
    /// server then closes the clients' connections), and each MCP session's end record says
    /// `shutdown`. Call it when the server's graceful shutdown begins, before connections
    /// close:
    ///
    /// ```no_run
    /// # async fn f(
    /// #     service: agents_service::Service,
    /// #     listener: tokio::net::TcpListener,
    /// #     signal: impl std::future::Future<Output = ()> + Send + 'static,
    /// # ) {
    /// let stopping = service.clone();
    /// agents_service::axum::serve(listener, service.router())
    ///     .with_graceful_shutdown(async move {
    ///         signal.await; // a signal handler, an orchestrator's request
    ///         stopping.shutdown();
    ///     })
    ///     .await
    ///     .unwrap();
    /// # }
    /// ```
    pub fn shutdown(&self) {
        self.shared.shutdown.cancel();
    }

    /// The routes (see the crate documentation), with the `Host` allowlist
    /// ([`ServiceBuilder::allowed_hosts`]) in front of all of them, and the body limit, the
    /// request timeout and JSON refusals as layers. Merge or nest it into the application's
    /// router; serve it with [`Service::serve`] (connection limits, the bound port pinned).
    pub fn router(&self) -> Router {
        let rest = handlers::router(self.shared.clone());
        let all = self.shared.mcp.iter().fold(rest, |r, mcp| r.merge(mcp.clone()));
        self.guard_hosts(all)
    }

    /// `router` behind the `Host` allowlist (outermost: a refused request reaches nothing).
    pub(crate) fn guard_hosts(&self, router: Router) -> Router {
        router.layer(axum::middleware::from_fn_with_state(self.shared.hosts.clone(), host::check_host))
    }
}
