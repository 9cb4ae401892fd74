use agents_runtime::tool;

/// Records an injury.
///
/// # Arguments
///
/// * `athlete_id` - the athlete id
#[tool(permission = public, mutating)]
async fn create_injury(athlete_id: u64) -> Result<u64, String> {
    Ok(athlete_id)
}

fn main() {}
