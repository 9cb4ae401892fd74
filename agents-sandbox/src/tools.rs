//! The tools of this executable that can run in a worker, registered at link time: the worker
//! finds the one it serves by name, and [`Isolation::isolate_tool`](crate::Isolation::isolate_tool)
//! checks a name against them.

use crate::protocol::Call;
use agents_core::ToolSpec;
use serde_json::Value;
use std::future::Future;
use std::pin::Pin;

/// Runs a tool on one call in the worker, on its single-threaded async runtime: the tool's
/// value, or the text of its error (what the model and the audit record read).
pub type RunInWorker = fn(Call) -> Pin<Box<dyn Future<Output = Result<Value, String>>>>;

/// A tool that can run in a worker, as the worker finds it by name: its spec (the policy the
/// worker is confined to) and the function that runs it on a call. The tool layer registers
/// one (`inventory::submit!`) for each tool that has an execution path and does not take the
/// agent parameter (`#[tool]` does); not for other code.
#[doc(hidden)]
pub struct IsolatedTool {
    pub(crate) spec: &'static ToolSpec,
    pub(crate) run: RunInWorker,
}

impl IsolatedTool {
    /// The registration of the tool of `spec`, which `run` carries out.
    pub const fn new(spec: &'static ToolSpec, run: RunInWorker) -> Self {
        IsolatedTool { spec, run }
    }
}

inventory::collect!(IsolatedTool);

/// The registrations of a name: none, exactly one, or more than one.
pub(crate) enum Named {
    None,
    One(&'static IsolatedTool),
    Several,
}

/// The tools named `name` that can run in a worker of this executable.
pub(crate) fn named(name: &str) -> Named {
    let mut found = inventory::iter::<IsolatedTool>.into_iter().filter(|t| t.spec.name == name);
    match (found.next(), found.next()) {
        (Some(tool), None) => Named::One(tool),
        (Some(_), Some(_)) => Named::Several,
        (None, _) => Named::None,
    }
}

/// The registration of the tool `name` linked into this executable, when exactly one has it.
pub(crate) fn registered(name: &str) -> Option<&'static IsolatedTool> {
    match named(name) {
        Named::One(tool) => Some(tool),
        Named::None | Named::Several => None,
    }
}
