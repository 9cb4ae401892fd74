//! The one hook through which tools served by another program are called.
//!
//! A tool declared with [`mcp_import!`](crate::mcp_import) is granted, gated, confirmed and
//! audited like any tool of this program; only its body is elsewhere. That body is
//! [`call_imported`]: it hands the call to the [`ImportedTools`] the application set with
//! [`RuntimeBuilder::mcp_imports`](crate::RuntimeBuilder::mcp_imports) (the `agents-mcp`
//! crate's `McpImports` is the implementation: it connects to the servers, compares each
//! tool's current description with its pin, and calls it). Without one, a call of an imported
//! tool is refused and audited, and nothing is sent anywhere.
//!
//! The runtime keeps what does not depend on the transport: the arguments as a JSON object
//! read against the pinned schema ([`ImportedArgs`]), the pinned schema the model is given
//! ([`pinned_schema`]), and, for the call's record, the hash a server gives now when it no
//! longer says what was pinned ([`ImportedCall::pin_changed`]).

use crate::tool::{CallContext, ToolError, ToolFuture};
use crate::{BoxFuture, ImportSpec};
use serde_json::{Map, Value};
use std::sync::OnceLock;

/// Where the calls of imported tools go: the servers the application configured.
///
/// Implemented by `agents_mcp::McpImports`; an application may implement it to reach tools
/// through another transport. An implementation sends `call.args` to the tool
/// `call.import.tool` of the server `call.import.server` only after it checked that the tool
/// still is what `call.import.sha256` pins (else it calls [`ImportedCall::pin_changed`] and
/// refuses); its error is what the model and the `failed` record read.
pub trait ImportedTools: Send + Sync + 'static {
    /// Calls the imported tool.
    fn call<'a>(&'a self, call: ImportedCall<'a>) -> BoxFuture<'a, Result<Value, ToolError>>;

    /// What the audit records of the calls of `server`'s tools say of where it is reached
    /// (never a token, an environment value, or a URL's user information or query); `None`
    /// when no such server is configured.
    fn source_of(&self, server: &str) -> Option<String>;
}

/// One call of an imported tool, as the runtime hands it to [`ImportedTools::call`].
#[derive(Debug)]
#[non_exhaustive]
pub struct ImportedCall<'a> {
    /// The run the call belongs to (an implementation reads the server's tool list again for
    /// each run).
    pub run_id: &'a str,
    /// The tool's name in this program (the agent's grant).
    pub tool: &'static str,
    /// The server, its name for the tool, the pin and the pinned schema.
    pub import: &'static ImportSpec,
    /// The arguments, read against the pinned schema.
    pub args: ImportedArgs,
    listed_sha256: &'a OnceLock<String>,
}

impl ImportedCall<'_> {
    /// Says, for the call's `failed` record, the SHA-256 of what the server gives now for a
    /// tool whose description or schema no longer matches its pin.
    pub fn pin_changed(&self, now_sha256: String) {
        let _ = self.listed_sha256.set(now_sha256);
    }
}

/// The arguments of an imported tool: a JSON object, passed to the server as it is.
#[derive(Debug, Clone, PartialEq)]
pub struct ImportedArgs(Map<String, Value>);

impl ImportedArgs {
    /// The arguments as a JSON object.
    pub fn as_map(&self) -> &Map<String, Value> {
        &self.0
    }

    /// The arguments as a JSON object, owned.
    pub fn into_map(self) -> Map<String, Value> {
        self.0
    }

    /// Reads a call's arguments against the pinned schema: an object, with every key the
    /// schema requires and, when it sets `additionalProperties: false`, no key it does not
    /// declare. The rest of the schema is the server's to check.
    #[doc(hidden)]
    pub fn parse(v: &Value, schema: &Value) -> Result<Self, String> {
        let Value::Object(map) = v else { return Err("the arguments must be a JSON object".to_owned()) };
        if let Some(required) = schema.get("required").and_then(Value::as_array) {
            for r in required.iter().filter_map(Value::as_str) {
                if !map.contains_key(r) {
                    return Err(format!("missing field `{r}`"));
                }
            }
        }
        if schema.get("additionalProperties") == Some(&Value::Bool(false)) {
            let declared = schema.get("properties").and_then(Value::as_object);
            if let Some(k) = map.keys().find(|k| !declared.is_some_and(|d| d.contains_key(*k))) {
                return Err(format!("unknown field `{k}`"));
            }
        }
        Ok(ImportedArgs(map.clone()))
    }
}

impl<'de> serde::Deserialize<'de> for ImportedArgs {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Map::deserialize(d).map(ImportedArgs)
    }
}

impl schemars::JsonSchema for ImportedArgs {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        std::borrow::Cow::Borrowed("ImportedArgs")
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({ "type": "object" })
    }
}

/// The pinned input schema of an imported tool: what the model is given.
#[doc(hidden)]
pub fn pinned_schema(spec: &ImportSpec) -> Value {
    serde_json::from_str(spec.input_schema).expect("mcp_import! writes the pinned schema as JSON")
}

/// The handler of every imported tool: hands the call to the runtime's [`ImportedTools`].
/// Reached only through the tool's `ReadTool::run` or, for an action, `ActionTool::run_approved`
/// after the witness of this call's approval.
#[doc(hidden)]
pub fn call_imported(call: &CallContext, args: ImportedArgs) -> ToolFuture<'_> {
    ToolFuture::new(async move { call_configured(call, args).await })
}

async fn call_configured(call: &CallContext, args: ImportedArgs) -> Result<Value, ToolError> {
    let spec = call.spec;
    let Some(import) = spec.import else {
        return Err(ToolError::new(format!("`{}` is not an imported tool; nothing ran", spec.name)));
    };
    // A server the implementation does not know is its to refuse (with the same words).
    let Some(imports) = call.imports.as_ref() else {
        return Err(ToolError::new(format!(
            "MCP server `{}` (of tool `{}`) is not configured in this runtime; nothing ran (the application adds it with `RuntimeBuilder::mcp_imports`)",
            import.server, spec.name
        )));
    };
    let imported = ImportedCall {
        run_id: call.run_id.as_str(),
        tool: spec.name,
        import,
        args,
        listed_sha256: &call.listed_sha256,
    };
    imports.call(imported).await
}

#[cfg(test)]
mod tests {
    use super::*;

    static SPEC: ImportSpec = ImportSpec {
        server: "s",
        tool: "t",
        sha256: "0",
        input_schema: r#"{"additionalProperties":false,"properties":{"a":{"type":"string"}},"required":["a"],"type":"object"}"#,
        own_server: None,
        endpoint: "stdio: s",
    };

    #[test]
    fn arguments_are_read_against_the_pinned_schema() {
        let schema = pinned_schema(&SPEC);
        let schema = &schema;
        assert!(ImportedArgs::parse(&serde_json::json!({"a": "x"}), schema).is_ok());
        assert_eq!(ImportedArgs::parse(&serde_json::json!({}), schema).unwrap_err(), "missing field `a`");
        assert_eq!(
            ImportedArgs::parse(&serde_json::json!({"a": "x", "b": 1}), schema).unwrap_err(),
            "unknown field `b`"
        );
        assert!(ImportedArgs::parse(&serde_json::json!([1]), schema).is_err());
    }
}
