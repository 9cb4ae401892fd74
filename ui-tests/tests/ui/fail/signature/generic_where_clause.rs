use agents_runtime::tool;

/// Echoes its input back.
#[tool(permission = public)]
async fn echo<T>(value: T) -> Result<String, String>
where
    T: std::fmt::Display,
{
    Ok(value.to_string())
}

fn main() {}
