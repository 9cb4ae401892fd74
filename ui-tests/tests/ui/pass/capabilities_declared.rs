// Tools taking the capability handles their policies declare.

use agents_runtime::{EnvAccess, FsAccess, NetAccess, agent, tool};

/// Reads an uploaded document.
#[tool(permission = public, policy(fs(read = ["/var/app/uploads/**"], write = ["/var/app/out/*.txt"])))]
async fn read_upload(fs: FsAccess, path: String) -> Result<usize, String> {
    fs.read(path).map(|b| b.len()).map_err(|e| e.to_string())
}

/// Looks up an exchange rate.
#[tool(permission = public, policy(net(hosts = ["api.example.com:443", "*.internal", "[::1]:8080"])))]
async fn exchange_rate(net: &NetAccess, currency: String) -> Result<String, String> {
    net.check_url("https://api.example.com/rates").map_err(|e| e.to_string())?;
    Ok(currency)
}

/// Fetches any page the user names (a browsing tool: `*` is any host).
#[tool(permission = public, policy(net(hosts = ["*"])))]
async fn browse(net: &NetAccess, url: String) -> Result<String, String> {
    net.check_url(&url).map_err(|e| e.to_string())?;
    Ok(url)
}

/// Tells which region the application runs in.
#[tool(permission = public, policy(env(vars = ["APP_REGION", "_PRIVATE2"])))]
fn region(env: EnvAccess) -> Result<Option<String>, String> {
    env.var("APP_REGION").map_err(|e| e.to_string())
}

agent! {
    /// Reads documents.
    pub struct Reader;
    tools: [read_upload, exchange_rate, browse, region],
}

fn main() {
    assert!(Reader::MANIFEST.contains("/var/app/uploads/**"));
    assert!(Reader::MANIFEST.contains(r#""hosts":["*"]"#), "{}", Reader::MANIFEST);
}
