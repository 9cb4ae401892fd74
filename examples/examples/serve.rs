//! Serves the helpdesk or clinic agent over HTTP (runs, server-sent events, decisions, audit
//! queries; see the `agents-service` crate), offline with the scripted model:
//!
//! ```sh
//! cargo run -p examples --example serve -- --agent helpdesk --addr 127.0.0.1:8080 --dev-login
//! ```
//!
//! With `--dev-login` the web console is served too, at `http://127.0.0.1:8080/console`
//! (with `--jwks ...` it is too, and signs people in with a token the JWT authenticator
//! accepts): pick a person, chat with the agent, decide on its proposals, read the audit log and the agent's
//! capability report (compared with its committed baseline in `examples/baselines/`).
//!
//! State and audit log are SQLite files in `--data DIR` (default: `agents-serve-<agent>` in the
//! system's temporary directory), kept across restarts; `--memory` keeps both in memory.
//! `--dev-login` enables the development login (`X-Dev-Principal: user/organisation/role`,
//! no proof of anything: for your own machine only); without it every request is refused
//! until a real authenticator is configured (`--jwks FILE --issuer URL --audience NAME`).
//!
//! Every route answers only requests whose `Host` names this server: by default `localhost`,
//! `127.0.0.1`, `[::1]` and the bound address, on the bound port (a web page you visit cannot
//! drive it through DNS rebinding). `--allow-host NAME[:PORT]` (repeatable) replaces that list,
//! for a name clients use to reach it. The listener bounds connections (1024 at once), the time
//! to send a request's headers (10 s) and quiet connections (30 s between requests, 120 s
//! during one), the defaults of `agents_service::ConnectionLimits`.

/// mimalloc keeps up with memory freed on another thread than the one that took it, as the
/// service's tasks do (agents-service's docs, "The process's allocator").
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use agents_runtime::agents_core::manifest::Manifest;
use agents_runtime::audit::{AuditSink, MemorySink, SqliteSink};
use agents_runtime::provider::Provider;
use agents_runtime::{Principal, RoleMap, Runtime};
use agents_service::{
    AuditReader, Authenticator, Console, DevAuthenticator, JwtAuthenticator, JwtConfig, Person, Service, SqliteReader,
};
use std::path::PathBuf;
use std::sync::Arc;

const USAGE: &str = "usage: serve --agent helpdesk|clinic [--addr HOST:PORT] [--data DIR | --memory] \
                     [--dev-login | --jwks FILE --issuer URL --audience NAME] [--allow-host NAME[:PORT]]...";

struct Options {
    agent: String,
    addr: String,
    data: Option<PathBuf>,
    memory: bool,
    dev_login: bool,
    jwt: (Option<PathBuf>, Option<String>, Option<String>),
    allow_hosts: Vec<String>,
}

fn parse(args: &[String]) -> Result<Options, String> {
    let mut o = Options {
        agent: String::new(),
        addr: "127.0.0.1:8080".into(),
        data: None,
        memory: false,
        dev_login: false,
        jwt: (None, None, None),
        allow_hosts: Vec::new(),
    };
    let mut it = args.iter();
    while let Some(flag) = it.next() {
        let mut value = || it.next().cloned().ok_or_else(|| format!("`{flag}` needs a value\n{USAGE}"));
        match flag.as_str() {
            "--agent" => o.agent = value()?,
            "--addr" => o.addr = value()?,
            "--data" => o.data = Some(PathBuf::from(value()?)),
            "--memory" => o.memory = true,
            "--dev-login" => o.dev_login = true,
            "--jwks" => o.jwt.0 = Some(PathBuf::from(value()?)),
            "--issuer" => o.jwt.1 = Some(value()?),
            "--audience" => o.jwt.2 = Some(value()?),
            "--allow-host" => o.allow_hosts.push(value()?),
            other => return Err(format!("unknown option `{other}`\n{USAGE}")),
        }
    }
    if !matches!(o.agent.as_str(), "helpdesk" | "clinic") {
        return Err(format!("name the agent: `--agent helpdesk` or `--agent clinic`\n{USAGE}"));
    }
    if o.memory && o.data.is_some() {
        return Err(format!("`--memory` and `--data` exclude each other\n{USAGE}"));
    }
    Ok(o)
}

fn authenticator(o: &Options) -> Result<Arc<dyn Authenticator>, String> {
    match &o.jwt {
        (Some(jwks), Some(issuer), Some(audience)) => {
            let keys = std::fs::read_to_string(jwks).map_err(|e| format!("{}: {e}", jwks.display()))?;
            let auth = JwtAuthenticator::new(JwtConfig::new(issuer, audience, keys)).map_err(|e| e.to_string())?;
            Ok(Arc::new(auth))
        }
        (None, None, None) if o.dev_login => Ok(Arc::new(DevAuthenticator::enabled())),
        (None, None, None) => Ok(Arc::new(DevAuthenticator::disabled())),
        _ => Err(format!("`--jwks`, `--issuer` and `--audience` go together\n{USAGE}")),
    }
}

type Storage = (Arc<dyn AuditSink>, Arc<dyn AuditReader>, Option<Arc<dyn agents_runtime::store::Store>>);

fn storage(o: &Options) -> Result<Storage, String> {
    if o.memory {
        let sink = Arc::new(MemorySink::new());
        return Ok((sink.clone(), sink, None));
    }
    let dir = o.data.clone().unwrap_or_else(|| std::env::temp_dir().join(format!("agents-serve-{}", o.agent)));
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let audit = dir.join("audit.db");
    let sink = SqliteSink::open(&audit).map_err(|e| e.to_string())?;
    let store = agents_store::SqliteStore::open(dir.join("state.db")).map_err(|e| e.to_string())?;
    eprintln!("state and audit log in {} (kept; `--memory` keeps nothing)", dir.display());
    Ok((Arc::new(sink), Arc::new(SqliteReader::new(audit)), Some(Arc::new(store))))
}

fn runtime(
    sink: Arc<dyn AuditSink>,
    provider: Arc<dyn Provider>,
    roles: RoleMap,
    store: Option<Arc<dyn agents_runtime::store::Store>>,
) -> Runtime {
    // The helpdesk's tools read its store from their context.
    let mut b = Runtime::builder(sink, provider).roles(roles).shared_state(examples::helpdesk::store::Store::shared());
    if let Some(store) = store {
        b = b.store(store);
    }
    b.build()
}

/// The people the console's development login offers for `agent`.
fn people(agent: &str) -> Vec<Person> {
    let p = |principal: Principal, label: &str| Person { principal, label: label.to_owned() };
    match agent {
        "helpdesk" => vec![
            p(examples::helpdesk::app::alex(), "Alex Kim (employee)"),
            p(Principal::new("u-blake", "org-deskloop", "employee"), "Blake Lee (employee)"),
            p(Principal::new("u-rita", "org-deskloop", "auditor"), "Rita Park (auditor)"),
        ],
        _ => {
            use examples::clinic::app::people::*;
            vec![
                p(priya(), "Priya Shah (physiotherapist)"),
                p(okafor(), "Dr. Ngozi Okafor (doctor)"),
                p(marco(), "Marco Rossi (coach)"),
                p(erik(), "Erik Holm (physiotherapist, Harbour Rowing Club)"),
                p(Principal::new("u-audit", "org-northside", "auditor"), "Sasha Reed (auditor)"),
            ]
        }
    }
}

fn header(p: &Principal) -> String {
    format!("X-Dev-Principal: {}/{}/{}", p.user_id, p.org_id, p.role)
}

#[tokio::main]
async fn main() {
    if let Err(e) = run().await {
        eprintln!("serve: {e}");
        std::process::exit(2);
    }
}

async fn run() -> Result<(), String> {
    // Spans and metrics go to an OpenTelemetry collector when OTEL_EXPORTER_OTLP_ENDPOINT is
    // set; nothing is installed otherwise. Kept while the service runs: dropping it flushes.
    let _telemetry = agents_telemetry::init_from_env().map_err(|e| e.to_string())?;
    let args: Vec<String> = std::env::args().skip(1).collect();
    let o = parse(&args)?;
    let mut auth = authenticator(&o)?;
    // The web console: the development login's people, or a sign-in with a token the JWT
    // authenticator accepts.
    let console = if o.dev_login {
        Some(Console::dev_login(people(&o.agent)))
    } else if o.jwt.0.is_some() {
        Some(Console::token_login(auth.clone()))
    } else {
        None
    };
    if let Some(c) = &console {
        auth = c.authenticator(auth);
    }
    let (sink, reader, store) = storage(&o)?;
    let mut builder = Service::builder(auth, sink.clone(), reader);
    if !o.allow_hosts.is_empty() {
        builder = builder.allowed_hosts(&o.allow_hosts).map_err(|e| format!("{e}\n{USAGE}"))?;
    }
    let (builder, agent, who, input) = match o.agent.as_str() {
        "helpdesk" => {
            let provider = Arc::new(examples::helpdesk::app::HelpdeskModel::new().provider());
            let rt = runtime(sink, provider, examples::helpdesk::roles().clone(), store);
            let baseline = Manifest::parse(include_str!("../baselines/helpdesk.manifest.json"))
                .map_err(|e| format!("the committed helpdesk baseline: {e}"))?;
            (
                builder
                    .agent::<examples::helpdesk::DeskLoop>(rt)
                    .report_baseline::<examples::helpdesk::DeskLoop>("baselines/helpdesk.manifest.json", baseline),
                "deskloop",
                examples::helpdesk::app::alex(),
                "I need 2 days of leave from 2026-04-02",
            )
        }
        _ => {
            let provider = Arc::new(examples::clinic::app::clinic_model());
            let rt = runtime(sink, provider, examples::clinic::roles().clone(), store);
            let baseline = Manifest::parse(include_str!("../baselines/clinic.manifest.json"))
                .map_err(|e| format!("the committed clinic baseline: {e}"))?;
            (
                builder
                    .agent::<examples::clinic::Kinetix>(rt)
                    .report_baseline::<examples::clinic::Kinetix>("baselines/clinic.manifest.json", baseline),
                "kinetix",
                examples::clinic::app::people::priya(),
                "list my athletes",
            )
        }
    };
    let service = builder.build();
    let listener = tokio::net::TcpListener::bind(&o.addr).await.map_err(|e| format!("{}: {e}", o.addr))?;
    let addr = listener.local_addr().map_err(|e| e.to_string())?;
    eprintln!("serving `{agent}` at http://{addr}/v1 (Ctrl-C stops)");
    if o.dev_login {
        eprintln!("development login enabled: anyone who reaches this port can act as anyone");
        eprintln!("try:");
        eprintln!(
            "  curl -s -H '{}' -H 'Content-Type: application/json' -d '{{\"agent\":\"{agent}\",\"input\":\"{input}\"}}' http://{addr}/v1/runs",
            header(&who)
        );
        eprintln!("  curl -sN -H '{}' http://{addr}/v1/runs/RUN_ID/events", header(&who));
        eprintln!("  curl -s -H '{}' http://{addr}/v1/decisions", header(&who));
        eprintln!(
            "  curl -s -H '{}' -H 'Content-Type: application/json' -d '{{\"verdict\":\"approve\"}}' http://{addr}/v1/decisions/CALL_ID",
            header(&who)
        );
    }
    let mut app = service.router();
    if let Some(c) = &console {
        app = app.merge(c.router(&service));
        eprintln!("web console: http://{addr}/console");
    }
    let server =
        service.serve(listener, app, agents_service::ConnectionLimits::default()).map_err(|e| e.to_string())?;
    let _ = tokio::signal::ctrl_c().await;
    server.shutdown();
    server.wait().await;
    Ok(())
}
