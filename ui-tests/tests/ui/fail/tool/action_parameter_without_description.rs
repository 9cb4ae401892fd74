use agents_runtime::{permissions, tool};

permissions! {
    pub mod perms {
        injury.write,
    }
}

/// Records an injury for an athlete.
#[tool(permission = perms::injury::write, mutating, title = "Record injury")]
async fn record_injury(athlete: u64, note: String) -> Result<String, String> {
    Ok(format!("{athlete}: {note}"))
}

fn main() {}
