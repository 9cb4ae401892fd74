//! The runtime's side: starting (or taking a warm) worker, sending the call, waiting for the
//! result under the deadline, killing the worker's process group, and saying how it ended.

use super::protocol::{CallFrame, Confinement, FrameError, Outcome, Ready, read_frame, write_frame};
use super::{SETTINGS, Settings, WORKER_ENV, WorkerArgs};
use crate::core::ToolSpec;
use crate::tool::{CallContext, ErasedArgs, ToolError};
use nix::sys::signal::Signal;
use nix::unistd::Pid;
use serde_json::Value;
use std::collections::HashMap;
use std::io::Read;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, sync_channel};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How long a worker may take to start and confine itself.
const START_DEADLINE: Duration = Duration::from_secs(10);
/// How much of a worker's stderr is kept (to recognise a failed allocation).
const STDERR_KEPT: usize = 16 << 10;

/// A frame from a worker's stdout, read by its reader thread.
enum Frame {
    Ready(Ready),
    Outcome(Outcome),
    Failed(FrameError),
}

/// A started worker: confined and waiting for its call once `confinement` is set.
struct Worker {
    child: Child,
    stdin: Option<ChildStdin>,
    frames: Receiver<Frame>,
    stderr: Arc<Mutex<Vec<u8>>>,
    /// The thread that keeps the start of stderr; it ends when every holder of the pipe is gone.
    stderr_reader: Option<std::thread::JoinHandle<()>>,
    confinement: Confinement,
}

impl Worker {
    fn pid(&self) -> i32 {
        self.child.id() as i32
    }

    /// Kills the worker's process group (the worker and anything it started) and reaps it.
    fn kill(&mut self) -> Option<ExitStatus> {
        kill_group(self.pid());
        self.child.wait().ok()
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            self.kill();
        } else {
            // Exited: anything it left in its group goes too.
            kill_group(self.pid());
        }
    }
}

fn kill_group(pid: i32) {
    if pid > 0 {
        let _ = nix::sys::signal::killpg(Pid::from_raw(pid), Signal::SIGKILL);
        let _ = nix::sys::signal::kill(Pid::from_raw(pid), Signal::SIGKILL);
    }
}

/// Starts a worker for `spec` and waits until it is confined (or refused).
fn spawn(spec: &'static ToolSpec, settings: &Settings) -> Result<Worker, String> {
    let exe = std::env::current_exe().map_err(|e| format!("the current executable cannot be found: {e}"))?;
    let mut command = Command::new(exe);
    command.env_clear().env(WORKER_ENV, "1");
    for var in spec.policy.env_vars {
        if let Some(value) = std::env::var_os(var) {
            command.env(var, value);
        }
    }
    let mut child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        // Its own process group, which the deadline kills whole and which it cannot leave.
        .process_group(0)
        .spawn()
        .map_err(|e| format!("the worker process could not be started: {e}"))?;
    let (Some(mut stdin), Some(mut stdout), Some(mut stderr_pipe)) =
        (child.stdin.take(), child.stdout.take(), child.stderr.take())
    else {
        kill_group(child.id() as i32);
        let _ = child.wait();
        return Err("the worker's pipes could not be opened".to_owned());
    };
    let stderr = Arc::new(Mutex::new(Vec::new()));
    let kept = stderr.clone();
    let stderr_reader = std::thread::spawn(move || {
        let mut buf = [0u8; 4096];
        while let Ok(n) = stderr_pipe.read(&mut buf) {
            if n == 0 {
                break;
            }
            let mut kept = kept.lock().unwrap_or_else(|e| e.into_inner());
            let room = STDERR_KEPT.saturating_sub(kept.len());
            kept.extend_from_slice(&buf[..n.min(room)]);
        }
    });
    let (tx, frames) = sync_channel(2);
    let max = settings.max_message_bytes;
    std::thread::spawn(move || {
        let ready = match read_frame::<Ready>(&mut stdout, 64 << 10) {
            Ok(r) => Frame::Ready(r),
            Err(e) => {
                let _ = tx.send(Frame::Failed(e));
                return;
            }
        };
        if tx.send(ready).is_err() {
            return;
        }
        let _ = tx.send(match read_frame::<Outcome>(&mut stdout, max) {
            Ok(o) => Frame::Outcome(o),
            Err(e) => Frame::Failed(e),
        });
    });
    let header = super::protocol::Header {
        tool: spec.name.to_owned(),
        limits: settings.limits,
        allow_degraded: settings.allow_degraded,
        max_message_bytes: settings.max_message_bytes,
        worker_user: settings.worker_user,
    };
    let mut worker = Worker {
        child,
        stdin: None,
        frames,
        stderr,
        stderr_reader: Some(stderr_reader),
        confinement: Confinement {
            landlock_abi: None,
            user_namespace: false,
            network_namespace: false,
            seccomp: false,
            degraded: false,
            missing_roots: Vec::new(),
        },
    };
    if write_frame(&mut stdin, &header).is_err() {
        let status = worker.kill();
        return Err(format!("the worker did not take its request ({})", describe_exit(status, &worker.stderr)));
    }
    worker.stdin = Some(stdin);
    match worker.frames.recv_timeout(START_DEADLINE) {
        Ok(Frame::Ready(Ready::Confined(c))) => {
            worker.confinement = c;
            Ok(worker)
        }
        Ok(Frame::Ready(Ready::Refused(reason))) => {
            worker.kill();
            Err(format!("refused by the worker: {reason}"))
        }
        Ok(_) | Err(RecvTimeoutError::Disconnected) => {
            let status = worker.kill();
            Err(format!(
                "the worker ended before it was confined ({}); is `agents_runtime::isolate::init()` the first call in `main`?",
                describe_exit(status, &worker.stderr)
            ))
        }
        Err(RecvTimeoutError::Timeout) => {
            worker.kill();
            Err(format!(
                "the worker did not report its confinement within {} s and was killed",
                START_DEADLINE.as_secs()
            ))
        }
    }
}

/// Warm workers, per tool, each confined and waiting for one call.
static POOL: Mutex<Option<HashMap<&'static str, Pool>>> = Mutex::new(None);

#[derive(Default)]
struct Pool {
    idle: Vec<Worker>,
    filling: bool,
}

/// A warm worker for `spec`, when one is waiting.
fn take_warm(spec: &'static ToolSpec) -> Option<Worker> {
    let mut pools = POOL.lock().unwrap_or_else(|e| e.into_inner());
    pools.get_or_insert_with(HashMap::new).get_mut(spec.name).and_then(|p| p.idle.pop())
}

/// Starts warm workers for `spec` in the background until `settings.warm_workers` wait.
pub(super) fn prewarm(spec: &'static ToolSpec, settings: &'static Settings) {
    if settings.warm_workers == 0 {
        return;
    }
    {
        let mut pools = POOL.lock().unwrap_or_else(|e| e.into_inner());
        let pool = pools.get_or_insert_with(HashMap::new).entry(spec.name).or_default();
        if pool.filling || pool.idle.len() >= settings.warm_workers {
            return;
        }
        pool.filling = true;
    }
    std::thread::spawn(move || {
        loop {
            let worker = spawn(spec, settings);
            let mut pools = POOL.lock().unwrap_or_else(|e| e.into_inner());
            let pool = pools.get_or_insert_with(HashMap::new).entry(spec.name).or_default();
            match worker {
                Ok(w) if pool.idle.len() < settings.warm_workers => pool.idle.push(w),
                // Full, or the worker was refused: the next call starts (and reports) its own.
                _ => {
                    pool.filling = false;
                    return;
                }
            }
            if pool.idle.len() >= settings.warm_workers {
                pool.filling = false;
                return;
            }
        }
    });
}

/// Kills the worker whose pid it holds when the call's future is dropped before the worker
/// ended (a stopped run, the runtime's own deadline).
struct KillOnDrop(Arc<AtomicI32>);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        kill_group(self.0.swap(0, Ordering::SeqCst));
    }
}

/// Carries out an isolated call: its result, and how the worker ended (for the audit notice,
/// starting with `isolated:`).
pub(crate) async fn call(
    cx: &CallContext,
    typed: ErasedArgs,
    runtime_deadline: Duration,
) -> (Result<Value, ToolError>, String) {
    let spec = cx.spec;
    let refused = |why: String| {
        let message = format!("the isolated tool `{}` was refused and nothing ran: {why}", spec.name);
        (Err(ToolError::new(message)), format!("isolated: refused, nothing ran: {why}"))
    };
    let Some(settings) = SETTINGS.get() else {
        return refused(
            "this process did not call `agents_runtime::isolate::init()` at the top of `main`, so no worker can be started".to_owned(),
        );
    };
    let Some(WorkerArgs(args)) = typed.take::<WorkerArgs>() else {
        return refused("its arguments were not kept for a worker".to_owned());
    };
    let frame = CallFrame {
        principal: (*cx.principal).clone(),
        run_id: cx.run_id.to_string(),
        session_id: cx.session_id.to_string(),
        call_id: cx.call_id.to_string(),
        token_id: cx.approved.as_ref().map(|a| a.token_id.clone()),
        args,
    };
    let deadline = settings.deadline.min(runtime_deadline);
    let pid = Arc::new(AtomicI32::new(0));
    let guard = KillOnDrop(pid.clone());
    let job = tokio::task::spawn_blocking(move || blocking_call(spec, settings, frame, deadline, &pid));
    let outcome = match job.await {
        Ok(outcome) => outcome,
        Err(_) => refused("the thread that ran the call failed".to_owned()),
    };
    drop(guard);
    outcome
}

/// The call, on a blocking thread.
fn blocking_call(
    spec: &'static ToolSpec,
    settings: &'static Settings,
    frame: CallFrame,
    deadline: Duration,
    pid: &AtomicI32,
) -> (Result<Value, ToolError>, String) {
    let fail = |message: String, ended: String| (Err(ToolError::new(message)), ended);
    let warm = take_warm(spec);
    let worker = match warm {
        Some(w) => Ok(w),
        None => spawn(spec, settings),
    };
    // Refill in the background for the next call.
    prewarm(spec, settings);
    let mut worker = match worker {
        Ok(w) => w,
        Err(why) => {
            return fail(
                format!("the isolated tool `{}` was refused and nothing ran: {why}", spec.name),
                format!("isolated: refused, nothing ran: {why}"),
            );
        }
    };
    pid.store(worker.pid(), Ordering::SeqCst);
    let confined = worker.confinement.describe();
    let started = Instant::now();
    let sent = match worker.stdin.take() {
        Some(mut stdin) => write_frame(&mut stdin, &frame).is_ok(),
        None => false,
    };
    drop(frame);
    let received = if sent {
        worker.frames.recv_timeout(deadline.saturating_sub(started.elapsed()))
    } else {
        Err(RecvTimeoutError::Disconnected)
    };
    let result = match received {
        Ok(Frame::Outcome(outcome)) => {
            // The result is in: nothing of the tool may run on. Its process group is killed at
            // once and reaped off the call's path.
            kill_group(worker.pid());
            std::thread::spawn(move || drop(worker));
            let ended = format!(
                "isolated: result delivered, then the worker's process group was killed; confined by {confined}"
            );
            match outcome {
                Outcome::Ok(value) => (Ok(value), ended),
                Outcome::Err(message) => (Err(ToolError::new(message)), ended),
            }
        }
        Ok(Frame::Failed(FrameError::TooLarge(n))) => {
            worker.kill();
            let why = format!(
                "its result of {n} bytes is larger than the {} bytes allowed; the worker was killed",
                settings.max_message_bytes
            );
            fail(
                format!("the isolated tool `{}` failed: {why}", spec.name),
                format!("isolated: {why}; confined by {confined}"),
            )
        }
        Ok(Frame::Failed(FrameError::Malformed(e))) => {
            worker.kill();
            let why = format!("its result frame was not valid ({e}); the worker was killed");
            fail(
                format!("the isolated tool `{}` failed: {why}", spec.name),
                format!("isolated: {why}; confined by {confined}"),
            )
        }
        Err(RecvTimeoutError::Timeout) => {
            worker.kill();
            let why = format!(
                "limit hit: wall-clock deadline of {} s; the worker's process group was killed",
                deadline.as_secs_f64()
            );
            fail(
                format!("the isolated tool `{}` did not finish: {why}; its outcome is unknown", spec.name),
                format!("isolated: {why}; confined by {confined}"),
            )
        }
        Ok(_) | Err(RecvTimeoutError::Disconnected) => {
            let status = wait_exit(&mut worker, deadline.saturating_sub(started.elapsed()));
            let why = describe_exit(status, &worker.stderr);
            fail(
                format!("the isolated tool `{}` ended without a result: {why}; its outcome is unknown", spec.name),
                format!("isolated: {why}; confined by {confined}"),
            )
        }
    };
    pid.store(0, Ordering::SeqCst);
    result
}

/// The worker's exit status, waiting at most `within` (then its group is killed), once all it
/// wrote to stderr has been read.
fn wait_exit(worker: &mut Worker, within: Duration) -> Option<ExitStatus> {
    let until = Instant::now() + within;
    let status = loop {
        match worker.child.try_wait() {
            Ok(Some(status)) => {
                kill_group(worker.pid());
                break Some(status);
            }
            Ok(None) if Instant::now() < until => std::thread::sleep(Duration::from_micros(50)),
            _ => break worker.kill(),
        }
    };
    // The whole group is gone, so the pipe is closed and the reader ends.
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
            super::worker::EXIT_PROTOCOL => format!("exit {code} (the worker refused or lost its request)"),
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
