//! A small helpdesk agent served over MCP, for trying the MCP server and for its tests.
//!
//! ```text
//! agents-mcp-demo            # stdio
//! agents-mcp-demo --http     # streamable HTTP on 127.0.0.1 (token from AGENTS_MCP_TOKEN)
//! ```
//!
//! Environment:
//! - `AGENTS_MCP_AUDIT`: path of a JSONL audit log (default: in memory).
//! - `AGENTS_MCP_ROLE`: the principal's role, `staff` (default) or `admin`.
//! - `AGENTS_MCP_USER`: the principal's user id (default `u1`).
//! - `AGENTS_MCP_MAX_FRAME`: the largest stdio frame in bytes.
//! - `AGENTS_MCP_EFFECTS`: a file that every executed action appends a line to.
//! - `AGENTS_MCP_TOKEN`, `AGENTS_MCP_BIND`: the bearer token and address for `--http`.
//!
//! Logs go to stderr; stdout carries only JSON-RPC.

use agents_mcp::{McpHttpOptions, McpOptions, serve_http, serve_stdio};
use agents_runtime::audit::{AuditSink, JsonlSink, MemorySink};
use agents_runtime::provider::ScriptedProvider;
use agents_runtime::{Principal, RoleMap, Runtime, ToolContext, agent, permissions, tool};
use std::io::Write;
use std::sync::Arc;

permissions! {
    pub mod perms { policy.read, ticket.write, account.delete }
}

/// Looks up the helpdesk policy on a topic.
#[tool(permission = perms::policy::read)]
async fn lookup_policy(topic: String) -> Result<String, String> {
    Ok(format!("policy on {topic}: ask the service desk"))
}

/// Opens a support ticket.
///
/// # Arguments
///
/// * `summary` - the summary
/// * `severity` - the severity
/// * `contact` - the contact
#[tool(permission = perms::ticket::write, mutating, title = "Open a support ticket", risk = high)]
async fn open_ticket(
    cx: &ToolContext<'_>,
    summary: String,
    severity: u8,
    #[secret] contact: String,
) -> Result<String, String> {
    let _ = contact;
    if let Ok(path) = std::env::var("AGENTS_MCP_EFFECTS") {
        let mut f = std::fs::OpenOptions::new().create(true).append(true).open(path).map_err(|e| e.to_string())?;
        writeln!(f, "open_ticket {} {severity} {summary}", cx.principal().user_id).map_err(|e| e.to_string())?;
    }
    Ok(format!("ticket opened (severity {severity}): {summary}"))
}

/// Resets a user's password: a person at the service desk does this.
#[tool(permission = public, handoff)]
fn reset_password(user: String);

/// Deletes a user account.
///
/// # Arguments
///
/// * `user` - the user
#[tool(permission = perms::account::delete, mutating, title = "Delete an account", risk = critical)]
async fn delete_account(user: String) -> Result<String, String> {
    Ok(format!("deleted {user}"))
}

agent! {
    /// The demo helpdesk agent.
    pub struct Desk;
    tools: [lookup_policy, open_ticket, reset_password, delete_account],
    expose: { mcp: [stdio, http(auth = bearer)] },
}

fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

fn fail(msg: String) -> ! {
    eprintln!("agents-mcp-demo: {msg}");
    std::process::exit(2)
}

#[tokio::main]
async fn main() {
    let audit: Arc<dyn AuditSink> = match env("AGENTS_MCP_AUDIT") {
        Some(path) => Arc::new(JsonlSink::open(&path).unwrap_or_else(|e| fail(e.to_string()))),
        None => Arc::new(MemorySink::new()),
    };
    let runtime = Runtime::builder(audit, Arc::new(ScriptedProvider::new([])))
        .roles(
            RoleMap::new()
                .role("staff", ["policy.read", "ticket.write"])
                .role("admin", ["policy.read", "ticket.write", "account.delete"]),
        )
        .build();
    let principal = Principal::new(
        env("AGENTS_MCP_USER").unwrap_or_else(|| "u1".into()),
        "org1",
        env("AGENTS_MCP_ROLE").unwrap_or_else(|| "staff".into()),
    );
    let mut options = McpOptions { server_name: "agents-mcp-demo".into(), ..McpOptions::default() };
    if let Some(n) = env("AGENTS_MCP_MAX_FRAME") {
        options.max_frame_bytes =
            n.parse().unwrap_or_else(|_| fail(format!("AGENTS_MCP_MAX_FRAME must be a number of bytes, got `{n}`")));
    }
    if std::env::args().any(|a| a == "--http") {
        let token =
            env("AGENTS_MCP_TOKEN").unwrap_or_else(|| fail("--http needs a bearer token in AGENTS_MCP_TOKEN".into()));
        let mut http = McpHttpOptions { mcp: options, ..McpHttpOptions::default() };
        if let Some(bind) = env("AGENTS_MCP_BIND") {
            http.bind = bind.parse().unwrap_or_else(|_| {
                fail(format!("AGENTS_MCP_BIND must be an address like 127.0.0.1:8080, got `{bind}`"))
            });
        }
        http.bearer_tokens.insert(token, principal);
        let server = serve_http::<Desk>(runtime, http).await.unwrap_or_else(|e| fail(e.to_string()));
        eprintln!("agents-mcp-demo: listening on http://{}/mcp", server.local_addr());
        let _ = tokio::signal::ctrl_c().await;
        server.shutdown();
        server.wait().await;
    } else if let Err(e) = serve_stdio::<Desk>(runtime, principal, options).await {
        fail(e.to_string());
    }
}
