//! Paths the generated code names. Not a public API.

pub use crate::BoxFuture;
pub use crate::Runtime;
pub use agents_macros::__agent_finish as agent_finish;
pub use inventory;
pub use schemars;
pub use serde;
pub use serde_json;
pub use std::boxed::Box;

pub use crate::tool::{IntoToolFuture, ToolFuture};
pub use agents_core::seal;

/// What the run plan `composite!` writes names.
pub mod compose {
    pub use crate::compose::{Member, NodeFailure, Resumption, RunComposite, RunNode, Tree, pass};
    pub use agents_core::compose::Join;
}

pub use crate::tool::NotCalledDirectly;

pub use crate::run::granted_agent;

pub use crate::isolate::isolated_tool;

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

/// Whether an agent's declared models (`None`: any) include one of id `id` (for
/// `declared_model`, in const context).
pub const fn declares_model(models: Option<&[agents_core::models::ModelSpec]>, id: &str) -> bool {
    let Some(models) = models else { return true };
    let mut i = 0;
    while i < models.len() {
        if !models[i].model.is_empty() && str_eq(models[i].model, id) {
            return true;
        }
        i += 1;
    }
    false
}

/// Whether two lists hold the same names, in any order and counting each once (for the check
/// of a tool's `uses` against its resolved bounds).
pub const fn same_names(a: &[&str], b: &[&str]) -> bool {
    const fn contains(list: &[&str], name: &str) -> bool {
        let mut i = 0;
        while i < list.len() {
            if str_eq(list[i], name) {
                return true;
            }
            i += 1;
        }
        false
    }
    let mut i = 0;
    while i < a.len() {
        if !contains(b, a[i]) {
            return false;
        }
        i += 1;
    }
    let mut j = 0;
    while j < b.len() {
        if !contains(a, b[j]) {
            return false;
        }
        j += 1;
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

/// The registry handler of an action tool that is not generic over the agent: runs it with the
/// witness of this call's approval, and nothing without one.
pub fn action_handler<T: crate::ActionTool>(
    call: &crate::CallContext,
    args: crate::tool::ErasedArgs,
) -> crate::tool::ToolFuture<'_> {
    match crate::Approval::<T>::of_call(call) {
        Ok(approval) => T::run_approved(call, downcast_args(args), approval),
        Err(e) => refused(e),
    }
}

/// The witness of `call`'s approval for `T` (a generic action tool's handler), when the gate
/// recorded one: it succeeds only for the call the gate approved, so it mints nothing new.
pub fn approval_of<T: crate::Tool>(call: &crate::CallContext) -> Result<crate::Approval<'_, T>, crate::ToolError> {
    crate::Approval::<T>::of_call(call)
}

/// Checks a witness against the call before an action tool's body runs.
pub fn verify_approval<T: crate::Tool>(
    approval: &crate::Approval<'_, T>,
    call: &crate::CallContext,
) -> Result<(), crate::ToolError> {
    approval.verify(call)
}

/// A handler's answer when nothing runs.
pub fn refused(e: crate::ToolError) -> crate::tool::ToolFuture<'static> {
    crate::tool::ToolFuture::new(async move { Err::<serde_json::Value, crate::ToolError>(e) })
}

/// The filesystem handle of the tool this call runs, for its declared policy.
pub fn fs_access(call: &crate::CallContext) -> crate::FsAccess {
    crate::FsAccess::for_spec(call.spec)
}

/// The network handle of the tool this call runs, for its declared policy.
pub fn net_access(call: &crate::CallContext) -> crate::NetAccess {
    crate::NetAccess::for_spec(call.spec)
}

/// The environment handle of the tool this call runs, for its declared policy.
pub fn env_access(call: &crate::CallContext) -> crate::EnvAccess {
    crate::EnvAccess::for_spec(call.spec)
}

// The arguments of a `#[tool]`: `Deserialize` is written by the macro rather than derived. It
// reads the JSON object into a `Value` (one visitor for every tool, generic only over the
// deserializer) and hands it to the tool's own reader, a plain function that takes each field
// with `arg_field` (in `crate::tool`). The messages are serde's own: unknown, missing and duplicate fields, and
// each field's type errors from its `Deserialize`.

/// The arguments' JSON object, every key one of `fields`. `name` is the args struct's name.
pub fn args_object<'v>(
    args: &'v serde_json::Value,
    name: &'static str,
    fields: &'static [&'static str],
) -> Result<&'v serde_json::Map<String, serde_json::Value>, serde_json::Error> {
    let map = match args {
        serde_json::Value::Object(map) => map,
        // serde_json's own refusal of a non-object, naming what it found.
        other => {
            return match serde::Deserializer::deserialize_map(other, ArgsVisitor(name)) {
                Err(e) => Err(e),
                Ok(_) => unreachable!("only a JSON object deserializes as a map"),
            };
        }
    };
    match map.keys().find(|k| !fields.contains(&k.as_str())) {
        Some(unknown) => Err(serde::de::Error::unknown_field(unknown, fields)),
        None => Ok(map),
    }
}

/// `Deserialize` of a tool's arguments: any self-describing format's map, read into JSON
/// (a key given twice is an error, as with a derived impl) and handed to the tool's reader.
pub fn deserialize_args<'de, D, T>(
    deserializer: D,
    name: &'static str,
    read: fn(&serde_json::Value) -> Result<T, serde_json::Error>,
) -> Result<T, D::Error>
where
    D: serde::Deserializer<'de>,
{
    let object = deserializer.deserialize_map(ArgsVisitor(name))?;
    match read(&object) {
        Ok(args) => Ok(args),
        Err(e) => Err(serde::de::Error::custom(e)),
    }
}

/// Reads a map into a JSON object, refusing a key given twice; its name is the args struct's,
/// so that serde's messages say `expected struct <name>`.
struct ArgsVisitor(&'static str);

impl<'de> serde::de::Visitor<'de> for ArgsVisitor {
    type Value = serde_json::Value;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "struct {}", self.0)
    }

    fn visit_map<M: serde::de::MapAccess<'de>>(self, mut access: M) -> Result<Self::Value, M::Error> {
        let mut map = serde_json::Map::new();
        while let Some(key) = access.next_key::<String>()? {
            if map.contains_key(&key) {
                return Err(serde::de::Error::custom(format_args!("duplicate field `{key}`")));
            }
            let value = access.next_value::<serde_json::Value>()?;
            map.insert(key, value);
        }
        Ok(serde_json::Value::Object(map))
    }
}

/// The schema of a tool's arguments object: each field's schema (with whether it may be left
/// out), in the order of the function's parameters; unknown fields are refused.
pub fn object_schema(fields: Vec<(&'static str, (schemars::Schema, bool))>) -> schemars::Schema {
    let mut properties = serde_json::Map::new();
    let mut required = Vec::new();
    for (name, (schema, optional)) in fields {
        properties.insert(name.to_owned(), schema.to_value());
        if !optional {
            required.push(serde_json::Value::from(name));
        }
    }
    let mut object = serde_json::Map::new();
    object.insert("type".to_owned(), "object".into());
    object.insert("properties".to_owned(), serde_json::Value::Object(properties));
    if !required.is_empty() {
        object.insert("required".to_owned(), serde_json::Value::Array(required));
    }
    object.insert("additionalProperties".to_owned(), false.into());
    schemars::Schema::from(object)
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
