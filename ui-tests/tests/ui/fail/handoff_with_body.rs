use agents_runtime::tool;

/// Resets a password: a person at the service desk does this.
#[tool(permission = public, handoff)]
fn reset_password(user: String) {
    let _ = user;
}

fn main() {}
