use agents_runtime::{agent, permissions, tool};

permissions! {
    pub mod perms {
        athlete.read,
        injury.write,
    }
}

/// Lists athletes visible to the caller.
#[tool(permission = perms::athlete::read)]
async fn list_athletes() -> Result<Vec<String>, String> {
    Ok(vec![])
}

/// Records an injury.
///
/// # Arguments
///
/// * `athlete_id` - the athlete id
#[tool(permission = perms::injury::write, mutating, title = "Record injury")]
async fn create_injury(athlete_id: u64) -> Result<u64, String> {
    Ok(athlete_id)
}

agent! {
    /// Answers questions about the squad; it may only read.
    pub struct SquadViewer;
    tools: [list_athletes, create_injury],
    ceiling: [perms::athlete::read],
}

fn main() {}
