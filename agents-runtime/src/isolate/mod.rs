//! Isolated tools: the third level of policy enforcement. A tool declared
//! `#[tool(..., isolated)]` runs each call in a child process that the **kernel** confines to
//! the tool's declared policy, so a body that ignores its capability handles (calls `std::fs`,
//! `std::net` or `std::process` directly, or is not Rust the team wrote) still cannot reach
//! what the manifest does not show.
//!
//! # Using it
//!
//! The worker is the application's own executable, started again in a worker mode. Call
//! [`init`] (or [`init_with`]) first thing in `main`, before any thread or runtime starts: in a
//! worker it confines the process, serves one call and exits (it never returns); in the
//! application it records that workers are available and returns. A runtime whose process did
//! not call it refuses every isolated call (audited; nothing runs), so an application's `main`
//! is never started in place of a worker by accident.
//!
//! ```no_run
//! use agents_runtime::{isolate, tool};
//!
//! /// Reads a document the applicant uploaded.
//! #[tool(permission = public, isolated, policy(fs(read = ["/srv/kyc/uploads/**"])))]
//! async fn read_upload(name: String) -> Result<String, String> {
//!     std::fs::read_to_string(format!("/srv/kyc/uploads/{name}")).map_err(|e| e.to_string())
//! }
//!
//! fn main() {
//!     // First thing: a worker process serves its call here and exits.
//!     isolate::init_with(isolate::Settings::default().warm_workers(2));
//!     // ... build the runtime and run agents as usual; `read_upload` runs confined.
//! }
//! ```
//!
//! # What confines a worker (in this order, before the tool's code runs)
//!
//! **Descriptors** first: the worker closes every descriptor it inherited above the three
//! standard streams (listed in `/proc/self/fd`), keeping only its duplicate of stdout for the
//! protocol, so a file, socket or pipe the application left open without close-on-exec is not
//! within the tool's reach. A worker that cannot list them refuses to run the tool. The audit
//! notice counts them (`inherited descriptors closed (n)`).
//!
//! 0. **User**: when the application runs as root, the worker first becomes an unprivileged
//!    user ([`Settings::worker_user`], `nobody` by default): the kernel exempts root from the
//!    process limit.
//! 1. **Namespaces**: a new user namespace (the worker holds no capability in the parent's
//!    namespace, even when the application runs as root, so it cannot raise its limits back)
//!    and, when the policy declares no host, a new network namespace (no interface but a
//!    loopback that is down: no TCP, no UDP, no DNS).
//! 2. **Resource limits** ([`Settings`]): CPU seconds (`SIGKILL` past them), address space,
//!    open files, processes (threads count), file size, no core dumps.
//! 3. **Landlock** (crate `landlock`, the kernel's own unprivileged sandbox): every filesystem
//!    access right the kernel knows is handled, and only these are granted: read (files and
//!    directories) beneath each `fs.read` glob's literal root
//!    ([`agents_core::policy::glob_literal_root`]), read and write beneath each `fs.write`
//!    root, and, when hosts are declared, reading the resolver's files (`/etc/hosts`,
//!    `/etc/resolv.conf`, `/etc/nsswitch.conf`, `/etc/gai.conf`, `/etc/host.conf`). Nothing may
//!    be executed. TCP connect is allowed only to the declared hosts' ports; TCP bind never.
//!    Where the kernel has it (ABI 6), signals and abstract Unix sockets are scoped to the
//!    worker. ABI 4 (filesystem and TCP rules) is required.
//! 4. **No new privileges** (`PR_SET_NO_NEW_PRIVS`).
//! 5. **seccomp** (crate `seccompiler`): a deny list, answered `EPERM`, of calls no tool needs:
//!    [`DENIED_SYSCALLS`] (tracing, mounting, namespaces, modules, kexec, BPF, keyrings,
//!    perf, raising limits, leaving the process group, `execve`), `clone` with any namespace
//!    flag, and `clone3` answered `ENOSYS` (its flags cannot be read by a filter; the C
//!    library then falls back to `clone`). Then what Landlock has no right for:
//!    - **Metadata** (mode, owner, times, extended attributes). A filter cannot read a path,
//!      so the rule is by the call's form: every change **by path**
//!      ([`METADATA_BY_PATH_SYSCALLS`]: `chmod`, `chown`, `utimes`, `utimensat` with a path,
//!      `setxattr`, `removexattr`, their `l`, `at` and `at2` forms, `file_setattr`) is refused
//!      to every tool, even beneath a write root, since the same call could name a file
//!      outside the roots that the worker's user owns. A change **through a descriptor**
//!      ([`METADATA_BY_DESCRIPTOR_SYSCALLS`]: `fchmod`, `fchown`, `futimens`, `fsetxattr`,
//!      `fremovexattr`, and `ioctl` setting attribute flags, `FS_IOC_SETFLAGS` and
//!      `FS_IOC_FSSETXATTR`) is refused unless the policy declares a write root: a descriptor
//!      reaches only a file Landlock let the worker open (these calls refuse an `O_PATH`
//!      one), and a tool that writes needs them (`std::fs::copy` sets the copy's mode with
//!      `fchmod`). The notice says `metadata changes refused` or `metadata changes by path
//!      refused`.
//!    - **Unix sockets**: `socket(AF_UNIX, ...)` is refused to every tool, so it connects to
//!      no socket file (Landlock does not govern `connect` on one) and no abstract name
//!      (which Landlock's ABI 6 scope refuses as well, where the kernel has it). The policy has
//!      no declaration that grants a Unix socket. `socketpair` stays allowed: its two ends are
//!      joined to each other and reach nothing outside the worker (the async runtime's signal
//!      driver uses one).
//!
//! The parent keeps a **wall-clock deadline** (the smaller of [`Settings::deadline`] and the
//! runtime's per-call deadline) and kills the worker's whole process group when it passes;
//! the worker cannot leave that group (`setsid`/`setpgid` are denied). Arguments go in and the
//! result comes out as length-prefixed JSON over the worker's stdin and a duplicate of its
//! stdout (the tool's own stdout is sent to stderr), each bounded by
//! [`Settings::max_message_bytes`]. The environment is cleared but for the variables the
//! policy declares. Inside, the tool receives the same typed arguments and the same
//! `FsAccess`/`NetAccess`/`EnvAccess` handles as in-process.
//!
//! # What it holds against, and what it does not
//!
//! Against the tool's own code (any code, `unsafe` included, running in the worker): it reaches
//! no file outside its globs' roots (symlinks, `/proc/self/root`, `..` and `chdir` resolve to
//! the same refused objects), no TCP port outside the declared ones, runs no other program,
//! cannot trace or signal other processes, and is killed past its CPU, memory, process and
//! time limits. It changes no file's mode, owner, times or extended attributes outside its
//! roots (nor inside them, unless it declares a write root, and then only through a descriptor
//! of a file it could open), connects to no Unix socket, and holds no descriptor of the
//! application's process but its three standard streams (pipes to the runtime).
//!
//! Not held by the kernel: the glob's shape below its root (`/srv/*.pdf` lets the
//! kernel grant all of `/srv`; the handle narrows it for cooperating code), the host name
//! (Landlock rules are per port: a declared `api.example.com:443` lets the worker connect to
//! any address on port 443), UDP when hosts are declared, and the CPU time it burns within
//! the limits. A tool with a write root may change the metadata (attribute flags included),
//! through a descriptor, of a file beneath any of its roots, its read roots included, that its
//! user owns. A tool that needs a Unix socket cannot run isolated. Calls newer than this list
//! (a kernel that adds another way to change metadata) are not refused until they are added.
//! A kernel bug is outside the guarantee.
//!
//! # Kernels without Landlock
//!
//! A worker that cannot set Landlock's ABI 4 rules (or create its user namespace) refuses to
//! run the tool: the call fails, audited, and nothing runs. Only an application that calls
//! [`Settings::allow_degraded`] runs it with what the kernel has (seccomp, limits), and the
//! audit notice of every such call says `degraded`. Never silently unconfined.
//!
//! # Audit
//!
//! Each isolated call gets a `notice` record, before its `executed` or `failed` record, whose
//! reason starts with `isolated:` and says how the worker ended (`exit 0`, the limit hit, the
//! signal, a refusal) and what confined it (Landlock ABI, namespaces, seccomp).
//!
//! # Warm workers
//!
//! Starting a worker (exec, confinement) costs milliseconds; [`Settings::warm_workers`] keeps
//! that many started and confined workers per isolated tool, each blocked reading its call. A
//! worker still serves **one** call and exits, so no state (and no data of another user)
//! passes from one call to the next; the pool only moves the start out of the call's path.
//! The call's frame is written and its result read on the calling task (no thread between
//! them); the pool is refilled once the call has its result.
//!
//! Workers do not outlive their purpose:
//!
//! - **Idle lifetime** ([`Settings::idle_lifetime`], 60 s): a warm worker no call took within
//!   it is killed, and its tool's pool is refilled only when the tool is called again.
//! - **Parent death**: each worker sets its parent-death signal (`SIGKILL`) and then checks
//!   that its parent is still the runtime that started it (a runtime that died before the
//!   signal was set is caught by that check). All workers are started by one long-lived
//!   thread per set of pools, since the kernel ties the signal to the starting thread.
//!   Processes a tool body forks are not covered by the signal (they stay confined, in the
//!   worker's process group, and within its limits).
//! - **Per runtime**: a runtime built with [`Isolation`]
//!   ([`RuntimeBuilder::isolation`](crate::run::RuntimeBuilder::isolation)) has its own
//!   settings and its own pools: two runtimes never share a worker. Runtimes without one share
//!   the pools of the settings given to [`init_with`].
//!
//! # Isolating a tool at run time
//!
//! [`Isolation::isolate_tool`] isolates a tool its code does not mark (third-party or
//! generated code the team decides not to trust). It can only add isolation, never remove it;
//! the manifest (fixed by the code) does not show it, so each such call's audit notice says
//! `isolated by the runtime's setting`.

mod confine;
mod parent;
mod protocol;
mod worker;

pub use confine::{DENIED_SYSCALLS, METADATA_BY_DESCRIPTOR_SYSCALLS, METADATA_BY_PATH_SYSCALLS};

use crate::tool::{Dispatch, ErasedArgs, Handler};
use agents_core::{Tool, ToolSpec};
use serde_json::Value;
use std::sync::OnceLock;
use std::time::Duration;

/// The environment variable that starts the executable as a worker. Set only by the runtime
/// on the processes it starts; [`init`] serves in that case and never returns.
pub const WORKER_ENV: &str = "AGENTS_ISOLATE_WORKER";

/// How isolated calls are confined and bounded. The defaults suit a tool that reads or
/// writes a few files or calls one service.
///
/// ```
/// use agents_runtime::isolate::Settings;
/// use std::time::Duration;
///
/// let s = Settings::default()
///     .deadline(Duration::from_secs(10))
///     .cpu_seconds(5)
///     .memory_bytes(512 << 20)
///     .warm_workers(2);
/// assert_eq!(s.limits().cpu_seconds, 5);
/// ```
#[derive(Debug, Clone)]
pub struct Settings {
    limits: Limits,
    deadline: Duration,
    allow_degraded: bool,
    warm_workers: usize,
    max_message_bytes: usize,
    worker_user: (u32, u32),
    idle_lifetime: Duration,
}

/// The resource limits set in a worker before the tool runs (`setrlimit`, hard and soft).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Limits {
    /// CPU time in seconds (`RLIMIT_CPU`): `SIGXCPU` at the limit, `SIGKILL` one second later.
    pub cpu_seconds: u64,
    /// Address space in bytes (`RLIMIT_AS`): an allocation beyond it fails.
    pub memory_bytes: u64,
    /// Open file descriptors (`RLIMIT_NOFILE`).
    pub open_files: u64,
    /// Processes and threads (`RLIMIT_NPROC`, counted in the worker's user namespace).
    pub processes: u64,
    /// Largest file the worker may write, in bytes (`RLIMIT_FSIZE`).
    pub file_bytes: u64,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            limits: Limits {
                cpu_seconds: 10,
                memory_bytes: 1 << 30,
                open_files: 64,
                processes: 16,
                file_bytes: 64 << 20,
            },
            deadline: Duration::from_secs(30),
            allow_degraded: false,
            warm_workers: 0,
            max_message_bytes: 16 << 20,
            worker_user: (65534, 65534),
            idle_lifetime: Duration::from_secs(60),
        }
    }
}

impl Settings {
    /// The wall-clock deadline of one call (default 30 s); the runtime's own per-call deadline
    /// applies too, and the smaller one wins. Past it the worker's process group is killed.
    pub fn deadline(mut self, deadline: Duration) -> Self {
        self.deadline = deadline;
        self
    }
    /// CPU seconds per call (default 10).
    pub fn cpu_seconds(mut self, seconds: u64) -> Self {
        self.limits.cpu_seconds = seconds.max(1);
        self
    }
    /// Address space in bytes (default 1 GiB).
    pub fn memory_bytes(mut self, bytes: u64) -> Self {
        self.limits.memory_bytes = bytes;
        self
    }
    /// Open file descriptors (default 64).
    pub fn open_files(mut self, n: u64) -> Self {
        self.limits.open_files = n;
        self
    }
    /// Processes and threads (default 16).
    pub fn processes(mut self, n: u64) -> Self {
        self.limits.processes = n.max(1);
        self
    }
    /// Largest file a worker may write (default 64 MiB).
    pub fn file_bytes(mut self, bytes: u64) -> Self {
        self.limits.file_bytes = bytes;
        self
    }
    /// Runs isolated tools on a kernel without Landlock ABI 4 or user namespaces, with what
    /// the kernel has (seccomp, limits); every such call's audit notice says `degraded`.
    /// Off by default: such a call is refused and nothing runs.
    pub fn allow_degraded(mut self, allow: bool) -> Self {
        self.allow_degraded = allow;
        self
    }
    /// How many started and confined workers to keep waiting per isolated tool (default 0:
    /// a worker is started for each call). Each still serves one call.
    pub fn warm_workers(mut self, n: usize) -> Self {
        self.warm_workers = n;
        self
    }
    /// The largest arguments or result, in bytes of JSON, that cross the pipe (default 16 MiB);
    /// a larger result fails the call and the worker is killed.
    pub fn max_message_bytes(mut self, bytes: usize) -> Self {
        self.max_message_bytes = bytes;
        self
    }
    /// The user and group (numeric ids) a worker runs as when the application runs as root
    /// (default `65534`, `nobody`/`nogroup`): the kernel exempts root from the process limit,
    /// and a worker should not own root's files. The declared roots must then be readable
    /// (and the write roots writable) by that user. An application that does not run as root
    /// keeps its own user in its workers.
    pub fn worker_user(mut self, uid: u32, gid: u32) -> Self {
        self.worker_user = (uid, gid);
        self
    }
    /// How long a warm worker may wait for a call (default 60 s). Past it the worker is killed,
    /// and its tool's pool is not refilled until the tool is called again: a tool nobody calls
    /// keeps no process alive.
    pub fn idle_lifetime(mut self, idle: Duration) -> Self {
        self.idle_lifetime = idle.max(Duration::from_millis(1));
        self
    }
    /// The resource limits.
    pub fn limits(&self) -> Limits {
        self.limits
    }
}

/// What [`init`] recorded in the application process.
static SETTINGS: OnceLock<Settings> = OnceLock::new();

/// The warm workers of runtimes that use the settings of [`init`].
fn default_pools() -> Option<&'static parent::Pools> {
    static POOLS: OnceLock<parent::Pools> = OnceLock::new();
    let settings = SETTINGS.get()?;
    Some(POOLS.get_or_init(|| parent::Pools::new(settings.clone())))
}

/// [`init_with`] the default [`Settings`].
pub fn init() {
    init_with(Settings::default());
}

/// Call first thing in `main`, before any thread or async runtime starts.
///
/// - In a worker process (started by the runtime, with [`WORKER_ENV`] set): confines the
///   process, runs the one call it is sent, writes the result and exits. **Never returns.**
/// - Otherwise: records `settings` (the first call wins) and that workers are available, and
///   returns. Isolated tools are refused in a process that did not call it.
pub fn init_with(settings: Settings) {
    if std::env::var_os(WORKER_ENV).is_some() {
        worker::serve();
    }
    let _ = SETTINGS.set(settings);
}

/// The settings [`init`] recorded, or `None` when this process did not call it.
pub fn settings() -> Option<&'static Settings> {
    SETTINGS.get()
}

/// Starts the warm workers of `T` now (they are otherwise started at its first call), so the
/// first call does not wait for one. Does nothing without [`init`] or warm workers.
pub fn prewarm<T: Tool>() {
    if let Some(pools) = default_pools() {
        pools.prewarm(&T::SPEC);
    }
}

/// Carries out an isolated call with the runtime's own [`Isolation`], or the process's
/// settings when it has none; its result and the audit notice's reason (`isolated: ...`).
pub(crate) async fn call(
    isolation: Option<&Isolation>,
    cx: &crate::tool::CallContext,
    typed: ErasedArgs,
    runtime_deadline: Duration,
) -> (Result<Value, crate::tool::ToolError>, String) {
    let pools = match isolation {
        Some(i) if SETTINGS.get().is_some() => Some(&*i.pools),
        Some(_) => None,
        None => default_pools(),
    };
    let Some(pools) = pools else {
        let why = "this process did not call `agents_runtime::isolate::init()` at the top of `main`, so no worker can be started";
        let message = format!("the isolated tool `{}` was refused and nothing ran: {why}", cx.spec.name);
        return (Err(crate::tool::ToolError::new(message)), format!("isolated: refused, nothing ran: {why}"));
    };
    let (result, mut ended) = parent::call(pools, cx, typed, runtime_deadline).await;
    if !cx.spec.policy.isolated {
        ended.push_str(
            "; isolated by the runtime's setting (the tool is not marked `isolated`, so its manifest does not show it)",
        );
    }
    (result, ended)
}

/// A runtime's own isolation ([`RuntimeBuilder::isolation`](crate::run::RuntimeBuilder::isolation)):
/// its [`Settings`], its own warm workers (two runtimes never share a worker), and the tools
/// it isolates although their code does not mark them `isolated`.
///
/// Isolation can only be **added** at run time: a tool marked `isolated` in code is isolated
/// by every runtime, and nothing here can take that away. A tool isolated by this setting
/// alone is not shown as isolated by its manifest (whose hash is fixed by the code), so every
/// such call's audit notice says that the runtime's setting isolated it.
///
/// ```no_run
/// use agents_runtime::isolate::{Isolation, Settings};
///
/// // In `main`, after `agents_runtime::isolate::init()`:
/// let mut isolation = Isolation::new(Settings::default().warm_workers(2));
/// isolation.isolate_tool("convert_document").expect("an isolable tool");
/// // Runtime::builder(audit, provider).isolation(isolation).build()
/// ```
#[derive(Clone)]
pub struct Isolation {
    pools: std::sync::Arc<parent::Pools>,
    added: Vec<&'static str>,
}

impl std::fmt::Debug for Isolation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Isolation").field("settings", self.pools.settings()).field("added", &self.added).finish()
    }
}

/// Why [`Isolation::isolate_tool`] refused a tool (nothing was changed).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum IsolationError {
    /// No tool of that name can run in a worker of this executable.
    #[error(
        "no tool `{0}` in this executable can be isolated: check the name; a handoff tool, or one that takes the agent parameter to call other tools, cannot run in a worker process"
    )]
    Unknown(String),
    /// Two linked tools have that name: a worker could not tell which to run.
    #[error("two tools in this executable are named `{0}`: rename one before isolating it")]
    Ambiguous(String),
    /// A glob of the tool's policy has no literal directory root for the kernel's rules.
    #[error(
        "tool `{tool}`: the glob `{glob}` has no literal directory root, so the kernel cannot confine it; begin the glob with an absolute directory"
    )]
    NoLiteralRoot {
        /// The tool.
        tool: String,
        /// The glob.
        glob: String,
    },
    /// A host of the tool's policy has no port for the kernel's per-port rules.
    #[error(
        "tool `{tool}`: the host `{host}` has no port, and the kernel's network rules are per TCP port; declare one, e.g. `{host}:443`"
    )]
    NoPort {
        /// The tool.
        tool: String,
        /// The host.
        host: String,
    },
}

impl Isolation {
    /// A runtime's isolation with `settings` and its own pools of warm workers. The process
    /// must still call [`init`] first thing in `main` (that is what lets it serve as a worker).
    pub fn new(settings: Settings) -> Self {
        Isolation { pools: std::sync::Arc::new(parent::Pools::new(settings)), added: Vec::new() }
    }

    /// Also isolates the tool `name`, which its code does not mark `isolated`. Refused when
    /// no single tool of that name can run in a worker, or when its policy cannot be expressed
    /// as the kernel's rules (the same checks `#[tool(isolated)]` makes at compile time); a
    /// refusal changes nothing. A runtime built earlier keeps what it was given.
    pub fn isolate_tool(&mut self, name: &str) -> Result<&mut Self, IsolationError> {
        let tool = unique(name)?;
        let policy = &tool.spec.policy;
        for glob in policy.fs_read.iter().chain(policy.fs_write) {
            if agents_core::policy::glob_literal_root(glob).is_none() {
                return Err(IsolationError::NoLiteralRoot { tool: name.to_owned(), glob: (*glob).to_owned() });
            }
        }
        for host in policy.net_hosts {
            if host.rsplit_once(':').and_then(|(_, p)| p.parse::<u16>().ok()).is_none() {
                return Err(IsolationError::NoPort { tool: name.to_owned(), host: (*host).to_owned() });
            }
        }
        if !policy.isolated && !self.added.contains(&tool.spec.name) {
            self.added.push(tool.spec.name);
        }
        Ok(self)
    }

    /// Whether this runtime isolates the tool of `spec` (marked in code, or added here).
    pub fn isolates(&self, spec: &ToolSpec) -> bool {
        spec.policy.isolated || self.adds(spec.name)
    }

    /// Whether `tool` is isolated by this setting although its code does not mark it.
    pub(crate) fn adds(&self, tool: &str) -> bool {
        self.added.contains(&tool)
    }

    /// Starts the warm workers of `T` now (they are otherwise started after its first call).
    pub fn prewarm<T: Tool>(&self) {
        if SETTINGS.get().is_some() && self.isolates(&T::SPEC) {
            self.pools.prewarm(&T::SPEC);
        }
    }

    /// How many started and confined workers of `tool` wait for a call.
    pub fn warm(&self, tool: &str) -> usize {
        self.pools.warm(tool)
    }
}

/// The one tool named `name` that can run in a worker of this executable.
fn unique(name: &str) -> Result<&'static IsolatedTool, IsolationError> {
    let mut found = inventory::iter::<IsolatedTool>.into_iter().filter(|t| t.spec.name == name);
    match (found.next(), found.next()) {
        (Some(tool), None) => Ok(tool),
        (Some(_), Some(_)) => Err(IsolationError::Ambiguous(name.to_owned())),
        (None, _) => Err(IsolationError::Unknown(name.to_owned())),
    }
}

/// A tool that can run in a worker, as the worker finds it by name. `#[tool]` registers each
/// tool that has an execution path and does not take the agent parameter; not for other code.
#[doc(hidden)]
pub struct IsolatedTool {
    pub(crate) spec: &'static ToolSpec,
    pub(crate) parse: fn(&Value) -> Result<ErasedArgs, String>,
    pub(crate) handler: fn() -> Handler<()>,
}

impl IsolatedTool {
    /// The registration of the tool `T` (`#[tool(isolated)]` generates the call).
    pub const fn of<T: Dispatch<()>>() -> Self {
        IsolatedTool { spec: &T::SPEC, parse: crate::tool::parse_erased::<T>, handler: <T as Dispatch<()>>::handler }
    }
}

inventory::collect!(IsolatedTool);

/// The registration of the tool `name` linked into this executable, when exactly one has it.
fn registered(name: &str) -> Option<&'static IsolatedTool> {
    unique(name).ok()
}
