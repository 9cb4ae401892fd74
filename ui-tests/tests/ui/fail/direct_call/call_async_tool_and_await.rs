use agents_runtime::tool;

/// Lists the athletes.
#[tool(permission = public)]
async fn list_athletes(team: String) -> Result<Vec<String>, String> {
    Ok(vec![team])
}

async fn run() -> Result<(), String> {
    let athletes = list_athletes("blue".to_owned()).await?;
    println!("{athletes:?}");
    Ok(())
}

fn main() {
    let _ = run();
}
