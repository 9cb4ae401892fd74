//! A parameter written like the context, `&Name<'_>`, is given by the runtime, and the
//! compiler checks that the runtime gives that type: a type of the application's own is
//! refused, never read from the model.
use agents_runtime::tool;

#[derive(Debug)]
pub struct Mine<'a>(&'a str);

/// Reads mine.
#[tool(permission = public)]
async fn read_mine(mine: &Mine<'_>) -> Result<String, String> {
    Ok(mine.0.to_owned())
}

fn main() {}
