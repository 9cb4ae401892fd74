use agents_runtime::tool;

/// Finds an athlete by name.
#[tool(permission = public)]
async fn find_athlete(name: String) -> Option<String> {
    Some(name)
}

fn main() {}
