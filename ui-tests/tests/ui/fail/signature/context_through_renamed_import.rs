use agents_runtime::ToolContext as Ctx;
use agents_runtime::tool;

/// Tells which run asked.
///
/// # Arguments
///
/// * `prefix` - put before the run id
#[tool(permission = public)]
async fn whoami(cx: &Ctx<'_>, prefix: String) -> Result<String, String> {
    Ok(format!("{prefix}{}", cx.run_id()))
}

fn main() {}
