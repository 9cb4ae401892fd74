use agents_runtime::tool;

pub struct Store;

impl Store {
    /// Makes a store.
    #[tool(permission = public)]
    fn open(path: String) -> Result<Self, String> {
        let _ = path;
        Ok(Store)
    }
}

fn main() {}
