use agents_runtime::{permissions, tool};

permissions! {
    pub mod perms {
        athlete.read,
    }
}

// The manifest would say `squad.read`, a permission nobody declared.
use perms::athlete as squad;

/// Lists athletes visible to the caller.
#[tool(permission = squad::read)]
async fn list_athletes() -> Result<Vec<String>, String> {
    Ok(vec![])
}

fn main() {}
