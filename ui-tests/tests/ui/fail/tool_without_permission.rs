use agents_runtime::tool;

/// Lists athletes visible to the caller.
#[tool(risk = low)]
async fn list_athletes() -> Result<Vec<String>, String> {
    Ok(vec![])
}

fn main() {}
