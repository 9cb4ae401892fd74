use agents_runtime::{FsAccess, tool};

/// Writes a report.
///
/// # Arguments
///
/// * `text` - the text
#[tool(permission = public, mutating, title = "Write report", policy(fs(write = ["./reports/*.md"])))]
async fn write_report(fs: FsAccess, text: String) -> Result<(), String> {
    fs.write("/reports/r.md", text.as_bytes()).map_err(|e| e.to_string())
}

fn main() {}
