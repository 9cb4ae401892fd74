//! An imported tool's call against a bare rmcp client call of the same tool on the same kind
//! of server (`agents-mcp-import-fixture`, over stdio, one process each): p50 of each and
//! their ratio (target ≤ 1.2). The imported call goes through the whole gate (availability,
//! strict parse, pinned-schema check, audit records to memory) and the pin comparison (the
//! server's `tools/list` is read once per session, not per call).
//!
//! Both are measured alternately, call by call, so they share the machine's load.
//! Run with `cargo bench -p agents-mcp --bench mcp_import`. One run; figures are printed.

use agents_mcp::{ImportSource, McpImports};
use agents_runtime::audit::MemorySink;
use agents_runtime::provider::ScriptedProvider;
use agents_runtime::{Principal, RoleMap, Runtime, agent, mcp_import, permissions};
use rmcp::model::{CallToolRequestParams, ClientCapabilities, ClientConfig, Implementation, ProtocolVersion};
use rmcp::transport::TokioChildProcess;
use rmcp::{ClientHandler, ServiceExt};
use serde_json::json;
use std::sync::Arc;
use std::time::{Duration, Instant};

permissions! {
    pub mod perms { notes.read }
}

mcp_import! {
    server = "fixture", lock = "tests/mcp_import.lock.json";
    #[tool(permission = perms::notes::read, risk = low)]
    pub fn search;
}

agent! {
    /// Searches notes on the fixture server.
    pub struct Searcher;
    tools: [search],
}

const FIXTURE: &str = env!("CARGO_BIN_EXE_agents-mcp-import-fixture");

#[derive(Clone)]
struct Client;

impl ClientHandler for Client {
    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(ClientCapabilities::default(), Implementation::new("bench", "1"))
            .with_protocol_version(ProtocolVersion::V_2025_11_25)
    }
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

fn micros(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

#[tokio::main]
async fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    const WARMUP: usize = 200;
    const CALLS: usize = 2000;
    let mut cmd = tokio::process::Command::new(FIXTURE);
    cmd.stderr(std::process::Stdio::null());
    let bare = Client.serve(TokioChildProcess::new(cmd).unwrap()).await.unwrap();
    let mut params = CallToolRequestParams::new("search");
    params.arguments = json!({"query": "vendor"}).as_object().cloned();

    let imports = Arc::new(McpImports::new().server("fixture", ImportSource::stdio(FIXTURE)));
    let rt = Runtime::builder(Arc::new(MemorySink::new()), Arc::new(ScriptedProvider::new([])))
        .roles(RoleMap::new().role("clerk", ["notes.read"]))
        .mcp_imports(imports.clone())
        .build();
    let session = rt.direct::<Searcher>(Principal::new("u1", "o1", "clerk"), "bench", None).await.unwrap();
    let args = r#"{"query": "vendor"}"#;

    for i in 0..WARMUP {
        bare.call_tool(params.clone()).await.unwrap();
        let out = session.call(&format!("w{i}"), "search", args).await;
        assert!(!out.is_error, "{out:?}");
    }
    let (mut b, mut m) = (Vec::with_capacity(CALLS), Vec::with_capacity(CALLS));
    for i in 0..CALLS {
        let t = Instant::now();
        let out = bare.call_tool(params.clone()).await.unwrap();
        b.push(t.elapsed());
        assert_eq!(out.is_error, Some(false));
        let t = Instant::now();
        let out = session.call(&format!("c{i}"), "search", args).await;
        m.push(t.elapsed());
        assert!(!out.is_error, "{out:?}");
    }
    b.sort();
    m.sort();
    let (bp, mp) = (percentile(&b, 0.5), percentile(&m, 0.5));
    println!("bare rmcp client call p50: {:.1} µs (p99 {:.1} µs)", micros(bp), micros(percentile(&b, 0.99)));
    println!("imported tool call   p50: {:.1} µs (p99 {:.1} µs)", micros(mp), micros(percentile(&m, 0.99)));
    println!("ratio imported / bare p50: {:.2} (target ≤ 1.2)", micros(mp) / micros(bp));
    bare.cancel().await.unwrap();
    imports.close().await;
}
