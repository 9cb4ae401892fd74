use agents_runtime::tool;

/// Greets someone.
#[tool(permission = public)]
async fn greet(name: impl Into<String>) -> Result<String, String> {
    Ok(format!("hello {}", name.into()))
}

fn main() {}
