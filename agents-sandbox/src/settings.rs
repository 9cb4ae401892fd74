//! How isolated calls are confined and bounded ([`Settings`], [`Limits`]), and the variable
//! that starts the executable as a worker ([`WORKER_ENV`]).

use std::time::Duration;

/// The environment variable that starts the executable as a worker. Set only by the runtime
/// on the processes it starts; [`init`](crate::init) serves in that case and never returns.
pub const WORKER_ENV: &str = "AGENTS_ISOLATE_WORKER";

/// How isolated calls are confined and bounded. The defaults suit a tool that reads or
/// writes a few files or calls one service.
///
/// ```
/// use agents_sandbox::Settings;
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
    pub(crate) limits: Limits,
    pub(crate) deadline: Duration,
    pub(crate) allow_degraded: bool,
    pub(crate) warm_workers: usize,
    pub(crate) max_message_bytes: usize,
    pub(crate) worker_user: (u32, u32),
    pub(crate) idle_lifetime: Duration,
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
