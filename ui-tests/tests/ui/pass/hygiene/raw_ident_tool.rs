// A tool named with a raw identifier: the model and the manifest call it `match`.
#![allow(dead_code)]

use agents_runtime::{Agent, agent, tool};

/// Matches.
#[tool(permission = public)]
async fn r#match(r#type: String) -> Result<String, String> {
    Ok(r#type)
}

agent! {
    /// Helps.
    pub struct Helper;
    tools: [r#match],
}

fn main() {
    assert_eq!(<Helper as Agent>::tools()[0].name, "match");
    assert!(Helper::MANIFEST.contains(r#""name":"match""#));
}
