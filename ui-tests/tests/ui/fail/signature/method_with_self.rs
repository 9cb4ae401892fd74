use agents_runtime::tool;

pub struct Store {
    names: Vec<String>,
}

impl Store {
    /// Lists the names in the store.
    #[tool(permission = public)]
    async fn list_names(&self) -> Result<Vec<String>, String> {
        Ok(self.names.clone())
    }
}

fn main() {}
