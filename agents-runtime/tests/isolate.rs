//! Escape tests for isolated tools: each tool body tries to do what its policy does not declare
//! with the plain standard library (or `nix`), and each attempt must be refused by the kernel,
//! with the call's audit records saying it ran isolated and how it ended.
//!
//! This test binary is its own worker: `main` calls `isolate::init_with` first, so the runtime
//! starts this same executable to run each isolated call. It runs without the libtest harness
//! (`harness = false`); `cargo test -p agents-runtime --test isolate -- <filter>` runs the
//! cases whose name contains `<filter>`.
//!
//! The kernel must have Landlock ABI ≥ 4 and user namespaces: checked first, and the binary
//! fails loudly when they are missing (it never skips).

use agents_runtime::audit::{AuditRecord, AuditStatus, MemorySink};
use agents_runtime::isolate::{self, Settings};
use agents_runtime::provider::ScriptedProvider;
use agents_runtime::run::{ConfirmAnswer, ConfirmRequest, Confirmer, DirectSession};
use agents_runtime::{EnvAccess, FsAccess, Principal, RoleMap, Runtime, Verdict, agent, tool};
use std::future::Future;
use std::io::{Read, Write};
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

const BASE: &str = "/tmp/agents-isolate-escape";
const SECRET: &str = "SECRET: outside every declared root";
/// The one TCP port the network tool declares.
const DECLARED_PORT: u16 = 47_001;
/// A port it does not declare.
const UNDECLARED_PORT: u16 = 47_002;
/// The worker's process limit (threads count).
const PROCESSES: u64 = 8;
/// How many threads the bomb tries before it gives up on its own.
const BOMB_CAP: usize = 400;

/// Reads a file with `std::fs`, ignoring any handle.
#[tool(permission = public, isolated, policy(fs(read = ["/tmp/agents-isolate-escape/allowed/**"])))]
async fn read_raw(path: String) -> Result<String, String> {
    std::fs::read_to_string(&path).map_err(|e| format!("read {path}: {e}"))
}

/// Changes directory, then reads a path relative to it.
#[tool(permission = public, isolated, policy(fs(read = ["/tmp/agents-isolate-escape/allowed/**"])))]
async fn read_after_chdir(dir: String, path: String) -> Result<String, String> {
    std::env::set_current_dir(&dir).map_err(|e| format!("chdir {dir}: {e}"))?;
    std::fs::read_to_string(&path).map_err(|e| format!("read {path} from {dir}: {e}"))
}

/// Writes a file with `std::fs`, ignoring any handle.
#[tool(permission = public, isolated, policy(fs(write = ["/tmp/agents-isolate-escape/out/**"])))]
async fn write_raw(path: String, text: String) -> Result<String, String> {
    std::fs::write(&path, text).map_err(|e| format!("write {path}: {e}"))?;
    Ok("written".to_owned())
}

/// Reads through the capability handle, as a cooperating tool does.
#[tool(permission = public, isolated, policy(fs(read = ["/tmp/agents-isolate-escape/allowed/**"])))]
async fn read_with_handle(fs: FsAccess, name: String) -> Result<String, String> {
    let bytes = fs.read(format!("{BASE}/allowed/{name}")).map_err(|e| e.to_string())?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

/// Connects to a TCP port on loopback and reads a line.
#[tool(permission = public, isolated, policy(net(hosts = ["127.0.0.1:47001"])))]
async fn connect_tcp(port: u16) -> Result<String, String> {
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).map_err(|e| format!("connect {port}: {e}"))?;
    let mut line = String::new();
    stream.read_to_string(&mut line).map_err(|e| e.to_string())?;
    Ok(line)
}

/// Connects to a TCP port without declaring any network.
#[tool(permission = public, isolated)]
async fn connect_undeclared(port: u16) -> Result<String, String> {
    std::net::TcpStream::connect(("127.0.0.1", port))
        .map(|_| "connected".to_owned())
        .map_err(|e| format!("connect {port}: {e}"))
}

/// Sends a UDP datagram (which Landlock does not govern) without declaring any network.
#[tool(permission = public, isolated)]
async fn udp_undeclared(port: u16) -> Result<String, String> {
    let socket = std::net::UdpSocket::bind(("127.0.0.1", 0)).map_err(|e| format!("udp bind: {e}"))?;
    socket.send_to(b"leak", ("127.0.0.1", port)).map_err(|e| format!("udp send {port}: {e}"))?;
    Ok("sent".to_owned())
}

/// Starts a shell.
#[tool(permission = public, isolated)]
async fn spawn_shell() -> Result<String, String> {
    let out = std::process::Command::new("/bin/sh")
        .args(["-c", "echo pwned"])
        .output()
        .map_err(|e| format!("spawn /bin/sh: {e}"))?;
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Starts threads that never end until the kernel refuses one (or the cap is reached).
#[tool(permission = public, isolated)]
async fn thread_bomb() -> Result<usize, String> {
    let mut started = 0;
    while started < BOMB_CAP {
        let spawned =
            std::thread::Builder::new().stack_size(64 << 10).spawn(|| std::thread::sleep(Duration::from_secs(3600)));
        if spawned.is_err() {
            break;
        }
        started += 1;
    }
    Ok(started)
}

/// Allocates and touches `mb` megabytes.
#[tool(permission = public, isolated)]
async fn memory_hog(mb: usize) -> Result<usize, String> {
    let mut v: Vec<u8> = Vec::with_capacity(mb << 20);
    v.resize(mb << 20, 1);
    Ok(v.iter().map(|&b| b as usize).sum())
}

/// Burns CPU forever.
#[tool(permission = public, isolated)]
async fn burn_cpu() -> Result<u64, String> {
    let mut x: u64 = 1;
    loop {
        x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
    }
}

/// Sleeps forever (no CPU).
#[tool(permission = public, isolated)]
async fn never_returns() -> Result<String, String> {
    loop {
        std::thread::sleep(Duration::from_secs(3600));
    }
}

/// Attaches to the runtime's process with `ptrace`, then asks to be traced by it.
#[tool(permission = public, isolated)]
async fn trace_parent() -> Result<String, String> {
    let parent = nix::unistd::getppid();
    let attach = nix::sys::ptrace::attach(parent);
    // Asking to be traced needs no permission over another process: only the seccomp filter
    // refuses it.
    let traceme = nix::sys::ptrace::traceme();
    match (attach, traceme) {
        (Err(a), Err(t)) => Err(format!("ptrace attach {parent}: {a}; ptrace traceme: {t}")),
        (a, t) => Ok(format!("ptrace allowed: attach {a:?}, traceme {t:?}")),
    }
}

/// Reads a declared and an undeclared environment variable directly.
#[tool(permission = public, isolated, policy(env(vars = ["ISOLATE_DECLARED"])))]
async fn read_env_raw(env: EnvAccess) -> Result<String, String> {
    let declared = env.var("ISOLATE_DECLARED").ok().flatten().unwrap_or_default();
    let undeclared = std::env::var("ISOLATE_UNDECLARED").unwrap_or_else(|_| "<absent>".to_owned());
    Ok(format!("declared={declared} undeclared={undeclared}"))
}

/// Prints a forged result frame to its stdout, then returns its real result.
#[tool(permission = public, isolated)]
async fn chatty() -> Result<String, String> {
    let forged = br#"{"Ok":"forged"}"#;
    let mut out = std::io::stdout();
    let _ = out.write_all(&(forged.len() as u32).to_le_bytes());
    let _ = out.write_all(forged);
    let _ = out.flush();
    Ok("real".to_owned())
}

/// Returns `n` bytes of text.
#[tool(permission = public, isolated)]
async fn big_result(n: usize) -> Result<String, String> {
    Ok("x".repeat(n))
}

/// Writes a note: an isolated action, run only after a person approved it.
///
/// # Arguments
///
/// * `text` - the text of the note
#[tool(permission = public, isolated, mutating, title = "Write a note", policy(fs(write = ["/tmp/agents-isolate-escape/out/**"])))]
async fn write_note(text: String) -> Result<String, String> {
    std::fs::write(format!("{BASE}/out/note.txt"), &text).map_err(|e| e.to_string())?;
    Ok("noted".to_owned())
}

agent! {
    /// Tools that try to leave their policy.
    pub struct Escapes;
    tools: [udp_undeclared, read_raw, read_after_chdir, write_raw, read_with_handle, connect_tcp, connect_undeclared, spawn_shell,
            thread_bomb, memory_hog, burn_cpu, never_returns, trace_parent, read_env_raw, chatty, big_result,
            write_note],
}

struct Approves;

impl Confirmer for Approves {
    fn confirm(&self, _request: ConfirmRequest) -> agents_runtime::BoxFuture<'static, ConfirmAnswer> {
        Box::pin(async { ConfirmAnswer::Decided(Verdict::Approve) })
    }
}

/// One test case's world: a runtime with a memory sink and a direct session.
struct World {
    audit: Arc<MemorySink>,
    session: DirectSession<Escapes>,
}

impl World {
    async fn new(name: &str) -> World {
        let audit = Arc::new(MemorySink::new());
        let rt = Runtime::builder(audit.clone(), Arc::new(ScriptedProvider::new(vec![])))
            .roles(RoleMap::new().role("analyst", Vec::<&str>::new()))
            .tool_timeout(Duration::from_secs(30))
            .build();
        let session = rt
            .direct::<Escapes>(Principal::new("u1", "org1", "analyst"), name, Some(Arc::new(Approves)))
            .await
            .expect("direct session");
        World { audit, session }
    }

    /// Calls `tool`; returns the result text, whether it failed, and the call's records.
    async fn call(&self, tool: &str, args: serde_json::Value) -> Call {
        let id = format!("call-{}", uuid());
        let r = self.session.call(&id, tool, &args.to_string()).await;
        let records: Vec<AuditRecord> =
            self.audit.records().into_iter().filter(|r| r.call_id.as_deref() == Some(id.as_str())).collect();
        Call { text: r.content.to_string(), failed: r.is_error, records }
    }
}

fn uuid() -> String {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static N: AtomicUsize = AtomicUsize::new(0);
    N.fetch_add(1, Ordering::SeqCst).to_string()
}

#[derive(Debug)]
struct Call {
    text: String,
    failed: bool,
    records: Vec<AuditRecord>,
}

impl Call {
    /// The `isolated:` notice of the call.
    fn notice(&self) -> Result<String, String> {
        self.records
            .iter()
            .find(|r| {
                r.status == AuditStatus::Notice && r.reason.as_deref().is_some_and(|t| t.starts_with("isolated:"))
            })
            .and_then(|r| r.reason.clone())
            .ok_or_else(|| format!("no `isolated:` notice among the call's records: {:?}", self.statuses()))
    }
    fn statuses(&self) -> Vec<AuditStatus> {
        self.records.iter().map(|r| r.status).collect()
    }
    fn last_status(&self) -> Option<AuditStatus> {
        self.records.last().map(|r| r.status)
    }
    /// The call failed with a message containing `needle`, its last record is `failed`, and its
    /// notice says it ran isolated.
    fn refused(&self, needle: &str) -> Result<String, String> {
        ensure(self.failed, format!("expected a refusal, got a result: {}", self.text))?;
        ensure(self.text.contains(needle), format!("expected `{needle}` in the error, got: {}", self.text))?;
        ensure(self.last_status() == Some(AuditStatus::Failed), format!("last record: {:?}", self.statuses()))?;
        ensure(!self.text.contains(SECRET), format!("the secret leaked: {}", self.text))?;
        self.notice()
    }
    fn succeeded(&self) -> Result<String, String> {
        ensure(!self.failed, format!("expected success, got: {}", self.text))?;
        ensure(self.last_status() == Some(AuditStatus::Executed), format!("last record: {:?}", self.statuses()))?;
        self.notice()
    }
}

fn ensure(ok: bool, why: impl Into<String>) -> Result<(), String> {
    if ok { Ok(()) } else { Err(why.into()) }
}

fn path(rel: &str) -> String {
    format!("{BASE}/{rel}")
}

/// The files the cases use: `allowed/` (readable), `out/` (writable), `outside/secret.txt`,
/// and symlinks from inside the roots to the secret.
fn prepare() {
    let _ = std::fs::remove_dir_all(BASE);
    for d in ["allowed", "out", "outside"] {
        std::fs::create_dir_all(path(d)).unwrap();
    }
    std::fs::write(path("allowed/ok.txt"), "allowed content").unwrap();
    std::fs::write(path("outside/secret.txt"), SECRET).unwrap();
    std::os::unix::fs::symlink(path("outside/secret.txt"), path("allowed/link-to-secret")).unwrap();
    std::os::unix::fs::symlink(path("outside"), path("out/link-to-outside")).unwrap();
    // Open to every user, so that only the worker's confinement stands between it and them
    // (the worker runs as `nobody` when the tests run as root).
    use std::os::unix::fs::PermissionsExt;
    for (p, mode) in [("out", 0o777), ("outside", 0o777), ("outside/secret.txt", 0o666)] {
        std::fs::set_permissions(path(p), std::fs::Permissions::from_mode(mode)).unwrap();
    }
}

type Case = fn(Arc<World>) -> Pin<Box<dyn Future<Output = Result<(), String>>>>;

macro_rules! cases {
    ($($name:ident),* $(,)?) => { &[$((stringify!($name), |w| Box::pin($name(w)))),*] };
}

const CASES: &[(&str, Case)] = cases![
    read_inside_the_root_works_and_the_notice_names_the_confinement,
    read_outside_the_globs_is_refused,
    read_through_a_symlink_is_refused,
    read_through_proc_self_root_is_refused,
    read_after_chdir_is_refused,
    write_outside_the_globs_is_refused,
    write_through_a_symlink_is_refused,
    the_capability_handle_works_inside_the_worker,
    connect_to_an_undeclared_port_is_refused,
    connect_without_a_declared_network_is_refused,
    udp_without_a_declared_network_goes_nowhere,
    spawning_a_shell_is_refused,
    a_thread_bomb_is_stopped_by_the_process_limit,
    a_memory_hog_is_killed_by_the_address_space_limit,
    a_cpu_burner_is_killed_by_the_cpu_limit,
    a_tool_that_never_returns_is_killed_at_the_deadline,
    ptrace_of_the_runtime_is_refused,
    undeclared_environment_variables_are_absent,
    what_the_tool_prints_cannot_forge_its_result,
    a_result_over_the_bound_fails_the_call,
    an_isolated_action_runs_after_approval,
    the_manifest_records_isolation,
    without_landlock_an_isolated_tool_is_refused,
    without_landlock_degraded_mode_runs_it_and_says_so,
];

async fn read_inside_the_root_works_and_the_notice_names_the_confinement(w: Arc<World>) -> Result<(), String> {
    let c = w.call("read_raw", serde_json::json!({"path": path("allowed/ok.txt")})).await;
    let notice = c.succeeded()?;
    ensure(c.text.contains("allowed content"), c.text.clone())?;
    ensure(notice.starts_with("isolated: result delivered"), notice.clone())?;
    for part in ["seccomp", "no_new_privs", "user namespace", "private network namespace", "rlimits"] {
        ensure(notice.contains(part), format!("`{part}` missing from: {notice}"))?;
    }
    Ok(())
}

async fn read_outside_the_globs_is_refused(w: Arc<World>) -> Result<(), String> {
    w.call("read_raw", serde_json::json!({"path": path("outside/secret.txt")})).await.refused("Permission denied")?;
    w.call("read_raw", serde_json::json!({"path": "/etc/passwd"})).await.refused("Permission denied")?;
    // `..` resolves to the same refused file.
    w.call("read_raw", serde_json::json!({"path": path("allowed/../outside/secret.txt")}))
        .await
        .refused("Permission denied")?;
    Ok(())
}

async fn read_through_a_symlink_is_refused(w: Arc<World>) -> Result<(), String> {
    w.call("read_raw", serde_json::json!({"path": path("allowed/link-to-secret")}))
        .await
        .refused("Permission denied")?;
    Ok(())
}

async fn read_through_proc_self_root_is_refused(w: Arc<World>) -> Result<(), String> {
    let p = format!("/proc/self/root{BASE}/outside/secret.txt");
    w.call("read_raw", serde_json::json!({"path": p})).await.refused("Permission denied")?;
    // The same prefix to the allowed file resolves to that file, which is allowed: the kernel
    // judges the object reached, not the path written.
    let p = format!("/proc/self/root{BASE}/allowed/ok.txt");
    let c = w.call("read_raw", serde_json::json!({"path": p})).await;
    c.succeeded()?;
    ensure(c.text.contains("allowed content"), c.text.clone())
}

async fn read_after_chdir_is_refused(w: Arc<World>) -> Result<(), String> {
    let c = w.call("read_after_chdir", serde_json::json!({"dir": path("allowed"), "path": "ok.txt"})).await;
    c.succeeded()?;
    w.call("read_after_chdir", serde_json::json!({"dir": path("allowed"), "path": "../outside/secret.txt"}))
        .await
        .refused("Permission denied")?;
    w.call("read_after_chdir", serde_json::json!({"dir": path("outside"), "path": "secret.txt"}))
        .await
        .refused("Permission denied")?;
    Ok(())
}

async fn write_outside_the_globs_is_refused(w: Arc<World>) -> Result<(), String> {
    w.call("write_raw", serde_json::json!({"path": path("out/fine.txt"), "text": "ok"})).await.succeeded()?;
    ensure(
        std::fs::read_to_string(path("out/fine.txt")).ok().as_deref() == Some("ok"),
        "the allowed write is missing",
    )?;
    w.call("write_raw", serde_json::json!({"path": path("outside/planted.txt"), "text": "x"}))
        .await
        .refused("Permission denied")?;
    w.call("write_raw", serde_json::json!({"path": path("outside/secret.txt"), "text": "x"}))
        .await
        .refused("Permission denied")?;
    ensure(!std::path::Path::new(&path("outside/planted.txt")).exists(), "a file was planted outside")?;
    ensure(std::fs::read_to_string(path("outside/secret.txt")).unwrap() == SECRET, "the secret was overwritten")?;
    Ok(())
}

async fn write_through_a_symlink_is_refused(w: Arc<World>) -> Result<(), String> {
    w.call("write_raw", serde_json::json!({"path": path("out/link-to-outside/via-link.txt"), "text": "x"}))
        .await
        .refused("Permission denied")?;
    ensure(!std::path::Path::new(&path("outside/via-link.txt")).exists(), "a file was written through the link")?;
    Ok(())
}

async fn the_capability_handle_works_inside_the_worker(w: Arc<World>) -> Result<(), String> {
    let c = w.call("read_with_handle", serde_json::json!({"name": "ok.txt"})).await;
    c.succeeded()?;
    ensure(c.text.contains("allowed content"), c.text.clone())
}

/// A listener on loopback that answers each connection with `text` (in the runtime's network
/// namespace, so a worker with network sees it).
fn listen(port: u16, text: &'static str) -> std::net::TcpListener {
    let listener = std::net::TcpListener::bind(("127.0.0.1", port)).expect("bind the test listener");
    let l = listener.try_clone().unwrap();
    std::thread::spawn(move || {
        for mut s in l.incoming().flatten() {
            let _ = s.write_all(text.as_bytes());
        }
    });
    listener
}

async fn connect_to_an_undeclared_port_is_refused(w: Arc<World>) -> Result<(), String> {
    let _declared = listen(DECLARED_PORT, "hello from the declared port");
    let _undeclared = listen(UNDECLARED_PORT, "hello from an undeclared port");
    // The declared port works: the worker shares the network, and Landlock admits the port.
    let c = w.call("connect_tcp", serde_json::json!({"port": DECLARED_PORT})).await;
    c.succeeded()?;
    ensure(c.text.contains("declared port"), c.text.clone())?;
    let notice = c.notice()?;
    ensure(!notice.contains("private network namespace"), notice)?;
    w.call("connect_tcp", serde_json::json!({"port": UNDECLARED_PORT})).await.refused("Permission denied")?;
    Ok(())
}

async fn connect_without_a_declared_network_is_refused(w: Arc<World>) -> Result<(), String> {
    let _l = listen(47_003, "hello");
    let c = w.call("connect_undeclared", serde_json::json!({"port": 47_003})).await;
    c.refused("connect 47003")?;
    Ok(())
}

async fn udp_without_a_declared_network_goes_nowhere(w: Arc<World>) -> Result<(), String> {
    let listener = std::net::UdpSocket::bind(("127.0.0.1", 47_004)).map_err(|e| e.to_string())?;
    // The worker's own network namespace has no usable interface: the datagram has no route.
    let c = w.call("udp_undeclared", serde_json::json!({"port": 47_004})).await;
    c.refused("udp ")?;
    listener.set_nonblocking(true).map_err(|e| e.to_string())?;
    let mut buf = [0u8; 16];
    ensure(listener.recv(&mut buf).is_err(), "a datagram arrived from the worker")
}

async fn spawning_a_shell_is_refused(w: Arc<World>) -> Result<(), String> {
    let c = w.call("spawn_shell", serde_json::json!({})).await;
    let _ = c.refused("spawn /bin/sh")?;
    ensure(!c.text.contains("pwned"), c.text.clone())
}

async fn a_thread_bomb_is_stopped_by_the_process_limit(w: Arc<World>) -> Result<(), String> {
    let c = w.call("thread_bomb", serde_json::json!({})).await;
    c.succeeded()?;
    let started: usize = c.text.parse().map_err(|_| c.text.clone())?;
    ensure(started < PROCESSES as usize, format!("{started} threads started under a limit of {PROCESSES} processes"))
}

async fn a_memory_hog_is_killed_by_the_address_space_limit(w: Arc<World>) -> Result<(), String> {
    let c = w.call("memory_hog", serde_json::json!({"mb": 2048})).await;
    let notice = c.refused("ended without a result")?;
    ensure(notice.contains("limit hit: address space"), notice)
}

async fn a_cpu_burner_is_killed_by_the_cpu_limit(w: Arc<World>) -> Result<(), String> {
    let c = w.call("burn_cpu", serde_json::json!({})).await;
    let notice = c.refused("ended without a result")?;
    ensure(notice.contains("limit hit: CPU time"), notice)
}

async fn a_tool_that_never_returns_is_killed_at_the_deadline(w: Arc<World>) -> Result<(), String> {
    let c = w.call("never_returns", serde_json::json!({})).await;
    let notice = c.refused("did not finish")?;
    ensure(notice.contains("limit hit: wall-clock deadline"), notice)
}

async fn ptrace_of_the_runtime_is_refused(w: Arc<World>) -> Result<(), String> {
    w.call("trace_parent", serde_json::json!({})).await.refused("ptrace traceme: EPERM")?;
    Ok(())
}

async fn undeclared_environment_variables_are_absent(w: Arc<World>) -> Result<(), String> {
    let c = w.call("read_env_raw", serde_json::json!({})).await;
    c.succeeded()?;
    ensure(c.text.contains("declared=yes undeclared=<absent>"), c.text.clone())
}

async fn what_the_tool_prints_cannot_forge_its_result(w: Arc<World>) -> Result<(), String> {
    let c = w.call("chatty", serde_json::json!({})).await;
    c.succeeded()?;
    ensure(c.text == "\"real\"", c.text.clone())
}

async fn a_result_over_the_bound_fails_the_call(w: Arc<World>) -> Result<(), String> {
    let c = w.call("big_result", serde_json::json!({"n": 2 << 20})).await;
    let notice = c.refused("larger than")?;
    ensure(notice.contains("larger than"), notice)
}

async fn an_isolated_action_runs_after_approval(w: Arc<World>) -> Result<(), String> {
    let c = w.call("write_note", serde_json::json!({"text": "approved note"})).await;
    c.succeeded()?;
    ensure(c.statuses().contains(&AuditStatus::Confirmed), format!("{:?}", c.statuses()))?;
    ensure(std::fs::read_to_string(path("out/note.txt")).ok().as_deref() == Some("approved note"), "no note")
}

async fn the_manifest_records_isolation(_: Arc<World>) -> Result<(), String> {
    let m: serde_json::Value = serde_json::from_str(Escapes::MANIFEST).map_err(|e| e.to_string())?;
    let tools = m["tools"].as_array().ok_or("no tools")?;
    ensure(tools.iter().all(|t| t["policy"]["isolated"] == serde_json::json!(true)), Escapes::MANIFEST)
}

/// The environment variable that makes this binary run one probe call as if the kernel had no
/// Landlock (its value: `refuse` or `degraded`).
const NO_LANDLOCK: &str = "ISOLATE_TEST_NO_LANDLOCK";

/// A kernel without Landlock, as the runtime and its workers see it: a seccomp filter (set
/// before anything else, inherited by every worker) answers Landlock's system calls `ENOSYS`,
/// which is what a kernel built without Landlock answers.
fn hide_landlock() {
    use seccompiler::{BpfProgram, SeccompAction, SeccompFilter};
    let rules = [libc::SYS_landlock_create_ruleset, libc::SYS_landlock_add_rule, libc::SYS_landlock_restrict_self]
        .into_iter()
        .map(|nr| (nr, Vec::new()))
        .collect();
    let arch = std::env::consts::ARCH.try_into().unwrap();
    let filter =
        SeccompFilter::new(rules, SeccompAction::Allow, SeccompAction::Errno(libc::ENOSYS as u32), arch).unwrap();
    let program: BpfProgram = filter.try_into().unwrap();
    seccompiler::apply_filter(&program).unwrap();
}

/// Runs this binary as a kernel without Landlock would, with or without degraded mode, and
/// returns what its probe call printed.
fn probe_without_landlock(mode: &str) -> Result<String, String> {
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .env(NO_LANDLOCK, mode)
        .output()
        .map_err(|e| e.to_string())?;
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    ensure(out.status.success(), format!("the probe failed: {text} {}", String::from_utf8_lossy(&out.stderr)))?;
    Ok(text)
}

async fn without_landlock_an_isolated_tool_is_refused(_: Arc<World>) -> Result<(), String> {
    let text = probe_without_landlock("refuse")?;
    ensure(text.contains("PROBE failed=true"), text.clone())?;
    ensure(text.contains("Landlock ABI 4") && text.contains("nothing ran"), text.clone())?;
    ensure(text.contains("notice=isolated: refused, nothing ran"), text.clone())?;
    ensure(!text.contains("allowed content"), text)
}

async fn without_landlock_degraded_mode_runs_it_and_says_so(_: Arc<World>) -> Result<(), String> {
    let text = probe_without_landlock("degraded")?;
    ensure(text.contains("PROBE failed=false"), text.clone())?;
    ensure(text.contains("allowed content"), text.clone())?;
    ensure(text.contains("no landlock") && text.contains("DEGRADED"), text)
}

/// The probe of a run without Landlock: one read of an allowed file.
fn probe(mode: &str) {
    hide_landlock();
    isolate::init_with(Settings::default().allow_degraded(mode == "degraded"));
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    runtime.block_on(async {
        let w = World::new("probe").await;
        let c = w.call("read_raw", serde_json::json!({"path": path("allowed/ok.txt")})).await;
        let notice = c.notice().unwrap_or_else(|e| e);
        println!("PROBE failed={} text={} notice={notice}", c.failed, c.text);
    });
}

/// Landlock ABI ≥ 4 and user namespaces, asked of the kernel; a loud failure when missing.
fn require_kernel() {
    use landlock::{ABI, Access, AccessNet, CompatLevel, Compatible, Ruleset, RulesetAttr};
    let landlock = Ruleset::default()
        .set_compatibility(CompatLevel::HardRequirement)
        .handle_access(AccessNet::from_all(ABI::V4))
        .and_then(|r| r.create());
    if let Err(e) = landlock {
        panic!("THIS KERNEL CANNOT RUN THE ISOLATION TESTS: Landlock ABI >= 4 is required ({e})");
    }
    let max = std::fs::read_to_string("/proc/sys/user/max_user_namespaces").unwrap_or_default();
    if max.trim().parse::<u64>().unwrap_or(0) == 0 {
        panic!(
            "THIS KERNEL CANNOT RUN THE ISOLATION TESTS: user namespaces are disabled (user.max_user_namespaces = {max:?})"
        );
    }
}

fn main() {
    if let Ok(mode) = std::env::var(NO_LANDLOCK) {
        return probe(&mode);
    }
    // First: in a worker this serves the call and exits.
    isolate::init_with(
        Settings::default()
            .deadline(Duration::from_secs(4))
            .cpu_seconds(1)
            .memory_bytes(512 << 20)
            .processes(PROCESSES)
            .max_message_bytes(1 << 20),
    );
    require_kernel();
    // Two variables in the runtime's environment, one declared by `read_env_raw`: set by
    // starting this binary again with them (setting them in-process would need `unsafe`).
    if std::env::var_os("ISOLATE_DECLARED").is_none() {
        let status = std::process::Command::new(std::env::current_exe().unwrap())
            .args(std::env::args_os().skip(1))
            .env("ISOLATE_DECLARED", "yes")
            .env("ISOLATE_UNDECLARED", "the runtime's own secret")
            .status()
            .expect("start the tests again with their environment");
        std::process::exit(status.code().unwrap_or(1));
    }
    let filter: Vec<String> = std::env::args().skip(1).filter(|a| !a.starts_with('-')).collect();
    prepare();
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    let mut failed = Vec::new();
    let mut ran = 0;
    for (name, case) in CASES {
        if !filter.is_empty() && !filter.iter().any(|f| name.contains(f.as_str())) {
            continue;
        }
        ran += 1;
        let world = runtime.block_on(World::new(name));
        let outcome = runtime.block_on(case(Arc::new(world)));
        match outcome {
            Ok(()) => println!("test {name} ... ok"),
            Err(why) => {
                println!("test {name} ... FAILED\n    {why}");
                failed.push(*name);
            }
        }
    }
    println!("\n{ran} isolation cases, {} failed", failed.len());
    if !failed.is_empty() {
        std::process::exit(1);
    }
}
