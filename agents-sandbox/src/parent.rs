//! The application's side: starting (or taking a warm) worker, sending the call, waiting for the
//! result under the deadline, killing the worker's process group, and saying how it ended.
//!
//! Workers are started by one long-lived thread per set of pools (the *spawner*): a worker's
//! parent-death signal fires when the thread that started it ends, so no short-lived thread
//! may start one. A call takes a warm worker (or asks the spawner for one), writes its frame on
//! the calling task, and awaits the result that the worker's reader thread hands over; the
//! spawner refills the pool once the call has its result, and retires workers left idle.

use crate::protocol::{Call, Confinement, EXIT_PROTOCOL, FrameError, Header, Outcome, Ready, read_frame, write_frame};
use crate::settings::{Settings, WORKER_ENV};
use agents_core::ToolSpec;
use nix::sys::signal::Signal;
use nix::unistd::Pid;
use serde_json::Value;
use std::collections::{HashMap, VecDeque};
use std::io::{Read, Write};
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Child, ChildStderr, ChildStdin, ChildStdout, Command, ExitStatus, Stdio};
use std::sync::{Arc, Condvar, Mutex, OnceLock};
use std::time::{Duration, Instant};
use tokio::sync::oneshot;

/// How long a worker may take to start and confine itself.
const START_DEADLINE: Duration = Duration::from_secs(10);
/// How much of a worker's stderr is kept (to recognise a failed allocation).
const STDERR_KEPT: usize = 16 << 10;
/// A call frame up to this size is written on the calling task: the worker that reported
/// itself confined is blocked reading its call, so the write completes at once. A larger one
/// is written on a blocking thread.
const INLINE_FRAME: usize = 16 << 10;

/// A started worker: confined and waiting for its call.
struct Worker {
    /// `None` once handed to the reaper.
    child: Option<Child>,
    pid: i32,
    stdin: Option<ChildStdin>,
    /// The protocol's output (the result frame), read on the calling task.
    stdout: Option<OwnedFd>,
    stderr: Arc<Mutex<Vec<u8>>>,
    /// The thread that keeps the start of stderr; it ends when every holder of the pipe is gone.
    stderr_reader: Option<std::thread::JoinHandle<()>>,
    confinement: Confinement,
    /// When it reported itself confined (a warm worker's idle time counts from here).
    since: Instant,
}

impl Drop for Worker {
    /// Kills the worker's process group (the worker and anything it started) and hands the
    /// child to the reaper thread, off the caller's path.
    fn drop(&mut self) {
        // Once reaped (`child` taken), its pid may be another process's: not signalled.
        if let Some(child) = self.child.take() {
            kill_group(self.pid);
            reap(child);
        }
    }
}

fn kill_group(pid: i32) {
    if pid > 0 {
        let _ = nix::sys::signal::killpg(Pid::from_raw(pid), Signal::SIGKILL);
        let _ = nix::sys::signal::kill(Pid::from_raw(pid), Signal::SIGKILL);
    }
}

/// Waits for killed workers on the reaper thread.
fn reap(child: Child) {
    static REAPER: OnceLock<Mutex<std::sync::mpsc::Sender<Child>>> = OnceLock::new();
    let reaper = REAPER.get_or_init(|| {
        let (tx, rx) = std::sync::mpsc::channel::<Child>();
        std::thread::Builder::new()
            .name("agents-isolate-reaper".to_owned())
            .spawn(move || {
                for mut child in rx {
                    let _ = child.wait();
                }
            })
            .expect("start the isolated workers' reaper thread");
        Mutex::new(tx)
    });
    if let Err(returned) = reaper.lock().unwrap_or_else(|e| e.into_inner()).send(child) {
        let mut child = returned.0;
        let _ = child.wait();
    }
}

/// Starts a worker for `spec` and waits until it is confined (or refused). Called on the
/// spawner thread only (see the module docs).
fn spawn(spec: &'static ToolSpec, settings: &Settings) -> Result<Worker, String> {
    let mut child = start_process(spec)?;
    let pid = child.id() as i32;
    let (Some(mut stdin), Some(stdout), Some(stderr_pipe)) =
        (child.stdin.take(), child.stdout.take(), child.stderr.take())
    else {
        kill_group(pid);
        reap(child);
        return Err("the worker's pipes could not be opened".to_owned());
    };
    let (stderr, stderr_reader) = keep_stderr(stderr_pipe);
    let mut worker = Worker {
        child: Some(child),
        pid,
        stdin: None,
        stdout: None,
        stderr,
        stderr_reader: Some(stderr_reader),
        confinement: Confinement::default(),
        since: Instant::now(),
    };
    if write_frame(&mut stdin, &header(spec, settings)).is_err() {
        let status = wait_exit(&mut worker, Duration::from_secs(1));
        return Err(format!("the worker did not take its request ({})", describe_exit(status, &worker.stderr)));
    }
    worker.stdin = Some(stdin);
    await_confinement(worker, stdout)
}

/// Starts the executable again as a worker: its environment cleared but for the variables the
/// policy declares, its standard streams piped, in a process group of its own.
fn start_process(spec: &'static ToolSpec) -> Result<Child, String> {
    let exe = std::env::current_exe().map_err(|e| format!("the current executable cannot be found: {e}"))?;
    let mut command = Command::new(exe);
    // The worker checks its parent against this pid after setting its parent-death signal.
    command.env_clear().env(WORKER_ENV, std::process::id().to_string());
    for var in spec.policy.env_vars {
        if let Some(value) = std::env::var_os(var) {
            command.env(var, value);
        }
    }
    command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        // Its own process group, which the deadline kills whole and which it cannot leave.
        .process_group(0)
        .spawn()
        .map_err(|e| format!("the worker process could not be started: {e}"))
}

/// Keeps the start of the worker's stderr (at most [`STDERR_KEPT`] bytes), read on a thread of
/// its own that ends when every holder of the pipe is gone.
fn keep_stderr(mut pipe: ChildStderr) -> (Arc<Mutex<Vec<u8>>>, std::thread::JoinHandle<()>) {
    let stderr = Arc::new(Mutex::new(Vec::new()));
    let kept = stderr.clone();
    let reader = std::thread::spawn(move || {
        let mut buf = [0u8; 4096];
        while let Ok(n) = pipe.read(&mut buf) {
            if n == 0 {
                break;
            }
            let mut kept = kept.lock().unwrap_or_else(|e| e.into_inner());
            let room = STDERR_KEPT.saturating_sub(kept.len());
            kept.extend_from_slice(&buf[..n.min(room)]);
        }
    });
    (stderr, reader)
}

/// The first frame a worker of `spec` reads: which tool, and how to confine it.
fn header(spec: &'static ToolSpec, settings: &Settings) -> Header {
    Header {
        tool: spec.name.to_owned(),
        limits: settings.limits,
        allow_degraded: settings.allow_degraded,
        max_message_bytes: settings.max_message_bytes,
        worker_user: settings.worker_user,
    }
}

/// Waits for the worker's report that it is confined (within [`START_DEADLINE`]): the worker
/// ready for its call, or why it is not.
fn await_confinement(mut worker: Worker, stdout: ChildStdout) -> Result<Worker, String> {
    let mut stdout = std::fs::File::from(OwnedFd::from(stdout));
    match read_ready(&mut stdout, Instant::now() + START_DEADLINE) {
        Ok(Ready::Confined(c)) => {
            worker.confinement = c;
            worker.stdout = Some(stdout.into());
            worker.since = Instant::now();
            Ok(worker)
        }
        Ok(Ready::Refused(reason)) => Err(format!("refused by the worker: {reason}")),
        Err(None) => Err(format!(
            "the worker did not report its confinement within {} s and was killed",
            START_DEADLINE.as_secs()
        )),
        Err(Some(_)) => {
            let status = wait_exit(&mut worker, Duration::from_secs(1));
            Err(format!(
                "the worker ended before it was confined ({}); is `agents_runtime::isolate::init()` the first call in `main`?",
                describe_exit(status, &worker.stderr)
            ))
        }
    }
}

/// Reads the worker's ready frame before `until`: `Err(None)` when the time ran out.
fn read_ready(stdout: &mut std::fs::File, until: Instant) -> Result<Ready, Option<FrameError>> {
    struct Deadlined<'a>(&'a mut std::fs::File, Instant);
    impl Read for Deadlined<'_> {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
            let left = self.1.saturating_duration_since(Instant::now());
            let timeout = PollTimeout::try_from(left).unwrap_or(PollTimeout::MAX);
            let mut fds = [PollFd::new(self.0.as_fd(), PollFlags::POLLIN)];
            match poll(&mut fds, timeout) {
                Ok(0) => Err(std::io::Error::from(std::io::ErrorKind::TimedOut)),
                Ok(_) => self.0.read(buf),
                Err(e) => Err(std::io::Error::from(e)),
            }
        }
    }
    let mut input = Deadlined(stdout, until);
    match read_frame::<Ready>(&mut input, 64 << 10) {
        Ok(ready) => Ok(ready),
        Err(_) if Instant::now() >= until => Err(None),
        Err(e) => Err(Some(e)),
    }
}

/// Reads the result frame from the worker's pipe on the calling task (no thread between the
/// worker's write and the caller), at most `max` bytes.
async fn read_outcome(pipe: tokio::net::unix::pipe::Receiver, max: usize) -> Result<Outcome, FrameError> {
    let mut len = [0u8; 4];
    let mut have = 0;
    while have < len.len() {
        have += read_some(&pipe, &mut len[have..]).await?;
    }
    let n = u32::from_le_bytes(len) as usize;
    if n > max {
        return Err(FrameError::TooLarge(n));
    }
    let mut bytes = vec![0u8; n];
    let mut have = 0;
    while have < n {
        have += read_some(&pipe, &mut bytes[have..]).await?;
    }
    serde_json::from_slice(&bytes).map_err(|e| FrameError::Malformed(e.to_string()))
}

/// The worker's result pipe, registered with the calling task's reactor; `None` when the
/// runtime has no I/O driver (tokio panics then, which is caught here).
fn result_pipe(stdout: OwnedFd) -> Option<tokio::net::unix::pipe::Receiver> {
    let register = std::panic::AssertUnwindSafe(move || tokio::net::unix::pipe::Receiver::from_owned_fd(stdout));
    std::panic::catch_unwind(register).ok()?.ok()
}

/// Some bytes (at least one) from the pipe, waiting until it is readable.
async fn read_some(pipe: &tokio::net::unix::pipe::Receiver, buf: &mut [u8]) -> Result<usize, FrameError> {
    loop {
        match pipe.try_read(buf) {
            Ok(0) => return Err(FrameError::Closed),
            Ok(n) => return Ok(n),
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                pipe.readable().await.map_err(|_| FrameError::Closed)?;
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => return Err(FrameError::Closed),
        }
    }
}

/// Warm workers per tool, and the spawner thread that starts every worker of this set.
pub(crate) struct Pools {
    shared: Arc<Shared>,
}

struct Shared {
    settings: Settings,
    state: Mutex<State>,
    wake: Condvar,
}

#[derive(Default)]
struct State {
    pools: HashMap<&'static str, Pool>,
    /// Calls that found no warm worker, waiting for one started for them.
    cold: VecDeque<(&'static ToolSpec, oneshot::Sender<Result<Worker, String>>)>,
    spawner: bool,
    closed: bool,
}

struct Pool {
    spec: &'static ToolSpec,
    /// Confined workers waiting for a call, oldest first.
    idle: VecDeque<Worker>,
    /// How many to keep waiting: the settings' number once the tool was called (or
    /// prewarmed), 0 after the pool was left idle past the idle lifetime or a start failed.
    want: usize,
}

impl Pools {
    pub(crate) fn new(settings: Settings) -> Self {
        let shared = Shared { settings, state: Mutex::new(State::default()), wake: Condvar::new() };
        Pools { shared: Arc::new(shared) }
    }

    pub(crate) fn settings(&self) -> &Settings {
        &self.shared.settings
    }

    /// Asks for `spec`'s pool to be filled (off the caller's path: the spawner does it).
    pub(crate) fn prewarm(&self, spec: &'static ToolSpec) {
        let mut state = self.shared.lock();
        let want = self.shared.settings.warm_workers;
        state.pools.entry(spec.name).or_insert_with(|| Pool { spec, idle: VecDeque::new(), want: 0 }).want = want;
        self.shared.start_spawner(&mut state);
        drop(state);
        self.shared.wake.notify_one();
    }

    /// How many workers of `tool` wait for a call.
    pub(crate) fn warm(&self, tool: &str) -> usize {
        self.shared.lock().pools.get(tool).map_or(0, |p| p.idle.len())
    }

    /// A warm worker, when one waits.
    fn take(&self, spec: &'static ToolSpec) -> Option<Worker> {
        let mut state = self.shared.lock();
        state.pools.get_mut(spec.name).and_then(|p| p.idle.pop_front())
    }

    /// A worker started for this call by the spawner.
    async fn cold(&self, spec: &'static ToolSpec) -> Result<Worker, String> {
        let (tx, rx) = oneshot::channel();
        {
            let mut state = self.shared.lock();
            state.cold.push_back((spec, tx));
            self.shared.start_spawner(&mut state);
        }
        self.shared.wake.notify_one();
        rx.await.unwrap_or_else(|_| Err("the worker spawner thread ended".to_owned()))
    }
}

impl Drop for Pools {
    /// The spawner ends and kills the waiting workers.
    fn drop(&mut self) {
        self.shared.lock().closed = true;
        self.shared.wake.notify_all();
    }
}

impl Shared {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn start_spawner(self: &Arc<Self>, state: &mut State) {
        if state.spawner {
            return;
        }
        let shared = self.clone();
        let started = std::thread::Builder::new().name("agents-isolate-spawner".to_owned()).spawn(move || shared.run());
        state.spawner = started.is_ok();
    }

    /// The spawner: serves cold starts first, then fills the pools that want workers, and
    /// retires workers idle past the idle lifetime. Never ends before the pools are dropped
    /// (a worker's parent-death signal is tied to this thread).
    fn run(&self) {
        let lifetime = self.settings.idle_lifetime;
        loop {
            let mut retired = Vec::new();
            let job = {
                let mut state = self.lock();
                loop {
                    if state.closed {
                        let pools = std::mem::take(&mut state.pools);
                        drop(state);
                        drop(pools);
                        return;
                    }
                    if let Some((spec, reply)) = state.cold.pop_front() {
                        break Some(Job::Cold(spec, reply));
                    }
                    let now = Instant::now();
                    let mut next = now + Duration::from_secs(3600);
                    for pool in state.pools.values_mut() {
                        while pool.idle.front().is_some_and(|w| now.duration_since(w.since) >= lifetime) {
                            retired.extend(pool.idle.pop_front());
                            // Left idle that long: no refill until the tool is called again.
                            pool.want = 0;
                        }
                        if let Some(w) = pool.idle.front() {
                            next = next.min(w.since + lifetime);
                        }
                    }
                    if !retired.is_empty() {
                        break None;
                    }
                    if let Some(pool) = state.pools.values().find(|p| p.idle.len() < p.want) {
                        break Some(Job::Fill(pool.spec));
                    }
                    state = self
                        .wake
                        .wait_timeout(state, next.saturating_duration_since(now))
                        .map(|(s, _)| s)
                        .unwrap_or_else(|e| e.into_inner().0);
                }
            };
            // Killed outside the lock.
            drop(retired);
            match job {
                None => {}
                Some(Job::Cold(spec, reply)) => {
                    // A worker nobody waits for any more is dropped, which kills it.
                    let _ = reply.send(spawn(spec, &self.settings));
                }
                Some(Job::Fill(spec)) => {
                    let worker = spawn(spec, &self.settings);
                    let mut state = self.lock();
                    if let Some(pool) = state.pools.get_mut(spec.name) {
                        match worker {
                            Ok(w) if pool.idle.len() < pool.want => pool.idle.push_back(w),
                            Ok(_) => {}
                            // Refused: the next call starts (and reports) its own.
                            Err(_) => pool.want = 0,
                        }
                    }
                }
            }
        }
    }
}

enum Job {
    Cold(&'static ToolSpec, oneshot::Sender<Result<Worker, String>>),
    Fill(&'static ToolSpec),
}

/// Refills the pool of the tool it names when dropped: after the call has its result, or when
/// the call's future is dropped.
struct Refill<'a>(&'a Pools, &'static ToolSpec);

impl Drop for Refill<'_> {
    fn drop(&mut self) {
        if self.0.shared.settings.warm_workers > 0 {
            self.0.prewarm(self.1);
        }
    }
}

/// How an isolated call ended: its result (the tool's value, or the text of its error) and
/// the audit notice's reason (starting with `isolated:`).
type Ended = (Result<Value, String>, String);

/// The result and the audit notice's reason of an isolated call of `tool` refused before
/// anything ran, for the reason `why`.
pub fn refused(tool: &str, why: &str) -> (Result<Value, String>, String) {
    (
        Err(format!("the isolated tool `{tool}` was refused and nothing ran: {why}")),
        format!("isolated: refused, nothing ran: {why}"),
    )
}

/// Carries out an isolated call of the tool `spec`: its result, and how the worker ended.
pub(crate) async fn call(pools: &Pools, spec: &'static ToolSpec, call: Call, runtime_deadline: Duration) -> Ended {
    let settings = pools.settings();
    let mut bytes = Vec::new();
    if let Err(e) = write_frame(&mut bytes, &call) {
        return refused(spec.name, &format!("its arguments could not be written ({e})"));
    }
    drop(call);
    let deadline = settings.deadline.min(runtime_deadline);
    let _refill = Refill(pools, spec);
    let mut worker = match pools.take(spec) {
        Some(w) => w,
        None => match pools.cold(spec).await {
            Ok(w) => w,
            Err(why) => return refused(spec.name, &why),
        },
    };
    let confined = worker.confinement.describe();
    // The result pipe joins the calling task's reactor before anything is sent, so a runtime
    // that cannot read it refuses the call with nothing run.
    let Some(pipe) = worker.stdout.take().and_then(result_pipe) else {
        let why = "the async runtime running the call has no I/O driver (build it with `enable_io` or `enable_all`)";
        return refused(spec.name, why);
    };
    let started = Instant::now();
    let received = exchange(&mut worker, bytes, pipe, settings.max_message_bytes, deadline).await;
    let ending = Ending { spec, worker, confined, deadline, started, max_message_bytes: settings.max_message_bytes };
    match received {
        Ok(Ok(outcome)) => ending.delivered(outcome),
        Ok(Err(FrameError::Closed)) => ending.without_result().await,
        Ok(Err(error)) => ending.refused_result(error),
        Err(_) => ending.past_deadline(),
    }
}

/// Sends the call's frame to the worker and reads its result frame, within `deadline` from
/// now: `Err` when the deadline passed first.
async fn exchange(
    worker: &mut Worker,
    bytes: Vec<u8>,
    pipe: tokio::net::unix::pipe::Receiver,
    max_message_bytes: usize,
    deadline: Duration,
) -> Result<Result<Outcome, FrameError>, tokio::time::error::Elapsed> {
    let started = Instant::now();
    let sent = match worker.stdin.take() {
        Some(mut stdin) if bytes.len() <= INLINE_FRAME => stdin.write_all(&bytes).is_ok(),
        Some(mut stdin) => tokio::task::spawn_blocking(move || stdin.write_all(&bytes).is_ok()).await.unwrap_or(false),
        None => false,
    };
    if !sent {
        return Ok(Err(FrameError::Closed));
    }
    let outcome = read_outcome(pipe, max_message_bytes);
    tokio::time::timeout(deadline.saturating_sub(started.elapsed()), outcome).await
}

/// A call whose frame was sent, and what the audit notice says of it: the result it ends with.
struct Ending {
    spec: &'static ToolSpec,
    worker: Worker,
    /// What confined the worker, in the notice's words.
    confined: String,
    deadline: Duration,
    started: Instant,
    max_message_bytes: usize,
}

impl Ending {
    /// The result is in: nothing of the tool may run on. Its process group is killed at once
    /// (dropping the worker) and reaped off the call's path.
    fn delivered(self, outcome: Outcome) -> Ended {
        drop(self.worker);
        let ended = format!(
            "isolated: result delivered, then the worker's process group was killed; confined by {}",
            self.confined
        );
        match outcome {
            Outcome::Ok(value) => (Ok(value), ended),
            Outcome::Err(message) => (Err(message), ended),
        }
    }

    /// A result frame over the bound, or not valid: the worker is killed.
    fn refused_result(self, error: FrameError) -> Ended {
        drop(self.worker);
        let why = match error {
            FrameError::TooLarge(n) => format!(
                "its result of {n} bytes is larger than the {} bytes allowed; the worker was killed",
                self.max_message_bytes
            ),
            FrameError::Malformed(e) => format!("its result frame was not valid ({e}); the worker was killed"),
            FrameError::Closed => "its result frame ended early; the worker was killed".to_owned(),
        };
        let message = format!("the isolated tool `{}` failed: {why}", self.spec.name);
        (Err(message), format!("isolated: {why}; confined by {}", self.confined))
    }

    /// The deadline passed first: the worker's process group is killed.
    fn past_deadline(self) -> Ended {
        drop(self.worker);
        let why = format!(
            "limit hit: wall-clock deadline of {} s; the worker's process group was killed",
            self.deadline.as_secs_f64()
        );
        let message = format!("the isolated tool `{}` did not finish: {why}; its outcome is unknown", self.spec.name);
        (Err(message), format!("isolated: {why}; confined by {}", self.confined))
    }

    /// The worker ended (or closed its pipe) without a result: how it ended, once it has, within
    /// what is left of the deadline.
    async fn without_result(self) -> Ended {
        let Ending { spec, mut worker, confined, deadline, started, .. } = self;
        let within = deadline.saturating_sub(started.elapsed());
        let why = tokio::task::spawn_blocking(move || {
            let status = wait_exit(&mut worker, within);
            describe_exit(status, &worker.stderr)
        })
        .await
        .unwrap_or_else(|_| "its exit status is unknown".to_owned());
        let message =
            format!("the isolated tool `{}` ended without a result: {why}; its outcome is unknown", spec.name);
        (Err(message), format!("isolated: {why}; confined by {confined}"))
    }
}

/// The worker's exit status, waiting at most `within` (then its group is killed), once all it
/// wrote to stderr has been read.
fn wait_exit(worker: &mut Worker, within: Duration) -> Option<ExitStatus> {
    let until = Instant::now() + within;
    let mut child = worker.child.take()?;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break Some(status),
            Ok(None) if Instant::now() < until => std::thread::sleep(Duration::from_micros(50)),
            _ => {
                kill_group(worker.pid);
                break child.wait().ok();
            }
        }
    };
    // Anything it left in its group goes too; then the pipe is closed and the reader ends.
    kill_group(worker.pid);
    if let Some(reader) = worker.stderr_reader.take() {
        let _ = reader.join();
    }
    status
}

/// How a worker ended, in the words of the audit notice.
fn describe_exit(status: Option<ExitStatus>, stderr: &Mutex<Vec<u8>>) -> String {
    let Some(status) = status else { return "its exit status is unknown".to_owned() };
    if let Some(code) = status.code() {
        return match code {
            0 => "exit 0".to_owned(),
            EXIT_PROTOCOL => format!("exit {code} (the worker refused or lost its request)"),
            101 => format!("exit {code} (the tool panicked)"),
            _ => format!("exit {code}"),
        };
    }
    let signal = status.signal().unwrap_or(0);
    let name = Signal::try_from(signal).map(|s| s.as_str()).unwrap_or("an unknown signal");
    let allocation_failed = {
        let text = stderr.lock().unwrap_or_else(|e| e.into_inner());
        String::from_utf8_lossy(&text).contains("memory allocation of")
    };
    match Signal::try_from(signal) {
        Ok(Signal::SIGXCPU) => format!("limit hit: CPU time ({name})"),
        Ok(Signal::SIGABRT) if allocation_failed => {
            format!("limit hit: address space (an allocation failed and the worker aborted, {name})")
        }
        Ok(Signal::SIGKILL) => format!("killed by {name} (the CPU time limit's hard stop, the deadline or the kernel)"),
        Ok(Signal::SIGSYS) => format!("killed by {name} (a refused system call)"),
        _ => format!("killed by {name}"),
    }
}
