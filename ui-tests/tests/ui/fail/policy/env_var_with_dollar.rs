use agents_runtime::{EnvAccess, tool};

/// Tells the region.
#[tool(permission = public, policy(env(vars = ["$APP_REGION"])))]
fn region(env: EnvAccess) -> Result<String, String> {
    env.var("APP_REGION").map(Option::unwrap_or_default).map_err(|e| e.to_string())
}

fn main() {}
