//! The strict JSON rules both transports apply to a message before rmcp parses it (rmcp hands
//! tool arguments over already parsed, where a duplicate key has silently collapsed).

use serde_json::Value;

/// The JSON-RPC error code both transports answer a strict-JSON refusal with (`-32600`).
pub const INVALID_REQUEST: i64 = -32600;

/// A JSON-RPC message that is JSON but breaks the strict rules the gate applies to arguments
/// (duplicate keys, integers beyond 2^53): its request id and the message of the `-32600`
/// error both transports answer with. `None` for anything else (syntax errors are left to the
/// ordinary parse, which answers them as parse errors). For a transport mounted elsewhere that
/// must refuse what [`serve_stdio`](crate::serve_stdio) and [`serve_http`](crate::serve_http)
/// refuse.
pub fn strict_refusal(message: &[u8]) -> Option<(Value, String)> {
    use agents_core::strict::{StrictError, parse_args};
    let text = std::str::from_utf8(message).ok()?;
    match parse_args(text) {
        Err(e @ (StrictError::DuplicateKey { .. } | StrictError::NumberBeyondExactRange { .. })) => {
            let id = serde_json::from_str::<Value>(text).ok().and_then(|v| v.get("id").cloned()).unwrap_or(Value::Null);
            Some((id, format!("invalid request: {e}")))
        }
        _ => None,
    }
}
