use agents_runtime::tool;

mod perms {
    pub mod athlete {
        // A type, but not one `permissions!` declared.
        #[allow(non_camel_case_types)]
        pub struct read;
    }
}

/// Lists athletes visible to the caller.
#[tool(permission = perms::athlete::read)]
async fn list_athletes() -> Result<Vec<String>, String> {
    Ok(vec![])
}

fn main() {}
