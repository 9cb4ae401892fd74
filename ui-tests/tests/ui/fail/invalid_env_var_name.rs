use agents_runtime::{EnvAccess, tool};

/// Tells which region the application runs in.
#[tool(permission = public, policy(env(vars = ["APP-REGION"])))]
async fn region(env: EnvAccess) -> Result<Option<String>, String> {
    env.var("APP-REGION").map_err(|e| e.to_string())
}

fn main() {}
