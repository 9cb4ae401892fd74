use agents_runtime::{ToolContext, tool};

type Cx<'a> = ToolContext<'a>;

/// Tells which run asked.
#[tool(permission = public)]
async fn whoami(cx: &Cx<'_>) -> Result<String, String> {
    Ok(cx.run_id().to_owned())
}

fn main() {}
