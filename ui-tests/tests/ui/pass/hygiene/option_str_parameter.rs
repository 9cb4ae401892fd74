// Borrowed parameters inside an `Option`: the arguments own the text; the body borrows it.
#![allow(dead_code)]

use agents_runtime::{Agent, agent, tool};

/// Searches tickets.
#[tool(permission = public)]
async fn search(query: &str, squad: Option<&str>, tags: Option<&[String]>) -> Result<String, String> {
    let _ = tags;
    Ok(format!("{query}:{}", squad.unwrap_or("-")))
}

agent! {
    /// Helps.
    pub struct Helper;
    tools: [search],
}

fn main() {
    let params = <Helper as Agent>::tools()[0].params;
    assert_eq!(params[1].rust_type, "Option<&str>");
    let _: SearchArgs = SearchArgs { query: String::new(), squad: Some(String::new()), tags: None };
}
