use agents_runtime::{permissions, tool};

permissions! {
    pub mod perms {
        notes.read,
    }
}

/// A type the model cannot send: it has no `Deserialize` (nor `JsonSchema`).
pub struct Handle(pub u32);

/// Reads a note.
#[tool(permission = perms::notes::read)]
pub async fn read_note(handle: Handle) -> Result<String, String> {
    Ok(handle.0.to_string())
}

fn main() {}
