// `uses` names the invoked tool by its tool name (renamed here), resolved through its path,
// while another module has a tool whose function is named alike but is not granted.
#![allow(dead_code)]

use agents_runtime::{Agent, Grants, ToolContext, agent, tool};

mod tickets {
    use agents_runtime::tool;

    /// Looks a ticket up.
    #[tool(permission = public, name = "lookup_ticket")]
    pub async fn lookup(id: u64) -> Result<u64, String> {
        Ok(id)
    }
}

mod users {
    use agents_runtime::tool;

    /// Looks a user up.
    #[tool(permission = public, name = "lookup_user")]
    pub async fn lookup(id: u64) -> Result<u64, String> {
        Ok(id)
    }
}

/// Summarises a ticket.
#[tool(permission = public)]
async fn summary<A: Grants<tickets::lookup>>(cx: &ToolContext<'_, A>) -> Result<String, String> {
    let _ = cx.invoke::<tickets::lookup>(serde_json::json!({ "id": 1 })).await;
    Ok(String::new())
}

agent! {
    /// Summarises tickets.
    pub struct Desk;
    tools: [tickets::lookup, summary],
}

agent! {
    /// Looks users up.
    pub struct People;
    tools: [users::lookup],
}

fn main() {
    let summary = <Desk as Agent>::tool_spec("summary").unwrap();
    assert_eq!(summary.uses, ["lookup_ticket"]);
    assert!(Desk::MANIFEST.contains(r#""uses":["lookup_ticket"]"#));
    assert_eq!(<People as Agent>::tools()[0].name, "lookup_user");
}
