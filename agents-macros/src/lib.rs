//! Proc macros for bounded agents. Use them through `agents-runtime`, which re-exports them.
//!
//! | macro | what it does |
//! | --- | --- |
//! | [`macro@tool`] | turns a function into a tool: marker type, typed args, spec, execution by tier |
//! | [`agent!`] | declares an agent: grants, ceiling, skills, limits, registry, `MANIFEST` |
//! | [`permissions!`] | declares the application's permissions once, as types |
//! | [`mcp_import!`] | declares tools of another MCP server, pinned by a checked-in lock file |

mod agent;
mod chain;
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
/// | argument | takes | example |
/// | --- | --- | --- |
/// | `permission` | the path of a permission declared with `permissions!`, or `public` (required) | `permission = perms::athlete::read` |
/// | `mutating` | a flag: an action a person confirms before it runs | `mutating` |
/// | `title` | a string: what the person reads before approving (required with `mutating`) | `title = "Record injury"` |
/// | `handoff` | a flag: a tool with no body, which ends the run and hands over | `handoff` |
/// | `risk` | `low`, `medium` (the default), `high` or `critical`, without quotes | `risk = high` |
/// | `name` | a string: the name the model calls (default: the function's name) | `name = "list-athletes"` |
/// | `policy(fs(...))` | `read` and `write`: lists of absolute path globs | `policy(fs(read = ["/srv/app/uploads/**"]))` |
/// | `policy(net(...))` | `hosts`: a list of `host` or `host:port` | `policy(net(hosts = ["api.example.com:443"]))` |
/// | `policy(env(...))` | `vars`: a list of environment variable names | `policy(env(vars = ["APP_REGION"]))` |
/// | `isolated` | a flag: each call runs in a confined worker process | `isolated` |
/// | `egress` | a flag: the arguments leave the application (an address a browser opens, a query another service sees); like a declared host, it makes the gate check where each argument value came from | `egress` |
///
/// A parameter is marked `#[secret]` to keep its value out of logs, events and the audit log.
///
/// # The function
///
/// - A free function (not a method), `async` or not, returning `Result<T, E>` where
///   `T: serde::Serialize` and `E: Display`.
/// - Each parameter is a JSON argument (a type that is `Deserialize`, `JsonSchema`, `Clone`
///   and `Debug`; `&str` and `Option<&str>` are read as owned values and lent to the body),
///   `&ToolContext<'_>` (the call's context), or a capability handle (`FsAccess`, `NetAccess`,
///   `EnvAccess`) for the tool's declared `policy`.
/// - Each JSON argument is described to the model by the doc comment's `# Arguments` section
///   (`` * `name` - what it is ``). An action (`mutating`) tool describes every one: the
///   person who approves the call reads them. A read tool's argument may go undescribed (its
///   schema then carries no description, never a placeholder).
/// - The context and the capability handles are told by their names as written
///   (`ToolContext`, `FsAccess`, `NetAccess`, `EnvAccess`), before names are resolved: write
///   them under these names, not through a type alias or a renamed import.
/// - The only type parameter is the agent, for a tool that invokes other tools:
///   `async fn summary<A: Grants<list_athletes>>(cx: &ToolContext<'_, A>) -> ...`.
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
/// | `&self` | ``tool `list_names` takes `&self`, but a tool is a free function ... not a method`` |
/// | `#[tool]` on an associated function in an `impl` block | ``tool `open` is written in an `impl` block, but a tool is a free function ... help: move `open` out of the `impl` block`` |
/// | `cx: &Cx<'_>` where `type Cx<'a> = ToolContext<'a>` | ``parameter `cx` of tool `whoami` takes `&Cx<'_>`, shaped like the context, but `#[tool]` tells the context by its name `ToolContext` ... help: ... write `cx: &ToolContext<'_>` `` |
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

/// Declares an agent: the tools it grants, the permissions it may never exceed, its skills and
/// limits, and the `MANIFEST` reviewers read.
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
/// # Keys
///
/// | key | takes | example |
/// | --- | --- | --- |
/// | `tools` | the tools it grants, as paths in square brackets (required) | `tools: [list_athletes, tools::record_injury]` |
/// | `ceiling` | the permissions its tools may never exceed, as paths (not strings) | `ceiling: [perms::athlete::read]` |
/// | `skills` | named groups of its tools, in braces | `skills: { triage: [list_athletes] }` |
/// | `limits` | positive integers, in braces: `max_iterations`, `provider_timeout_secs`, `confirm_timeout_secs`, `max_concurrent_runs`, `token_ttl_secs`, `history_messages` | `limits: { max_iterations: 8 }` |
/// | `name` | the agent's name as a string (default: the type's name) | `name: "physio"` |
/// | `input` | the type of its input | `input: String` |
/// | `output` | the type of its output | `output: Summary` |
///
/// # Mistakes and the messages they give
///
/// | you wrote | you read (at the token you wrote) |
/// | --- | --- |
/// | `ceiling: ["athlete.read"]` | ``` `ceiling` takes the permissions it may never exceed, as paths in square brackets (not strings), e.g. ... ``` |
/// | `tools: list_athletes` | ``` `tools` takes the tools it grants, as paths in square brackets, e.g. ... ``` |
/// | `tools = [...]` | ``write `tools: ...` with a colon`` |
/// | `limits: { max_iterations: 0 }` | ``limit `max_iterations` is 0, out of range for its type `u32`: write an integer from 1 to ...`` |
/// | `limit: { ... }` | ``unknown `agent!` key `limit`; did you mean `limits`?`` |
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
/// Each entry is `area.action` (names, without quotes); a permission given twice is an error.
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
/// the lock file (`lock`, relative to the crate's `Cargo.toml`), which `agents mcp pin`
/// writes from the live server; they enter the agent's `MANIFEST`, with the server's name,
/// the tool's name there (`remote`, default: the `fn` name) and the pin's SHA-256. At run
/// time the runtime compares the server's `tools/list` with the pins and refuses a tool whose
/// description or schema changed.
///
/// # Arguments of `#[tool(...)]` here
///
/// | argument | takes |
/// | --- | --- |
/// | `permission` | the path of a permission declared with `permissions!`, or `public` (required) |
/// | `mutating` | a flag: an action a person confirms before it runs |
/// | `title` | what the person reads before approving (required with `mutating`) |
/// | `risk` | `low`, `medium` (the default), `high` or `critical` |
/// | `remote` | the tool's name on the server, when it differs from the `fn` name |
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

#[doc(hidden)]
#[proc_macro]
pub fn __agent_finish(input: TokenStream) -> TokenStream {
    agent::finish(input.into()).into()
}
