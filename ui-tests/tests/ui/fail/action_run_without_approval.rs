use agents_runtime::{CallContext, ReadTool, permissions, tool};

permissions! {
    pub mod perms {
        injury.write,
    }
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

fn bypass(cx: &CallContext, args: CreateInjuryArgs) {
    let _ = <create_injury as ReadTool>::run(cx, args);
}

fn main() {}
