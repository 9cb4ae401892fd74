use agents_runtime::tool;

/// Returns the first names.
#[tool(permission = public)]
fn first_names<const N: usize>() -> Result<Vec<String>, String> {
    Ok(vec![String::new(); N])
}

fn main() {}
