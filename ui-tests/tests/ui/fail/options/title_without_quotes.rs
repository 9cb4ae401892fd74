use agents_runtime::{permissions, tool};

permissions! {
    pub mod perms {
        athlete.read,
        injury.write,
    }
}

/// Records an injury.
///
/// # Arguments
///
/// * `athlete` - the athlete
#[tool(permission = perms::injury::write, mutating, title = Record)]
async fn record_injury(athlete: String) -> Result<String, String> {
    Ok(athlete)
}

fn main() {}
