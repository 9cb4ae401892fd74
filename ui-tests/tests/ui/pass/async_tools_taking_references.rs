// Parameters borrowed from the arguments (`&str`, `&[T]`) and the context taken by reference.

use agents_runtime::{Agent, FsAccess, ReadTool, ToolContext, agent, tool};

/// Greets someone by name.
#[tool(permission = public)]
async fn greet(cx: &ToolContext<'_>, name: &str, tags: &[String]) -> Result<String, String> {
    Ok(format!("{} greets {name} {tags:?}", cx.principal().user_id))
}

/// Counts bytes of an uploaded file.
#[tool(permission = public, policy(fs(read = ["/var/app/uploads/*"])))]
async fn file_size(fs: &FsAccess, path: &str) -> Result<usize, String> {
    fs.read(path).map(|b| b.len()).map_err(|e| e.to_string())
}

/// Labels a note, with every borrow under one named lifetime and a `mut` binding.
#[tool(permission = public)]
async fn label<'a>(cx: &'a ToolContext<'a>, name: &'a str, mut note: &'a str) -> Result<String, String> {
    if note.is_empty() {
        note = "-";
    }
    Ok(format!("{}: {name} {note}", cx.call_id()))
}

/// Echoes the context's ids.
#[tool(permission = public)]
async fn whoami(cx: ToolContext<'_>) -> Result<String, String> {
    Ok(format!("{}/{}", cx.run_id(), cx.call_id()))
}

agent! {
    /// Greets people.
    pub struct Greeter;
    tools: [greet, file_size, label, whoami],
}

fn main() {
    let _ = <greet as ReadTool>::run;
    let args: GreetArgs = serde_json::from_value(serde_json::json!({ "name": "Ada", "tags": ["x"] })).unwrap();
    assert_eq!(args.name, "Ada");
    let spec = <Greeter as Agent>::tool_spec("greet").unwrap();
    assert_eq!(spec.params.iter().map(|p| p.rust_type).collect::<Vec<_>>(), ["&str", "&[String]"]);
}
