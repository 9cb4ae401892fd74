use agents_runtime::{EnvAccess, tool};

/// Tells which region the application runs in.
#[tool(permission = public, policy(net(hosts = ["api.example.com:443"])))]
async fn region(env: EnvAccess) -> Result<Option<String>, String> {
    env.var("APP_REGION").map_err(|e| e.to_string())
}

fn main() {}
