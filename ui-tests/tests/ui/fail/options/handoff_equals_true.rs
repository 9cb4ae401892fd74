use agents_runtime::{permissions, tool};

permissions! {
    pub mod perms {
        athlete.read,
        injury.write,
    }
}

/// Hands the conversation to a physiotherapist.
#[tool(permission = perms::injury::write, handoff = true)]
async fn to_physio(reason: String) -> Result<String, String>;

fn main() {}
