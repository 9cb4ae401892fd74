use agents_runtime::tool;
use std::rc::Rc;

async fn yield_now() {}

/// Counts the notes.
#[tool(permission = public)]
async fn count_notes() -> Result<usize, String> {
    let notes = Rc::new(vec![1, 2, 3]);
    yield_now().await;
    Ok(notes.len())
}

fn main() {}
