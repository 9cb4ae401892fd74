// Tools written as ordinary synchronous functions.

use agents_runtime::{ActionTool, Agent, ReadTool, Tier, agent, tool};

/// Adds two numbers.
#[tool(permission = public, risk = low)]
fn add(a: i64, b: i64) -> Result<i64, String> {
    Ok(a + b)
}

/// Stores a note.
///
/// # Arguments
///
/// * `text` - the text
#[tool(permission = public, mutating, title = "Store note")]
fn store_note(text: String) -> Result<usize, String> {
    Ok(text.len())
}

agent! {
    /// Does arithmetic.
    pub struct Calculator;
    tools: [add, store_note],
}

fn main() {
    let _ = <add as ReadTool>::run;
    let _ = <store_note as ActionTool>::run_approved;
    assert_eq!(<Calculator as Agent>::tool_spec("store_note").unwrap().tier, Tier::Action);
}
