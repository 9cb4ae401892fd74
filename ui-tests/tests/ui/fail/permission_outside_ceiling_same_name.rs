use agents_runtime::{agent, permissions, tool};

permissions! {
    pub mod perms {
        athlete.read,
    }
}

// Another application's permissions, with a name that `perms` also declares.
mod billing {
    agents_runtime::permissions! {
        pub mod perms {
            athlete.read,
        }
    }
}

/// Lists invoices of an athlete.
#[tool(permission = billing::perms::athlete::read)]
async fn list_invoices() -> Result<Vec<String>, String> {
    Ok(vec![])
}

agent! {
    /// Answers questions about the squad.
    pub struct SquadViewer;
    tools: [list_invoices],
    ceiling: [perms::athlete::read],
}

fn main() {}
