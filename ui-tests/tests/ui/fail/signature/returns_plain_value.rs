use agents_runtime::tool;

/// Lists the athletes in the squad.
#[tool(permission = public)]
async fn list_athletes() -> Vec<String> {
    vec!["Ada".to_owned()]
}

fn main() {}
