use agents_runtime::{NetAccess, tool};

/// Fetches any page the user names.
#[tool(permission = public, policy(net(hosts = ["**"])))]
async fn browse(net: NetAccess, url: String) -> Result<String, String> {
    net.check_url(&url).map_err(|e| e.to_string())?;
    Ok(String::new())
}

fn main() {}
