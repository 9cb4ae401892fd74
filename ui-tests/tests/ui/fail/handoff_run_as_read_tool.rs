use agents_runtime::{CallContext, ReadTool, tool};

/// Resets a password: a person at the service desk does this.
#[tool(permission = public, handoff)]
fn reset_password(user: String);

fn bypass(cx: &CallContext, args: ResetPasswordArgs) {
    let _ = <reset_password as ReadTool>::run(cx, args);
}

fn main() {}
