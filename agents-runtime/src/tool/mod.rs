//! The execution side of tools: contexts, the confirmation witness, and the per-tier traits
//! that `#[tool]` implements. Action tools run only with an [`Approval`], which only this
//! crate can mint; handoff tools implement no execution trait at all.
//!
//! One file per topic: the error a tool returns (`error`), the call's context and what the
//! runtime supplies to a tool (`context`), the approval witness (`approval`), the arguments
//! (`args`), the future and the result conversion (`future`), the per-tier traits and the
//! handler (`exec`), and the registry `agent!` generates (`registry`).

mod approval;
mod args;
mod context;
mod error;
mod exec;
mod future;
mod handoff;
mod registry;

pub use approval::Approval;
pub use args::{ErasedArgs, ParseArgs, ToolArgument};
pub use context::{AppState, CallContext, Supplied, ToolContext};
pub use error::ToolError;
pub use exec::{ActionTool, Dispatch, Handler, HandoffTool, NotCalledDirectly, ReadTool};
pub use future::{IntoToolFuture, IntoToolResult, ToolFailure, ToolFuture, ToolSuccess};
#[doc(hidden)]
pub use handoff::{HandoffInput, HandoffOutput, handoff_input, handoff_output};
pub use registry::{RegisteredTool, Registry, RegistryMismatch, ToolRegistration, linked_tools, verify_registry};

pub(crate) use args::{CheckedJson, parse_erased};
pub(crate) use context::{ApprovedCall, NestedInvoker};
pub(crate) use registry::verified_registry;

/// The last step of `agent!` (it receives the tools' manifest entries); named so because the
/// compiler names it in the note of an error that arises in an agent's expansion.
#[doc(hidden)]
pub use agents_macros::__agent_finish as agent_manifest;

#[cfg(test)]
mod witness_tests;
