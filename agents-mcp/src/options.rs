//! The options both transports share, and why a server stops.

use std::time::Duration;

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
    /// The agent's manifest does not name this way of serving it (`expose: { mcp: [...] }`
    /// in `agent!`; see [`agents_core::expose`]): nothing was served.
    #[error("agent `{agent}` is not served this way: {reason}")]
    NotExposed {
        /// The agent's name.
        agent: String,
        /// What the manifest names, and what to declare.
        reason: String,
    },
}

/// Refuses to serve a composite in a way one of its agent nodes' manifests (at any depth of
/// nested composites) does not name: serving the tree serves every node.
pub(crate) fn check_composite_exposed(
    graph: &agents_core::compose::Graph,
    way: agents_core::expose::McpExposure,
) -> Result<(), McpError> {
    use agents_core::compose::NodeKind;
    for node in graph.nodes {
        match &node.kind {
            NodeKind::AgentNode { agent, capabilities, .. } => {
                way.admitted(capabilities.expose_mcp).map_err(|reason| McpError::NotExposed {
                    agent: (*agent).to_owned(),
                    reason: format!(
                        "it is a node of composite `{}`, which is served only in a way each of its nodes admits; {reason}",
                        graph.name
                    ),
                })?;
            }
            NodeKind::CompositeNode { graph: inner, .. } => check_composite_exposed(inner, way)?,
            _ => {}
        }
    }
    Ok(())
}

/// Refuses to serve agent `A` in a way its manifest does not name.
pub(crate) fn check_exposed<A: agents_runtime::Registry>(
    way: agents_core::expose::McpExposure,
) -> Result<(), McpError> {
    way.admitted(A::SPEC.expose_mcp).map_err(|reason| McpError::NotExposed { agent: A::SPEC.name.to_owned(), reason })
}
