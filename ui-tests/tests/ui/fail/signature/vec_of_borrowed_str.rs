use agents_runtime::tool;

/// Tags a note.
#[tool(permission = public)]
async fn tag_note(id: u64, tags: Vec<&str>) -> Result<usize, String> {
    Ok(tags.len() + id as usize)
}

fn main() {}
