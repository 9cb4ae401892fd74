//! Who a run acts for, read again over HTTP: the service's authenticator, backed by a role
//! table, is the runtime's principal source; a role revoked between two calls of one run
//! started through the service stops the second call, and the refusal is in the audit log; a
//! decision under the changed role is refused (403) and ends the proposal; a tool that fails
//! is streamed as a typed `error_occurred` event.

use crate::common;

use agents_runtime::audit::{AuditStatus, MemorySink};
use agents_runtime::provider::scripted::{reply, tool_call, tool_outcomes};
use agents_runtime::provider::{ChatRequest, ChatResponse, Provider, ProviderError, TokenSink};
use agents_runtime::{BoxFuture, Principal, RoleMap, Runtime, ToolContext, agent, permissions, tool};
use agents_service::{ApiError, Authenticator, AuthenticatorSource, DevAuthenticator, Service, unauthorized};
use axum::http::request::Parts;
use common::*;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::Semaphore;

permissions! {
    pub mod perms { notes.read, notes.write }
}

/// Reads the ward's notes.
#[tool(permission = perms::notes::read)]
async fn read_notes(cx: &ToolContext<'_>) -> Result<String, String> {
    Ok(format!("notes for {}", cx.principal().user_id))
}

/// Files a note on the ward.
///
/// # Arguments
///
/// * `text` - the note
#[tool(permission = perms::notes::write, mutating, title = "File a note")]
async fn file_note(text: String) -> Result<String, String> {
    Err(format!("the ward register is read-only today; `{text}` was not filed"))
}

agent! {
    /// Reads and files the ward's notes.
    pub struct Ward;
    tools: [read_notes, file_note],
}

/// The development login's user and organisation, with the role the table holds now; a user
/// missing from the table is deactivated.
struct RoleTable {
    dev: DevAuthenticator,
    roles: Mutex<HashMap<String, String>>,
}

impl RoleTable {
    fn role_of(&self, user: &str) -> Option<String> {
        self.roles.lock().unwrap().get(user).cloned()
    }
}

impl Authenticator for RoleTable {
    fn authenticate<'a>(&'a self, request: &'a Parts) -> BoxFuture<'a, Result<Principal, ApiError>> {
        Box::pin(async move {
            let claimed = self.dev.authenticate(request).await?;
            let role = self.role_of(&claimed.user_id).ok_or_else(|| unauthorized("inactive", "deactivated"))?;
            Ok(Principal { role, ..claimed })
        })
    }

    fn current<'a>(&'a self, held: &'a Principal) -> BoxFuture<'a, Result<Option<Principal>, String>> {
        let role = self.role_of(&held.user_id);
        Box::pin(async move { Ok(role.map(|role| Principal { role, ..held.clone() })) })
    }
}

/// Reads the notes twice, then answers; its second answer waits for a permit.
struct TwoReads {
    second: Semaphore,
}

impl Provider for TwoReads {
    fn name(&self) -> &str {
        "two-reads"
    }
    fn model(&self) -> &str {
        "two-reads"
    }
    fn is_paid(&self) -> bool {
        false
    }
    fn chat<'a>(
        &'a self,
        request: &'a ChatRequest,
        _: &'a dyn TokenSink,
    ) -> BoxFuture<'a, Result<ChatResponse, ProviderError>> {
        Box::pin(async move {
            match tool_outcomes(request).len() {
                0 => Ok(tool_call("read_notes", "{}")),
                1 => {
                    self.second.acquire().await.expect("open").forget();
                    Ok(tool_call("read_notes", "{}"))
                }
                _ => Ok(reply("done")),
            }
        })
    }
}

fn roles() -> RoleMap {
    RoleMap::new().role("nurse", ["notes.read", "notes.write"]).role("porter", Vec::<String>::new())
}

/// A role table with Nina a nurse, a runtime reading principals again through it, and the
/// service on a loopback port.
async fn serve_ward(model: Arc<dyn Provider>) -> (Arc<RoleTable>, Arc<MemorySink>, std::net::SocketAddr) {
    let table = Arc::new(RoleTable {
        dev: DevAuthenticator::enabled(),
        roles: Mutex::new([("nina".to_owned(), "nurse".to_owned())].into()),
    });
    let auth: Arc<dyn Authenticator> = table.clone();
    let audit = Arc::new(MemorySink::new());
    let runtime = Runtime::builder(audit.clone(), model)
        .roles(roles())
        .reread_principal(Arc::new(AuthenticatorSource::new(auth.clone())))
        .build();
    let service = Service::builder(auth, audit.clone(), audit.clone()).agent::<Ward>(runtime).build();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = listener.local_addr().unwrap();
    service.serve(listener, service.router(), agents_service::ConnectionLimits::default()).unwrap();
    (table, audit, base)
}

async fn start_ward(base: std::net::SocketAddr, input: &str, session: &str) -> String {
    let body = serde_json::json!({"agent": "Ward", "input": input, "session_id": session});
    let r = post(base, "/v1/runs", &Principal::new("nina", "acme", "nurse"), &body.to_string()).await;
    assert_eq!(r.status, 201, "{}", r.body);
    r.json()["run_id"].as_str().unwrap().to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_role_revoked_between_two_calls_of_a_run_started_over_http_stops_the_second() {
    let model = Arc::new(TwoReads { second: Semaphore::new(0) });
    let (table, audit, base) = serve_ward(model.clone()).await;
    let run = start_ward(base, "read the notes twice", "reread-1").await;
    // The first call ran; then an administrator makes Nina a porter, and the model goes on.
    let executed = |audit: &MemorySink| audit.records().iter().filter(|r| r.status == AuditStatus::Executed).count();
    for _ in 0..400 {
        if executed(&audit) == 1 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert_eq!(executed(&audit), 1, "the first call ran");
    table.roles.lock().unwrap().insert("nina".into(), "porter".into());
    model.second.add_permits(1);
    let summary = ended(base, &Principal::new("nina", "acme", "porter"), &run).await;
    assert_eq!(summary["status"], "completed", "{summary}");
    assert_eq!(executed(&audit), 1, "the second call did not run");
    let records = audit.records();
    let denied: Vec<_> = records.iter().filter(|r| r.status == AuditStatus::Denied).collect();
    assert_eq!(denied.len(), 1, "{denied:?}");
    let reason = denied[0].reason.as_deref().unwrap();
    assert!(reason.starts_with("authority changed: role `nurse` is now `porter`"), "{reason}");
    assert_eq!(&*denied[0].run_id, run.as_str());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_decision_after_the_role_changed_is_refused_over_http_and_the_proposal_ends() {
    let model =
        Arc::new(agents_runtime::ScriptedProvider::new([tool_call("file_note", r#"{"text": "ok"}"#), reply("done")]));
    let (table, audit, base) = serve_ward(model).await;
    let run = start_ward(base, "file a note", "reread-2").await;
    let call_id = pending_call(base, &Principal::new("nina", "acme", "nurse")).await;
    table.roles.lock().unwrap().insert("nina".into(), "porter".into());
    let porter = Principal::new("nina", "acme", "porter");
    let r = post(base, &format!("/v1/decisions/{call_id}"), &porter, r#"{"verdict": "approve"}"#).await;
    assert_eq!((r.status, r.code().as_str()), (403, "authority_changed"), "{}", r.body);
    assert!(r.body.contains("role `nurse` is now `porter`"), "the decider is told why: {}", r.body);
    let summary = ended(base, &porter, &run).await;
    assert_eq!(summary["status"], "completed", "{summary}");
    let statuses: Vec<_> = records_of(&audit, &call_id).iter().map(|r| r.status).collect();
    assert_eq!(statuses, [AuditStatus::Proposed, AuditStatus::Skipped], "the proposal ended, once");
    let r = post(base, &format!("/v1/decisions/{call_id}"), &porter, r#"{"verdict": "approve"}"#).await;
    assert_eq!(r.status, 404, "nothing left to decide: {}", r.body);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_that_fails_is_streamed_as_a_typed_error() {
    let script = [tool_call("file_note", r#"{"text": "ok"}"#), reply("done")];
    let (_table, _audit, base) = serve_ward(Arc::new(agents_runtime::ScriptedProvider::new(script))).await;
    let nina = Principal::new("nina", "acme", "nurse");
    let run = start_ward(base, "file a note", "reread-3").await;
    let call_id = pending_call(base, &nina).await;
    let r = post(base, &format!("/v1/decisions/{call_id}"), &nina, r#"{"verdict": "approve"}"#).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let events = open(base, &run, &nina, None).await.until("done").await;
    let error = events.iter().find(|e| e.event == "error_occurred").expect("an error_occurred event");
    let json = error.json();
    assert_eq!((json["kind"].as_str(), json["tool"].as_str()), (Some("tool"), Some("file_note")), "{json}");
    assert!(json["message"].as_str().unwrap().contains("the ward register is read-only"), "{json}");
}
