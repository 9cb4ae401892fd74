use agents_runtime::tool;

#[tool(permission = public)]
async fn list_athletes() -> Result<Vec<String>, String> {
    Ok(vec![])
}

fn main() {}
