//! Serving an agent's registry over the Model Context Protocol, built on [`rmcp`].
//!
//! Every MCP `tools/call` goes through [`DirectSession::call`](crate::run::DirectSession::call):
//! the same availability snapshot, strict parse, interceptors, confirmation and audit records
//! as a call inside a run. The MCP layer adds nothing that could run a tool on its own.
//!
//! - `tools/list` shows only the tools the session's principal can reach, with the cached
//!   input schemas and spec annotations (`readOnlyHint` for read tools, `destructiveHint` for
//!   action tools of high or critical risk).
//! - Action tools ask a person through MCP elicitation (form mode) when the client declared
//!   that capability at `initialize`: the request shows the title and the redacted arguments
//!   and asks for a boolean `approve`. Without elicitation the call returns a structured
//!   `confirmation_required` result with a normalized description of exactly what would run,
//!   and nothing runs. No tool argument can approve a call.
//! - Handoff tools return their handoff record; nothing runs.
//! - A name outside the session's tools is refused with a JSON-RPC error and audited as
//!   `denied`.
//!
//! Two transports: [`serve_stdio`] (newline-delimited JSON-RPC on stdin/stdout; a frame over
//! [`McpOptions::max_frame_bytes`] is dropped unread and answered with `-32600`, a frame that
//! is not JSON with `-32700`, and serving goes on) and [`serve_http`] (rmcp's streamable HTTP
//! service behind `Origin` checks, bearer tokens mapped to principals, a body limit and the
//! limits of [`HttpLimits`]). Both refuse duplicate JSON keys and integers beyond 2^53 with the
//! same `-32600` error before rmcp parses the message.
//!
//! Over HTTP, an MCP session belongs to the principal whose token opened it. Against another
//! user of the same server holding a valid token of their own (and a stolen session id), every
//! request on the session (POST, including the JSON-RPC response that answers an elicitation;
//! GET, with or without `Last-Event-ID`; DELETE) gets the same 404 as an unknown session,
//! changes nothing, and is audited as `denied`. An elicitation answer therefore counts only on
//! its session, from its principal, for the request id it answers, and only once. This holds
//! for the transport served here; the bearer tokens themselves must be kept secret by the
//! deployment.
//!
//! Every confirmation ends with exactly one final record: `executed`/`failed` after an
//! approval, `rejected` when the person declined, and `skipped` with a reason code
//! ([`Undecided`](crate::run::Undecided): `disconnected`, `timeout`, `dismissed`, `shutdown`,
//! `stopped`, `abandoned`) when it ended without a decision. An MCP session writes
//! `run_started` when it binds and `run_finished` when it ends (reason `closed` or
//! `shutdown`), like a run.
//!
//! Only JSON-RPC is written to stdout. Logs go through `tracing`; a binary serving stdio must
//! install a subscriber that writes to stderr, for example
//! `tracing_subscriber::fmt().with_writer(std::io::stderr).init()`.
//!
//! Use a runtime in [`ConfirmMode::Dialog`](crate::run::ConfirmMode::Dialog), the default. In
//! `Conversational` mode an action call returns the proposal and waits for a chat reply that an
//! MCP client never sends, so it never runs.
//!
//! Server-to-client requests (elicitation) need a protocol revision that has them, so the
//! server negotiates revisions up to `2025-11-25`.
//!
//! ```no_run
//! # use agents_runtime::{Principal, Runtime};
//! # async fn demo<A: agents_runtime::Registry>(runtime: Runtime) -> Result<(), agents_runtime::mcp::McpError> {
//! use agents_runtime::mcp::{McpOptions, serve_stdio};
//! let me = Principal::new("u1", "org1", "agent");
//! serve_stdio::<A>(runtime, me, McpOptions::default()).await
//! # }
//! ```

mod http;
pub mod import;
mod server;
mod stdio;

pub use http::{DEFAULT_MAX_BODY_BYTES, HttpLimits, HttpServer, McpHttpOptions, serve_http};
pub use server::{ClientGone, ClientGoneBody, McpServer};

use crate::run::Runtime;
use crate::tool::Registry;
use agents_core::Principal;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite};

/// The largest stdio frame accepted by default (1 MiB).
pub const DEFAULT_MAX_FRAME_BYTES: usize = 1024 * 1024;
/// How long an elicitation waits for a person by default.
pub const DEFAULT_ELICITATION_TIMEOUT: Duration = Duration::from_secs(300);

/// Options of an MCP server, shared by both transports.
#[derive(Debug, Clone)]
pub struct McpOptions {
    /// The session id the runtime binds to the principal. `None`: a fresh one per MCP session.
    pub session_id: Option<String>,
    /// Incoming stdio frames (lines) longer than this are dropped and answered with an error.
    pub max_frame_bytes: usize,
    /// How long an elicitation waits for the person's answer; no answer means nothing runs.
    pub elicitation_timeout: Duration,
    /// The server name reported at `initialize`.
    pub server_name: String,
    /// Instructions reported at `initialize`.
    pub instructions: Option<String>,
}

impl Default for McpOptions {
    fn default() -> Self {
        McpOptions {
            session_id: None,
            max_frame_bytes: DEFAULT_MAX_FRAME_BYTES,
            elicitation_timeout: DEFAULT_ELICITATION_TIMEOUT,
            server_name: "agents-runtime".to_owned(),
            instructions: None,
        }
    }
}

/// Why an MCP server stopped or could not start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum McpError {
    /// The client did not complete the MCP handshake.
    #[error("the MCP client did not complete the handshake: {0}; check that it speaks MCP over this transport")]
    Handshake(String),
    /// The connection failed while serving.
    #[error("the MCP connection failed: {0}")]
    Serve(String),
    /// The HTTP listener could not be bound.
    #[error("could not listen on {addr}: {source}; pick a free port or another address")]
    Bind {
        /// The address.
        addr: std::net::SocketAddr,
        /// What the operating system said.
        source: std::io::Error,
    },
    /// The options are inconsistent.
    #[error("invalid MCP options: {0}")]
    Options(String),
}

/// The JSON-RPC error code both transports answer a strict-JSON refusal with (`-32600`).
pub const INVALID_REQUEST: i64 = stdio::INVALID_REQUEST;

/// A JSON-RPC message that is JSON but breaks the strict rules (duplicate keys, integers
/// beyond 2^53): its request id and the message of the `-32600` error both transports answer
/// with. `None` for anything else (syntax errors are left to the ordinary parse). For a
/// transport mounted elsewhere that must refuse what [`serve_stdio`] and [`serve_http`] refuse.
pub fn strict_refusal(message: &[u8]) -> Option<(serde_json::Value, String)> {
    stdio::strict_refusal(message)
}

/// Serves agent `A` for `principal` over stdin/stdout until the client disconnects.
///
/// Nothing else may write to stdout while this runs; see the module docs for logging.
pub async fn serve_stdio<A: Registry>(
    runtime: Runtime,
    principal: Principal,
    options: McpOptions,
) -> Result<(), McpError> {
    serve_io::<A, _, _>(runtime, principal, options, tokio::io::stdin(), tokio::io::stdout()).await
}

/// Serves agent `A` for `principal` over any newline-delimited JSON-RPC byte stream (stdio,
/// a pipe, a socket) until the peer disconnects.
pub async fn serve_io<A, R, W>(
    runtime: Runtime,
    principal: Principal,
    options: McpOptions,
    read: R,
    write: W,
) -> Result<(), McpError>
where
    A: Registry,
    R: AsyncRead + Send + Unpin + 'static,
    W: AsyncWrite + Send + Unpin + 'static,
{
    use rmcp::ServiceExt;
    if options.max_frame_bytes == 0 {
        return Err(McpError::Options("max_frame_bytes must be at least 1".into()));
    }
    let transport = stdio::LineTransport::new(read, write, options.max_frame_bytes);
    let server = McpServer::<A>::new(runtime, Some(principal), options);
    let running = server.serve(transport).await.map_err(|e| McpError::Handshake(e.to_string()))?;
    running.waiting().await.map_err(|e| McpError::Serve(e.to_string()))?;
    Ok(())
}
