use agents_runtime::tool;

/// Lists athletes visible to the caller.
#[tool(permission = public, risk = low, risk = high)]
async fn list_athletes() -> Result<Vec<String>, String> {
    Ok(vec![])
}

fn main() {}
