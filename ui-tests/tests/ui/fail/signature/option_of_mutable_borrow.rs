use agents_runtime::tool;

/// Renames a note.
#[tool(permission = public)]
fn rename(title: Option<&mut String>) -> Result<bool, String> {
    Ok(title.is_some())
}

fn main() {}
