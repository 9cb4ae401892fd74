//! What the MCP import tests share: the files a test server lists its tools by and records
//! what it executed in, and a runtime that imports tools from servers.

#![allow(dead_code, unreachable_pub)]

use agents_mcp::{ImportSource, McpImports};
use agents_runtime::audit::{AuditStatus, MemorySink};
use agents_runtime::provider::{ChatResponse, ScriptedProvider};
use agents_runtime::{RoleMap, Runtime};
use std::path::PathBuf;
use std::sync::Arc;

/// One test server's files: `state` (which tools it lists, and how) and `effects` (what it
/// executed, a line each).
pub struct ServerFiles {
    dir: tempfile::TempDir,
}

impl ServerFiles {
    /// Fresh files, the state `v1`.
    pub fn new() -> Self {
        let s = ServerFiles { dir: tempfile::tempdir().unwrap() };
        s.set("v1");
        s
    }
    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }
    pub fn set(&self, state: &str) {
        std::fs::write(self.path("state"), state).unwrap();
    }
    pub fn effects(&self) -> Vec<String> {
        std::fs::read_to_string(self.path("effects")).unwrap_or_default().lines().map(str::to_owned).collect()
    }
    /// `source` told where these files are (`FIXTURE_STATE`, `FIXTURE_EFFECTS`).
    pub fn wired(&self, source: ImportSource) -> ImportSource {
        source
            .env("FIXTURE_STATE", self.path("state").display().to_string())
            .env("FIXTURE_EFFECTS", self.path("effects").display().to_string())
    }
}

/// A runtime for `roles` that imports through `imports`, its audit log and its model.
pub fn import_runtime(
    imports: Arc<McpImports>,
    roles: RoleMap,
    script: Vec<ChatResponse>,
) -> (Runtime, Arc<MemorySink>, Arc<ScriptedProvider>) {
    let audit = Arc::new(MemorySink::new());
    let provider = Arc::new(ScriptedProvider::new(script));
    let rt = Runtime::builder(audit.clone(), provider.clone()).roles(roles).mcp_imports(imports).build();
    (rt, audit, provider)
}

/// The statuses of `tool`'s records, in log order.
pub fn tool_statuses(audit: &MemorySink, tool: &str) -> Vec<AuditStatus> {
    audit.records().iter().filter(|r| r.tool.as_deref() == Some(tool)).map(|r| r.status).collect()
}
