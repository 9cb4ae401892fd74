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
use agents_runtime::isolate::{self, Isolation, IsolationError, Settings};
use agents_runtime::provider::ScriptedProvider;
use agents_runtime::run::{ConfirmAnswer, ConfirmRequest, Confirmer, DirectSession};
use agents_runtime::tool::Registry;
use agents_runtime::{EnvAccess, FsAccess, Principal, RoleMap, Runtime, Verdict, agent, tool};
use std::future::Future;
use std::io::{Read, Write};
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

const BASE: &str = "/tmp/agents-isolate-escape";
const SECRET: &str = "SECRET: outside every declared root";
/// The one TCP port the network tool declares. The test ports lie below the kernel's range of
/// ephemeral ports (32768-60999 by default), so no outgoing connection of another test holds one.
const DECLARED_PORT: u16 = 31_001;
/// A port it does not declare.
const UNDECLARED_PORT: u16 = 31_002;
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
#[tool(permission = public, isolated, policy(net(hosts = ["127.0.0.1:31001"])))]
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

/// Tries each kind of metadata change on `path`, naming it by its path; says how each went.
#[tool(permission = public, isolated, policy(fs(read = ["/tmp/agents-isolate-escape/allowed/**"])))]
async fn change_metadata(path: String) -> Result<String, String> {
    Ok(metadata_by_path(&path))
}

/// The same, from a tool that declares a write root.
#[tool(permission = public, isolated, policy(fs(write = ["/tmp/agents-isolate-escape/out/**"])))]
async fn change_metadata_as_writer(path: String) -> Result<String, String> {
    Ok(metadata_by_path(&path))
}

/// Opens `path` for reading, then tries each kind of metadata change through the descriptor.
#[tool(permission = public, isolated, policy(fs(read = ["/tmp/agents-isolate-escape/allowed/**"])))]
async fn change_metadata_by_descriptor(path: String) -> Result<String, String> {
    let file = std::fs::File::open(&path).map_err(|e| format!("open {path}: {e}"))?;
    Ok(metadata_by_descriptor(&file))
}

/// Copies a file into its write root (`std::fs::copy` sets the copy's mode through its
/// descriptor), then changes the copy's metadata through a descriptor.
#[tool(
    permission = public,
    isolated,
    policy(fs(read = ["/tmp/agents-isolate-escape/allowed/**"], write = ["/tmp/agents-isolate-escape/out/**"]))
)]
async fn copy_into_root(from: String, to: String) -> Result<String, String> {
    std::fs::copy(&from, &to).map_err(|e| format!("copy {from} to {to}: {e}"))?;
    let file = std::fs::OpenOptions::new().write(true).open(&to).map_err(|e| format!("open {to}: {e}"))?;
    Ok(metadata_by_descriptor(&file))
}

/// `op: ok` or `op: <error>` for each attempt, joined by `; `.
fn attempts(results: Vec<(&str, std::io::Result<()>)>) -> String {
    let said: Vec<String> = results
        .into_iter()
        .map(|(op, r)| match r {
            Ok(()) => format!("{op}: ok"),
            Err(e) => format!("{op}: {e}"),
        })
        .collect();
    said.join("; ")
}

/// Mode, owner, times and extended attributes changed by path (the plain standard library
/// where it has the call, `rustix` where it does not).
fn metadata_by_path(path: &str) -> String {
    use std::os::unix::fs::PermissionsExt;
    let epoch = rustix::fs::Timespec { tv_sec: 0, tv_nsec: 0 };
    let times = rustix::fs::Timestamps { last_access: epoch, last_modification: epoch };
    attempts(vec![
        ("chmod", std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))),
        ("chown", std::os::unix::fs::chown(path, None, None)),
        (
            "utimensat",
            rustix::fs::utimensat(rustix::fs::CWD, path, &times, rustix::fs::AtFlags::empty()).map_err(Into::into),
        ),
        (
            "setxattr",
            rustix::fs::setxattr(path, "user.planted", b"x", rustix::fs::XattrFlags::empty()).map_err(Into::into),
        ),
        ("removexattr", rustix::fs::removexattr(path, "user.kept").map_err(Into::into)),
    ])
}

/// The same changes through a descriptor the tool opened.
fn metadata_by_descriptor(file: &std::fs::File) -> String {
    use std::os::unix::fs::PermissionsExt;
    let epoch = std::fs::FileTimes::new().set_modified(std::time::UNIX_EPOCH);
    attempts(vec![
        ("fchmod", file.set_permissions(std::fs::Permissions::from_mode(0o600))),
        ("fchown", std::os::unix::fs::fchown(file, None, None)),
        ("futimens", file.set_times(epoch)),
        (
            "fsetxattr",
            rustix::fs::fsetxattr(file, "user.planted", b"x", rustix::fs::XattrFlags::empty()).map_err(Into::into),
        ),
        ("fremovexattr", rustix::fs::fremovexattr(file, "user.kept").map_err(Into::into)),
        (
            "FS_IOC_SETFLAGS",
            rustix::fs::ioctl_getflags(file)
                .and_then(|flags| rustix::fs::ioctl_setflags(file, flags | rustix::fs::IFlags::NODUMP))
                .map_err(Into::into),
        ),
    ])
}

/// Connects to a Unix socket by its path.
#[tool(permission = public, isolated)]
async fn connect_unix(path: String) -> Result<String, String> {
    std::os::unix::net::UnixStream::connect(&path)
        .map(|_| "connected".to_owned())
        .map_err(|e| format!("connect {path}: {e}"))
}

/// Connects to an abstract Unix socket name. It declares a host, so it shares the runtime's
/// network namespace (where abstract names live).
#[tool(permission = public, isolated, policy(net(hosts = ["127.0.0.1:31001"])))]
async fn connect_abstract(name: String) -> Result<String, String> {
    use std::os::linux::net::SocketAddrExt;
    let addr = std::os::unix::net::SocketAddr::from_abstract_name(name.as_bytes()).map_err(|e| e.to_string())?;
    std::os::unix::net::UnixStream::connect_addr(&addr)
        .map(|_| "connected".to_owned())
        .map_err(|e| format!("connect @{name}: {e}"))
}

/// Looks through its descriptors 0 to 1023 for the object `target` names (as `/proc/self/fd`
/// shows it: `socket:[...]`, `pipe:[...]`, a path), and writes `text` through the one it finds:
/// a socket by its number (`send(2)`, which `nix` offers on a raw descriptor), anything else
/// by opening it again through `/proc/self/fd`.
#[tool(permission = public, isolated)]
async fn write_inherited(target: String, text: String) -> Result<String, String> {
    for fd in 0..1024 {
        let link = format!("/proc/self/fd/{fd}");
        if std::fs::read_link(&link).is_ok_and(|t| t.to_string_lossy() == target) {
            if target.starts_with("socket:") {
                nix::sys::socket::send(fd, text.as_bytes(), nix::sys::socket::MsgFlags::empty())
                    .map_err(|e| format!("descriptor {fd} ({target}) is open in the worker; send: {e}"))?;
                return Ok(format!("sent through descriptor {fd} ({target})"));
            }
            let mut file = std::fs::OpenOptions::new()
                .write(true)
                .open(&link)
                .map_err(|e| format!("descriptor {fd} ({target}) is open in the worker; reopening it: {e}"))?;
            file.write_all(text.as_bytes()).map_err(|e| format!("descriptor {fd} ({target}): {e}"))?;
            return Ok(format!("wrote through descriptor {fd} ({target})"));
        }
    }
    Err(format!("no descriptor of the worker is {target}"))
}

agent! {
    /// Tools that try to leave their policy.
    pub struct Escapes;
    tools: [udp_undeclared, read_raw, read_after_chdir, write_raw, read_with_handle, connect_tcp, connect_undeclared, spawn_shell,
            thread_bomb, memory_hog, burn_cpu, never_returns, trace_parent, read_env_raw, chatty, big_result,
            write_note, change_metadata, change_metadata_as_writer, change_metadata_by_descriptor, copy_into_root,
            connect_unix, connect_abstract, write_inherited],
}

/// Reads a file with `std::fs`, ignoring any handle; not marked `isolated` in its code.
#[tool(permission = public, policy(fs(read = ["/tmp/agents-isolate-escape/allowed/**"])))]
async fn read_unmarked(path: String) -> Result<String, String> {
    std::fs::read_to_string(&path).map_err(|e| format!("read {path}: {e}"))
}

/// Reads text files anywhere below the working directory: a glob the kernel cannot express.
#[tool(permission = public, policy(fs(read = ["**/*.txt"])))]
async fn read_rootless(path: String) -> Result<String, String> {
    std::fs::read_to_string(&path).map_err(|e| format!("read {path}: {e}"))
}

agent! {
    /// Tools whose code does not ask for isolation, and one that does.
    pub struct Unmarked;
    tools: [read_unmarked, read_rootless, read_raw],
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
        call_on(&self.audit, &self.session, tool, args).await
    }
}

/// Calls `tool` in `session`; the result text, whether it failed, and the call's records.
async fn call_on<A: Registry>(
    audit: &MemorySink,
    session: &DirectSession<A>,
    tool: &str,
    args: serde_json::Value,
) -> Call {
    let id = format!("call-{}", uuid());
    // The records of this call are the ones written while it ran: the runtime keys an action's
    // records, and those of a tool that reaches out, by an id it mints itself.
    let before = audit.records().len();
    let r = session.call(&id, tool, &args.to_string()).await;
    let records: Vec<AuditRecord> = audit.records().into_iter().skip(before).filter(|r| r.call_id.is_some()).collect();
    Call { text: r.content.to_string(), failed: r.is_error, records }
}

/// A session of `Escapes` on a runtime with its own `isolation`.
async fn escapes(isolation: Isolation) -> (Arc<MemorySink>, DirectSession<Escapes>) {
    let audit = Arc::new(MemorySink::new());
    let session = Runtime::builder(audit.clone(), Arc::new(ScriptedProvider::new(vec![])))
        .roles(RoleMap::new().role("analyst", Vec::<&str>::new()))
        .tool_timeout(Duration::from_secs(300))
        .isolation(isolation)
        .build()
        .direct::<Escapes>(Principal::new("u1", "org1", "analyst"), "escapes", None)
        .await
        .expect("direct session");
    (audit, session)
}

/// A session of `Unmarked` on a runtime with `isolation` (or none).
async fn unmarked(isolation: Option<Isolation>) -> (Arc<MemorySink>, DirectSession<Unmarked>) {
    let audit = Arc::new(MemorySink::new());
    let mut builder = Runtime::builder(audit.clone(), Arc::new(ScriptedProvider::new(vec![])))
        .roles(RoleMap::new().role("analyst", Vec::<&str>::new()))
        .tool_timeout(Duration::from_secs(30));
    if let Some(isolation) = isolation {
        builder = builder.isolation(isolation);
    }
    let session = builder
        .build()
        .direct::<Unmarked>(Principal::new("u1", "org1", "analyst"), "unmarked", None)
        .await
        .expect("direct session");
    (audit, session)
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
    // Files whose metadata the tools try to change, owned by the worker's user (so that only
    // the confinement refuses), each with an extended attribute to remove.
    for f in ["outside/meta.txt", "allowed/meta.txt", "out/meta.txt"] {
        std::fs::write(path(f), "metadata").unwrap();
        std::fs::set_permissions(path(f), std::fs::Permissions::from_mode(0o644)).unwrap();
        rustix::fs::setxattr(path(f), "user.kept", b"yes", rustix::fs::XattrFlags::empty())
            .expect("THE ISOLATION TESTS NEED user extended attributes on the filesystem of /tmp");
        if rustix::process::getuid().is_root() {
            let (uid, gid) = WORKER_USER;
            std::os::unix::fs::chown(path(f), Some(uid), Some(gid)).unwrap();
        }
    }
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

/// The worker's user when the tests run as root (the settings' default).
const WORKER_USER: (u32, u32) = (65534, 65534);

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
    metadata_changes_by_path_are_refused_inside_and_outside_the_roots,
    metadata_changes_through_a_descriptor_need_a_write_root,
    connect_to_a_unix_socket_file_outside_the_roots_is_refused,
    connect_to_an_abstract_unix_socket_is_refused,
    descriptors_the_runtime_left_open_are_closed_before_the_tool_runs,
    undeclared_environment_variables_are_absent,
    what_the_tool_prints_cannot_forge_its_result,
    a_result_over_the_bound_fails_the_call,
    an_isolated_action_runs_after_approval,
    the_manifest_records_isolation,
    without_landlock_an_isolated_tool_is_refused,
    without_landlock_degraded_mode_runs_it_and_says_so,
    a_runtime_setting_isolates_a_tool_its_code_does_not_mark,
    a_runtime_setting_refuses_what_it_cannot_isolate_and_cannot_remove_isolation,
    two_runtimes_do_not_share_workers,
    an_idle_worker_is_retired_and_not_replaced_until_called,
    a_killed_runtime_takes_its_workers_along,
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
    let _l = listen(31_003, "hello");
    let c = w.call("connect_undeclared", serde_json::json!({"port": 31_003})).await;
    c.refused("connect 31003")?;
    Ok(())
}

async fn udp_without_a_declared_network_goes_nowhere(w: Arc<World>) -> Result<(), String> {
    let listener = std::net::UdpSocket::bind(("127.0.0.1", 31_004)).map_err(|e| e.to_string())?;
    // The worker's own network namespace has no usable interface: the datagram has no route.
    let c = w.call("udp_undeclared", serde_json::json!({"port": 31_004})).await;
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

async fn a_cpu_burner_is_killed_by_the_cpu_limit(_: Arc<World>) -> Result<(), String> {
    // A wall-clock deadline far past the CPU limit, so that a loaded machine (where one CPU
    // second takes many wall seconds) still sees the CPU limit hit first.
    let (audit, session) = escapes(Isolation::new(test_settings().deadline(Duration::from_secs(120)))).await;
    let c = call_on(&audit, &session, "burn_cpu", serde_json::json!({})).await;
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

/// A file's mode, owner, modification time, extended attribute names and attribute flags, as
/// the runtime sees them.
fn metadata_of(p: &str) -> Result<String, String> {
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::metadata(p).map_err(|e| format!("{p}: {e}"))?;
    let mut names = [0u8; 1024];
    let n = rustix::fs::listxattr(p, &mut names[..]).map_err(|e| format!("{p}: {e}"))?;
    let file = std::fs::File::open(p).map_err(|e| format!("{p}: {e}"))?;
    let flags = rustix::fs::ioctl_getflags(&file).map_err(|e| format!("{p}: {e}"))?;
    Ok(format!(
        "mode {:o}, owner {}:{}, modified {}.{}, attributes {:?}, flags {flags:?}",
        m.mode(),
        m.uid(),
        m.gid(),
        m.mtime(),
        m.mtime_nsec(),
        String::from_utf8_lossy(&names[..n])
    ))
}

/// Each of `ops` answered `EPERM` in the tool's report `text`.
fn all_refused(text: &str, ops: &[&str]) -> Result<(), String> {
    for op in ops {
        ensure(text.contains(&format!("{op}: Operation not permitted")), format!("`{op}` was not refused: {text}"))?;
    }
    Ok(())
}

const BY_PATH: &[&str] = &["chmod", "chown", "utimensat", "setxattr", "removexattr"];
const BY_DESCRIPTOR: &[&str] = &["fchmod", "fchown", "futimens", "fsetxattr", "fremovexattr", "FS_IOC_SETFLAGS"];

async fn metadata_changes_by_path_are_refused_inside_and_outside_the_roots(w: Arc<World>) -> Result<(), String> {
    // Outside the roots (the escape), in a read root, and even in a write root: a filter cannot
    // see the path, so no path form is allowed.
    for (tool, file) in [
        ("change_metadata", "outside/meta.txt"),
        ("change_metadata", "allowed/meta.txt"),
        ("change_metadata_as_writer", "outside/meta.txt"),
        ("change_metadata_as_writer", "out/meta.txt"),
    ] {
        let before = metadata_of(&path(file))?;
        let c = w.call(tool, serde_json::json!({"path": path(file)})).await;
        let notice = c.succeeded()?;
        all_refused(&c.text, BY_PATH).map_err(|e| format!("{tool} on {file}: {e}"))?;
        ensure(metadata_of(&path(file))? == before, format!("{tool} changed {file}: {}", c.text))?;
        let said =
            if tool == "change_metadata" { "metadata changes refused" } else { "metadata changes by path refused" };
        ensure(notice.contains(said), notice)?;
    }
    Ok(())
}

async fn metadata_changes_through_a_descriptor_need_a_write_root(w: Arc<World>) -> Result<(), String> {
    // A tool without a write root changes nothing through a descriptor of a file it may read.
    let file = path("allowed/meta.txt");
    let before = metadata_of(&file)?;
    let c = w.call("change_metadata_by_descriptor", serde_json::json!({"path": file})).await;
    c.succeeded()?;
    all_refused(&c.text, BY_DESCRIPTOR)?;
    ensure(metadata_of(&file)? == before, format!("the read-only tool changed {file}: {}", c.text))?;
    // A tool with one copies into it (`std::fs::copy` sets the mode through the descriptor) and
    // changes its copy's metadata through a descriptor.
    let to = path("out/copied.txt");
    let c = w.call("copy_into_root", serde_json::json!({"from": path("allowed/ok.txt"), "to": to})).await;
    c.succeeded()?;
    for done in ["fchmod: ok", "fchown: ok", "futimens: ok", "fsetxattr: ok"] {
        ensure(c.text.contains(done), format!("`{done}` missing: {}", c.text))?;
    }
    ensure(std::fs::read_to_string(&to).ok().as_deref() == Some("allowed content"), "the copy is missing")
}

/// Whether a connection waits on `listener` (set non-blocking).
fn connection_waiting(listener: &std::os::unix::net::UnixListener) -> bool {
    !matches!(listener.accept(), Err(e) if e.kind() == std::io::ErrorKind::WouldBlock)
}

async fn connect_to_a_unix_socket_file_outside_the_roots_is_refused(w: Arc<World>) -> Result<(), String> {
    use std::os::unix::fs::PermissionsExt;
    let socket = path("outside/agent.sock");
    let _ = std::fs::remove_file(&socket);
    let listener = std::os::unix::net::UnixListener::bind(&socket).map_err(|e| format!("bind {socket}: {e}"))?;
    // Writable by every user: only the confinement stands between the worker and it.
    std::fs::set_permissions(&socket, std::fs::Permissions::from_mode(0o777)).map_err(|e| e.to_string())?;
    listener.set_nonblocking(true).map_err(|e| e.to_string())?;
    let c = w.call("connect_unix", serde_json::json!({"path": socket})).await;
    c.refused("Operation not permitted")?;
    ensure(!connection_waiting(&listener), "a connection from the worker reached the socket")
}

async fn connect_to_an_abstract_unix_socket_is_refused(w: Arc<World>) -> Result<(), String> {
    use std::os::linux::net::SocketAddrExt;
    let name = format!("agents-isolate-escape-{}", std::process::id());
    let addr = std::os::unix::net::SocketAddr::from_abstract_name(name.as_bytes()).map_err(|e| e.to_string())?;
    let listener = std::os::unix::net::UnixListener::bind_addr(&addr).map_err(|e| format!("bind @{name}: {e}"))?;
    listener.set_nonblocking(true).map_err(|e| e.to_string())?;
    let c = w.call("connect_abstract", serde_json::json!({"name": name})).await;
    c.refused("Operation not permitted")?;
    ensure(!connection_waiting(&listener), "a connection from the worker reached the abstract socket")
}

async fn descriptors_the_runtime_left_open_are_closed_before_the_tool_runs(w: Arc<World>) -> Result<(), String> {
    use nix::fcntl::{FcntlArg, FdFlag, OFlag, fcntl};
    use std::os::fd::AsRawFd;
    let target = |fd: &dyn AsRawFd| {
        std::fs::read_link(format!("/proc/self/fd/{}", fd.as_raw_fd()))
            .map(|t| t.to_string_lossy().into_owned())
            .map_err(|e| e.to_string())
    };
    // A connected Unix socket and a file whose close-on-exec flags are cleared, and a pipe
    // (`pipe(2)` has none), all open in the runtime while it starts the worker.
    let (mine, theirs) = std::os::unix::net::UnixStream::pair().map_err(|e| e.to_string())?;
    fcntl(&theirs, FcntlArg::F_SETFD(FdFlag::empty())).map_err(|e| e.to_string())?;
    mine.set_nonblocking(true).map_err(|e| e.to_string())?;
    let (read_end, write_end) = nix::unistd::pipe().map_err(|e| e.to_string())?;
    fcntl(&read_end, FcntlArg::F_SETFL(OFlag::O_NONBLOCK)).map_err(|e| e.to_string())?;
    let log_path = path("outside/inherited.log");
    let log = std::fs::File::create(&log_path).map_err(|e| e.to_string())?;
    fcntl(&log, FcntlArg::F_SETFD(FdFlag::empty())).map_err(|e| e.to_string())?;
    // The socket takes a `send` on its number from safe code; the pipe and the file, which
    // Landlock refuses to open again through `/proc/self/fd`, a raw `write` from any code.
    // The tool looks for each descriptor itself, so the numbers it uses are no guess.
    let socket = target(&theirs)?;
    let c = w.call("write_inherited", serde_json::json!({"target": socket, "text": "leaked"})).await;
    let notice = c.refused("no descriptor of the worker is socket:")?;
    let mut buf = [0u8; 16];
    let read = std::io::Read::read(&mut &mine, &mut buf);
    ensure(
        matches!(&read, Err(e) if e.kind() == std::io::ErrorKind::WouldBlock),
        format!("the inherited socket carried something from the worker: {read:?}"),
    )?;
    let pipe = target(&write_end)?;
    let c = w.call("write_inherited", serde_json::json!({"target": pipe, "text": "leaked"})).await;
    c.refused("no descriptor of the worker is pipe:")?;
    let read = std::io::Read::read(&mut std::fs::File::from(read_end), &mut buf);
    ensure(
        matches!(&read, Err(e) if e.kind() == std::io::ErrorKind::WouldBlock),
        format!("the inherited pipe carried something from the worker: {read:?}"),
    )?;
    let file = target(&log)?;
    let c = w.call("write_inherited", serde_json::json!({"target": file, "text": "leaked"})).await;
    c.refused(&format!("no descriptor of the worker is {log_path}"))?;
    ensure(std::fs::read(&log_path).map_err(|e| e.to_string())?.is_empty(), "the inherited file was written")?;
    // The notice counts what the worker closed: the socket, the pipe's two ends and the file
    // at least.
    let closed = notice
        .split("inherited descriptors closed (")
        .nth(1)
        .and_then(|rest| rest.split(')').next())
        .and_then(|n| n.parse::<usize>().ok());
    drop((theirs, write_end, log));
    ensure(closed.is_some_and(|n| n >= 4), format!("the notice does not count 4 closed descriptors: {notice}"))
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

/// The settings of this binary's workers (as `main` gives them to `init_with`).
fn test_settings() -> Settings {
    Settings::default()
        .deadline(Duration::from_secs(4))
        .cpu_seconds(1)
        .memory_bytes(512 << 20)
        .processes(PROCESSES)
        .max_message_bytes(1 << 20)
}

async fn a_runtime_setting_isolates_a_tool_its_code_does_not_mark(_: Arc<World>) -> Result<(), String> {
    // Without the setting, the body's own `std::fs` read is not stopped (level 2, documented).
    let (audit, session) = unmarked(None).await;
    let c = call_on(&audit, &session, "read_unmarked", serde_json::json!({"path": path("outside/secret.txt")})).await;
    ensure(!c.failed && c.text.contains(SECRET), format!("in-process read: {}", c.text))?;
    // With it, the same body runs in a confined worker and the kernel refuses the read.
    let mut isolation = Isolation::new(test_settings());
    isolation.isolate_tool("read_unmarked").map_err(|e| e.to_string())?;
    let (audit, session) = unmarked(Some(isolation)).await;
    let c = call_on(&audit, &session, "read_unmarked", serde_json::json!({"path": path("outside/secret.txt")})).await;
    let notice = c.refused("Permission denied")?;
    ensure(!c.text.contains(SECRET), c.text.clone())?;
    ensure(notice.contains("isolated by the runtime's setting") && notice.contains("landlock abi"), notice)?;
    let c = call_on(&audit, &session, "read_unmarked", serde_json::json!({"path": path("allowed/ok.txt")})).await;
    let notice = c.succeeded()?;
    ensure(c.text.contains("allowed content"), c.text.clone())?;
    ensure(notice.contains("isolated by the runtime's setting"), notice)?;
    // The manifest cannot show it (its hash is the code's): the notice is where it is said.
    let m: serde_json::Value = serde_json::from_str(Unmarked::MANIFEST).map_err(|e| e.to_string())?;
    let entry = m["tools"].as_array().and_then(|t| t.iter().find(|t| t["name"] == "read_unmarked")).cloned();
    ensure(entry.is_some_and(|e| e["policy"]["isolated"] != serde_json::json!(true)), Unmarked::MANIFEST)
}

async fn a_runtime_setting_refuses_what_it_cannot_isolate_and_cannot_remove_isolation(
    _: Arc<World>,
) -> Result<(), String> {
    let mut isolation = Isolation::new(test_settings());
    let mut refused = |name: &str| isolation.isolate_tool(name).map(|_| ()).err();
    ensure(
        matches!(refused("no_such_tool"), Some(IsolationError::Unknown(n)) if n == "no_such_tool"),
        format!("{:?}", refused("no_such_tool")),
    )?;
    let rootless = refused("read_rootless");
    ensure(
        matches!(&rootless, Some(IsolationError::NoLiteralRoot { glob, .. }) if glob == "**/*.txt"),
        format!("{rootless:?}"),
    )?;
    ensure(rootless.is_some_and(|e| e.to_string().contains("literal directory root")), "the error says what to do")?;
    // A refused tool changes nothing: it still runs in-process on a runtime without the setting.
    // A runtime whose setting does not name an `isolated` tool still isolates it: the setting
    // can only add isolation.
    let mut isolation = Isolation::new(test_settings());
    isolation.isolate_tool("read_unmarked").map_err(|e| e.to_string())?;
    let (audit, session) = unmarked(Some(isolation)).await;
    let c = call_on(&audit, &session, "read_raw", serde_json::json!({"path": path("outside/secret.txt")})).await;
    let notice = c.refused("Permission denied")?;
    ensure(!notice.contains("runtime's setting"), notice)?;
    let c = call_on(&audit, &session, "read_rootless", serde_json::json!({"path": path("outside/secret.txt")})).await;
    ensure(!c.failed && c.notice().is_err(), format!("read_rootless is not isolated: {c:?}"))
}

async fn two_runtimes_do_not_share_workers(_: Arc<World>) -> Result<(), String> {
    // Two runtimes isolate the same tool with different limits, each with a warm worker.
    let slow = test_settings().deadline(Duration::from_secs(120)).cpu_seconds(60);
    let small = Isolation::new(slow.clone().memory_bytes(192 << 20).warm_workers(1));
    let large = Isolation::new(slow.memory_bytes(1 << 30).warm_workers(1));
    small.prewarm::<memory_hog>();
    large.prewarm::<memory_hog>();
    wait_until(Duration::from_secs(20), || small.warm("memory_hog") == 1 && large.warm("memory_hog") == 1).await?;
    let (a_small, s_small) = escapes(small.clone()).await;
    let (a_large, s_large) = escapes(large.clone()).await;
    // 256 MiB fits the large runtime's worker and not the small one's.
    let c = call_on(&a_large, &s_large, "memory_hog", serde_json::json!({"mb": 256})).await;
    c.succeeded()?;
    ensure(small.warm("memory_hog") == 1, "the large runtime's call took the small runtime's worker")?;
    let c = call_on(&a_small, &s_small, "memory_hog", serde_json::json!({"mb": 256})).await;
    let notice = c.refused("ended without a result")?;
    ensure(notice.contains("limit hit: address space"), notice)
}

/// Polls `done` every 20 ms until it holds, or fails after `within`.
async fn wait_until(within: Duration, mut done: impl FnMut() -> bool) -> Result<(), String> {
    let until = std::time::Instant::now() + within;
    while !done() {
        if std::time::Instant::now() > until {
            return Err(format!("not reached within {within:?}"));
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    Ok(())
}

/// The live (not zombie) children of process `parent`, from `/proc`.
fn children(parent: u32) -> Vec<u32> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else { continue };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else { continue };
        // `pid (comm) state ppid ...`; comm may hold spaces and parentheses.
        let Some((_, rest)) = stat.rsplit_once(')') else { continue };
        let mut fields = rest.split_whitespace();
        let (state, ppid) = (fields.next(), fields.next().and_then(|p| p.parse::<u32>().ok()));
        if ppid == Some(parent) && state != Some("Z") {
            found.push(pid);
        }
    }
    found
}

/// Whether process `pid` is gone (absent, or a zombie nobody reaped).
fn gone(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat.rsplit_once(')').is_some_and(|(_, rest)| rest.split_whitespace().next() == Some("Z")),
    }
}

async fn an_idle_worker_is_retired_and_not_replaced_until_called(_: Arc<World>) -> Result<(), String> {
    let lifetime = Duration::from_millis(400);
    let isolation = Isolation::new(test_settings().warm_workers(1).idle_lifetime(lifetime));
    let before = children(std::process::id());
    isolation.prewarm::<read_raw>();
    wait_until(Duration::from_secs(20), || isolation.warm("read_raw") == 1).await?;
    let started: Vec<u32> = children(std::process::id()).into_iter().filter(|p| !before.contains(p)).collect();
    ensure(started.len() == 1, format!("expected one new worker, found {started:?}"))?;
    let worker = started[0];
    // Past its idle lifetime it is killed and reaped, and nothing replaces it.
    wait_until(Duration::from_secs(10), || gone(worker)).await.map_err(|e| format!("worker {worker} kept: {e}"))?;
    ensure(isolation.warm("read_raw") == 0, "the pool still counts a worker")?;
    tokio::time::sleep(lifetime * 2).await;
    let after: Vec<u32> = children(std::process::id()).into_iter().filter(|p| !before.contains(p)).collect();
    ensure(after.is_empty(), format!("the pool was refilled while idle: {after:?}"))?;
    // A call starts its own worker and refills the pool.
    let (audit, session) = escapes(isolation.clone()).await;
    let c = call_on(&audit, &session, "read_raw", serde_json::json!({"path": path("allowed/ok.txt")})).await;
    c.succeeded()?;
    wait_until(Duration::from_secs(20), || isolation.warm("read_raw") == 1).await
}

/// The environment variable that makes this binary a runtime with a warm worker and a worker
/// busy with a call that never returns, which the test then kills.
const ORPHAN: &str = "ISOLATE_TEST_ORPHAN";

/// The runtime the test kills: prints `READY` once its workers run, then waits.
fn orphan_parent() {
    // Two warm workers wanted: the call takes one of them (or starts its own when none is
    // ready yet), and a pool is refilled only when a call ends, so at least one stays warm
    // whichever comes first. With one, a call that found it ready left no warm worker.
    isolate::init_with(test_settings().deadline(Duration::from_secs(120)).warm_workers(2));
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    runtime.block_on(async {
        isolate::prewarm::<never_returns>();
        let w = Arc::new(World::new("orphan").await);
        let caller = w.clone();
        tokio::spawn(async move { caller.call("never_returns", serde_json::json!({})).await });
        // The busy worker, and at least one warm one.
        let _ = wait_until(Duration::from_secs(30), || children(std::process::id()).len() >= 2).await;
        tokio::time::sleep(Duration::from_millis(300)).await;
        println!("READY");
        let _ = std::io::stdout().flush();
        tokio::time::sleep(Duration::from_secs(600)).await;
    });
}

async fn a_killed_runtime_takes_its_workers_along(_: Arc<World>) -> Result<(), String> {
    let mut parent = std::process::Command::new(std::env::current_exe().unwrap())
        .env(ORPHAN, "1")
        .stdout(std::process::Stdio::piped())
        .spawn()
        .map_err(|e| e.to_string())?;
    let mut line = String::new();
    let mut out = std::io::BufReader::new(parent.stdout.take().unwrap());
    let _ = std::io::BufRead::read_line(&mut out, &mut line);
    // A warm worker is started beside the busy one; on a loaded machine it may come a moment
    // after READY (seconds, with other builds on the machine): wait (bounded, 30 s) until
    // both are there.
    let mut workers = children(parent.id());
    for _ in 0..300 {
        if workers.len() >= 2 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
        workers = children(parent.id());
    }
    let _ = parent.kill();
    let _ = parent.wait();
    ensure(line.trim() == "READY", format!("the runtime did not start its workers: {line:?}"))?;
    ensure(workers.len() >= 2, format!("expected a busy and a warm worker, found {workers:?}"))?;
    let all_gone = wait_until(Duration::from_secs(5), || workers.iter().all(|&p| gone(p))).await;
    let survivors: Vec<u32> = workers.iter().copied().filter(|&p| !gone(p)).collect();
    for &p in &survivors {
        let _ = nix::sys::signal::killpg(nix::unistd::Pid::from_raw(p as i32), nix::sys::signal::Signal::SIGKILL);
    }
    all_gone.map_err(|e| format!("workers {survivors:?} outlived their runtime: {e}"))
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
    if std::env::var_os(ORPHAN).is_some() {
        return orphan_parent();
    }
    // First: in a worker this serves the call and exits.
    isolate::init_with(test_settings());
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
