use agents_runtime::tool;

pub struct Store;

impl Store {
    /// Opens the store at a path.
    #[tool(permission = public)]
    pub async fn open(path: String) -> Result<String, String> {
        Ok(path)
    }
}

fn main() {}
