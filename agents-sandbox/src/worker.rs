//! The worker process: reads which tool to serve, confines itself, answers "ready", reads one
//! call, runs the tool on a single-threaded async runtime, writes the outcome
//! and exits.

use crate::confine::{confine, tie_to_parent};
use crate::protocol::{Call, EXIT_PROTOCOL, Header, Outcome, Ready, read_frame, write_frame};
use crate::settings::WORKER_ENV;
use crate::tools::{IsolatedTool, registered};
use std::io::Write;
use std::os::fd::{AsRawFd, IntoRawFd, OwnedFd, RawFd};

/// What the model and the record are told when the tool panicked (its own text may quote the
/// arguments; it goes to the worker's stderr only).
const PANICKED: &str = "panicked: the tool failed unexpectedly and its message is withheld; its outcome is unknown";

/// Serves one call and exits; never returns.
pub(crate) fn serve() -> ! {
    // Dies with the runtime: the kernel kills it when the thread that started it ends.
    if tie_to_parent().is_err() {
        std::process::exit(EXIT_PROTOCOL);
    }
    // The protocol's output is a duplicate of stdout; the tool's own stdout goes to stderr, so
    // nothing the tool prints can pass for a frame.
    let out: OwnedFd = match nix::unistd::dup(std::io::stdout()) {
        Ok(fd) => fd,
        Err(_) => std::process::exit(EXIT_PROTOCOL),
    };
    if nix::unistd::dup2_stdout(std::io::stderr()).is_err() {
        std::process::exit(EXIT_PROTOCOL);
    }
    // Nothing the runtime's process left open without close-on-exec (a log file, a socket, a
    // pipe to another program) stays within the tool's reach: only the three standard streams
    // and the protocol's output are kept.
    let inherited_closed = match close_inherited(out.as_raw_fd()) {
        Ok(n) => n,
        Err(reason) => {
            let _ = write_frame(&mut std::fs::File::from(out), &Ready::Refused(reason));
            std::process::exit(EXIT_PROTOCOL);
        }
    };
    let mut out = std::fs::File::from(out);
    let mut input = std::io::stdin().lock();
    let header: Header = match read_frame(&mut input, 64 << 10) {
        Ok(h) => h,
        Err(_) => {
            eprintln!("{}: this process was started as an isolated-tool worker without a valid request", WORKER_ENV);
            std::process::exit(EXIT_PROTOCOL);
        }
    };
    let Some(tool) = registered(&header.tool) else {
        let _ =
            write_frame(&mut out, &Ready::Refused(format!("no isolated tool `{}` in this executable", header.tool)));
        std::process::exit(EXIT_PROTOCOL);
    };
    match confine(tool.spec, &header) {
        Ok(mut confinement) => {
            confinement.inherited_closed = inherited_closed;
            if write_frame(&mut out, &Ready::Confined(confinement)).is_err() {
                std::process::exit(EXIT_PROTOCOL);
            }
        }
        Err(reason) => {
            let _ = write_frame(&mut out, &Ready::Refused(reason));
            std::process::exit(EXIT_PROTOCOL);
        }
    }
    // Confined. The async runtime is built before the call arrives (a warm worker waits
    // ready to run); from here on, the code may be hostile.
    let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(r) => r,
        Err(e) => {
            let _ = write_frame(&mut out, &Outcome::Err(format!("the worker could not start its async runtime: {e}")));
            std::process::exit(EXIT_PROTOCOL);
        }
    };
    warm_up(&runtime);
    let call: Call = match read_frame(&mut input, header.max_message_bytes) {
        Ok(c) => c,
        // The runtime closed the pipe: a warm worker it no longer needs.
        Err(_) => std::process::exit(0),
    };
    drop(input);
    let outcome = run(tool, call, &runtime);
    let written = write_frame(&mut out, &outcome);
    let _ = out.flush();
    std::process::exit(if written.is_ok() { 0 } else { EXIT_PROTOCOL });
}

/// A descriptor number the worker inherited and nothing in it owns, handed to `close` once.
struct Inherited(RawFd);

impl IntoRawFd for Inherited {
    fn into_raw_fd(self) -> RawFd {
        self.0
    }
}

/// Closes every descriptor of this process above 2 but `keep`; how many it closed. Called
/// first thing in the worker, while nothing in it holds a descriptor but `keep` (the listing's
/// own descriptor is closed by then, and its number answers `EBADF`). The list comes from
/// `/proc/self/fd`; a worker that cannot read it refuses to run the tool.
fn close_inherited(keep: RawFd) -> Result<usize, String> {
    let listed: Vec<RawFd> = std::fs::read_dir("/proc/self/fd")
        .map_err(|e| {
            format!("the worker cannot list its inherited descriptors in /proc/self/fd ({e}), so it cannot close them")
        })?
        .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse().ok())
        .collect();
    let mut closed = 0;
    for fd in listed.into_iter().filter(|&fd| fd > 2 && fd != keep) {
        // Linux releases the number whatever `close` answers, but `EBADF` (not open).
        if nix::unistd::close(Inherited(fd)) != Err(nix::errno::Errno::EBADF) {
            closed += 1;
        }
    }
    Ok(closed)
}

/// Runs once what every call runs (reading a frame, the async runtime, writing a frame) on
/// made-up data, so that a warm worker has touched that code and memory before its call comes:
/// the first touch of each page of a fresh process costs a fault, which would otherwise fall
/// on the call's path.
fn warm_up(runtime: &tokio::runtime::Runtime) {
    let sample = Call {
        principal: agents_core::Principal::new("user", "org", "role"),
        run_id: "run".to_owned(),
        session_id: "session".to_owned(),
        call_id: "call".to_owned(),
        token_id: None,
        args: serde_json::json!({"text": "warm up", "n": 1, "list": [true, null, 1.5]}),
    };
    let mut bytes = Vec::new();
    if write_frame(&mut bytes, &sample).is_ok() {
        let _ = read_frame::<Call>(&mut bytes.as_slice(), bytes.len());
    }
    runtime.block_on(async { tokio::task::yield_now().await });
    let mut out = Vec::new();
    let _ = write_frame(&mut out, &Outcome::Ok(serde_json::json!({"warm": "up"})));
    std::hint::black_box(out);
}

/// Runs the tool on the call, its panic caught.
fn run(tool: &IsolatedTool, call: Call, runtime: &tokio::runtime::Runtime) -> Outcome {
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| runtime.block_on((tool.run)(call))));
    match result {
        Ok(Ok(value)) => Outcome::Ok(value),
        Ok(Err(message)) => Outcome::Err(message),
        Err(_) => Outcome::Err(PANICKED.to_owned()),
    }
}
