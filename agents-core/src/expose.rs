//! How an agent may be served over MCP: each transport with the authentication that names
//! who a session acts for, declared in `agent!` and carried in the manifest.
//!
//! `agent! { ..., expose: { mcp: [stdio, http(auth = bearer)] } }` declares the ways the
//! agent may be served; the manifest holds them as `agent.expose.mcp` (sorted), absent when
//! the agent declares none. **An agent that declares none is not served over MCP**: the MCP
//! servers of `agents-mcp` (stdio, the standalone HTTP server) and the service's MCP endpoint
//! refuse to serve an agent whose manifest does not name their way
//! ([`McpExposure::admitted`]). Serving an agent to MCP clients widens who can reach its
//! tools, so it is a reviewed decision, not a default; `agents manifest diff` classifies a
//! way added as a widening.
//!
//! ```
//! use agents_core::expose::McpExposure;
//! let declared = [McpExposure::Stdio];
//! assert!(McpExposure::Stdio.admitted(&declared).is_ok());
//! let refused = McpExposure::HttpBearer.admitted(&declared).unwrap_err();
//! assert!(refused.contains("expose: { mcp: [http(auth = bearer)] }"), "{refused}");
//! ```

use serde::{Deserialize, Serialize};
use std::fmt;

/// One way an agent may be served over MCP: a transport and how a session's person is known.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[non_exhaustive]
pub enum McpExposure {
    /// Over a process's stdin and stdout (`stdio`): the application names the one principal
    /// the process serves, the person who started it.
    #[serde(rename = "stdio")]
    Stdio,
    /// Over streamable HTTP, each request carrying a bearer token the server maps to a
    /// principal (`http(auth = bearer)`: `agents_mcp::serve_http`).
    #[serde(rename = "http(auth = bearer)")]
    HttpBearer,
    /// Over streamable HTTP behind the service's own authentication of each request
    /// (`http(auth = service)`: the MCP endpoint of `agents-service`).
    #[serde(rename = "http(auth = service)")]
    HttpService,
}

impl McpExposure {
    /// Every way, in the manifest's order.
    pub const ALL: [McpExposure; 3] = [McpExposure::Stdio, McpExposure::HttpBearer, McpExposure::HttpService];

    /// The way as `agent!` writes it and the manifest holds it (`stdio`,
    /// `http(auth = bearer)`, `http(auth = service)`).
    pub const fn as_str(self) -> &'static str {
        match self {
            McpExposure::Stdio => "stdio",
            McpExposure::HttpBearer => "http(auth = bearer)",
            McpExposure::HttpService => "http(auth = service)",
        }
    }

    /// `Ok` when `declared` (the agent's `expose.mcp`) names this way; otherwise why the agent
    /// is not served, saying what to declare.
    pub fn admitted(self, declared: &[McpExposure]) -> Result<(), String> {
        if declared.contains(&self) {
            return Ok(());
        }
        let named = if declared.is_empty() {
            "declares no way to be served over MCP".to_owned()
        } else {
            let list: Vec<&str> = declared.iter().map(|e| e.as_str()).collect();
            format!("is served over MCP only as {}", list.join(", "))
        };
        Err(format!(
            "the agent's manifest {named}, not `{}`: add it to the agent's declaration (`expose: {{ mcp: [{}] }}`) and review the manifest diff",
            self.as_str(),
            self.as_str()
        ))
    }
}

impl fmt::Display for McpExposure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The manifest's `agent.expose`: how the agent may be served.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExposeEntry {
    /// The ways it may be served over MCP, sorted; empty: not served over MCP.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub mcp: Vec<McpExposure>,
}

impl ExposeEntry {
    /// Whether it declares nothing (the manifest then has no `expose` key).
    pub fn is_empty(&self) -> bool {
        self.mcp.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_way_reads_back_as_written() {
        for e in McpExposure::ALL {
            let text = serde_json::to_string(&e).unwrap();
            assert_eq!(text, format!("\"{}\"", e.as_str()));
            assert_eq!(serde_json::from_str::<McpExposure>(&text).unwrap(), e);
        }
        assert!(serde_json::from_str::<McpExposure>("\"http\"").is_err());
    }

    #[test]
    fn a_way_not_declared_is_refused_with_what_to_declare() {
        let e = McpExposure::Stdio.admitted(&[]).unwrap_err();
        assert!(e.contains("declares no way") && e.contains("expose: { mcp: [stdio] }"), "{e}");
        let e = McpExposure::HttpService.admitted(&[McpExposure::Stdio, McpExposure::HttpBearer]).unwrap_err();
        assert!(e.contains("only as stdio, http(auth = bearer)"), "{e}");
    }
}
