use agents_runtime::{FsAccess, tool};

/// Reads an uploaded document.
#[tool(permission = public, policy = "fs:/var/app/uploads")]
async fn read_upload(fs: FsAccess, path: String) -> Result<usize, String> {
    fs.read(path).map(|b| b.len()).map_err(|e| e.to_string())
}

fn main() {}
