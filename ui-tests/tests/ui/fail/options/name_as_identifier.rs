use agents_runtime::{permissions, tool};

permissions! {
    pub mod perms {
        athlete.read,
        injury.write,
    }
}

/// Lists the athletes.
#[tool(permission = perms::athlete::read, name = athletes)]
async fn list_athletes() -> Result<Vec<String>, String> {
    Ok(vec![])
}

fn main() {}
