//! A composite in the web console, in a real headless Chromium (`tests/console-e2e/composite.mjs`,
//! the same driver setup as `console_browser`): the person starts the composite from the chat,
//! the nested node's action shows as a card naming the node's path, another user of the club
//! sees no card, the person approves it there, and the action runs once; the live audit shows
//! the node's records. Missing Chromium, node or the npm packages fail the test: it never
//! skips.

use crate::console_browser::{Physio, audit_lines, drive, people, perms, physio_rules, workspace_target};
use agents_runtime::audit::SqliteSink;
use agents_runtime::provider::ChatRequest;
use agents_runtime::provider::scripted::{RuleProvider, last_user_message, reply};
use agents_runtime::{RoleMap, Runtime, agent, composite, tool};
use agents_service::{Console, DevAuthenticator, Service, SqliteReader};
use serde_json::Value;
use std::sync::Arc;

/// Reads the referral that came with the request.
#[tool(permission = perms::athlete::read, risk = low)]
async fn read_referral() -> Result<String, String> {
    Ok("no referral".into())
}

agent! {
    /// Restates the clinician's request for the physio, changing nothing.
    pub struct Referral;
    tools: [read_referral],
}

composite! {
    /// The referral desk restates the request; the physio acts on it.
    pub struct PhysioDesk: String -> String = then(Referral, Physio);
}

const DESK: &str = <PhysioDesk as agents_runtime::agents_core::compose::Composite>::GRAPH.name;

/// The referral node (which is offered no `move_athlete`) hands the request on word for
/// word; the physio's rules do the rest.
fn model() -> RuleProvider {
    let referral = |req: &ChatRequest| {
        let physio = req.tools.iter().any(|t| t.name == "move_athlete");
        if physio { None } else { last_user_message(req).map(|m| reply(m.to_owned())) }
    };
    physio_rules(RuleProvider::new().when(referral))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_nested_confirmation_is_decided_in_the_console() {
    let dir = tempfile::tempdir().unwrap();
    let sink = Arc::new(SqliteSink::open(dir.path().join("audit.db")).expect("the audit log opens"));
    let store = agents_store::SqliteStore::open(dir.path().join("state.db")).expect("the state store opens");
    let roles = RoleMap::new()
        .role("clinician", ["athlete.read", "athlete.write", "portal.write"])
        .role("auditor", ["athlete.read"]);
    let runtime = Runtime::builder(sink.clone(), Arc::new(model())).roles(roles).store(Arc::new(store)).build();
    let console = Console::dev_login(people());
    let auth = console.authenticator(Arc::new(DevAuthenticator::enabled()));
    let reader = SqliteReader::new(dir.path().join("audit.db"));
    let service = Service::builder(auth, sink, Arc::new(SqliteReader::new(dir.path().join("audit.db"))))
        .composite::<PhysioDesk>(runtime)
        .build();
    let app = service.router().merge(console.router(&service));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });

    let shots = workspace_target().join("console-screenshots");
    // A node's id is its type's name in kebab case.
    let node = format!("{DESK}/physio");
    let args = [format!("http://{base}").into(), DESK.into(), node.clone().into(), shots.clone().into()];
    let stdout = drive("the console's composite browser test", "composite.mjs", args).await;
    assert!(stdout.contains("nested card decided"), "{stdout}");

    // The move ran once, for Priya, in the physio node of the tree.
    let records: Vec<Value> = audit_lines(&reader).iter().map(|l| serde_json::from_str(l).unwrap()).collect();
    let moves: Vec<&Value> = records.iter().filter(|r| r["tool"] == "move_athlete").collect();
    let statuses: Vec<&str> = moves.iter().map(|r| r["status"].as_str().unwrap()).collect();
    assert_eq!(statuses, ["proposed", "confirmed", "executed"]);
    for r in &moves {
        assert_eq!((r["user_id"].as_str(), r["node"]["path"].as_str()), (Some("priya"), Some(node.as_str())), "{r}");
    }
    assert!(shots.join("30-nested-card.png").is_file(), "no screenshot 30-nested-card");
}
