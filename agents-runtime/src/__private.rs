//! Paths the generated code names. Not a public API.

pub use agents_macros::__agent_finish as agent_finish;
pub use futures::future::BoxFuture;
pub use inventory;
pub use schemars;
pub use serde;
pub use serde_json;
pub use std::boxed::Box;

pub use crate::tool::{IntoToolFuture, ToolFuture};

/// Byte equality of two strings in const context (for the permission name check).
pub const fn str_eq(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

/// The declared name of `T`'s permission. Read through `Tool::Permission`, so that a tool whose
/// permission is not declared is reported once, at its `type Permission`.
pub const fn tool_permission_name<T: crate::Tool>() -> &'static str {
    <<T as crate::Tool>::Permission as crate::Permission>::NAME
}

/// Downcasts registry arguments to the tool's typed arguments.
pub fn downcast_args<T: 'static>(args: crate::tool::ErasedArgs) -> T {
    match args.take::<T>() {
        Some(args) => args,
        None => unreachable!("the registry passes the arguments its own parse produced"),
    }
}

/// The registry handler of a read tool that is not generic over the agent.
pub fn read_handler<T: crate::ReadTool>(
    call: &crate::CallContext,
    args: crate::tool::ErasedArgs,
) -> crate::tool::ToolFuture<'_> {
    T::run(call, downcast_args(args))
}

/// The registry handler of an action tool that is not generic over the agent.
pub fn action_handler<'a, T: crate::ActionTool>(
    call: &'a crate::CallContext,
    args: crate::tool::ErasedArgs,
    approval: crate::Approval<'a>,
) -> crate::tool::ToolFuture<'a> {
    T::run_approved(call, downcast_args(args), approval)
}

/// Builds a tool's input schema once. The top-level `$schema`, `title` and the generated
/// args-struct `description` are dropped: the tool's own name and description already say
/// it, and every byte here is sent to the model with every request.
pub fn schema_for<T: schemars::JsonSchema>() -> serde_json::Value {
    let settings = schemars::generate::SchemaSettings::draft2020_12();
    let generator = settings.into_generator();
    let mut value = serde_json::to_value(generator.into_root_schema_for::<T>()).unwrap_or_default();
    if let serde_json::Value::Object(map) = &mut value {
        map.remove("$schema");
        map.remove("title");
        map.remove("description");
    }
    value
}

/// Mints the witness for a direct call in this crate's own gate.
pub(crate) fn approval<'a>() -> crate::tool::Approval<'a> {
    crate::tool::Approval::mint()
}
