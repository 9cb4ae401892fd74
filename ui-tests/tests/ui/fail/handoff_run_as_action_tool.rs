use agents_runtime::{ActionTool, Approval, CallContext, tool};

/// Resets a password: a person at the service desk does this.
#[tool(permission = public, handoff)]
fn reset_password(user: String);

fn bypass<'a>(cx: &'a CallContext, args: ResetPasswordArgs, approval: Approval<'a, reset_password>) {
    let _ = <reset_password as ActionTool>::run_approved(cx, args, approval);
}

fn main() {}
