use agents_runtime::{ToolContext, permissions, tool};

permissions! {
    pub mod perms {
        injury.write,
    }
}

/// Records an injury for an athlete.
///
/// # Arguments
///
/// * `athlete` - the athlete's id, as the squad list shows it
#[tool(permission = perms::injury::write, mutating, title = "Record injury")]
async fn record_injury(cx: &ToolContext<'_>, athlete: u64, #[secret] note: String) -> Result<String, String> {
    Ok(format!("{athlete} in {}: {note}", cx.run_id()))
}

fn main() {}
