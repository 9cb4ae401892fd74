//! The web console end to end: the real service on a loopback port over SQLite (audit log and
//! state store), offline with a scripted model, driven in the system's headless Chromium by
//! `tests/console-e2e/e2e.mjs` (playwright-core from npm; `npm ci` in that directory). The
//! browser signs in as a clinician, sees her typed password on the proposal card, approves,
//! rejects another with a reason, reloads mid-proposal and decides after the reload; another
//! user of the club and a user of another club see nothing of it; a reviewer finds the
//! records by tool and verifies the chain; no page requests anything outside the service.
//! Screenshots go to `target/console-screenshots/`.
//!
//! Missing Chromium, node or the npm packages fail the test with the reason: it never skips.
//!
//! Also here, without a browser: the decider's view over HTTP (`GET /v1/decisions` shows the
//! run's own user the typed value; the events, the audit records and everyone else do not)
//! and the console's cookie rules.

use agents_runtime::audit::SqliteSink;
use agents_runtime::provider::scripted::{RuleProvider, last_user_message, reply, tool_calls, tool_outcomes};
use agents_runtime::{Principal, RoleMap, Runtime, agent, permissions, tool};
use agents_service::{AuditReader, Console, DevAuthenticator, Person, Service, SqliteReader};
use serde_json::{Value, json};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

permissions! {
    pub mod perms { athlete.read, athlete.write, portal.write }
}

/// Lists the club's athletes.
#[tool(permission = perms::athlete::read, risk = low)]
async fn list_athletes() -> Result<String, String> {
    Ok("ath-1 Sam Kerr (First team)".into())
}

/// Moves an athlete to another squad.
///
/// # Arguments
///
/// * `athlete_id` - the athlete
/// * `squad` - the new squad
#[tool(permission = perms::athlete::write, mutating, title = "Move athlete to squad", risk = medium)]
async fn move_athlete(athlete_id: String, squad: String) -> Result<String, String> {
    Ok(format!("{athlete_id} moved to {squad}"))
}

/// Changes the password of an athlete's portal account.
///
/// # Arguments
///
/// * `athlete_id` - the athlete
/// * `new_password` - the new password
#[tool(permission = perms::portal::write, mutating, title = "Change portal password", risk = high)]
async fn change_portal_password(athlete_id: String, #[secret] new_password: String) -> Result<String, String> {
    Ok(format!("portal password of {athlete_id} changed ({} characters)", new_password.len()))
}

agent! {
    /// Helps the club's clinicians with athletes and their portal accounts.
    pub struct Physio;
    tools: [list_athletes, move_athlete, change_portal_password],
}

/// The word after `marker` in the last user message.
fn word_after<'a>(text: &'a str, marker: &str) -> Option<&'a str> {
    let at = text.find(marker)? + marker.len();
    text[at..].split_whitespace().next()
}

/// The scripted model: copies the values the user typed into the call it proposes.
fn model() -> RuleProvider {
    RuleProvider::new()
        .when(|req| {
            let done = tool_outcomes(req);
            (!done.is_empty()).then(|| reply(format!("done: {}", done[0].content)))
        })
        .when(|req| {
            let m = last_user_message(req)?;
            let password = word_after(m, "password of ath-1 to ")?;
            let args = json!({"athlete_id": "ath-1", "new_password": password});
            Some(tool_calls([("change_portal_password", args.to_string())]))
        })
        .when(|req| {
            let squad = word_after(last_user_message(req)?, "to squad ")?;
            let args = json!({"athlete_id": "ath-1", "squad": squad});
            Some(tool_calls([("move_athlete", args.to_string())]))
        })
        .on_keyword("athletes", "list_athletes", "{}")
        .fallback("I can list athletes, move them between squads and change portal passwords.")
}

fn people() -> Vec<Person> {
    let p = |user: &str, org: &str, role: &str, label: &str| Person {
        principal: Principal::new(user, org, role),
        label: label.into(),
    };
    vec![
        p("priya", "kinetix", "clinician", "Priya (clinician)"),
        p("marco", "kinetix", "clinician", "Marco (clinician)"),
        p("gil", "rovers", "clinician", "Gil (clinician, other club)"),
        p("audrey", "kinetix", "auditor", "Audrey (auditor)"),
    ]
}

struct Served {
    base: SocketAddr,
    reader: SqliteReader,
}

/// The service with the console, over SQLite files in `dir`, on a free loopback port.
async fn serve(dir: &Path) -> Served {
    let sink = Arc::new(SqliteSink::open(dir.join("audit.db")).expect("the audit log opens"));
    let store = agents_store::SqliteStore::open(dir.join("state.db")).expect("the state store opens");
    let roles = RoleMap::new()
        .role("clinician", ["athlete.read", "athlete.write", "portal.write"])
        .role("auditor", ["athlete.read"]);
    let runtime = Runtime::builder(sink.clone(), Arc::new(model())).roles(roles).store(Arc::new(store)).build();
    let console = Console::dev_login(people());
    let auth = console.authenticator(Arc::new(DevAuthenticator::enabled()));
    let service = Service::builder(auth, sink, Arc::new(SqliteReader::new(dir.join("audit.db"))))
        .agent::<Physio>(runtime)
        .build();
    let app = service.router().merge(console.router(&service));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    Served { base, reader: SqliteReader::new(dir.join("audit.db")) }
}

/// Every line of the audit log.
fn audit_lines(reader: &SqliteReader) -> Vec<String> {
    let mut lines = Vec::new();
    reader
        .scan(&mut |r| {
            lines.push(r.to_line());
            std::ops::ControlFlow::Continue(())
        })
        .expect("the audit log reads");
    lines
}

fn workspace_target() -> PathBuf {
    let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| manifest.parent().expect("the workspace").join("target"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_console_in_a_real_browser() {
    let chromium = Path::new("/usr/bin/chromium");
    assert!(chromium.exists(), "Chromium is missing: install Debian's `chromium` package (/usr/bin/chromium)");
    let e2e = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/console-e2e");
    assert!(
        e2e.join("node_modules/playwright-core").is_dir(),
        "playwright-core is missing: run `npm ci` in {}",
        e2e.display()
    );
    let dir = tempfile::tempdir().unwrap();
    let s = serve(dir.path()).await;
    let shots = workspace_target().join("console-screenshots");
    let out = tokio::process::Command::new("node")
        .arg(e2e.join("e2e.mjs"))
        .arg(format!("http://{}", s.base))
        .arg(&shots)
        .current_dir(&e2e)
        .kill_on_drop(true)
        .output()
        .await
        .unwrap_or_else(|e| panic!("node could not be started ({e}): install Node.js 20 or later"));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "the browser test failed ({}):\n{stdout}\n{stderr}", out.status);
    assert!(stdout.contains("all to the service"), "{stdout}");
    println!("{stdout}");
    // What the browser did is in the log, and the typed passwords are not.
    let lines = audit_lines(&s.reader);
    for secret in ["Tr0ub4dor-3x", "An0ther-Secret"] {
        assert!(lines.iter().all(|l| !l.contains(secret)), "the audit log holds {secret}");
    }
    let count = |status: &str, tool: &str| {
        lines
            .iter()
            .filter(|l| {
                let v: Value = serde_json::from_str(l).unwrap();
                v["status"] == status && v["tool"] == tool
            })
            .count()
    };
    assert_eq!(count("executed", "change_portal_password"), 2);
    assert_eq!(count("rejected", "move_athlete"), 1);
    assert_eq!(count("executed", "move_athlete"), 0);
    assert!(lines.iter().any(|l| l.contains("wrong squad, ask the coach first")), "the rejection's reason is recorded");
    for shot in ["01-login", "02-proposal-card", "05-after-reload", "09-reviewer", "08-phone"] {
        assert!(shots.join(format!("{shot}.png")).is_file(), "no screenshot {shot}");
    }
}

/// One HTTP/1.1 request with `Connection: close`: status, headers, body.
async fn http(
    base: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: Option<&str>,
) -> (u16, String, String) {
    let mut stream = tokio::net::TcpStream::connect(base).await.unwrap();
    let mut req = format!("{method} {path} HTTP/1.1\r\nHost: {base}\r\nConnection: close\r\n");
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    let body = body.unwrap_or("");
    if !body.is_empty() || method == "POST" {
        req.push_str(&format!("Content-Type: application/json\r\nContent-Length: {}\r\n", body.len()));
    }
    req.push_str("\r\n");
    req.push_str(body);
    stream.write_all(req.as_bytes()).await.unwrap();
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).await.unwrap();
    let text = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head.split(' ').nth(1).unwrap().parse().unwrap();
    (status, head.to_ascii_lowercase(), body.to_owned())
}

async fn sign_in(base: SocketAddr, person: usize) -> String {
    let (status, head, body) =
        http(base, "POST", "/console/login", &[("x-agents-console", "1")], Some(&format!(r#"{{"person": {person}}}"#)))
            .await;
    assert_eq!(status, 200, "{body}");
    let set = head.lines().find(|l| l.starts_with("set-cookie:")).expect("a session cookie");
    assert!(set.contains("httponly") && set.contains("samesite=strict"), "{set}");
    let cookie = set["set-cookie:".len()..].trim().split(';').next().unwrap();
    // The header's value, as it came (the token is lower-case hex).
    cookie.to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_the_runs_own_user_is_shown_the_typed_value_and_cookie_writes_need_the_console_header() {
    let dir = tempfile::tempdir().unwrap();
    let s = serve(dir.path()).await;
    let priya = sign_in(s.base, 0).await;
    let marco = sign_in(s.base, 1).await;
    let gil = sign_in(s.base, 2).await;
    let typed = "S3cret-typed-here";
    let start = format!(
        r#"{{"agent": "Physio", "input": "change the portal password of ath-1 to {typed}", "session_id": "dv-1"}}"#
    );
    // Without the console's header a cookie starts nothing (a cross-site form could send one).
    let (status, _, body) = http(s.base, "POST", "/v1/runs", &[("cookie", &priya)], Some(&start)).await;
    assert_eq!(status, 403, "{body}");
    assert!(body.contains("console_header_missing"), "{body}");
    let (status, _, body) = http(
        s.base,
        "POST",
        "/v1/runs",
        &[("cookie", &priya), ("sec-fetch-site", "cross-site"), ("x-agents-console", "1")],
        Some(&start),
    )
    .await;
    assert_eq!(status, 403, "{body}");
    let (status, _, body) =
        http(s.base, "POST", "/v1/runs", &[("cookie", &priya), ("x-agents-console", "1")], Some(&start)).await;
    assert_eq!(status, 201, "{body}");
    let run: Value = serde_json::from_str(&body).unwrap();
    let run_id = run["run_id"].as_str().unwrap().to_owned();
    // The proposal, as its decider and as everyone else sees it.
    let mut listed = Value::Null;
    for _ in 0..200 {
        let (_, _, body) = http(s.base, "GET", "/v1/decisions", &[("cookie", &priya)], None).await;
        listed = serde_json::from_str(&body).unwrap();
        if !listed["decisions"].as_array().unwrap().is_empty() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(25)).await;
    }
    let d = &listed["decisions"][0];
    assert_eq!(d["decider_arguments"]["new_password"], typed, "{listed}");
    assert_eq!(d["arguments"]["new_password"], agents_runtime::agents_core::redact::MASK, "{listed}");
    for other in [&marco, &gil] {
        let (_, _, body) = http(s.base, "GET", "/v1/decisions", &[("cookie", other)], None).await;
        assert_eq!(serde_json::from_str::<Value>(&body).unwrap()["decisions"], json!([]), "{body}");
    }
    // The run's events and the audit log: masked. (Stop the run so its stream ends.)
    let (status, _, _) = http(
        s.base,
        "POST",
        &format!("/v1/runs/{run_id}/stop"),
        &[("cookie", &priya), ("x-agents-console", "1")],
        Some("{}"),
    )
    .await;
    assert_eq!(status, 202);
    let (status, _, events) =
        http(s.base, "GET", &format!("/v1/runs/{run_id}/events"), &[("cookie", &priya)], None).await;
    assert_eq!(status, 200);
    assert!(events.contains("confirm_required"), "{events}");
    assert!(!events.contains(typed), "an event carries the typed value: {events}");
    assert!(audit_lines(&s.reader).iter().all(|l| !l.contains(typed)), "the audit log holds the typed value");
    // The console's pages carry the strict policy and load nothing from elsewhere.
    let (status, head, page) = http(s.base, "GET", "/console", &[("cookie", &priya)], None).await;
    assert_eq!(status, 200);
    assert!(head.contains("content-security-policy: default-src 'none'; script-src 'self'"), "{head}");
    assert!(!page.contains("http://") && !page.contains("https://"), "{page}");
    // A signed-out browser is sent to the login page; a stale cookie is refused by the API.
    let (status, head, _) = http(s.base, "GET", "/console", &[], None).await;
    assert_eq!(status, 303, "{head}");
    let (status, _, body) =
        http(s.base, "GET", "/v1/decisions", &[("cookie", "agents_console=0123456789abcdef")], None).await;
    assert_eq!(status, 401, "{body}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pending_proposal_is_listed_with_its_decider_view_by_a_service_that_never_saw_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let first = serve(dir.path()).await;
    let priya = sign_in(first.base, 0).await;
    let typed = "Typed-before-restart";
    let start = format!(
        r#"{{"agent": "Physio", "input": "change the portal password of ath-1 to {typed}", "session_id": "restart-1"}}"#
    );
    let (status, _, body) =
        http(first.base, "POST", "/v1/runs", &[("cookie", &priya), ("x-agents-console", "1")], Some(&start)).await;
    assert_eq!(status, 201, "{body}");
    // The same SQLite files under a new service and runtime: what a restart leaves.
    let second = serve(dir.path()).await;
    let priya_again = sign_in(second.base, 0).await;
    let mut listed = Value::Null;
    for _ in 0..200 {
        let (_, _, body) = http(second.base, "GET", "/v1/decisions", &[("cookie", &priya_again)], None).await;
        listed = serde_json::from_str(&body).unwrap();
        if !listed["decisions"].as_array().unwrap().is_empty() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(25)).await;
    }
    assert_eq!(listed["decisions"][0]["decider_arguments"]["new_password"], typed, "{listed}");
    let marco = sign_in(second.base, 1).await;
    let (_, _, body) = http(second.base, "GET", "/v1/decisions", &[("cookie", &marco)], None).await;
    assert_eq!(serde_json::from_str::<Value>(&body).unwrap()["decisions"], json!([]), "{body}");
}
