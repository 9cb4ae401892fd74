use agents_runtime::{Approval, tool};

/// Deletes a user.
///
/// # Arguments
///
/// * `id` - the id
#[tool(permission = public, mutating, title = "Delete user")]
async fn delete_user(id: u64) -> Result<u64, String> {
    Ok(id)
}

fn forge<'a>() -> Approval<'a, delete_user> {
    Approval::mint()
}

fn main() {}
