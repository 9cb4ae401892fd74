//! Proc macros for bounded agents. Use them through `agents-runtime`, which re-exports them
//! (`agents_runtime::{tool, agent, permissions, mcp_import}`); the examples there are compiled
//! and run as doctests, the ones here are the same code, marked `ignore` because a proc-macro
//! crate cannot link the runtime its expansions name.
//!
//! | macro | what it does |
//! | --- | --- |
//! | [`macro@tool`] | turns a function into a tool: marker type, typed args, spec, execution by tier |
//! | [`agent!`] | declares an agent: grants, ceiling, skills, limits, models, budget, audit values, MCP exposure, registry, `MANIFEST` |
//! | [`permissions!`] | declares the application's permissions once, as types |
//! | [`mcp_import!`] | declares tools of another MCP server, pinned by a checked-in lock file |
//!
//! # From one tool to a served agent
//!
//! **1. Declare the permissions** the application's tools need, once. Each is a type, so a
//! misspelt permission does not compile:
//!
//! ```ignore
//! use agents_runtime::{agent, permissions, tool};
//!
//! permissions! {
//!     pub mod perms {
//!         /// Read the squad list.
//!         athlete.read,
//!         /// Record an injury.
//!         injury.write,
//!     }
//! }
//! ```
//!
//! **2. Write a tool**: an ordinary function. Its doc comment is what the model and the
//! reviewer read; its `# Arguments` section describes each parameter in the JSON schema. A read
//! tool runs when the model calls it:
//!
//! ```ignore
//! /// Lists the athletes of the caller's squad.
//! #[tool(permission = perms::athlete::read, risk = low)]
//! async fn list_athletes(cx: &ToolContext<'_>) -> Result<Vec<String>, String> {
//!     Ok(vec![format!("athletes of {}", cx.principal().user_id)])
//! }
//! ```
//!
//! **3. Make an action** with `mutating`: a person approves each call, reading its `title`
//! and its arguments, before the body runs:
//!
//! ```ignore
//! /// Records an injury for an athlete.
//! ///
//! /// # Arguments
//! ///
//! /// * `athlete` - the athlete's id, as the squad list shows it
//! /// * `note` - what happened, in the physio's words
//! #[tool(permission = perms::injury::write, mutating, title = "Record injury", risk = high)]
//! async fn record_injury(athlete: u64, note: String) -> Result<String, String> {
//!     Ok(format!("recorded for {athlete}: {note}"))
//! }
//! ```
//!
//! **4. Declare the agent**: the tools it grants and the permissions it may never exceed. Its
//! `MANIFEST` (JSON) is what a reviewer reads and `agents manifest show` prints; the compiler
//! refuses a tool outside the ceiling:
//!
//! ```ignore
//! agent! {
//!     /// Answers questions about the squad and records injuries.
//!     pub struct Physio;
//!     name: "physio",
//!     tools: [list_athletes, record_injury],
//!     ceiling: [perms::athlete::read, perms::injury::write],
//!     limits: { max_iterations: 8 },
//! }
//! ```
//!
//! **5. Run it**: a `Runtime` holds the audit log and the model provider, and runs any agent;
//! the gate checks each call against the principal's roles, the grants and the policy:
//!
//! ```ignore
//! let runtime = agents_runtime::Runtime::builder(audit_sink, provider).roles(roles).build();
//! let run = runtime.start::<Physio>(principal, "session-1", "list my athletes")?;
//! ```
//!
//! **6. Serve it** over HTTP with `agents-service` (runs, their events as server-sent events,
//! pending decisions to approve or reject, audit queries), or over MCP with
//! `agents_mcp::serve_http::<Physio>(runtime, options)` (the agent declaring
//! `expose: { mcp: [http(auth = bearer)] }`):
//!
//! ```ignore
//! let service = agents_service::Service::builder(auth, audit_sink, audit_reader)
//!     .agent::<Physio>(runtime)
//!     .build();
//! agents_service::axum::serve(listener, service.router()).await?;
//! ```
//!
//! `cargo run -p examples --example serve -- --agent helpdesk --dev-login` runs exactly this
//! for the helpdesk example.
//!
//! # How the macros are built
//!
//! Each macro goes in steps, as serde_derive does: parse the input as written (the grammar
//! only), check every rule (each reported on the token it is about, all reported together,
//! see `context::Errors`), and generate from the checked model alone (`tool/`: `parse`,
//! `check` into `model`, `codegen`; `agent/` likewise). `#[tool]` and `agent!` meet through
//! one protocol, `chain`: a macro sees only its own tokens, so each tool leaves a hidden
//! `macro_rules!` that hands its manifest entry to the agents that grant it. Attributes are
//! parsed with `syn::meta` rather than darling: each argument's refusal names the argument,
//! what it takes and an example (`risk = "low"` reads ``` `risk` takes one of `low`,
//! `medium`, `high`, `critical`, written without quotes ```), parsing goes on after a mistake
//! to report the next, and nested sections (`policy(fs(read = [...]))`) take lists of string
//! literals; darling's generic messages and its `FromMeta` shapes would give up the first
//! two and need a custom parser for the third.
#![cfg_attr(docsrs, feature(doc_cfg))]

mod agent;
mod chain;
mod composite;
mod context;
mod crate_path;
mod import;
mod permissions;
mod shape;
mod source;
mod tool;
mod util;

use proc_macro::TokenStream;

/// Turns an ordinary (async) function into a tool.
///
/// ```ignore
/// use agents_runtime::{permissions, tool};
///
/// permissions! { pub mod perms { injury.write } }
///
/// /// Records an injury for an athlete.
/// ///
/// /// # Arguments
/// ///
/// /// * `athlete` - the athlete's id, as the squad list shows it
/// /// * `note` - what happened, in the physio's words
/// #[tool(permission = perms::injury::write, mutating, title = "Record injury", risk = high)]
/// async fn record_injury(athlete: u64, note: String) -> Result<String, String> {
///     Ok(format!("recorded for {athlete}"))
/// }
/// ```
///
/// The function becomes a marker type of the same name (what `agent! { tools: [...] }` grants
/// and `ToolContext::invoke::<T>` names) and an arguments type `<Name>Args`; its doc comment
/// is the description the model and the reviewer read.
///
/// # Arguments of `#[tool(...)]`
///
/// Every argument the parser reads, each given at most once, in any order:
///
/// | argument | takes | default |
/// | --- | --- | --- |
/// | [`permission`](#permission) | a path declared with `permissions!`, or `public` | required |
/// | [`mutating`](#mutating) | a flag | a read tool |
/// | [`title`](#title) | a string | required with `mutating` |
/// | [`handoff`](#handoff) | a flag, or `= Agent` (the agent the run is handed to) | — |
/// | [`risk`](#risk) | `low`, `medium`, `high`, `critical` | `medium` |
/// | [`name`](#name) | a string | the function's name |
/// | [`policy`](#policy) | `fs(read, write)`, `net(hosts)`, `env(vars)` | no access |
/// | [`isolated`](#isolated) | a flag | runs in the application's process |
/// | [`egress`](#egress) | a flag | — |
///
/// and, on a parameter, [`#[secret]`](#secret).
///
/// ## `permission`
///
/// The permission a principal's role must hold to call the tool: the path of a permission
/// declared with `permissions!` (a path, not a string), ending in its `area::action`, or
/// `public` for a tool any user may call. Required.
///
/// ```ignore
/// #[tool(permission = perms::athlete::read)]
/// #[tool(permission = public)]
/// ```
///
/// ## `mutating`
///
/// A flag: the tool is an action. The model proposes a call, a person approves it (reading
/// the `title` and the arguments), and only then does the body run, with the witness of that
/// approval. Without it the tool reads: it runs when the model calls it.
///
/// ```ignore
/// #[tool(permission = perms::injury::write, mutating, title = "Record injury")]
/// ```
///
/// ## `title`
///
/// What the person reads before approving an action, as a string; not empty. Required with
/// `mutating`.
///
/// ```ignore
/// #[tool(permission = perms::leave::write, mutating, title = "Book leave")]
/// ```
///
/// ## `handoff`
///
/// No execution path: the signature ends with `;`. Alone (a flag), a call files a `handed_off`
/// record and an event for a person's queue (`#[tool(permission = public, handoff)] fn
/// escalate(reason: String);`). Written `handoff = Target` (an agent declared with `agent!`), a call hands the run to that
/// agent: recorded `handed_off` naming it, the target runs as a child node of the run (same
/// person, session, stop and tree limit; its actions wait for the same person) and the run ends
/// with its answer. Checked at compile time, each message naming the tool and the target: one
/// parameter, the target's `Input`; the granting agent's `Output` is the target's; all the
/// target reaches lies within the granting agent's `ceiling` (by name and by the sealed
/// `FitsCeilingOf`); no agent hands off to itself (nor can two hand off to each other). The
/// manifest names the target on the tool's entry (`"handoff": {"name", "sha256"}`). Grant the
/// tool by its own name (not a renamed import): the agent reaches the target through it.
/// ```ignore
/// /// Hands a leave question to the HR specialist, who answers it.
/// #[tool(permission = perms::leave::read, handoff = HrSpecialist)]
/// fn hand_to_hr(request: String);
/// ```
///
/// ## `risk`
///
/// How much harm a wrong call can do, as the manifest and the approval show it: `low`,
/// `medium` (the default), `high` or `critical`, written without quotes.
///
/// ```ignore
/// #[tool(permission = perms::account::close, mutating, title = "Close account", risk = critical)]
/// ```
///
/// ## `name`
///
/// The name the model calls the tool by, as a string of 1 to 64 characters of `a-z`, `A-Z`,
/// `0-9`, `_` and `-`. The default is the function's name (without `r#`). The Rust name still
/// grants it (`tools: [list_athletes]`).
///
/// ```ignore
/// #[tool(permission = perms::athlete::read, name = "list-athletes")]
/// ```
///
/// ## `policy`
///
/// What the tool's body may touch, through the capability handle it takes as a parameter
/// (`FsAccess`, `NetAccess`, `EnvAccess`): the gate checks each call against it, the handle
/// enforces it, and the manifest lists it. Three sections, each a list of string literals:
///
/// - `fs(read = [...], write = [...])`: absolute path globs (`/srv/app/uploads/**`,
///   `/srv/app/out/*.txt`);
/// - `net(hosts = [...])`: `host` or `host:port`, no scheme or path (`api.example.com:443`,
///   `*.internal`), or `"*"` for any host: a browsing tool that fetches pages the user names.
///   `*` is the widest entry (a manifest diff reports it as a widening, the capability report
///   shows it in red) and it includes internal addresses; the gate's egress check still holds
///   for it (a value copied from a tool result waits for a person). `"**"`, `"*.*"` are refused;
/// - `env(vars = [...])`: environment variable names (`APP_REGION`).
///
/// ```ignore
/// /// Reads an uploaded document.
/// #[tool(permission = perms::kyc::review, policy(fs(read = ["/srv/app/uploads/**"])))]
/// async fn read_upload(fs: FsAccess, path: String) -> Result<usize, String> {
///     fs.read(path).map(|b| b.len()).map_err(|e| e.to_string())
/// }
/// ```
///
/// A handle parameter without its section is refused; a section without entries (`read = []`)
/// is refused as admitting nothing.
///
/// ## `isolated`
///
/// A flag: each call runs in a child process that the kernel confines to the tool's policy,
/// so a body that ignores its handle (calling `std::fs` itself) is bound too. An isolated tool
/// has a body, invokes no other tool, gives each glob a literal directory root and each host a
/// port.
///
/// ```ignore
/// #[tool(permission = perms::kyc::review, isolated, policy(fs(read = ["/srv/app/uploads/**"])))]
/// ```
///
/// ## `egress`
///
/// A flag: the tool's arguments leave the application (an address a browser opens, a query
/// another service sees). Like a declared host, it makes the gate check where each argument
/// value came from before the call runs.
///
/// ```ignore
/// #[tool(permission = perms::web::browse, egress)]
/// ```
///
/// ## `#[secret]`
///
/// On a parameter: its value is kept out of logs, events and the audit log (masked in the
/// arguments' `Debug`, marked in the schema, the spec and the manifest). A parameter whose
/// type is `Secret<...>` is secret without the mark.
///
/// ```ignore
/// /// Signs in to the archive.
/// #[tool(permission = perms::archive::read)]
/// async fn sign_in(user: String, #[secret] password: String) -> Result<bool, String> {
///     Ok(!user.is_empty() && !password.is_empty())
/// }
/// ```
///
/// # The function
///
/// - A free function (not a method), `async` or not, returning `Result<T, E>` where
///   `T: serde::Serialize` and `E: Display`.
/// - Each parameter is one of three kinds:
///   - a JSON argument the model sends: a type that is `Deserialize`, `JsonSchema`, `Clone`
///     and `Debug`, owned (`String`, `u64`, your own type); `&str`, `&T` and `Option<&T>`
///     are read as owned values and lent to the body;
///   - the call's context, `&ToolContext<'_>` (or `&ToolContext<'_, A>` in a tool generic
///     over its agent `A`), under its name or any other: a type alias or a renamed import of
///     `ToolContext` is the context;
///   - a capability handle for the tool's declared `policy`: `FsAccess`, `NetAccess`,
///     `EnvAccess`, written under these names.
///
///   What the runtime gives (the context, a handle) is chosen by the compiler from the
///   parameter's type (`agents_runtime::tool::Supplied`), not from its spelling. The macro
///   only tells a JSON argument from what the runtime gives, by shape: `&Name<'_, ...>` (a
///   borrow of a type whose first argument is a lifetime, which no JSON argument is) or one
///   of the names above. A mistaken reading is refused by the compiler either way: the
///   context or a handle read as a JSON argument (`cx: Cx` by value, a handle under an alias)
///   is not `Deserialize`, and a type of your own written `&Mine<'_>` is not given by the
///   runtime. No alias turns the context into a value the model sends.
/// - Each JSON argument is described to the model by the doc comment's `# Arguments` section
///   (`` * `name` - what it is ``). An action (`mutating`) tool describes every one: the
///   person who approves the call reads them. A read tool's argument may go undescribed (its
///   schema then carries no description, never a placeholder).
/// - The only type parameter is the agent, for a tool that invokes other tools, each declared
///   by a `Grants` bound: `async fn summary<A: Grants<list_athletes>>(cx: &ToolContext<'_, A>)`.
/// - Handoff tools have no body: the signature ends with `;`.
///
/// # Mistakes and the messages they give
///
/// | you wrote | you read (at the token you wrote) |
/// | --- | --- |
/// | `-> Vec<String>` | ``a tool returns `Result<T, E>` where `T: Serialize` and `E: Display`; `Vec<String>` is not a `Result` `` |
/// | no `->` | ``tool `log` returns nothing, but a tool returns `Result<T, E>` `` |
/// | `-> Result<Plan, String>`, `Plan` not `Serialize` | ``a tool's success value is sent to the model as JSON, but `Plan` does not implement `serde::Serialize` `` |
/// | `-> Result<u64, PlanError>`, no `Display` | ``a tool's error is shown to the model and the person as text, but `PlanError` does not implement `std::fmt::Display` `` |
/// | a parameter `week: Week` without `Deserialize` | ``` `Week` cannot be a tool parameter: the model sends it as JSON, ... ``` |
/// | `cx: Cx` where `type Cx = ToolContext<'static>` | ``` `ToolContext<'static>` cannot be a tool parameter: the model sends it as JSON, ... ``` |
/// | `mine: &Mine<'_>`, a type of your own | ``` `Mine<'_>` is not given by the runtime: a tool's parameter is a JSON argument, the context `&ToolContext<'_>` or a capability handle ... ``` |
/// | `&self` | ``tool `list_names` takes `&self`, but a tool is a free function ... not a method`` |
/// | `#[tool]` on an associated function in an `impl` block | ``tool `open` is written in an `impl` block, but a tool is a free function ... help: move `open` out of the `impl` block`` |
/// | an action tool's parameter missing from `# Arguments` | ``parameter `note` of action tool `record_injury` has no description ... help: describe it in the tool's doc comment, in a `# Arguments` section`` |
/// | `fn echo<T>(value: T)` | ``tool `echo` is generic over `T`, but the model sends its arguments as JSON ...`` |
/// | `tags: Vec<&str>` | ``parameter `tags` of tool `tag_note` borrows (`Vec<&str>`) ... help: take `tags: Vec<String>` `` |
/// | `permission = "athlete.read"` | ``` `permission` takes the path of a permission declared with `permissions!`, e.g. ... ``` |
/// | `mutating = true` | ``` `mutating` is a flag and takes no value: write `#[tool(..., mutating, ...)]` ``` |
/// | `risk = "low"` | ``` `risk` takes one of `low`, `medium`, `high`, `critical`, written without quotes ``` |
/// | `fs(read = "/x")` | ``` `read` takes a list of strings in square brackets, e.g. `read = ["/srv/app/uploads/**"]` ``` |
/// | `fs(read = ["uploads/**"])` | ``invalid glob `uploads/**`: a glob names absolute paths; start it ... with `/` or `**` `` |
/// | `net(hosts = ["https://api.example.com"])` | ``invalid host `https://api.example.com`: a host has no scheme ...`` |
/// | `record_injury(7, note)` (a direct call) | ``` `record_injury` is a tool: `#[tool]` made it a type the runtime calls, so it is not called as a function ``` |
///
/// # Guarantees
///
/// Against safe downstream code: the tool's traits are sealed, its handler is its own body, an
/// action tool's body runs only with the witness of this call's approval, and its capability
/// handles come only from the runtime, for its declared policy. `unsafe` code in the declaring
/// crate is outside these guarantees (`#![forbid(unsafe_code)]` makes them hold); a body that
/// ignores its policy (calling `std::fs` itself) is bound only by a sandboxed subprocess. The
/// table "Whom each guarantee holds against" in the `agents-runtime` docs says which check
/// holds against which code.
#[proc_macro_attribute]
pub fn tool(args: TokenStream, item: TokenStream) -> TokenStream {
    tool::expand(args.into(), item.into()).into()
}

/// Declares an agent: the tools it grants, the permissions it may never exceed, its skills,
/// limits, models and budget, and the `MANIFEST` reviewers read.
///
/// ```ignore
/// agent! {
///     /// Answers questions about the squad and records injuries.
///     pub struct Physio;
///     name: "physio",
///     tools: [list_athletes, record_injury],
///     ceiling: [perms::athlete::read, perms::injury::write],
///     skills: { triage: [list_athletes, record_injury] },
///     limits: { max_iterations: 8, confirm_timeout_secs: 120 },
/// }
/// ```
///
/// The input starts with the agent's type, `struct Name;` (with its doc comment, the
/// description reviewers read, and its visibility); then each key is written `key: value`,
/// separated by commas, in any order, each at most once.
///
/// # Keys
///
/// | key | takes | default |
/// | --- | --- | --- |
/// | [`tools`](#tools) | paths of tools, in square brackets | required |
/// | [`ceiling`](#ceiling) | paths of permissions, in square brackets | no ceiling checked |
/// | [`skills`](#skills) | named lists of its tools, in braces | none |
/// | [`limits`](#limits) | named positive integers, in braces | `Limits::DEFAULT` |
/// | [`models`](#models) | the models it may run on, in square brackets | any provider |
/// | [`budget`](#budget) | caps per run, in braces | no caps |
/// | [`unskilled`](#unskilled) | `none` or `shared` (only beside `skills`) | `none` |
/// | [`audit`](#audit) | how much of a call's values its records may keep, in braces | `values: omitted` |
/// | [`expose`](#expose) | the ways it may be served over MCP, in braces | not served over MCP |
/// | [`name`](#name) | a string | the type's name |
/// | [`input`](#input) | a type | `String` |
/// | [`output`](#output) | a type | `String` |
/// | [`agents`](#agents) | paths of agents its model may run as tools, in square brackets | none |
///
/// ## `tools`
///
/// The tools the agent grants, as paths (`#[tool]` functions or `mcp_import!` declarations),
/// in square brackets; the model sees these and no others. A path that does not name a tool,
/// or two paths naming tools of the same name, do not compile.
///
/// ```ignore
/// tools: [list_athletes, tools::record_injury],
/// ```
///
/// ## `ceiling`
///
/// The permissions the agent's tools may never exceed, as paths (not strings): a granted tool
/// whose permission lies outside is a compile error naming it. `public` tools are always
/// within it.
///
/// ```ignore
/// ceiling: [perms::athlete::read, perms::injury::write],
/// ```
///
/// ## `skills`
///
/// Named groups of the agent's own tools, in braces, which the manifest lists under `skills`.
/// A skill naming a tool the agent does not grant, or a name two of its tools share, is
/// refused.
///
/// ```ignore
/// skills: { triage: [list_athletes, record_injury], review: [list_athletes] },
/// ```
///
/// Skills scope: a run of an agent with skills works within one, and only the tools that
/// skill offers are sent to the model; a call of another granted tool is denied before
/// anything runs (`outside skill`, audited). The macro generates an enum `<Agent>Skill`, one
/// variant per skill (`triage` → `Triage`, two names making one variant are refused), which
/// the application passes to `Runtime::start_in_skill` (a skill the agent does not declare
/// does not compile). A run started with `Runtime::start` makes the model choose first: its
/// first call offers one tool, `choose_skill`, whose argument is an enum of the skill names;
/// any other answer ends the run (`RunError::SkillChoice`) with nothing offered or run. The
/// choice is a `skill_chosen` record and event. A tool's calls of the tools it invokes pass the
/// same gate, so a skill listing a tool must offer the tools it invokes (else it does not
/// compile). An agent without skills works as one skill offering every tool.
///
/// A skill may take and return types of its own, written `name(Input -> Output)`:
///
/// ```ignore
/// skills: { triage: [list_athletes], review(InjuryReport -> Verdict): [list_athletes, record_injury] },
/// ```
///
/// The macro also writes one type per skill, `<Agent><Skill>Skill` (`review` of `Clinic` →
/// `ClinicReviewSkill`), implementing `TypedSkill` with the skill's input and output (the
/// agent's `input` and `output` for a skill written without types).
/// `Runtime::start_skill::<ClinicReviewSkill>(principal, session, report)` takes an
/// `InjuryReport` and its handle yields a `Verdict`: another input type does not compile. The
/// manifest names a typed skill's types (`"io": {"input": ..., "output": ...}` in its entry,
/// absent for an untyped one), the reviewed document holds their JSON Schemas
/// (`io.skills.<name>`), and `agents manifest diff` checks a typed skill's input schema as it
/// checks the agent's. A typed skill is never offered to the model's choice, and
/// `start_in_skill` refuses it (`StartError::TypedSkill`): its input is not the agent's.
///
/// ## `unskilled`
///
/// What happens to the granted tools no skill lists: `none` (the default) offers them under
/// no skill, `shared` under every skill. Given without `skills`, or with another value, it is
/// refused. The manifest writes `shared` (and leaves `none` out), and the diff counts an
/// action tool a skill reaches anew through it as a widening.
///
/// ```ignore
/// skills: { triage: [list_athletes], decide: [list_athletes, record_injury] },
/// unskilled: shared,
/// ```
///
/// ## `limits`
///
/// Positive integers in braces, each at most once; the ones left out keep their default
/// (`Limits::DEFAULT`):
///
/// | limit | what | default |
/// | --- | --- | --- |
/// | `max_iterations` | model iterations per run (`u32`) | 12 |
/// | `provider_timeout_secs` | seconds for one provider call (`u64`) | 90 |
/// | `confirm_timeout_secs` | seconds a confirmation may wait for a person (`u64`) | 600 |
/// | `max_concurrent_runs` | concurrent runs per user; one more is refused (`u32`) | 3 |
/// | `token_ttl_secs` | seconds a confirmation token stays valid after approval (`u64`) | 180 |
/// | `history_messages` | messages of history replayed to the model (`u32`) | 40 |
///
/// ```ignore
/// limits: { max_iterations: 8, confirm_timeout_secs: 120 },
/// ```
///
/// ## `models`
///
/// The models the agent may run on, each a provider kind with its model id and the host of the
/// provider's base URL (a host pattern without a port: `localhost`, `*.internal.example`); the
/// manifest lists them under `agent.models`. `Runtime::start` refuses a run whose provider's
/// kind, model or host none of them admits, naming the declaration that would admit it; the
/// model calls of a run's helpers (a model-backed classifier) are refused the same way. Without
/// `models` the agent runs on any provider (the manifest has no `models` key, and dropping the
/// key is a widening in `agents manifest diff`). No declaration holds a key: a model on a
/// network host takes its key at run time, and readers show it as masked.
///
/// | kind | takes | host |
/// | --- | --- | --- |
/// | `openai("id")` | the model id | `api.openai.com`, or `host = "..."` |
/// | `anthropic("id")` | the model id | `api.anthropic.com`, or `host = "..."` |
/// | `openai_compatible("id", host = "...")` | the model id and the host | required |
/// | `offline` | nothing | any provider that reaches no network host (scripted, rules) |
///
/// ```ignore
/// models: [openai("gpt-4.1-mini"), openai_compatible("llama3.2", host = "localhost"), offline],
/// ```
///
/// The agent's type gets `const fn declared_model(id)`, which returns `id` when a declared
/// model has that id: in a `const`, naming a model the agent does not declare is a compile
/// error (`const MODEL: &str = Physio::declared_model("gpt-4.1-mini");`).
///
/// ## `budget`
///
/// Caps on every run, in braces, each at most once, each positive; the manifest lists them
/// under `agent.budget` (money in micro-dollars, `usd_per_run_micros`). Before each model call
/// the run's spend so far is compared with them, and a run that has reached one ends with
/// `RunStatus::BudgetExhausted` (audited as a notice). They bind besides the deployment's
/// monthly caps (`BudgetStore`).
///
/// | cap | what |
/// | --- | --- |
/// | `tokens_per_run` | model tokens (prompt and completion) a run may use (`u64`) |
/// | `usd_per_run` | what a run may cost, in US dollars, at most six decimals |
///
/// ```ignore
/// budget: { tokens_per_run: 200_000, usd_per_run: 0.50 },
/// ```
///
/// ## `audit`
///
/// The most of a call's values the agent's audit records may keep: `values: omitted` (the
/// default: each argument's name with a keyed digest of its value, the result's keyed
/// digest), `masked` (the argument values, secrets masked) or `full` (the result's value
/// too). The manifest lists `masked` and `full` as `agent.audit_values` (a widening in its
/// diff); a runtime set to keep more than the agent declares
/// (`RuntimeBuilder::audit_values`) refuses to start its runs. The setting is the most the
/// log may hold, not what a runtime keeps by default: a runtime keeps `omitted` unless its
/// operator sets more, within what the manifest allows.
///
/// ```ignore
/// audit: { values: masked },
/// ```
///
/// ## `expose`
///
/// The ways the agent may be served over MCP, each a transport with the authentication that
/// names each session's person: `stdio` (the application names the principal the process
/// serves), `http(auth = bearer)` (the standalone server of `agents-mcp`, bearer tokens mapped
/// to principals) and `http(auth = service)` (the MCP endpoint of `agents-service`, behind its
/// authentication). The manifest lists them as `agent.expose.mcp` (a way added is a widening
/// in its diff). An agent that declares none is not served over MCP: each server refuses an
/// agent whose manifest does not name its way.
///
/// ```ignore
/// expose: { mcp: [stdio, http(auth = bearer)] },
/// ```
///
/// ## `name`
///
/// The agent's name in its manifest, the audit log and the service's routes, as a string.
///
/// ```ignore
/// name: "physio",
/// ```
///
/// ## `input`
///
/// The type a run starts from; the model reads it as JSON, so it is `Serialize` (and, to be
/// read back from a request, `Deserialize`).
///
/// ```ignore
/// input: RawRequest,
/// ```
///
/// ## `output`
///
/// The type of the run's result: the model's final answer is parsed with its `Deserialize`
/// and described to the model by its `JsonSchema`, so an answer that breaks its rules never
/// reaches the application.
///
/// ```ignore
/// output: ApprovalDecision,
/// ```
///
/// ## `agents`
///
/// Agents declared with `agent!` that this agent's model may run as tools. Each is offered
/// to the model under its name (characters other than letters, digits, `_` and `-` written
/// `_`), with the arguments `{"input": <its input>}` (its input type's JSON Schema), so its
/// input type is also `Deserialize`. A call runs it as a child node of the calling run: the
/// same person, session and stop, within the same tree limit, its records in the same chain
/// with the caller's run id and the path `caller/callee`, its events inside `Event::Node`; its
/// final answer is the tool result the caller's model reads. Its own action tools wait for
/// the person's decision, as the caller's do. The call itself is recorded like a read call
/// (`proposed`, then `executed` or `failed`).
///
/// Everything a granted agent reaches (the permission of each of its tools and, in turn, of
/// each agent it grants) must lie within this agent's `ceiling`, checked by name (the error
/// names the agent and the permission) and by the sealed `FitsCeilingOf`. The manifest names
/// each granted agent with its `MANIFEST_SHA256` (`agent.agents`), so a change inside a
/// granted agent changes this agent's hash; the diff classifies an agent granted, and a
/// granted agent whose hash changed, as widenings. An agent that grants itself does not
/// compile; agents that grant each other in a cycle cannot be written (each manifest would
/// name the other's hash), and the compiler stops at the macro the other has not produced.
///
/// ```ignore
/// agents: [SecondReviewer],
/// ```
///
/// # Mistakes and the messages they give
///
/// | you wrote | you read (at the token you wrote) |
/// | --- | --- |
/// | `agents: [SecondReviewer]`, which reaches `kyc.decide`, with `ceiling: [perms::kyc::read]` | ``the granted agent `SecondReviewer` reaches the permission `kyc.decide` ..., which lies outside the ceiling of agent `Supervisor` ...`` |
/// | `agents: [Reviewer]` inside `struct Reviewer` | ``agent `Reviewer` grants itself: ...`` |
/// | `ceiling: ["athlete.read"]` | ``` `ceiling` takes the permissions it may never exceed, as paths in square brackets (not strings), e.g. ... ``` |
/// | `tools: list_athletes` | ``` `tools` takes the tools it grants, as paths in square brackets, e.g. ... ``` |
/// | `tools = [...]` | ``write `tools: ...` with a colon`` |
/// | `limits: { max_iterations: 0 }` | ``limit `max_iterations` is 0, out of range for its type `u32`: write an integer from 1 to ...`` |
/// | `limit: { ... }` | ``unknown `agent!` key `limit`; did you mean `limits`?`` |
/// | `models: [openai_compatible("llama3.2")]` | ``model kind `openai_compatible` has no default host: write ...`` |
/// | the same model twice in `models` | ``model `openai:gpt-4.1-mini@api.openai.com` is declared twice; declare each model once`` |
/// | `budget: { tokens_per_run: 0 }` | ``budget cap `tokens_per_run` is 0; a cap is a positive number`` |
/// | `audit: { values: everything }` | ``unknown audit values setting `everything`; use one of: omitted, masked, full`` |
/// | a tool outside the ceiling | ``the permission `perms::injury::write` lies outside the ceiling of the agent `Physio` `` |
/// | a second `agent!` declaring `struct Physio` in the same module | ``agent `Physio` is declared twice in this module ... help: give this agent a type name of its own`` |
///
/// # Guarantees
///
/// Against safe downstream code: `MANIFEST` is exactly what the registry runs (one source,
/// compile-time checks that each tool path names one tool, and a run-time refusal of any
/// registry that does not produce the `MANIFEST` bytes); grants and the ceiling cannot be
/// widened by hand-written impls. Limits out of range for their type, or given twice, are
/// compile errors. `unsafe` code in the declaring crate is outside the compile-time guarantee;
/// the run-time checks still hold against it.
#[proc_macro]
pub fn agent(input: TokenStream) -> TokenStream {
    agent::expand(input.into()).into()
}

/// Declares the application's permissions once, as types.
///
/// ```ignore
/// permissions! {
///     pub mod perms {
///         /// Read the squad list.
///         athlete.read,
///         injury.write,
///     }
/// }
/// // `perms::athlete::read` and `perms::injury::write` are now types: `#[tool(permission = ...)]`
/// // and `agent! { ceiling: [...] }` name them, so a misspelt permission does not compile.
/// ```
///
/// The input is one module, `<vis> mod <name> { ... }`, holding the permissions separated by
/// commas. Each entry is `area.action` (names, without quotes), optionally with a doc comment
/// (what a reviewer reads of it); a permission given twice is an error. Each becomes the type
/// `<name>::<area>::<action>`.
///
/// # Mistakes and the messages they give
///
/// | you wrote | you read |
/// | --- | --- |
/// | `permissions! { perms { ... } }` | ``` `permissions!` takes a module of permissions, e.g. ... ``` |
/// | `"athlete.read"` | ``a permission is written `area.action`, without quotes, e.g. `athlete.read` `` |
/// | `athlete_read` | ``a permission is written `area.action`, e.g. `athlete.read` `` |
#[proc_macro]
pub fn permissions(input: TokenStream) -> TokenStream {
    permissions::expand(input.into()).into()
}

/// Declares tools served by another MCP server, to grant in `agent!` like tools written here.
///
/// ```ignore
/// use agents_runtime::{mcp_import, permissions};
///
/// permissions! { pub mod perms { ticket.read, ticket.write } }
///
/// mcp_import! {
///     server = "tracker", lock = "mcp.lock.json";
///     #[tool(permission = perms::ticket::read, risk = low)]
///     pub fn list_tickets;
///     #[tool(permission = perms::ticket::write, mutating, title = "Close a ticket", risk = high, remote = "close-ticket")]
///     pub fn close_ticket;
/// }
/// ```
///
/// Each `fn` becomes a marker type, as `#[tool]` makes one: `agent! { tools: [list_tickets] }`
/// grants it, and an agent that does not grant it cannot name it. Tier (`mutating` makes an
/// action a person confirms), permission, risk and title are declared here, never taken from
/// the server. The description the model reads and the input schema are the ones pinned in
/// the lock file, which `agents mcp pin` writes from the live server; they enter the agent's
/// `MANIFEST`, with the server's name, the tool's name there and the pin's SHA-256. At run
/// time the runtime compares the server's `tools/list` with the pins and refuses a tool whose
/// description or schema changed. (The doctest of `agents_runtime::mcp_import` is marked
/// `ignore`: a lock file is read relative to the declaring crate's `Cargo.toml`.)
///
/// An imported tool's arguments leave the application for the server's operator, so its
/// policy is `egress`: the gate checks each call's arguments for values copied from tool
/// results, and a read carrying one waits for a person (see `agents_runtime::provenance`).
/// `own_server = "why"` declares the server the application's own and turns that off for the
/// block's tools; the manifest shows the reason and `agents manifest diff` reports the change
/// as a widening.
///
/// # Keys
///
/// First `server = "...", lock = "...";` (both required, each once; `own_server = "..."`
/// optional), then the tools, each `#[tool(...)] <vis> fn <name>;`.
///
/// ## `server`
///
/// The server's name, as the lock file and the runtime's MCP client configuration know it.
///
/// ```ignore
/// server = "tracker", lock = "mcp.lock.json";
/// ```
///
/// ## `lock`
///
/// The lock file, relative to the crate's `Cargo.toml`, that pins each tool's description and
/// schema (written by `agents mcp pin`, checked in).
///
/// ```ignore
/// server = "tracker", lock = "locks/tracker.lock.json";
/// ```
///
/// ## `own_server`
///
/// Why the server is the application's own (run by the team, inside its boundary), so that
/// its tools' arguments are not egress: a value copied from a tool result goes to it without a
/// person. Without it (the default) every imported tool is egress. The reason is written into
/// each tool's `import` entry in the manifest (`"own_server": "..."`), and the tool's policy
/// has no `egress`.
///
/// ```ignore
/// server = "tracker", lock = "mcp.lock.json", own_server = "our ticket tracker, run by IT in our network";
/// ```
///
/// # Arguments of `#[tool(...)]` here
///
/// The same as [`macro@tool`]'s for `permission`, `mutating`, `title` and `risk`, and one of
/// its own, `remote`. Nothing else: the policy, isolation and the body belong to the server.
///
/// | argument | takes | example |
/// | --- | --- | --- |
/// | `permission` | the path of a permission declared with `permissions!`, or `public` (required) | `permission = perms::ticket::read` |
/// | `mutating` | a flag: an action a person confirms before it runs | `mutating` |
/// | `title` | what the person reads before approving (required with `mutating`) | `title = "Close a ticket"` |
/// | `risk` | `low`, `medium` (the default), `high` or `critical` | `risk = high` |
/// | `remote` | the tool's name on the server, when it differs from the `fn` name | `remote = "close-ticket"` |
///
/// # Mistakes and the messages they give
///
/// | you wrote | you read |
/// | --- | --- |
/// | a tool the lock file does not pin | ``tool `x` of server `s` is not pinned in `mcp.lock.json`: pin it with `agents mcp pin` ...`` |
/// | a lock file edited by hand | ``the MCP lock file `mcp.lock.json` is refused: the pin of tool `x` ... does not match its own text ...`` |
/// | no lock file | ``cannot read the MCP lock file ...: write it with `agents mcp pin` ...`` |
#[proc_macro]
pub fn mcp_import(input: TokenStream) -> TokenStream {
    import::expand(input.into()).into()
}

/// Declares a composite: agents (and other composites) joined by typed combinators, with its
/// graph manifest as a const.
///
/// ```ignore
/// composite! {
///     /// Intake, then a review, then a decision or a person.
///     pub struct KycPipeline: RawRequest -> ApprovalDecision =
///         then(Intake, Reviewer, branch(Triage, [AutoDecision], default = HumanReview));
/// }
/// ```
///
/// Combinators: `then(a, b, ...)` (each output is the next input); `branch(Router | model,
/// [arm, ...], default = d)` (one arm; `Router` implements `Route<In>`, an unknown choice
/// takes `d`); `loop(body, max = N, until = Stop)` (no `max`, no loop); `parallel([m, ...],
/// join = J, on_failure = fail_fast | collect)`; `forum([m, ...], moderator = m, rounds = N)`
/// (the moderator takes the members' answers as a `Vec`); `wrap(inner, before = [Step, ...],
/// after = [Step, ...])`. Each join of two types that differ is a compile error that names
/// both. The reference is `agents_runtime::composite!`.
#[proc_macro]
pub fn composite(input: TokenStream) -> TokenStream {
    composite::expand(input.into()).into()
}

#[doc(hidden)]
#[proc_macro]
pub fn __agent_finish(input: TokenStream) -> TokenStream {
    agent::finish(input.into()).into()
}
