//! Paths the generated code names. Not a public API.

pub use agents_macros::__agent_finish as agent_finish;
pub use futures::future::BoxFuture;
pub use inventory;
pub use schemars;
pub use serde;
pub use serde_json;
pub use std::boxed::Box;

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

/// Downcasts registry arguments to the tool's typed arguments.
pub fn downcast_args<T: 'static>(args: crate::tool::ErasedArgs) -> T {
    *args.downcast::<T>().expect("the registry passes the arguments its own parse produced")
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
