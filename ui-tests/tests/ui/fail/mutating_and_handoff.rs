use agents_runtime::tool;

/// Resets a password.
///
/// # Arguments
///
/// * `user` - the user
#[tool(permission = public, mutating, handoff, title = "Reset password")]
fn reset_password(user: String);

fn main() {}
