use agents_runtime::tool;

pub struct Counter(u64);

impl Counter {
    /// Reads the counter.
    #[tool(permission = public)]
    fn read(self) -> Result<u64, String> {
        Ok(self.0)
    }
}

fn main() {}
