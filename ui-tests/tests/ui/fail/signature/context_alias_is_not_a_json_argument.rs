//! No alias turns the context or a capability handle into a value the model sends: written so
//! that `#[tool]` reads it as a JSON argument, the compiler refuses it, since neither is
//! `Deserialize`.
use agents_runtime::{FsAccess, ToolContext, tool};

type Cx = ToolContext<'static>;
type Files = FsAccess;

/// Tells which run asked.
#[tool(permission = public)]
async fn whoami(cx: Cx) -> Result<String, String> {
    Ok(cx.run_id().to_owned())
}

/// Reads a file.
#[tool(permission = public, policy(fs(read = ["/srv/app/**"])))]
async fn read_file(files: Files) -> Result<String, String> {
    Ok(format!("{files:?}"))
}

fn main() {}
