// An isolated tool with literal roots and ports compiles, and the manifest records it.
use agents_runtime::{agent, tool};

/// Reads an upload.
#[tool(permission = public, isolated, policy(fs(read = ["/srv/uploads/**/*.pdf"]), net(hosts = ["api.example.com:443"])))]
async fn read_upload(name: String) -> Result<String, String> {
    Ok(name)
}

agent! {
    /// Reads uploads.
    pub struct Reader;
    tools: [read_upload],
}

fn main() {
    assert!(Reader::MANIFEST.contains(r#""isolated":true"#));
}
