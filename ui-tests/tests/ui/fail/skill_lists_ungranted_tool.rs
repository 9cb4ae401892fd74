use agents_runtime::{agent, tool};

/// Lists athletes visible to the caller.
#[tool(permission = public)]
async fn list_athletes() -> Result<Vec<String>, String> {
    Ok(vec![])
}

/// Records an injury.
///
/// # Arguments
///
/// * `athlete_id` - the athlete id
#[tool(permission = public, mutating, title = "Record injury")]
async fn create_injury(athlete_id: u64) -> Result<u64, String> {
    Ok(athlete_id)
}

agent! {
    /// Answers questions about the squad.
    pub struct Clinic;
    tools: [list_athletes],
    skills: { intake: [list_athletes, create_injury] },
}

fn main() {}
