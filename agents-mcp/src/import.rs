//! Tools served by another MCP server, granted to an agent and pinned in its manifest.
//!
//! # The threat
//!
//! An MCP server describes its own tools: the description the model reads (and may obey)
//! and the input schema it fills in. A server that hides instructions there ("tool
//! poisoning"), or that changes them after a reviewer approved the agent (a "rug pull"),
//! would change what the agent does with no change in this repository.
//!
//! # What holds
//!
//! - Tier, permission, risk and title of an imported tool are declared in Rust
//!   ([`mcp_import!`](agents_runtime::mcp_import)); the server cannot choose them. An imported action
//!   goes through the same gate as any action: proposed, confirmed by a person, executed once
//!   with this call's approval, each step audited.
//! - The name, description and input schema of each imported tool are pinned by SHA-256 in a
//!   checked-in lock file (`agents mcp pin` writes it; see [`agents_core::mcp_lock`]). The pins
//!   are compiled into the agent's `MANIFEST` (its `import` entries and the pinned
//!   descriptions), so a re-pin changes `MANIFEST_SHA256` and shows in the reviewer's diff.
//! - The model sees only the pinned description and schema, never what the server says now.
//! - Where the server is reached is part of the manifest: each imported tool's `import`
//!   entry names its server's endpoint ([`agents_core::mcp_lock::endpoint`] of the lock
//!   file's `source`: the stdio command by its program's and arguments' file names, or the
//!   HTTP scheme, host and path). A call of a server the runtime reaches at another endpoint
//!   (another program, another host, `http` for `https`) is refused before anything is
//!   started or sent, audited like any failed call. The port of an HTTP endpoint and the
//!   directories of a stdio command are not compared: they differ between machines.
//! - Before the first call of each run, and again whenever the server announces
//!   `notifications/tools/list_changed`, the runtime reads the server's `tools/list` and
//!   compares each imported tool with its pin. A tool whose description or schema changed, or
//!   that the server no longer offers, is refused (nothing is sent to the server) with a reason
//!   naming the server, the tool and both hashes, audited like any failed call, until someone
//!   reviews the change and re-pins it. A tool the server adds is invisible: no marker type
//!   names it, so no agent grants it and the model is never told of it.
//! - Every audit record of an imported tool's call (proposed, confirmed, executed, failed,
//!   denied) carries [`AuditRecord::import`](agents_runtime::audit::AuditRecord::import): the server's
//!   name, where this runtime reaches it ([`ImportSource::describe`]: never a token, an
//!   environment value or a URL's user information or query), the server's name for the tool
//!   and the pin checked; a refusal for a changed pin adds the hash the server gives now
//!   (`listed_sha256`).
//! - What an imported tool returns is written by another party: its spec says so
//!   ([`ToolSpec::returns_untrusted`](agents_runtime::ToolSpec::returns_untrusted)), for a provenance
//!   check of later calls' arguments.
//! - What an imported tool is sent leaves the application for the server's operator: its
//!   policy is `egress` (in the manifest too), so the gate checks each call's arguments by
//!   string provenance ([`agents_runtime::provenance`]). A value copied from any tool result (an
//!   e-mail's link, a record's identifier) and not typed by the user makes even an imported
//!   read wait for the person, on a card whose `why` names the argument and the result, with
//!   the approval bound to the exact arguments; nothing is sent before. The check's limits
//!   are the provenance check's (a model that paraphrases or encodes a value defeats it). The
//!   hosts named in the arguments are not checked against a policy: they are the server's
//!   business, and the arguments reach only it. `own_server = "why"` in `mcp_import!`
//!   declares a server the application's own and turns the check off for its tools; the
//!   reason stands in the manifest, and the change shows in `agents manifest diff`.
//! - A stdio server does not inherit this process's environment: it starts with
//!   [`INHERITED_ENV_VARS`] (the MCP SDKs' own default list: `HOME`, `LOGNAME`, `PATH`,
//!   `SHELL`, `TERM`, `USER` on Unix) where set, the variables the application names
//!   ([`ImportSource::inherit_env`]) and those it sets ([`ImportSource::env`]); nothing else,
//!   so the application's API keys and database URLs stay out of a third party's process.
//!   (This bounds what the server is handed, not what it can read: the process runs as the
//!   application's user and can open that user's files; run an untrusted server under its own
//!   user or a sandbox.)
//! - A server that ends during a call (its process dies, its connection drops) gives the model
//!   an error that says the outcome is unknown, and the call is audited as `failed` with that
//!   reason; the next call starts the server again (stdio) or reconnects (HTTP) and checks the
//!   pins before anything is sent.
//! - The import client declares no client capabilities: a server's elicitation or sampling
//!   requests are never answered (they would let the server ask our person, or our model,
//!   something outside the gate).
//!
//! # What the pin does not guarantee
//!
//! The pin fixes what the server *says* its tool is, not what the server *does*: behind an
//! unchanged description a server can change its behaviour, return different data, or act on
//! arguments differently. The pin keeps the model's instructions and the reviewer's view
//! stable; the tier, permission and confirmation declared here bound what a call may cause on
//! our side; trust in the server's behaviour remains trust in its operator. A server that
//! changes its `tools/list` between two lists without announcing it is caught at the next
//! run's first call, not in the middle of a run. The schema check is the server's job: the
//! runtime passes the arguments on after checking that they form an object with the pinned
//! schema's required keys and, when the schema forbids others, no other key.
//!
//! # Re-pinning
//!
//! When a call is refused because a pin no longer matches: run
//! `agents mcp pin --server <name> --stdio "<command>" --out mcp.lock.json` (or `--http <url>`),
//! read the lock file's diff (the new description is the text the model will obey), commit it,
//! rebuild (the manifest hash changes), and review the manifest diff like any other change.
//!
//! ```no_run
//! use agents_mcp::{ImportSource, McpImports};
//! let imports = McpImports::new()
//!     .server("tracker", ImportSource::stdio("tracker-mcp").arg("--stdio"))
//!     .server("wiki", ImportSource::http("https://wiki.example.com/mcp").bearer("token"));
//! # let _ = imports;
//! ```

use agents_core::mcp_lock::{LockedServer, LockedTool, pin_sha256};
pub use agents_runtime::imported::ImportedArgs;
use agents_runtime::imported::ImportedCall;
use agents_runtime::tool::ToolError;
use rmcp::model::{
    CallToolRequestParams, ClientCapabilities, ClientConfig, Implementation, ProtocolVersion, Tool as RemoteTool,
};
use rmcp::service::{NotificationContext, Peer, RunningService};
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use serde_json::Value;
use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// The variables of this process's environment a stdio server inherits without being named:
/// the MCP SDKs' own default list (`DEFAULT_INHERITED_ENV_VARS` of the TypeScript and Python
/// SDKs), enough to find programs and a home directory. API keys, tokens, database URLs and
/// everything else the application holds stay out unless the application names them
/// ([`ImportSource::inherit_env`], [`ImportSource::env`]).
#[cfg(not(windows))]
pub const INHERITED_ENV_VARS: &[&str] = &["HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER"];

/// The variables of this process's environment a stdio server inherits without being named:
/// the MCP SDKs' own default list for Windows (`DEFAULT_INHERITED_ENV_VARS`).
#[cfg(windows)]
pub const INHERITED_ENV_VARS: &[&str] = &[
    "APPDATA",
    "HOMEDRIVE",
    "HOMEPATH",
    "LOCALAPPDATA",
    "PATH",
    "PROCESSOR_ARCHITECTURE",
    "SYSTEMDRIVE",
    "SYSTEMROOT",
    "TEMP",
    "USERNAME",
    "USERPROFILE",
    "PROGRAMFILES",
];

/// The environment a stdio server starts with: [`INHERITED_ENV_VARS`] and the variables
/// named in `inherit` as this process has them (a value the SDKs would skip as a shell
/// function, starting with `()`, is skipped too), then `set`, which wins.
fn child_env(inherit: &[String], set: &[(String, String)]) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    let named = INHERITED_ENV_VARS.iter().copied().chain(inherit.iter().map(String::as_str));
    for name in named {
        if let Some(value) = std::env::var_os(name).and_then(|v| v.into_string().ok())
            && !value.starts_with("()")
            && !out.iter().any(|(k, _)| k == name)
        {
            out.push((name.to_owned(), value));
        }
    }
    for (k, v) in set {
        out.retain(|(name, _)| name != k);
        out.push((k.clone(), v.clone()));
    }
    out
}

/// Where an imported server is reached: a command that serves MCP on its stdin/stdout, or a
/// streamable HTTP endpoint.
#[derive(Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ImportSource {
    /// A child process started with this program, arguments and environment. The child does
    /// not inherit this process's environment: it gets [`INHERITED_ENV_VARS`] (those set
    /// here), the variables named with [`ImportSource::inherit_env`], and those set with
    /// [`ImportSource::env`]; nothing else.
    Stdio {
        /// The program.
        program: String,
        /// Its arguments.
        args: Vec<String>,
        /// Environment variables set for it, beside [`INHERITED_ENV_VARS`] and `inherit`.
        env: Vec<(String, String)>,
        /// Names of this process's environment variables passed on to it (when set).
        inherit: Vec<String>,
    },
    /// A streamable HTTP endpoint.
    Http {
        /// The endpoint's URL (`http://127.0.0.1:8080/mcp`).
        url: String,
        /// The bearer token sent with every request, if any.
        bearer: Option<String>,
    },
}

impl fmt::Debug for ImportSource {
    // The bearer token and the environment's values stay out of logs.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.describe())
    }
}

impl ImportSource {
    /// A server started as a child process: `program`, serving MCP on its stdin/stdout.
    pub fn stdio(program: impl Into<String>) -> Self {
        ImportSource::Stdio { program: program.into(), args: Vec::new(), env: Vec::new(), inherit: Vec::new() }
    }

    /// A streamable HTTP endpoint.
    pub fn http(url: impl Into<String>) -> Self {
        ImportSource::Http { url: url.into(), bearer: None }
    }

    /// Adds an argument (stdio only; ignored for HTTP).
    pub fn arg(mut self, arg: impl Into<String>) -> Self {
        if let ImportSource::Stdio { args, .. } = &mut self {
            args.push(arg.into());
        }
        self
    }

    /// Sets an environment variable for the child (stdio only; ignored for HTTP).
    pub fn env(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        if let ImportSource::Stdio { env, .. } = &mut self {
            env.push((key.into(), value.into()));
        }
        self
    }

    /// Passes this process's environment variable `name` on to the child, when it is set at
    /// the time the child starts (stdio only; ignored for HTTP). For what the server needs
    /// beyond [`INHERITED_ENV_VARS`], e.g. the API key of the service it fronts: name each one.
    pub fn inherit_env(mut self, name: impl Into<String>) -> Self {
        if let ImportSource::Stdio { inherit, .. } = &mut self {
            inherit.push(name.into());
        }
        self
    }

    /// Sets the bearer token (HTTP only; ignored for stdio).
    pub fn bearer(mut self, token: impl Into<String>) -> Self {
        if let ImportSource::Http { bearer, .. } = &mut self {
            *bearer = Some(token.into());
        }
        self
    }

    /// What the lock file and the audit records say of the server: `stdio: <program> <args>`
    /// or `http: <url>`, never a token or an environment value; a URL is given without its
    /// user information and with its query and fragment replaced by `?...`, where
    /// credentials are sometimes put.
    pub fn describe(&self) -> String {
        match self {
            ImportSource::Stdio { program, args, .. } => {
                let mut s = format!("stdio: {program}");
                for a in args {
                    s.push(' ');
                    s.push_str(a);
                }
                s
            }
            ImportSource::Http { url, .. } => format!("http: {}", url_without_credentials(url)),
        }
    }
}

/// `url` without user information (`user:password@`), and with its query and fragment
/// replaced by `?...`.
fn url_without_credentials(url: &str) -> String {
    let (scheme, rest) = url.split_once("://").map_or(("", url), |(s, r)| (s, r));
    let (before, cut) = match rest.find(['?', '#']) {
        Some(at) => (&rest[..at], true),
        None => (rest, false),
    };
    let authority_end = before.find('/').unwrap_or(before.len());
    let (authority, path) = before.split_at(authority_end);
    let host = authority.rsplit_once('@').map_or(authority, |(_, host)| host);
    let mut out = String::with_capacity(url.len());
    if !scheme.is_empty() {
        out.push_str(scheme);
        out.push_str("://");
    }
    out.push_str(host);
    out.push_str(path);
    if cut {
        out.push_str("?...");
    }
    out
}

/// Why a server could not be reached or listed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ImportError {
    /// The process did not start or the connection failed, or the MCP handshake failed.
    #[error("cannot reach MCP server `{server}` ({source_description}): {detail}")]
    Unreachable {
        /// The server's name.
        server: String,
        /// [`ImportSource::describe`].
        source_description: String,
        /// What failed.
        detail: String,
    },
    /// `tools/list` failed.
    #[error("MCP server `{server}` did not list its tools: {detail}")]
    ListFailed {
        /// The server's name.
        server: String,
        /// What failed.
        detail: String,
    },
}

/// The MCP servers a runtime imports tools from, by the names `mcp_import!` gives them. Set
/// with [`RuntimeBuilder::mcp_imports`](agents_runtime::RuntimeBuilder::mcp_imports). Each server is
/// connected on first use and kept; a server that ended is started (or reconnected) again
/// at the next call.
#[derive(Debug, Default)]
pub struct McpImports {
    servers: HashMap<String, Arc<ServerSlot>>,
}

impl McpImports {
    /// No servers.
    pub fn new() -> Self {
        McpImports::default()
    }

    /// Adds (or replaces) the server `name`: where its tools are reached.
    pub fn server(mut self, name: impl Into<String>, source: ImportSource) -> Self {
        let name = name.into();
        self.servers.insert(name.clone(), Arc::new(ServerSlot { name, source, live: tokio::sync::Mutex::new(None) }));
        self
    }

    /// What the audit records of the calls of `server`'s tools say of where it is reached
    /// ([`ImportSource::describe`]); `None` when no such server is configured.
    pub fn source_of(&self, server: &str) -> Option<String> {
        self.servers.get(server).map(|slot| slot.source.describe())
    }

    /// Ends every connection (stdio servers are stopped).
    pub async fn close(&self) {
        for slot in self.servers.values() {
            if let Some(live) = slot.live.lock().await.take() {
                let _ = live.service.cancel().await;
            }
        }
    }
}

/// One configured server and its connection, if any.
struct ServerSlot {
    name: String,
    source: ImportSource,
    live: tokio::sync::Mutex<Option<Live>>,
}

impl fmt::Debug for ServerSlot {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ServerSlot").field("name", &self.name).field("source", &self.source).finish_non_exhaustive()
    }
}

/// A live connection and what its last `tools/list` said.
struct Live {
    service: RunningService<RoleClient, ImportClient>,
    /// Tool name → SHA-256 of what the server said, at the last list.
    listed: HashMap<String, String>,
    /// The run whose first call read the list (the list is read again for each run).
    listed_for: Option<String>,
    /// Set when the server announces that its list changed.
    stale: Arc<AtomicBool>,
}

/// The import side's MCP client: no capabilities (no elicitation, no sampling, no roots),
/// and a note when the server says its tool list changed.
#[derive(Clone)]
struct ImportClient {
    stale: Arc<AtomicBool>,
}

impl ClientHandler for ImportClient {
    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("agents-runtime-import", env!("CARGO_PKG_VERSION")),
        )
        .with_protocol_version(ProtocolVersion::V_2025_11_25)
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.stale.store(true, Ordering::SeqCst);
    }
}

/// Connects to a server: starts it (stdio) or opens a session (HTTP), and completes the MCP
/// handshake.
async fn connect(
    name: &str,
    source: &ImportSource,
    stale: Arc<AtomicBool>,
) -> Result<RunningService<RoleClient, ImportClient>, ImportError> {
    let unreachable = |detail: String| ImportError::Unreachable {
        server: name.to_owned(),
        source_description: source.describe(),
        detail,
    };
    let client = ImportClient { stale };
    match source {
        ImportSource::Stdio { program, args, env, inherit } => {
            let mut cmd = tokio::process::Command::new(program);
            // The child sees only what it is given: the application's secrets stay here.
            cmd.args(args).env_clear().envs(child_env(inherit, env));
            let (transport, _) = rmcp::transport::TokioChildProcess::builder(cmd)
                .stderr(std::process::Stdio::null())
                .spawn()
                .map_err(|e| unreachable(format!("the command did not start: {e}")))?;
            client.serve(transport).await.map_err(|e| unreachable(e.to_string()))
        }
        ImportSource::Http { url, bearer } => {
            use rmcp::transport::StreamableHttpClientTransport;
            use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
            #[cfg(feature = "http")]
            let _ = rustls::crypto::ring::default_provider().install_default();
            let mut config = StreamableHttpClientTransportConfig::with_uri(url.as_str());
            if let Some(token) = bearer {
                config = config.auth_header(token.clone());
            }
            client
                .serve(StreamableHttpClientTransport::from_config(config))
                .await
                .map_err(|e| unreachable(e.to_string()))
        }
    }
}

/// The server's tools as `tools/list` gives them now.
async fn list(name: &str, peer: &Peer<RoleClient>) -> Result<Vec<RemoteTool>, ImportError> {
    peer.list_all_tools().await.map_err(|e| ImportError::ListFailed { server: name.to_owned(), detail: e.to_string() })
}

/// The pin of a tool as a server describes it.
fn remote_pin(t: &RemoteTool) -> String {
    pin_sha256(&t.name, t.description.as_deref().unwrap_or_default(), &Value::Object((*t.input_schema).clone()))
}

/// Connects to `source` and pins every tool it lists: what `agents mcp pin` writes.
pub async fn pin_server(name: &str, source: &ImportSource) -> Result<LockedServer, ImportError> {
    let service = connect(name, source, Arc::new(AtomicBool::new(false))).await?;
    let tools = list(name, service.peer()).await;
    let _ = service.cancel().await;
    let mut out = BTreeMap::new();
    for t in tools? {
        let schema = Value::Object((*t.input_schema).clone());
        out.insert(t.name.to_string(), LockedTool::pin(&t.name, t.description.as_deref().unwrap_or_default(), schema));
    }
    Ok(LockedServer { source: source.describe(), tools: out })
}

impl agents_runtime::imported::ImportedTools for McpImports {
    fn call<'a>(&'a self, call: ImportedCall<'a>) -> agents_runtime::BoxFuture<'a, Result<Value, ToolError>> {
        Box::pin(call_checked(self, call))
    }

    fn source_of(&self, server: &str) -> Option<String> {
        McpImports::source_of(self, server)
    }
}

async fn call_checked(imports: &McpImports, call: ImportedCall<'_>) -> Result<Value, ToolError> {
    let import = call.import;
    let Some(slot) = imports.servers.get(import.server) else {
        return Err(ToolError::new(format!(
            "MCP server `{}` (of tool `{}`) is not configured in this runtime; nothing ran (the application adds it with `RuntimeBuilder::mcp_imports`)",
            import.server, call.tool
        )));
    };
    check_endpoint(slot, &call)?;
    let peer = checked_peer(slot, &call).await?;
    let mut params = CallToolRequestParams::new(import.tool.to_owned());
    params.arguments = Some(call.args.into_map());
    let result = match peer.call_tool(params).await {
        Ok(r) => r,
        Err(e) => {
            // The connection is of no further use when the transport ended: the next call
            // starts again and checks the pins before anything is sent.
            let ended = peer.is_transport_closed()
                || matches!(e, rmcp::ServiceError::TransportClosed | rmcp::ServiceError::TransportSend(_));
            if ended {
                *slot.live.lock().await = None;
                return Err(ToolError::new(format!(
                    "MCP server `{}` ended during the call of `{}` (its tool `{}`, pin {}): {e}. The outcome is unknown: the server may or may not have acted on the call; tell the user rather than retrying",
                    import.server, call.tool, import.tool, import.sha256
                )));
            }
            return Err(ToolError::new(format!(
                "MCP server `{}` refused the call of `{}` (its tool `{}`): {e}",
                import.server, call.tool, import.tool
            )));
        }
    };
    let text =
        || result.content.iter().filter_map(|c| c.as_text().map(|t| t.text.as_str())).collect::<Vec<_>>().join("\n");
    if result.is_error == Some(true) {
        return Err(ToolError::new(format!(
            "MCP server `{}` reports an error from `{}`: {}",
            import.server,
            call.tool,
            text()
        )));
    }
    if let Some(structured) = &result.structured_content {
        return Ok(structured.clone());
    }
    if result.content.iter().all(|c| c.as_text().is_some()) {
        return Ok(Value::String(text()));
    }
    serde_json::to_value(&result.content)
        .map_err(|e| ToolError::new(format!("the result of `{}` could not be read: {e}", call.tool)))
}

/// Refuses a call when this runtime reaches the server at another endpoint than the one the
/// manifest names ([`agents_core::mcp_lock::endpoint`] of both): nothing is started, opened or
/// sent.
fn check_endpoint(slot: &ServerSlot, call: &ImportedCall<'_>) -> Result<(), ToolError> {
    let live = agents_core::mcp_lock::endpoint(&slot.source.describe());
    if live == call.import.endpoint {
        return Ok(());
    }
    Err(ToolError::new(format!(
        "tool `{}` is unavailable: MCP server `{}` is reached at `{live}` here, but the agent's manifest names `{}`; nothing was sent to the server. Reach the server where it was pinned, or pin it where it is now (`agents mcp pin`), rebuild and review the manifest diff",
        call.tool, slot.name, call.import.endpoint
    )))
}

/// The connection to `slot`'s server, after its current `tools/list` was compared with the
/// pin of `import` (read again for each run and after a `list_changed` notice).
async fn checked_peer(slot: &ServerSlot, call: &ImportedCall<'_>) -> Result<Peer<RoleClient>, ToolError> {
    let (run_id, import, tool) = (call.run_id, call.import, call.tool);
    let mut guard = slot.live.lock().await;
    if guard.as_ref().is_some_and(|l| l.service.peer().is_transport_closed()) {
        *guard = None;
    }
    if guard.is_none() {
        let stale = Arc::new(AtomicBool::new(true));
        let service = connect(&slot.name, &slot.source, stale.clone())
            .await
            .map_err(|e| ToolError::new(format!("{e}; `{tool}` did not run")))?;
        *guard = Some(Live { service, listed: HashMap::new(), listed_for: None, stale });
    }
    let live = guard.as_mut().expect("connected above");
    let stale = live.stale.swap(false, Ordering::SeqCst);
    if stale || live.listed_for.as_deref() != Some(run_id) {
        match list(&slot.name, live.service.peer()).await {
            Ok(tools) => {
                live.listed = tools.iter().map(|t| (t.name.to_string(), remote_pin(t))).collect();
                live.listed_for = Some(run_id.to_owned());
            }
            Err(e) => {
                *guard = None;
                return Err(ToolError::new(format!("{e}; `{tool}` did not run")));
            }
        }
    }
    match live.listed.get(import.tool) {
        Some(now) if now == import.sha256 => Ok(live.service.peer().clone()),
        Some(now) => {
            // For the call's record: the hash the server gives now, beside the pin.
            call.pin_changed(now.clone());
            Err(ToolError::new(format!(
                "tool `{tool}` is unavailable: MCP server `{}` changed the description or input schema of its tool `{}` since it was pinned (pinned sha256 {}, the server now gives {now}); nothing was sent to the server. Someone must review the change and re-pin it with `agents mcp pin`",
                slot.name, import.tool, import.sha256
            )))
        }
        None => Err(ToolError::new(format!(
            "tool `{tool}` is unavailable: MCP server `{}` no longer lists its tool `{}` (pinned sha256 {}); nothing was sent to the server",
            slot.name, import.tool, import.sha256
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_source_is_described_without_its_secrets() {
        let s = ImportSource::http("http://127.0.0.1:1/mcp").bearer("hunter2");
        assert_eq!(s.describe(), "http: http://127.0.0.1:1/mcp");
        assert!(!format!("{s:?}").contains("hunter2"));
        let s = ImportSource::http("https://me:hunter2@wiki.example.com:8443/mcp?key=hunter2#x");
        assert_eq!(s.describe(), "http: https://wiki.example.com:8443/mcp?...");
        let s = ImportSource::http("http://127.0.0.1:9/mcp#hunter2");
        assert_eq!(s.describe(), "http: http://127.0.0.1:9/mcp?...");
        let s = ImportSource::stdio("srv").arg("--x").env("TOKEN", "hunter2");
        assert_eq!(s.describe(), "stdio: srv --x");
        assert!(!format!("{s:?}").contains("hunter2"));
    }
}
