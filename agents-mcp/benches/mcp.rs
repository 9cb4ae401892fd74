//! MCP over stdio against a bare rmcp server built here, both as child processes of this
//! binary (`MCP_BENCH_ROLE=bare|agent` selects the server side):
//!
//! - `tools/call` round trip of a trivial read tool: p50 ratio to the bare echo server, and
//!   p99 / p50 of the agent server;
//! - process spawn + `initialize`: median ratio to the bare server;
//! - `tools/list` size in bytes against the raw schemars output for the same argument types.
//!
//! Both servers are measured alternately, call by call, so they share the machine's load.
//! Run with `cargo bench -p agents-mcp --bench mcp`. One run; figures are printed.
//!
//! `cargo bench -p agents-mcp --bench mcp -- tokens` measures instead what confirmation
//! tokens cost in memory: the resident set after minting 10^6 tokens, after they expire and
//! are purged, and over further rounds (bounded: it does not grow round by round).

use agents_mcp::{McpOptions, serve_stdio};
use agents_runtime::audit::MemorySink;
use agents_runtime::provider::ScriptedProvider;
use agents_runtime::{Principal, RoleMap, Runtime, Tool, agent, permissions, tool};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ClientCapabilities, ClientConfig, ContentBlock,
    Implementation, ListToolsResult, PaginatedRequestParams, ProtocolVersion, ServerCapabilities, ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::transport::TokioChildProcess;
use rmcp::{ClientHandler, ErrorData, RoleServer, ServerHandler, ServiceExt};
use serde_json::json;
use std::sync::Arc;
use std::time::{Duration, Instant};

permissions! {
    pub mod perms { bench.read, bench.write }
}

/// Echoes its text.
#[tool(permission = perms::bench::read)]
async fn echo(text: String) -> Result<String, String> {
    Ok(text)
}

/// Searches tickets.
#[tool(permission = perms::bench::read)]
async fn search_tickets(
    query: String,
    status: Option<String>,
    assignee: Option<String>,
    limit: Option<u32>,
) -> Result<Vec<String>, String> {
    Ok(vec![format!("{query}{status:?}{assignee:?}{limit:?}")])
}

/// Opens a ticket.
///
/// # Arguments
///
/// * `summary` - the summary
/// * `severity` - the severity
/// * `component` - the component
/// * `watchers` - the watchers
#[tool(permission = perms::bench::write, mutating, title = "Open a ticket", risk = high)]
async fn open_ticket(
    summary: String,
    severity: u8,
    component: String,
    watchers: Vec<String>,
) -> Result<String, String> {
    Ok(format!("{summary}{severity}{component}{watchers:?}"))
}

agent! {
    /// Bench agent.
    pub struct Bench;
    tools: [echo, search_tickets, open_ticket],
    expose: { mcp: [stdio] },
}

/// The baseline: a hand-written rmcp server with one echo tool and nothing in between.
struct Bare;

impl ServerHandler for Bare {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }

    async fn list_tools(
        &self,
        _r: Option<PaginatedRequestParams>,
        _c: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let schema =
            serde_json::from_value(json!({"type": "object", "properties": {"text": {"type": "string"}}})).unwrap();
        Ok(ListToolsResult::with_all_items(vec![rmcp::model::Tool::new("echo", "Echoes its text.", Arc::new(schema))]))
    }

    async fn call_tool(
        &self,
        r: CallToolRequestParams,
        _c: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let text =
            r.arguments.as_ref().and_then(|a| a.get("text")).and_then(|t| t.as_str()).unwrap_or_default().to_owned();
        Ok(CallToolResponse::Complete(CallToolResult::success(vec![ContentBlock::text(text)])))
    }
}

#[derive(Clone)]
struct Client;

impl ClientHandler for Client {
    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(ClientCapabilities::default(), Implementation::new("bench", "1"))
            .with_protocol_version(ProtocolVersion::V_2025_11_25)
    }
}

async fn serve(role: &str) {
    match role {
        "bare" => {
            let running = Bare.serve(rmcp::transport::stdio()).await.expect("handshake");
            let _ = running.waiting().await;
        }
        "agent" => {
            let rt = Runtime::builder(Arc::new(MemorySink::new()), Arc::new(ScriptedProvider::new([])))
                .roles(RoleMap::new().role("user", ["bench.read", "bench.write"]))
                .build();
            serve_stdio::<Bench>(rt, Principal::new("u1", "o1", "user"), McpOptions::default()).await.expect("serve");
        }
        other => panic!("unknown MCP_BENCH_ROLE `{other}`"),
    }
}

fn command(role: &str) -> tokio::process::Command {
    let mut c = tokio::process::Command::new(std::env::current_exe().unwrap());
    c.env("MCP_BENCH_ROLE", role).stderr(std::process::Stdio::null());
    c
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

fn micros(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

/// Spawn + `initialize` for both servers, alternating so both see the same machine load.
async fn spawn_init(n: usize) -> (Duration, Duration) {
    let (mut bare, mut agent) = (Vec::with_capacity(n), Vec::with_capacity(n));
    for _ in 0..n {
        for (role, v) in [("bare", &mut bare), ("agent", &mut agent)] {
            let t = Instant::now();
            let client = Client.serve(TokioChildProcess::new(command(role)).unwrap()).await.unwrap();
            v.push(t.elapsed());
            client.cancel().await.unwrap();
        }
    }
    bare.sort();
    agent.sort();
    (percentile(&bare, 0.5), percentile(&agent, 0.5))
}

/// `tools/call` round trips against both servers, alternating call by call.
async fn round_trips(warmup: usize, n: usize) -> (Vec<Duration>, Vec<Duration>) {
    let bare_client = Client.serve(TokioChildProcess::new(command("bare")).unwrap()).await.unwrap();
    let agent_client = Client.serve(TokioChildProcess::new(command("agent")).unwrap()).await.unwrap();
    let mut params = CallToolRequestParams::new("echo");
    params.arguments = json!({"text": "hello"}).as_object().cloned();
    for _ in 0..warmup {
        bare_client.call_tool(params.clone()).await.unwrap();
        agent_client.call_tool(params.clone()).await.unwrap();
    }
    let (mut bare, mut agent) = (Vec::with_capacity(n), Vec::with_capacity(n));
    for _ in 0..n {
        for (client, v) in [(&bare_client, &mut bare), (&agent_client, &mut agent)] {
            let t = Instant::now();
            let out = client.call_tool(params.clone()).await.unwrap();
            v.push(t.elapsed());
            assert_eq!(out.is_error, Some(false));
        }
    }
    bare_client.cancel().await.unwrap();
    agent_client.cancel().await.unwrap();
    bare.sort();
    agent.sort();
    (bare, agent)
}

/// The resident set of this process, in MiB.
fn rss_mib() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status (Linux)");
    let kb: f64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmRSS in /proc/self/status");
    kb / 1024.0
}

/// Mints 10^6 tokens, lets them expire (on a paused clock) and purges them, three rounds.
fn token_memory() {
    use agents_runtime::token::TokenStore;
    const N: usize = 1_000_000;
    let rt = tokio::runtime::Builder::new_current_thread().enable_time().start_paused(true).build().unwrap();
    rt.block_on(async {
        let memory = std::sync::Arc::new(agents_runtime::store::MemoryStore::new());
        let store = TokenStore::with_store([7; 32], memory.clone());
        let args = store.args_mac(&json!({"summary": "printer on fire", "severity": 3}));
        let ttl = Duration::from_secs(180);
        let base = rss_mib();
        println!("confirmation tokens: resident set {base:.1} MiB before minting");
        for round in 1..=3 {
            let t = Instant::now();
            for i in 0..N {
                let session = format!("mcp-session-{}", i % 1000);
                std::hint::black_box(store.mint(&session, "open_ticket", &args, ttl).await.unwrap());
            }
            let minted = rss_mib();
            let mint_time = t.elapsed();
            tokio::time::advance(ttl + Duration::from_secs(1)).await;
            let t = Instant::now();
            let purged = store.purge_expired();
            let purge_time = t.elapsed();
            let after = rss_mib();
            assert_eq!(purged, N);
            println!(
                "round {round}: {N} minted in {mint_time:?}: {minted:.1} MiB ({:.0} B per token held); expired and purged {purged} in {purge_time:?}: {after:.1} MiB, {} tokens held",
                (minted - base) * 1024.0 * 1024.0 / N as f64,
                memory.token_count()
            );
        }
        println!("bounded: the resident set after each round stays near the first round's, it does not add a round's worth");
    });
}

fn raw_schema<T: Tool>() -> usize {
    let generator = schemars::generate::SchemaSettings::draft2020_12().into_generator();
    serde_json::to_vec(&generator.into_root_schema_for::<T::Args>()).unwrap().len()
}

#[tokio::main]
async fn main() {
    if let Ok(role) = std::env::var("MCP_BENCH_ROLE") {
        serve(&role).await;
        return;
    }
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    if std::env::args().any(|a| a == "tokens") {
        // Its own paused-clock runtime, off this one.
        std::thread::spawn(token_memory).join().unwrap();
        return;
    }
    const SPAWNS: usize = 15;
    const WARMUP: usize = 300;
    const CALLS: usize = 3000;

    let (bare_spawn, agent_spawn) = spawn_init(SPAWNS).await;
    let (bare, agent) = round_trips(WARMUP, CALLS).await;
    let (bare_p50, agent_p50, agent_p99) = (percentile(&bare, 0.5), percentile(&agent, 0.5), percentile(&agent, 0.99));

    let client = Client.serve(TokioChildProcess::new(command("agent")).unwrap()).await.unwrap();
    let list = client.list_tools(None).await.unwrap();
    client.cancel().await.unwrap();
    let list_bytes = serde_json::to_vec(&list).unwrap().len();
    let schema_bytes_in_list: usize =
        list.tools.iter().map(|t| serde_json::to_vec(&*t.input_schema).unwrap().len()).sum();
    let raw = raw_schema::<echo>() + raw_schema::<search_tickets>() + raw_schema::<open_ticket>();

    println!(
        "MCP over stdio ({CALLS} calls per server after {WARMUP} warm-up, {SPAWNS} spawns per server, alternating)"
    );
    println!(
        "tools/call round trip  bare p50 {:>8.1} µs   agent p50 {:>8.1} µs   ratio {:.2} (target ≤ 1.2)",
        micros(bare_p50),
        micros(agent_p50),
        micros(agent_p50) / micros(bare_p50)
    );
    println!(
        "                       bare p99 {:>8.1} µs   agent p99 {:>8.1} µs   agent p99/p50 {:.2} (target ≤ 3)",
        micros(percentile(&bare, 0.99)),
        micros(agent_p99),
        micros(agent_p99) / micros(agent_p50)
    );
    println!(
        "spawn + initialize     bare p50 {:>8.1} µs   agent p50 {:>8.1} µs   ratio {:.2} (target ≤ 1.5)",
        micros(bare_spawn),
        micros(agent_spawn),
        micros(agent_spawn) / micros(bare_spawn)
    );
    println!(
        "tools/list size        result {list_bytes} B, of which input schemas {schema_bytes_in_list} B; raw schemars {raw} B; ratio result/raw {:.2}, schemas/raw {:.2} (target ≤ 1.1)",
        list_bytes as f64 / raw as f64,
        schema_bytes_in_list as f64 / raw as f64
    );
}
