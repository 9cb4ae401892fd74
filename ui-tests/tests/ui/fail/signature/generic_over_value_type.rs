use agents_runtime::tool;

/// Echoes its input back.
#[tool(permission = public)]
async fn echo<T: serde::Serialize>(value: T) -> Result<T, String> {
    Ok(value)
}

fn main() {}
