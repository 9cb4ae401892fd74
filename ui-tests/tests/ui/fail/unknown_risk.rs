use agents_runtime::tool;

/// Deletes a user account.
///
/// # Arguments
///
/// * `id` - the id
#[tool(permission = public, mutating, title = "Delete user", risk = critcal)]
async fn delete_user(id: u64) -> Result<u64, String> {
    Ok(id)
}

fn main() {}
