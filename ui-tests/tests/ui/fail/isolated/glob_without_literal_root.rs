// An isolated tool is confined by the kernel to directories: a glob that starts with a
// pattern (or names only `/`) gives the kernel no directory to confine it to.
use agents_runtime::tool;

/// Reads any text file, anywhere.
#[tool(permission = public, isolated, policy(fs(read = ["**/*.txt"])))]
async fn read_any_text(path: String) -> Result<String, String> {
    std::fs::read_to_string(path).map_err(|e| e.to_string())
}

/// Writes under every top-level directory.
#[tool(permission = public, isolated, policy(fs(write = ["/*/out/**"])))]
async fn write_anywhere(path: String) -> Result<(), String> {
    std::fs::write(path, "x").map_err(|e| e.to_string())
}

/// Reaches a host on any port.
#[tool(permission = public, isolated, policy(net(hosts = ["api.example.com"])))]
async fn call_api() -> Result<(), String> {
    Ok(())
}

fn main() {}
