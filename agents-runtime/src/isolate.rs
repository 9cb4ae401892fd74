//! Isolated tools: the third level of policy enforcement. A tool declared
//! `#[tool(..., isolated)]` runs each call in a child process that the **kernel** confines to
//! the tool's declared policy, so a body that ignores its capability handles (calls `std::fs`,
//! `std::net` or `std::process` directly, or is not Rust the team wrote) still cannot reach
//! what the manifest does not show.
//!
//! The sandbox is the `agents-sandbox` crate, re-exported here: its documentation says what
//! confines a worker (descriptors, user, namespaces, limits, Landlock, `no_new_privs`,
//! seccomp), what that holds against and what it does not, what a kernel without Landlock
//! gets, the audit notice of each call, warm workers, and isolating a tool at run time
//! ([`Isolation`]). This module adapts the runtime's tool types to it: `#[tool]` registers
//! each tool that can run in a worker, the gate hands an isolated call's checked arguments to
//! a worker, and the worker runs the tool's own handler with the same typed arguments and the
//! same `FsAccess`/`NetAccess`/`EnvAccess` handles as in-process.
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
//! A runtime built with an [`Isolation`]
//! ([`RuntimeBuilder::isolation`](crate::run::RuntimeBuilder::isolation)) has its own settings
//! and its own pools of warm workers; runtimes without one share the pools of the settings
//! given to [`init_with`].

pub use agents_sandbox::{
    DENIED_SYSCALLS, IsolatedTool, Isolation, IsolationError, Limits, METADATA_BY_DESCRIPTOR_SYSCALLS,
    METADATA_BY_PATH_SYSCALLS, Settings, WORKER_ENV, init, init_with, prewarm, settings,
};

use crate::tool::{
    AppState, ApprovedCall, CallContext, CheckedJson, Dispatch, ErasedArgs, Handler, ParseArgs, ToolError, parse_erased,
};
use agents_core::ToolSpec;
use agents_sandbox::Call;
use serde_json::Value;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

/// Carries out an isolated call with the runtime's own [`Isolation`], or the process's
/// settings when it has none; its result and the audit notice's reason (`isolated: ...`).
pub(crate) async fn call(
    isolation: Option<&Isolation>,
    cx: &CallContext,
    typed: ErasedArgs,
    runtime_deadline: Duration,
) -> (Result<Value, ToolError>, String) {
    let (result, ended) = match typed.take::<CheckedJson>() {
        Some(CheckedJson(args)) => {
            let call = Call {
                principal: (*cx.principal).clone(),
                run_id: cx.run_id.to_string(),
                session_id: cx.session_id.to_string(),
                call_id: cx.call_id.to_string(),
                token_id: cx.approved.as_ref().map(|a| a.token_id.clone()),
                args,
            };
            agents_sandbox::call_isolated(isolation, cx.spec, call, runtime_deadline).await
        }
        None => agents_sandbox::refused(cx.spec.name, "its arguments were not kept for a worker"),
    };
    (result.map_err(ToolError::new), ended)
}

/// The registration of the tool `T` for a worker process, which finds it by name
/// (`#[tool]` generates it for each tool with an execution path that does not take the agent
/// parameter); not for other code.
#[doc(hidden)]
pub const fn isolated_tool<T: Dispatch<()>>() -> IsolatedTool {
    IsolatedTool::new(&T::SPEC, run_in_worker::<T>)
}

/// Runs the tool `T` on a call in its worker (generic only to name the tool's parse and
/// handler: the work is [`run_call`]'s).
fn run_in_worker<T: Dispatch<()>>(call: Call) -> Pin<Box<dyn Future<Output = Result<Value, String>>>> {
    run_call(&T::SPEC, parse_erased::<T>, <T as Dispatch<()>>::handler, call)
}

/// Parses the call's arguments as the tool's own parse does, builds its context as the gate
/// would (no application state: it stays in its process) and runs the tool's handler.
fn run_call(
    spec: &'static ToolSpec,
    parse: ParseArgs,
    handler: fn() -> Handler<()>,
    call: Call,
) -> Pin<Box<dyn Future<Output = Result<Value, String>>>> {
    Box::pin(async move {
        let typed = match parse(&call.args) {
            Ok(t) => t,
            Err(e) => return Err(format!("invalid arguments for `{}`: {e}", spec.name)),
        };
        let cx = CallContext {
            principal: Arc::new(call.principal),
            run_id: call.run_id.as_str().into(),
            session_id: call.session_id.as_str().into(),
            call_id: call.call_id.as_str().into(),
            spec,
            invoker: None,
            // The runtime redeemed the token before it started this call: the handler's witness
            // is minted from this record, as in-process.
            approved: call.token_id.map(|token_id| ApprovedCall {
                token_id,
                tool: spec.name,
                nonce: crate::token::random_bytes::<16>(),
            }),
            // The application's state stays in its process.
            state: AppState::default(),
            imports: None,
            listed_sha256: std::sync::OnceLock::new(),
        };
        let run = match handler() {
            Handler::Read(f) | Handler::Action(f) => f,
            Handler::Handoff(_) => return Err("a handoff tool has no execution path".to_owned()),
        };
        run(&cx, typed).await.map_err(|e| e.message)
    })
}
