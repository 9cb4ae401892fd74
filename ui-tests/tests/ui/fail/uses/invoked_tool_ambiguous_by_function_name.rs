// Two granted tools share the function name `lookup`; a third invokes one of them. The
// manifest refuses to guess which (it used to take the first).
#![allow(dead_code)]

use agents_runtime::{Grants, ToolContext, agent, tool};

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
    let _ = cx;
    Ok(String::new())
}

agent! {
    /// Looks things up.
    pub struct Desk;
    tools: [tickets::lookup, users::lookup, summary],
}

fn main() {}
