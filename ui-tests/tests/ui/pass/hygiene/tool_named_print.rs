// A tool named like a std macro (or like `agent!`): its hidden macro must not shadow the
// std macro the generated code or the user's code relies on.
#![allow(dead_code, clippy::useless_format)] // `format!` is the std macro the case shows unshadowed

use agents_runtime::{Agent, agent, tool};

/// A tool named `print`.
#[tool(permission = public)]
async fn print(text: String) -> Result<String, String> {
    Ok(format!("{text}"))
}

/// Uses std's macro beside the tool.
fn beside() -> String {
    let mut s = String::new();
    let _ = std::fmt::Write::write_fmt(&mut s, format_args!("x"));
    print!("");
    let _ = matches!(s.as_str(), "x");
    format!("{s}")
}

agent! {
    /// Helps.
    pub struct Helper;
    tools: [print],
}

fn main() {
    assert_eq!(<Helper as Agent>::tools()[0].name, "print");
    let _ = beside();
}
