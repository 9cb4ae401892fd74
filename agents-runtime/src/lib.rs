#![doc = include_str!("../README.md")]
#![cfg_attr(docsrs, feature(doc_cfg))]

pub mod audit;
pub mod authority;
pub mod budget;
pub mod capability;
pub mod classifier;
pub mod compose;
pub mod declared;
pub mod events;
pub mod imported;
pub mod interceptor;
pub mod isolate;
#[cfg(feature = "knowledge")]
#[cfg_attr(docsrs, doc(cfg(feature = "knowledge")))]
pub mod knowledge;
pub mod provenance;
pub mod untrusted;
/// Model providers: the [`Provider`] trait, the scripted and rule-based
/// providers, and the HTTP providers for OpenAI-compatible Chat Completions and Anthropic
/// Messages. They live in their own crate, `agents-provider`, named here under the path they
/// have always had (`agents_runtime::provider::ScriptedProvider`, ...).
pub use agents_provider as provider;
pub mod run;
pub mod store;
// The span and metric names, read by `agents-telemetry` (which documents them for users).
#[doc(hidden)]
pub mod telemetry;
// Confirmation tokens are minted and redeemed by the gate alone: an application never holds
// one (it decides with `Runtime::decide`); the module stays reachable for benchmarks.
#[doc(hidden)]
pub mod token;
pub mod tool;

#[doc(hidden)]
pub mod __private;

// The unit tests declare tools with `#[tool]`, whose expansion names this crate by its path.
#[cfg(test)]
extern crate self as agents_runtime;

/// The manifest, audit record, canonical JSON and policy types this crate builds on, under their
/// own crate's name (`agents_runtime::agents_core::manifest::Manifest`, ...).
pub use agents_core;
pub use agents_core::Skill;
pub use agents_core::skill::{SkillChooser, Unskilled};
pub use agents_core::{
    Agent, AgentSpec, FitsCeilingOf, Grants, ImportSpec, Limits, ParamSpec, Permission, PolicySpec, Principal, Public,
    Risk, RoleMap, Secret, SharedStr, SkillSpec, Tier, Tool, ToolSpec, WithinCeiling,
};
pub use agents_macros::mcp_import;
/// Every argument of `#[tool]` in use, and what the tool's spec says of each (this example is
/// compiled and run as a doctest; the reference follows).
///
/// ```
/// use agents_runtime::{EnvAccess, FsAccess, Risk, Tier, Tool, ToolContext, permissions, tool};
///
/// permissions! {
///     pub mod perms {
///         injury.write,
///         upload.read,
///         web.browse,
///     }
/// }
///
/// /// Records an injury for an athlete.
/// ///
/// /// # Arguments
/// ///
/// /// * `athlete` - the athlete's id, as the squad list shows it
/// /// * `note` - what happened, in the physio's words
/// #[tool(permission = perms::injury::write, mutating, title = "Record injury", risk = high, name = "record-injury")]
/// async fn record_injury(athlete: u64, note: String) -> Result<String, String> {
///     Ok(format!("recorded for {athlete}: {note}"))
/// }
///
/// /// Reads an uploaded document, in a confined worker process.
/// #[tool(permission = perms::upload::read, isolated, policy(fs(read = ["/srv/app/uploads/**"])))]
/// async fn read_upload(fs: FsAccess, path: String) -> Result<usize, String> {
///     fs.read(path).map(|b| b.len()).map_err(|e| e.to_string())
/// }
///
/// /// Opens a page; the address leaves the application.
/// #[tool(permission = perms::web::browse, egress, policy(net(hosts = ["example.com:443"])))]
/// fn open_page(url: String) -> Result<String, String> {
///     Ok(url)
/// }
///
/// /// Tells the region, and signs in with a secret.
/// #[tool(permission = public, risk = low, policy(env(vars = ["APP_REGION"])))]
/// fn region(cx: &ToolContext<'_>, env: EnvAccess, #[secret] key: String) -> Result<String, String> {
///     let _ = (cx.run_id(), key);
///     env.var("APP_REGION").map(|v| v.unwrap_or_default()).map_err(|e| e.to_string())
/// }
///
/// /// Hands the conversation to a person at the front desk.
/// #[tool(permission = public, handoff)]
/// fn escalate(reason: String) -> Result<(), String>;
///
/// fn main() {
///     let spec = <record_injury as Tool>::SPEC;
///     assert_eq!((spec.name, spec.tier, spec.risk, spec.title), ("record-injury", Tier::Action, Risk::High, Some("Record injury")));
///     assert_eq!(spec.permission, "injury.write");
///     assert_eq!(spec.params.iter().map(|p| p.name).collect::<Vec<_>>(), ["athlete", "note"]);
///     let upload = <read_upload as Tool>::SPEC;
///     assert!(upload.policy.isolated);
///     assert_eq!(upload.policy.fs_read, ["/srv/app/uploads/**"]);
///     // The context and the capability handle are given by the runtime, not sent by the model.
///     let region = <region as Tool>::SPEC;
///     assert_eq!((region.permission, region.risk), ("public", Risk::Low));
///     assert_eq!(region.params.len(), 1);
///     assert!(region.params[0].secret);
///     assert!(<open_page as Tool>::SPEC.policy.egress);
///     assert_eq!(<escalate as Tool>::SPEC.tier, Tier::Handoff);
/// }
/// ```
pub use agents_macros::tool;

/// Every key of `agent!` in use, and what the agent's spec and `MANIFEST` say (compiled and
/// run as a doctest; the reference follows).
///
/// ```
/// use agents_runtime::{Agent, permissions, tool, agent};
///
/// permissions! {
///     pub mod perms {
///         athlete.read,
///         injury.write,
///     }
/// }
///
/// /// Lists the athletes of the squad.
/// #[tool(permission = perms::athlete::read)]
/// async fn list_athletes() -> Result<Vec<String>, String> {
///     Ok(vec!["Ada".into()])
/// }
///
/// /// Records an injury.
/// ///
/// /// # Arguments
/// ///
/// /// * `note` - what happened
/// #[tool(permission = perms::injury::write, mutating, title = "Record injury")]
/// async fn record_injury(note: String) -> Result<String, String> {
///     Ok(note)
/// }
///
/// agent! {
///     /// Answers questions about the squad and records injuries.
///     pub struct Physio;
///     name: "physio",
///     input: String,
///     output: String,
///     tools: [list_athletes, record_injury],
///     ceiling: [perms::athlete::read, perms::injury::write],
///     skills: { triage: [list_athletes, record_injury] },
///     limits: { max_iterations: 8, confirm_timeout_secs: 120 },
///     models: [openai("gpt-4.1-mini"), offline],
///     budget: { tokens_per_run: 200_000, usd_per_run: 0.50 },
///     // Documents it answers from (paths relative to the crate's root), pinned by SHA-256:
///     // `embedded` compiles them in; `file` and `dir` are read at start and checked.
///     knowledge: [embedded("README.md", name = "guide")],
/// }
///
/// /// The model the application configures: a model `Physio` does not declare is a compile error.
/// const MODEL: &str = Physio::declared_model("gpt-4.1-mini");
///
/// fn main() {
///     assert_eq!(Physio::SPEC.name, "physio");
///     assert_eq!(Physio::SPEC.limits.max_iterations, 8);
///     assert_eq!(Physio::SPEC.limits.confirm_timeout_secs, 120);
///     assert_eq!(Physio::SPEC.skills[0].name, "triage");
///     assert_eq!(Physio::tools().len(), 2);
///     let manifest: serde_json::Value = serde_json::from_str(Physio::MANIFEST).unwrap();
///     let tools = manifest["tools"].as_array().unwrap();
///     assert!(tools.iter().any(|t| t["name"] == "record_injury" && t["title"] == "Record injury"));
///     assert_eq!(manifest["agent"]["models"][0]["host"], "api.openai.com");
///     assert_eq!(manifest["agent"]["budget"]["usd_per_run_micros"], 500_000);
///     assert_eq!(MODEL, "gpt-4.1-mini");
///     assert_eq!(manifest["agent"]["knowledge"][0]["name"], "guide");
///     assert_eq!(manifest["agent"]["knowledge"][0]["path"], "embedded");
/// }
/// ```
pub use agents_macros::agent;

/// Agents joined by typed combinators into one composite, with one graph manifest (compiled
/// and run as a doctest). The composite's `MANIFEST` names each node by its name, its
/// `MANIFEST_SHA256` and its capability summary, each edge by its kind, and the union of the
/// nodes' capabilities (see [`agents_core::compose`]).
///
/// ```
/// use agents_runtime::agents_core::compose::{Composite, Route};
/// use agents_runtime::{agent, composite};
///
/// agent! {
///     /// Sorts a ticket.
///     pub struct Triage;
///     tools: [],
/// }
/// agent! {
///     /// Answers billing questions.
///     pub struct Billing;
///     tools: [],
/// }
/// agent! {
///     /// Answers anything else.
///     pub struct General;
///     tools: [],
/// }
///
/// /// Sends a ticket that mentions an invoice to billing.
/// pub struct ByTopic;
/// impl Route<String> for ByTopic {
///     fn route(input: &String) -> Option<&'static str> {
///         input.contains("invoice").then_some("billing")
///     }
/// }
///
/// composite! {
///     /// Triage, then one specialist.
///     pub struct Helpdesk: String -> String =
///         then(Triage, branch(ByTopic, [Billing], default = General));
/// }
///
/// fn main() {
///     let manifest: serde_json::Value = serde_json::from_str(Helpdesk::MANIFEST).unwrap();
///     assert_eq!(manifest["composite"]["name"], "helpdesk");
///     assert_eq!(manifest["nodes"].as_array().unwrap().len(), 4);
///     assert_eq!(Helpdesk::MANIFEST_SHA256.len(), 64);
///     assert_eq!(<Helpdesk as Composite>::GRAPH.entry, "triage");
/// }
/// ```
///
/// A join of two types that differ does not compile, and says which:
///
/// ```compile_fail
/// use agents_runtime::{agent, composite};
/// agent! {
///     /// Counts words.
///     pub struct Count;
///     input: String,
///     output: u64,
///     tools: [],
/// }
/// composite! {
///     /// Counts, then counts again: `u64` is not `String`.
///     pub struct Twice: String -> u64 = then(Count, Count);
/// }
/// ```
pub use agents_macros::composite;

/// A permission is a type (compiled and run as a doctest; the reference follows).
///
/// ```
/// use agents_runtime::{Permission, permissions};
///
/// permissions! {
///     pub mod perms {
///         /// Read the squad list.
///         athlete.read,
///     }
/// }
///
/// fn main() {
///     assert_eq!(<perms::athlete::read as Permission>::NAME, "athlete.read");
/// }
/// ```
pub use agents_macros::permissions;
pub use audit::{AuditSink, JsonlSink, MemorySink};
#[cfg(feature = "http")]
pub use capability::NetClient;
pub use capability::{EnvAccess, FsAccess, NetAccess};
pub use events::Event;
pub use imported::ImportedTools;
pub use interceptor::Interceptor;
pub use provider::{Provider, ScriptedProvider};
pub use run::{
    CallStatus, CallSummary, ConfirmMode, Confirmer, DirectResult, DirectSession, GrantedAgent, PendingDecision,
    ResumedCall, RunError, RunHandle, RunOutput, RunReport, RunResultExt, RunStatus, RunUsage, Runtime, RuntimeBuilder,
    Undecided, Verdict,
};
pub use store::{MemoryStore, Store};
pub use tool::{
    ActionTool, AppState, Approval, CallContext, Dispatch, HandoffTool, ReadTool, RegisteredTool, Registry,
    ToolContext, ToolError, linked_tools,
};

/// A boxed future that may move between threads: what the runtime's traits return (a
/// [`provider::Provider`]'s answer, an [`interceptor::Interceptor`]'s decision, ...). It is the
/// same type as `futures::future::BoxFuture`, so an implementation may name either.
pub use agents_core::BoxFuture;
