//! The web console: a chat with an agent beside the live audit of its run, the cards of the
//! proposals waiting for the signed-in person, and an audit view for reviewers, served by the
//! service itself.
//!
//! ```text
//! GET  /console            the chat, the decisions waiting for you, the audit of the current run
//! GET  /console/audit      the audit view: search, chain verification, export as JSON lines
//! GET  /console/report     the agents served, each with a link to its capability report
//! GET  /console/report/{agent}  the agent's capability report, rendered live
//! GET  /console/login      the login page: pick a person (development login) or give a token
//! POST /console/login      signs in (`{"person": n}`, or `Authorization: Bearer ...` checked by
//!                          the service's authenticator), sets the session cookie
//! POST /console/logout     signs out
//! GET  /console/assets/*   the console's script and style sheet
//! ```
//!
//! # How it is safe
//!
//! - **Everything is in the binary.** Pages are askama templates compiled in; the script and
//!   the style sheet are `include_str!`'d. A page loads nothing from anywhere else: its
//!   Content-Security-Policy ([`CSP`]) allows scripts, styles and requests from the service's
//!   own origin only, no inline script, no frames, no plug-ins.
//! - **Escaping by construction.** Every value a template prints is HTML-escaped (the
//!   templates mark nothing `|safe`); the script builds the page with `textContent` and DOM
//!   nodes, never `innerHTML`, so a tool argument or a model's text is always text.
//! - **The API decides who sees what.** The console is a client of the `/v1` API with the
//!   signed-in person's principal: another user's proposals are not listed nor decidable for
//!   them, another organisation's records are not readable, exactly as for any client.
//! - **The session cookie** is a 244-bit random token, `HttpOnly` (no script reads it),
//!   `SameSite=Strict` (no other site's page sends it) and `Path=/`. Every request that changes
//!   something and is authenticated by it must carry the header `X-Agents-Console: 1`, which
//!   a cross-site form cannot send and a cross-site script cannot send without a CORS
//!   preflight this service never grants; a request a browser marks `Sec-Fetch-Site:
//!   cross-site` is refused outright. Sessions live in memory and end with the process.
//! - **Sessions are bounded** ([`ConsoleLimits`]): each ends after a time without use and at
//!   the latest after a fixed lifetime; a person holds a few at most (signing in once more
//!   ends their least recently used one), and when the console holds its total a new sign-in
//!   is refused (503 `too_many_sessions`) rather than ending someone else's session.
//!
//! # Asking for a change
//!
//! A proposal's card offers "Ask for this change" beside approve and reject ("yes, but five
//! days"). The console rejects the proposal with the person's words as its reason
//! (`change requested: ...`, kept in its `rejected` record), waits for its run to end, and
//! sends the words to the agent as the person's next message in the same session. Whatever the
//! agent proposes then is a new proposal, with its own call id and its own decision: nothing
//! ever approves the old call, and the changed values are the ones on the new card.
//!
//! # The capability report
//!
//! `/console/report/{agent}` is the page `agents manifest render` writes, from the same
//! renderer ([`agents_core::report`]) and the manifest the agent was compiled with: the graph
//! agent → skills → tools by tier and risk, the tools, their policies, the role × tool table
//! from the runtime's roles ([`Runtime::roles`](agents_runtime::Runtime::roles)) and, when
//! the service has a baseline for the agent
//! ([`ServiceBuilder::report_baseline`](crate::ServiceBuilder::report_baseline)), the
//! classified changes against it. It links its style sheet from `/console/assets/report.css`
//! instead of inlining it, so the console's policy stays `style-src 'self'`. Every person
//! signed in may read it: a manifest holds no secret (it is compiled into the binary and
//! committed beside the code).
//!
//! # Signing in
//!
//! Two ways, one per console:
//!
//! - **Through an authenticator** ([`Console::token_login`]), e.g. the service's
//!   [`JwtAuthenticator`](crate::JwtAuthenticator): the login page takes an access token and
//!   sends it once, as `Authorization: Bearer ...`; the authenticator checks it exactly as it
//!   checks an API request, and the principal it names gets a session cookie. The token is
//!   not kept. A session lives no longer than [`ConsoleLimits::session_lifetime`], whatever
//!   the token's own expiry.
//! - **The development login** ([`Console::dev_login`]): a page that lets whoever reaches the
//!   service pick one of the people the application named, with no proof of anything, like
//!   [`DevAuthenticator`](crate::DevAuthenticator). For your own machine only.
//!
//! Requests without the console's cookie go to the service's own authenticator unchanged.

use crate::auth::{Authenticator, unauthorized};
use crate::error::ApiError;
use crate::{Service, Shared};
use agents_core::manifest::Manifest;
use agents_core::report::{self, Report};
use agents_runtime::Principal;
use askama::Template;
use axum::Router;
use axum::extract::{Path, State};
use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use futures::future::BoxFuture;
use serde::Deserialize;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The Content-Security-Policy of every console response: the service's own script, styles
/// and API; nothing inline, nothing from elsewhere, no frames.
pub const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; \
                       form-action 'self'; base-uri 'none'; frame-ancestors 'none'";

/// The name of the console's session cookie.
pub const SESSION_COOKIE: &str = "agents_console";

/// The header every cookie-authenticated request that changes something must carry.
pub const CONSOLE_HEADER: &str = "x-agents-console";

/// How long a console session lasts at most (the default of
/// [`ConsoleLimits::session_lifetime`]).
pub const SESSION_TTL: Duration = Duration::from_secs(8 * 3600);

/// Bounds on the console's sessions. Every default is safe for a console reachable by
/// untrusted clients.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ConsoleLimits {
    /// Sessions one person (user in an organisation) holds at once; signing in once more ends
    /// their least recently used one. Default 5.
    pub max_sessions_per_person: usize,
    /// Sessions the console holds in all; beyond it a sign-in is refused with 503
    /// `too_many_sessions` until one ends. Default 10 000.
    pub max_sessions: usize,
    /// A session not used for this long ends. Default 30 min.
    pub idle_timeout: Duration,
    /// A session ends this long after sign-in, used or not. Default 8 h ([`SESSION_TTL`]).
    pub session_lifetime: Duration,
}

impl Default for ConsoleLimits {
    fn default() -> Self {
        ConsoleLimits {
            max_sessions_per_person: 5,
            max_sessions: 10_000,
            idle_timeout: Duration::from_secs(30 * 60),
            session_lifetime: SESSION_TTL,
        }
    }
}

const SCRIPT: &str = include_str!("../assets/console.js");
const STYLE: &str = include_str!("../assets/console.css");

/// One person the development login offers.
#[derive(Debug, Clone)]
pub struct Person {
    /// Who they act as.
    pub principal: Principal,
    /// What the login page calls them, e.g. `Priya (clinician)`.
    pub label: String,
}

/// How people sign in.
enum Login {
    /// Pick one of these people, no proof.
    Dev(Vec<Person>),
    /// An access token the authenticator accepts.
    Token(Arc<dyn Authenticator>),
}

struct Session {
    principal: Principal,
    started: Instant,
    used: Instant,
}

struct Inner {
    login: Login,
    limits: ConsoleLimits,
    sessions: Mutex<HashMap<String, Session>>,
}

/// The web console. Build it, wrap the service's authenticator with
/// [`authenticator`](Console::authenticator), and merge [`router`](Console::router) beside the
/// service's routes.
///
/// ```no_run
/// # use std::sync::Arc;
/// # use agents_runtime::audit::MemorySink;
/// # use agents_service::{Console, DevAuthenticator, Service};
/// # fn f(audit: Arc<MemorySink>, people: Vec<agents_service::Person>) -> agents_service::axum::Router {
/// let console = Console::dev_login(people);
/// let auth = console.authenticator(Arc::new(DevAuthenticator::enabled()));
/// let service = Service::builder(auth, audit.clone(), audit).build();
/// service.router().merge(console.router(&service))
/// # }
/// ```
#[derive(Clone)]
pub struct Console {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Console {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let login = match &self.inner.login {
            Login::Dev(people) => format!("development login, {} people", people.len()),
            Login::Token(_) => "token login".to_owned(),
        };
        f.debug_struct("Console").field("login", &login).field("limits", &self.inner.limits).finish_non_exhaustive()
    }
}

impl Console {
    /// **For development only.** A console whose login page lets anyone who reaches the
    /// service act as any of `people`. Logs a warning.
    pub fn dev_login(people: impl IntoIterator<Item = Person>) -> Self {
        tracing::warn!(
            "the console's development login is enabled: anyone who reaches this service can act as the people it lists"
        );
        Console::with(Login::Dev(people.into_iter().collect()), ConsoleLimits::default())
    }

    /// A console whose login page takes an access token and has `authenticator` (the
    /// service's own, e.g. a [`JwtAuthenticator`](crate::JwtAuthenticator)) check it, as it
    /// checks `Authorization: Bearer ...` on an API request; the principal it names is signed
    /// in. A token it refuses is refused with its 401.
    pub fn token_login(authenticator: Arc<dyn Authenticator>) -> Self {
        Console::with(Login::Token(authenticator), ConsoleLimits::default())
    }

    /// The bounds on sessions (default [`ConsoleLimits::default`]). Set them before serving:
    /// sessions opened earlier are forgotten.
    pub fn limits(self, limits: ConsoleLimits) -> Self {
        let login = match Arc::try_unwrap(self.inner) {
            Ok(inner) => inner.login,
            Err(shared) => match &shared.login {
                Login::Dev(people) => Login::Dev(people.clone()),
                Login::Token(auth) => Login::Token(auth.clone()),
            },
        };
        Console::with(login, limits)
    }

    fn with(login: Login, limits: ConsoleLimits) -> Self {
        Console { inner: Arc::new(Inner { login, limits, sessions: Mutex::default() }) }
    }

    /// An authenticator that takes the principal of a console session from its cookie, and
    /// hands every request without the cookie to `fallback` (the service's own).
    pub fn authenticator(&self, fallback: Arc<dyn Authenticator>) -> Arc<dyn Authenticator> {
        Arc::new(ConsoleAuth { inner: self.inner.clone(), fallback })
    }

    /// The console's pages and assets, for `service`.
    pub fn router(&self, service: &Service) -> Router {
        let state = Arc::new(Pages { inner: self.inner.clone(), shared: service.shared.clone() });
        let pages = Router::new()
            .route("/", get(|| async { Redirect::to("/console") }))
            .route("/console", get(app))
            .route("/console/audit", get(audit))
            .route("/console/report", get(reports))
            .route("/console/report/{agent}", get(report))
            .route("/console/login", get(login_page).post(login))
            .route("/console/logout", post(logout))
            .route("/console/assets/{name}", get(asset))
            .with_state(state)
            .layer(axum::middleware::map_response(secure_headers));
        // The service's `Host` allowlist: the dev login is the first thing a rebinding page
        // would try.
        service.guard_hosts(pages)
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The value of cookie `name` in a request's `Cookie` headers.
fn cookie<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v)
}

impl Inner {
    /// Ends the sessions past their idle time or lifetime.
    fn prune(&self, sessions: &mut HashMap<String, Session>, now: Instant) {
        let l = &self.limits;
        sessions.retain(|_, s| {
            now.duration_since(s.used) < l.idle_timeout && now.duration_since(s.started) < l.session_lifetime
        });
    }

    /// The principal of the session `headers` carry, if it is live; using it keeps it so.
    fn session(&self, headers: &HeaderMap) -> Option<Principal> {
        let token = cookie(headers, SESSION_COOKIE)?;
        let mut sessions = lock(&self.sessions);
        let now = Instant::now();
        self.prune(&mut sessions, now);
        let s = sessions.get_mut(token)?;
        s.used = now;
        Some(s.principal.clone())
    }

    /// Opens a session for `principal`: its cookie's token, or the refusal when the console
    /// holds [`ConsoleLimits::max_sessions`].
    fn open(&self, principal: Principal) -> Result<String, ApiError> {
        let mut sessions = lock(&self.sessions);
        let now = Instant::now();
        self.prune(&mut sessions, now);
        let same = |s: &Session| s.principal.user_id == principal.user_id && s.principal.org_id == principal.org_id;
        let mut theirs: Vec<(Instant, String)> =
            sessions.iter().filter(|(_, s)| same(s)).map(|(t, s)| (s.used, t.clone())).collect();
        theirs.sort();
        let over = (theirs.len() + 1).saturating_sub(self.limits.max_sessions_per_person.max(1));
        for (_, token) in theirs.into_iter().take(over) {
            sessions.remove(&token);
        }
        if sessions.len() >= self.limits.max_sessions {
            return Err(ApiError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "too_many_sessions",
                "the console holds as many sessions as it may; try again later",
            ));
        }
        let token = format!("{}{}", uuid::Uuid::new_v4().simple(), uuid::Uuid::new_v4().simple());
        sessions.insert(token.clone(), Session { principal, started: now, used: now });
        Ok(token)
    }
}

/// A request that changes something with a cookie's authority must say it comes from the
/// console's own script.
fn same_site_write(method: &Method, headers: &HeaderMap) -> Result<(), ApiError> {
    if headers.get("sec-fetch-site").is_some_and(|v| v.as_bytes() == b"cross-site") {
        return Err(ApiError::new(StatusCode::FORBIDDEN, "cross_site", "requests from other sites are refused"));
    }
    let safe = matches!(*method, Method::GET | Method::HEAD);
    if !safe && headers.get(CONSOLE_HEADER).is_none_or(|v| v.as_bytes() != b"1") {
        return Err(ApiError::new(
            StatusCode::FORBIDDEN,
            "console_header_missing",
            "a console request that changes something carries `X-Agents-Console: 1`",
        ));
    }
    Ok(())
}

struct ConsoleAuth {
    inner: Arc<Inner>,
    fallback: Arc<dyn Authenticator>,
}

impl Authenticator for ConsoleAuth {
    fn authenticate<'a>(&'a self, request: &'a Parts) -> BoxFuture<'a, Result<Principal, ApiError>> {
        if cookie(&request.headers, SESSION_COOKIE).is_none() {
            return self.fallback.authenticate(request);
        }
        Box::pin(async move {
            same_site_write(&request.method, &request.headers)?;
            self.inner.session(&request.headers).ok_or_else(|| {
                unauthorized("session_expired", "your console session ended; sign in again at /console/login")
            })
        })
    }
}

struct Pages {
    inner: Arc<Inner>,
    shared: Arc<Shared>,
}

type St = State<Arc<Pages>>;

async fn secure_headers(mut response: Response) -> Response {
    let h = response.headers_mut();
    h.insert(header::CONTENT_SECURITY_POLICY, HeaderValue::from_static(CSP));
    h.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    h.insert(header::REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

fn html(page: impl Template) -> Response {
    match page.render() {
        Ok(body) => ([(header::CONTENT_TYPE, "text/html; charset=utf-8")], body).into_response(),
        Err(e) => ApiError::internal("rendering a console page", e).into_response(),
    }
}

/// The signed-in person, as a page shows them.
struct Who {
    user: String,
    org: String,
    role: String,
    reviewer: bool,
}

fn who(pages: &Pages, p: Principal) -> Who {
    let reviewer = pages.shared.reviewer_roles.contains(&p.role);
    Who { user: p.user_id, org: p.org_id, role: p.role, reviewer }
}

#[derive(Template)]
#[template(path = "console/app.html")]
struct AppPage {
    who: Who,
    agents: Vec<(String, String)>,
}

#[derive(Template)]
#[template(path = "console/audit.html")]
struct AuditPage {
    who: Who,
}

#[derive(Template)]
#[template(path = "console/reports.html")]
struct ReportsPage {
    who: Who,
    /// Name, manifest hash, tools count, whether a baseline is configured.
    agents: Vec<(String, String, String, bool)>,
}

#[derive(Template)]
#[template(path = "console/login.html")]
struct LoginPage {
    /// The development login's people; `None` for the token login.
    people: Option<Vec<(usize, String, String)>>,
}

async fn app(State(pages): St, headers: HeaderMap) -> Response {
    let Some(p) = pages.inner.session(&headers) else { return Redirect::to("/console/login").into_response() };
    let agents = pages.shared.agents.values().map(|k| (k.name().to_owned(), k.manifest_sha256().to_owned())).collect();
    html(AppPage { who: who(&pages, p), agents })
}

async fn audit(State(pages): St, headers: HeaderMap) -> Response {
    let Some(p) = pages.inner.session(&headers) else { return Redirect::to("/console/login").into_response() };
    html(AuditPage { who: who(&pages, p) })
}

async fn reports(State(pages): St, headers: HeaderMap) -> Response {
    let Some(p) = pages.inner.session(&headers) else { return Redirect::to("/console/login").into_response() };
    let agents = pages
        .shared
        .agents
        .values()
        .map(|k| {
            let tools = if k.is_composite() {
                "a composite: its nodes' tools".to_owned()
            } else {
                Manifest::parse(k.manifest()).map(|m| report::tools_count_text(&m)).unwrap_or_default()
            };
            (k.name().to_owned(), k.manifest_sha256().to_owned(), tools, pages.shared.baselines.contains_key(k.name()))
        })
        .collect();
    html(ReportsPage { who: who(&pages, p), agents })
}

async fn report(State(pages): St, headers: HeaderMap, Path(agent): Path<String>) -> Response {
    if pages.inner.session(&headers).is_none() {
        return Redirect::to("/console/login").into_response();
    }
    let Some(kind) = pages.shared.agents.get(agent.as_str()) else {
        return ApiError::new(StatusCode::NOT_FOUND, "unknown_agent", "this service serves no such agent")
            .into_response();
    };
    if kind.is_composite() {
        return composite_report(kind.as_ref());
    }
    // The manifest the registry was compiled with and checked against when the agent started.
    let manifest = match Manifest::parse(kind.manifest()) {
        Ok(m) => m,
        Err(e) => return ApiError::internal("reading the agent's compiled manifest", e).into_response(),
    };
    let baseline = pages.shared.baselines.get(kind.name());
    let changes = baseline.map(|(_, old)| agents_core::diff::diff(old, &manifest));
    let source = format!("{} (compiled into this service)", kind.name());
    let page = report::render(&Report {
        diff: changes.as_ref().zip(baseline.map(|(name, _)| name.as_str())),
        roles: Some(kind.runtime().roles()),
        stylesheet: Some("/console/assets/report.css"),
        home: Some("/console"),
        ..Report::new(&manifest, &source, kind.manifest_sha256())
    });
    ([(header::CONTENT_TYPE, "text/html; charset=utf-8")], page).into_response()
}

/// A composite's report: its graph manifest as `agents manifest render` draws it.
fn composite_report(kind: &dyn crate::runs::AgentKind) -> Response {
    let graph = match agents_core::graph::GraphManifest::parse(kind.manifest()) {
        Ok(g) => g,
        Err(e) => return ApiError::internal("reading the composite's compiled graph manifest", e).into_response(),
    };
    let source = format!("{} (compiled into this service)", kind.name());
    let page = report::render_composite(&report::CompositeReport {
        stylesheet: Some("/console/assets/report.css"),
        ..report::CompositeReport::new(&graph, &source, kind.manifest_sha256())
    });
    ([(header::CONTENT_TYPE, "text/html; charset=utf-8")], page).into_response()
}

async fn login_page(State(pages): St) -> Response {
    let people = match &pages.inner.login {
        Login::Dev(people) => Some(
            people
                .iter()
                .enumerate()
                .map(|(i, p)| {
                    let id = format!("{} / {} / {}", p.principal.user_id, p.principal.org_id, p.principal.role);
                    (i, p.label.clone(), id)
                })
                .collect(),
        ),
        Login::Token(_) => None,
    };
    html(LoginPage { people })
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct LoginBody {
    person: usize,
}

async fn login(State(pages): St, request: axum::extract::Request) -> Result<Response, ApiError> {
    let (parts, body) = request.into_parts();
    same_site_write(&Method::POST, &parts.headers)?;
    let is_json = parts
        .headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.split(';').next().is_some_and(|m| m.trim().eq_ignore_ascii_case("application/json")));
    if !is_json {
        return Err(ApiError::new(StatusCode::UNSUPPORTED_MEDIA_TYPE, "unsupported_media_type", "send JSON"));
    }
    let principal = match &pages.inner.login {
        Login::Dev(people) => {
            let body = axum::body::to_bytes(body, 4096)
                .await
                .map_err(|_| ApiError::invalid("the body is too large or did not arrive"))?;
            let LoginBody { person } =
                serde_json::from_slice(&body).map_err(|e| ApiError::invalid(format!("the body does not fit: {e}")))?;
            people.get(person).ok_or_else(|| ApiError::invalid("no such person"))?.principal.clone()
        }
        // The token is checked as on any API request, and not kept.
        Login::Token(auth) => auth.authenticate(&parts).await?,
    };
    let token = pages.inner.open(principal)?;
    let max_age = pages.inner.limits.session_lifetime.as_secs();
    let set = format!("{SESSION_COOKIE}={token}; Path=/; HttpOnly; SameSite=Strict; Max-Age={max_age}");
    let body = axum::Json(serde_json::json!({"to": "/console"}));
    Ok(([(header::SET_COOKIE, set)], body).into_response())
}

async fn logout(State(pages): St, headers: HeaderMap) -> Result<Response, ApiError> {
    same_site_write(&Method::POST, &headers)?;
    if let Some(token) = cookie(&headers, SESSION_COOKIE) {
        lock(&pages.inner.sessions).remove(token);
    }
    let clear = format!("{SESSION_COOKIE}=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0");
    Ok(([(header::SET_COOKIE, clear)], axum::Json(serde_json::json!({"to": "/console/login"}))).into_response())
}

async fn asset(Path(name): Path<String>) -> Response {
    let (body, kind) = match name.as_str() {
        "console.js" => (SCRIPT, "text/javascript; charset=utf-8"),
        "console.css" => (STYLE, "text/css; charset=utf-8"),
        "report.css" => (report::STYLE, "text/css; charset=utf-8"),
        _ => return ApiError::not_found("asset").into_response(),
    };
    ([(header::CONTENT_TYPE, kind)], body).into_response()
}
