#![doc = include_str!("../README.md")]

pub mod audit;
pub mod budget;
pub mod capability;
pub mod classifier;
pub mod events;
pub mod interceptor;
pub mod isolate;
#[cfg(feature = "mcp")]
pub mod mcp;
pub mod provenance;
pub mod provider;
pub mod run;
pub mod store;
pub mod telemetry;
pub mod token;
pub mod tool;

#[doc(hidden)]
pub mod __private;

// The unit tests declare tools with `#[tool]`, whose expansion names this crate by its path.
#[cfg(test)]
extern crate self as agents_runtime;

/// The manifest, audit record, canonical JSON and policy types this crate builds on, under their
/// own crate's name (`agents_runtime::agents_core::manifest::Manifest`, ...).
pub use agents_core;
pub use agents_core::{
    Agent, AgentSpec, Grants, ImportSpec, Limits, ParamSpec, Permission, PolicySpec, Principal, Public, Risk, RoleMap,
    Secret, SharedStr, SkillSpec, Tier, Tool, ToolSpec, WithinCeiling,
};
#[cfg(feature = "mcp")]
pub use agents_macros::mcp_import;
pub use agents_macros::{agent, permissions, tool};
#[cfg(feature = "http")]
pub use capability::NetClient;
pub use capability::{EnvAccess, FsAccess, NetAccess};
pub use run::{
    CallStatus, CallSummary, ConfirmMode, PendingDecision, ResumedCall, RunError, RunHandle, RunOutput, RunReport,
    RunResultExt, RunStatus, RunUsage, Runtime, RuntimeBuilder, Verdict,
};
pub use tool::{
    ActionTool, AppState, Approval, CallContext, Dispatch, HandoffTool, ReadTool, RegisteredTool, Registry,
    ToolContext, ToolError, linked_tools,
};

/// A boxed future that may move between threads: what the runtime's traits return (a
/// [`provider::Provider`]'s answer, an [`interceptor::Interceptor`]'s decision, ...). It is the
/// same type as `futures::future::BoxFuture`, so an implementation may name either.
pub type BoxFuture<'a, T> = std::pin::Pin<Box<dyn std::future::Future<Output = T> + Send + 'a>>;
