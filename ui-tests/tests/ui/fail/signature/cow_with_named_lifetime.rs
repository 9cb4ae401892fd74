use agents_runtime::tool;
use std::borrow::Cow;

/// Shouts a message.
#[tool(permission = public)]
fn shout<'a>(message: Cow<'a, str>) -> Result<String, String> {
    Ok(message.to_uppercase())
}

fn main() {}
