use agents_runtime::tool;

/// Compares two names.
#[tool(permission = public)]
fn compare(pair: (&str, &str)) -> Result<bool, String> {
    Ok(pair.0 == pair.1)
}

fn main() {}
