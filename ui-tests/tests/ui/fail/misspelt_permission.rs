use agents_runtime::{permissions, tool};

permissions! {
    pub mod perms {
        athlete.read,
    }
}

/// Lists athletes visible to the caller.
#[tool(permission = perms::athlete::raed)]
async fn list_athletes() -> Result<Vec<String>, String> {
    Ok(vec![])
}

fn main() {}
