//! One tool call as the gate reads it ([`CallRef`]), what the gate hands back for it
//! ([`CallOutcome`]) and what the records of a tool's calls repeat ([`ToolFacts`]).

use crate::provider::ToolCallRequest;
use agents_core::SharedStr;
use agents_core::redact::SecretSchema;
use serde_json::{Value, json};

/// What the gate needs of one tool on every call: the shared text its records carry and its
/// input schema with whether that marks anything secret.
pub(in crate::run) struct ToolFacts {
    pub(in crate::run) name: SharedStr,
    pub(in crate::run) title: Option<SharedStr>,
    pub(in crate::run) schema: SecretSchema<'static>,
    /// Whether the run's role holds the tool's permission, read from the role map (which does
    /// not change while the runtime lives), not from the availability snapshot.
    pub(in crate::run) permitted: bool,
    /// For a tool imported from an MCP server: what each record of its calls says of the
    /// server, its tool and the pin.
    pub(in crate::run) import: Option<Box<crate::audit::AuditImport>>,
}

/// One tool call as the gate reads it, borrowed from the request that carries it.
#[derive(Clone, Copy)]
pub(in crate::run) struct CallRef<'a> {
    /// The id the call is known by in records, events and decisions: for an action, one the
    /// runtime minted; otherwise the caller's.
    pub(in crate::run) id: &'a str,
    /// The id the caller gave (the model provider's, or a direct session caller's).
    pub(in crate::run) given_id: &'a str,
    pub(in crate::run) name: &'a str,
    pub(in crate::run) arguments: &'a str,
}

impl<'a> From<&'a ToolCallRequest> for CallRef<'a> {
    fn from(call: &'a ToolCallRequest) -> Self {
        CallRef { id: &call.id, given_id: &call.id, name: &call.name, arguments: &call.arguments }
    }
}

/// What the gate hands back to the model for one call.
pub(in crate::run) struct CallOutcome {
    pub(in crate::run) content: Value,
    pub(in crate::run) is_error: bool,
    /// The tool ran and this is its result (not a refusal, substitute or handoff notice).
    pub(in crate::run) executed: bool,
}

impl CallOutcome {
    pub(in crate::run) fn ok(v: Value) -> Self {
        CallOutcome { content: v, is_error: false, executed: false }
    }
    pub(in crate::run) fn err(msg: impl Into<String>) -> Self {
        CallOutcome { content: json!({"error": msg.into()}), is_error: true, executed: false }
    }
}
