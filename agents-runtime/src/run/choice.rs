//! The reading of a model's answer to a choice the runtime asked for (a skill, a branch's
//! arm): exactly one call of the one tool offered, with exactly one text argument. Anything
//! else is refused with why; each caller then checks the named value against its own list
//! and fails closed.

use crate::provider::ChatResponse;
use serde_json::Value;

/// The value of argument `key` of the one call of `tool` that `response` holds, or why the
/// answer is not that. `what` names the choice in the refusal (`the skill choice`).
pub(crate) fn one_call_argument(response: &ChatResponse, tool: &str, key: &str, what: &str) -> Result<String, String> {
    let [call] = response.tool_calls.as_slice() else {
        return Err(format!(
            "the answer to {what} holds {} tool calls; exactly one call of `{tool}` was asked for",
            response.tool_calls.len()
        ));
    };
    if call.name != tool {
        return Err(format!("the answer to {what} called {}, not `{tool}`", shown(&call.name)));
    }
    let args = agents_core::strict::parse_args(&call.arguments)
        .map_err(|e| format!("the arguments of `{tool}` were refused: {e}"))?;
    match &args {
        Value::Object(o) if o.len() == 1 => o.get(key).and_then(Value::as_str).map(str::to_owned),
        _ => None,
    }
    .ok_or_else(|| format!("`{tool}` takes exactly one argument, `{key}`, a name"))
}

/// Text the model wrote, as a refusal quotes it: escaped and cut after 60 characters.
pub(crate) fn shown(text: &str) -> String {
    let cut: String = text.chars().take(60).collect();
    let more = if text.chars().count() > 60 { "…" } else { "" };
    format!("{cut:?}{more}")
}
