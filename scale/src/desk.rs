//! The benches' agent: one read tool and one action, and a scripted model that makes one
//! tool call a turn and then answers.

use agents_runtime::provider::scripted::{RuleProvider, reply, tool_outcomes};
use agents_runtime::{RoleMap, agent, permissions, tool};

permissions! {
    /// The benches' permissions.
    pub mod perms { items.read, items.write }
}

/// The read tool's body, shared with the bare baseline service.
pub fn look_up(name: &str) -> String {
    format!("{name}: in stock")
}

/// Looks an item up.
///
/// # Arguments
///
/// * `name` - the item
#[tool(permission = perms::items::read)]
pub async fn lookup_item(name: String) -> Result<String, String> {
    Ok(look_up(&name))
}

/// Submits an item request.
///
/// # Arguments
///
/// * `item` - the item wanted
#[tool(permission = perms::items::write, mutating, title = "Submit an item request")]
pub async fn submit_item(item: String) -> Result<String, String> {
    Ok(format!("requested {item}"))
}

agent! {
    /// Answers about items and files item requests.
    pub struct Desk;
    tools: [lookup_item, submit_item],
}

/// The agent's name in the service's API.
pub const AGENT: &str = "Desk";

/// The one role of the benches' principals, and the organisation they belong to.
pub const ROLE: &str = "employee";
/// The organisation of the benches' principals.
pub const ORG: &str = "acme";

/// The arguments of the read call the model makes on "lookup".
pub const LOOKUP_ARGS: &str = r#"{"name": "keyboard"}"#;

/// The text the model answers with once a turn's tool calls are done.
pub fn answer(calls: usize) -> String {
    format!("done: {calls} call(s)")
}

/// The scripted model: "lookup" makes one `lookup_item` call, "submit" one `submit_item`
/// call; once the turn's tool results are in, it answers [`answer`].
pub fn model() -> RuleProvider {
    RuleProvider::new()
        .when(|req| {
            let done = tool_outcomes(req);
            (!done.is_empty()).then(|| reply(answer(done.len())))
        })
        .on_keyword("submit", "submit_item", r#"{"item": "a keyboard"}"#)
        .on_keyword("lookup", "lookup_item", LOOKUP_ARGS)
        .fallback("hello")
}

/// The role map: the employee holds both permissions.
pub fn roles() -> RoleMap {
    RoleMap::new().role(ROLE, ["items.read", "items.write"])
}
