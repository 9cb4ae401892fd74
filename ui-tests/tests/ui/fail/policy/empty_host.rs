use agents_runtime::{NetAccess, tool};

/// Fetches the weather.
#[tool(permission = public, policy(net(hosts = [""])))]
async fn weather(net: NetAccess) -> Result<String, String> {
    let _ = net;
    Ok(String::new())
}

fn main() {}
