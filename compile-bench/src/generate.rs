//! Writes the generated cargo workspace: `bench_agents` (tools declared with `#[tool]` and
//! one `agent!`) and `bench_baseline` (the same functions with plain serde + schemars derives
//! and a hand-written `match` dispatch).

use std::fmt::Write as _;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

/// The crate that uses the framework's macros.
pub(crate) const AGENTS: &str = "bench_agents";
/// The hand-written equivalent.
pub(crate) const BASELINE: &str = "bench_baseline";

/// The line of every tool body that the one-line-edit scenario rewrites.
const EDIT_MARKER: &str = "// compile-bench: edited line";

/// Where the generated workspace lives.
#[derive(Debug, Clone)]
pub(crate) struct Workspace {
    /// The workspace root (holds `Cargo.toml` and `Cargo.lock`).
    pub(crate) root: PathBuf,
    /// The workspace's own target directory.
    pub(crate) target: PathBuf,
    /// The number of tools in each crate.
    pub(crate) tools: usize,
}

impl Workspace {
    /// The directory of the crate `krate`.
    pub(crate) fn crate_dir(&self, krate: &str) -> PathBuf {
        self.root.join(krate)
    }

    /// The module file the one-line-edit scenario changes (the middle tool).
    pub(crate) fn edited_module(&self, krate: &str) -> PathBuf {
        self.crate_dir(krate).join("src").join("tools").join(format!("{}.rs", tool_name(self.tools / 2)))
    }

    /// The crate root the touch scenario bumps.
    pub(crate) fn lib_rs(&self, krate: &str) -> PathBuf {
        self.crate_dir(krate).join("src").join("lib.rs")
    }

    /// Total bytes of generated Rust source in `krate`.
    pub(crate) fn source_bytes(&self, krate: &str) -> u64 {
        let size = |dir: PathBuf| -> u64 {
            fs::read_dir(dir)
                .map(|d| {
                    d.filter_map(Result::ok)
                        .filter_map(|e| e.metadata().ok())
                        .filter(|m| m.is_file())
                        .map(|m| m.len())
                        .sum()
                })
                .unwrap_or(0)
        };
        let src = self.crate_dir(krate).join("src");
        size(src.join("tools")) + size(src)
    }
}

/// `tool_07` for tool 7 (zero-padded to two digits so names sort in order up to 99).
fn tool_name(i: usize) -> String {
    format!("tool_{i:02}")
}

/// `Tool07Args`.
fn args_name(i: usize) -> String {
    format!("Tool{i:02}Args")
}

/// Tools with index `i % 4 == 3` are mutating (an action tool in the agents crate).
fn is_mutating(i: usize) -> bool {
    i % 4 == 3
}

/// The permission area of tool `i`.
fn area(i: usize) -> String {
    format!("area_{}", i % 10)
}

/// Writes `contents` to `path` unless it already holds exactly that, keeping mtimes stable.
fn write_if_changed(path: &Path, contents: &str) -> io::Result<()> {
    if fs::read_to_string(path).is_ok_and(|old| old == contents) {
        return Ok(());
    }
    if let Some(parent) = path.parent() {
        fs::create_dir_all(parent)?;
    }
    fs::write(path, contents)
}

/// The five parameters every tool takes.
const PARAMS: &str = "id: u64, name: String, note: Option<String>, flag: bool, items: Vec<u32>";

/// The body shared by both crates; `salt` is the literal the edit scenario rewrites.
fn body(i: usize, salt: u64) -> String {
    let name = tool_name(i);
    format!(
        r#"    let salt: u64 = {salt}; {EDIT_MARKER}
    if items.len() > 4096 {{
        return Err(BenchError(format!("{name}: {{}} items is too many", items.len())));
    }}
    let total = items
        .iter()
        .map(|&x| u64::from(x))
        .sum::<u64>()
        .wrapping_add(id)
        .wrapping_mul(salt + {i});
    let mut out = Map::new();
    out.insert("tool".to_owned(), Value::from("{name}"));
    out.insert("name".to_owned(), Value::from(name.to_uppercase()));
    out.insert("note".to_owned(), note.map(Value::from).unwrap_or(Value::Null));
    out.insert("flag".to_owned(), Value::from(!flag));
    out.insert("total".to_owned(), Value::from(total));
    Ok(Value::Object(out))
"#
    )
}

const ERROR_TYPE: &str = r#"/// The error every tool returns.
#[derive(Debug)]
pub struct BenchError(pub String);

impl std::fmt::Display for BenchError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}
"#;

fn agents_tool(i: usize) -> String {
    let name = tool_name(i);
    let attr = if is_mutating(i) {
        format!("permission = perms::{}::write, mutating, title = \"Bench action {i}\", risk = medium", area(i))
    } else {
        format!("permission = perms::{}::read, risk = low", area(i))
    };
    format!(
        "//! Tool {i}.\n\nuse crate::{{BenchError, perms}};\nuse agents_runtime::tool;\nuse serde_json::{{Map, Value}};\n\n\
         /// Bench tool {i}: combines its arguments into a JSON object.\n\
         ///\n\
         /// # Arguments\n\
         ///\n\
         /// * `id` - The `id` parameter.\n\
         /// * `name` - The `name` parameter.\n\
         /// * `note` - The `note` parameter.\n\
         /// * `flag` - The `flag` parameter.\n\
         /// * `items` - The `items` parameter.\n\
         #[tool({attr})]\n\
         pub async fn {name}({PARAMS}) -> Result<Value, BenchError> {{\n{body}}}\n",
        body = body(i, 1)
    )
}

/// `pub mod tools { pub mod tool_00; ... }`: one module (file) per tool.
fn tool_modules(tools: usize) -> String {
    let mut s = String::from("/// The tools, one module each.\npub mod tools {\n");
    for i in 0..tools {
        let _ = writeln!(s, "    pub mod {};", tool_name(i));
    }
    s.push_str("}\n");
    s
}

fn agents_lib(tools: usize) -> String {
    let mut s = String::from("//! Generated by compile-bench: tools declared with `#[tool]`, one `agent!`.\n\n");
    if tools > 100 {
        let _ = writeln!(s, "#![recursion_limit = \"{}\"]\n", tools * 2 + 64);
    }
    s.push_str("use agents_runtime::{agent, permissions};\n\npermissions! {\n    /// The permissions the tools declare.\n    pub mod perms {\n");
    for a in 0..tools.min(10) {
        let _ = writeln!(s, "        area_{a}.read,\n        area_{a}.write,");
    }
    s.push_str("    }\n}\n\n");
    s.push_str(ERROR_TYPE);
    s.push('\n');
    s.push_str(&tool_modules(tools));
    s.push('\n');
    for i in 0..tools {
        let n = tool_name(i);
        let _ = writeln!(s, "pub use tools::{n}::{n};");
    }
    s.push_str("\nagent! {\n    /// The bench agent: grants every tool.\n    pub struct BenchAgent;\n    name: \"bench\",\n    tools: [\n");
    for i in 0..tools {
        let _ = writeln!(s, "        {},", tool_name(i));
    }
    s.push_str("    ],\n}\n");
    s
}

fn baseline_tool(i: usize) -> String {
    let name = tool_name(i);
    let args = args_name(i);
    format!(
        r#"//! Tool {i}.

use crate::BenchError;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{{Map, Value}};
use std::sync::OnceLock;

/// Arguments of the `{name}` tool.
#[derive(Deserialize, JsonSchema, Clone, Debug)]
#[serde(deny_unknown_fields)]
pub struct {args} {{
    /// The `id` parameter.
    pub id: u64,
    /// The `name` parameter.
    pub name: String,
    /// The `note` parameter.
    pub note: Option<String>,
    /// The `flag` parameter.
    pub flag: bool,
    /// The `items` parameter.
    pub items: Vec<u32>,
}}

/// The JSON schema of the arguments, built once.
pub fn schema() -> &'static Value {{
    static SCHEMA: OnceLock<Value> = OnceLock::new();
    SCHEMA.get_or_init(crate::schema_for::<{args}>)
}}

/// Bench tool {i}: combines its arguments into a JSON object.
pub async fn {name}({PARAMS}) -> Result<Value, BenchError> {{
{body}}}
"#,
        body = body(i, 1)
    )
}

fn baseline_lib(tools: usize) -> String {
    let mut s = String::from(
        "//! Generated by compile-bench: the same tools with serde + schemars derives and a hand-written dispatch.\n\nuse serde_json::Value;\n\n",
    );
    s.push_str(ERROR_TYPE);
    s.push_str(
        r#"
/// Builds a draft 2020-12 JSON schema for `T`.
pub fn schema_for<T: schemars::JsonSchema>() -> Value {
    let generator = schemars::generate::SchemaSettings::draft2020_12().into_generator();
    serde_json::to_value(generator.into_root_schema_for::<T>()).unwrap_or_default()
}

"#,
    );
    s.push_str(&tool_modules(tools));
    s.push_str("\n/// Every tool's name.\npub const TOOLS: &[&str] = &[\n");
    for i in 0..tools {
        let _ = writeln!(s, "    \"{}\",", tool_name(i));
    }
    s.push_str("];\n\n/// The cached input schema of a tool.\npub fn schema(name: &str) -> Option<&'static Value> {\n    match name {\n");
    for i in 0..tools {
        let n = tool_name(i);
        let _ = writeln!(s, "        \"{n}\" => Some(tools::{n}::schema()),");
    }
    s.push_str("        _ => None,\n    }\n}\n\n");
    s.push_str("/// Deserializes the arguments strictly and calls the named tool.\npub async fn dispatch(name: &str, args: Value) -> Result<Value, String> {\n    match name {\n");
    for i in 0..tools {
        let n = tool_name(i);
        let a = args_name(i);
        let _ = write!(
            s,
            "        \"{n}\" => {{\n            let a: tools::{n}::{a} = serde_json::from_value(args).map_err(|e| e.to_string())?;\n            \
             tools::{n}::{n}(a.id, a.name, a.note, a.flag, a.items).await.map_err(|e| e.to_string())\n        }}\n"
        );
    }
    s.push_str("        _ => Err(format!(\"unknown tool `{name}`\")),\n    }\n}\n");
    // An async fn nobody polls is compiled by the crate that polls it, not this one; the
    // framework's handlers are boxed futures compiled where the tools are. Boxing the dispatch
    // future here, as an agent loop holds it, makes this crate compile the same work.
    s.push_str(
        r#"
/// A boxed tool call, as an agent loop holds it.
pub type BoxFuture<'a, T> = std::pin::Pin<Box<dyn std::future::Future<Output = T> + Send + 'a>>;

/// [`dispatch`], boxed.
pub fn dispatch_boxed(name: &str, args: Value) -> BoxFuture<'_, Result<Value, String>> {
    Box::pin(dispatch(name, args))
}
"#,
    );
    s
}

/// The project's crates the generated `bench_agents` depends on.
const PROJECT_CRATES: &[&str] = &["agents-core", "agents-macros", "agents-provider", "agents-runtime"];

/// Copies the project's root manifest and the crates `agents-runtime` needs into
/// `out/project`, so edits to the working tree during a run do not make cargo rebuild the
/// dependencies between timed builds. Unchanged files keep their mtimes; files gone from the
/// project are removed from the copy. Returns the copy's root.
pub(crate) fn snapshot_project(project: &Path, out: &Path) -> io::Result<PathBuf> {
    let snap = out.join("project");
    fs::create_dir_all(&snap)?;
    for file in ["Cargo.toml", "rust-toolchain.toml"] {
        if project.join(file).exists() {
            sync_file(&project.join(file), &snap.join(file))?;
        }
    }
    for krate in PROJECT_CRATES {
        sync_dir(&project.join(krate), &snap.join(krate))?;
    }
    Ok(snap)
}

/// Copies `from` to `to` unless `to` already holds the same bytes.
fn sync_file(from: &Path, to: &Path) -> io::Result<()> {
    let bytes = fs::read(from)?;
    if fs::read(to).is_ok_and(|old| old == bytes) {
        return Ok(());
    }
    fs::write(to, bytes)
}

/// Mirrors the directory `from` into `to` (skipping any `target` directory).
fn sync_dir(from: &Path, to: &Path) -> io::Result<()> {
    fs::create_dir_all(to)?;
    let mut names = Vec::new();
    for entry in fs::read_dir(from)? {
        let entry = entry?;
        let name = entry.file_name();
        if name == "target" {
            continue;
        }
        let kind = entry.file_type()?;
        if kind.is_dir() {
            sync_dir(&entry.path(), &to.join(&name))?;
        } else if kind.is_file() {
            sync_file(&entry.path(), &to.join(&name))?;
        } else {
            continue;
        }
        names.push(name);
    }
    for entry in fs::read_dir(to)? {
        let entry = entry?;
        if !names.contains(&entry.file_name()) {
            if entry.file_type()?.is_dir() {
                fs::remove_dir_all(entry.path())?;
            } else {
                fs::remove_file(entry.path())?;
            }
        }
    }
    Ok(())
}

/// Writes (or refreshes) the generated workspace under `out`, copying `Cargo.lock` and
/// `rust-toolchain.toml` from `project` so dependency versions and the toolchain match;
/// `bench_agents` depends on the `agents-runtime` found under `crates` (the project itself
/// or a snapshot of it).
pub(crate) fn write_workspace(out: &Path, project: &Path, crates: &Path, tools: usize) -> io::Result<Workspace> {
    let root = out.join("ws");
    fs::create_dir_all(&root)?;
    let runtime = crates.join("agents-runtime");
    let manifest = format!(
        r#"# Generated by compile-bench. A workspace of its own, separate from the project's.
[workspace]
resolver = "3"
members = ["{AGENTS}", "{BASELINE}"]

[workspace.dependencies]
agents-runtime = {{ path = {runtime:?}, default-features = false }}
serde = {{ version = "1", features = ["derive"] }}
serde_json = "1"
schemars = {{ version = "1", features = ["derive"] }}

# As in the project: dependencies without debug info.
[profile.dev.package."*"]
debug = false
"#
    );
    write_if_changed(&root.join("Cargo.toml"), &manifest)?;
    // Lock the same versions as the project; cargo prunes and extends it for these crates.
    fs::copy(project.join("Cargo.lock"), root.join("Cargo.lock"))?;
    let toolchain = project.join("rust-toolchain.toml");
    if toolchain.exists() {
        let text = fs::read_to_string(&toolchain)?;
        write_if_changed(&root.join("rust-toolchain.toml"), &text)?;
    }

    let package = |name: &str, deps: &str| {
        format!(
            "[package]\nname = \"{name}\"\nversion = \"0.0.0\"\nedition = \"2024\"\npublish = false\n\n[dependencies]\n{deps}"
        )
    };
    let agents = root.join(AGENTS);
    write_if_changed(
        &agents.join("Cargo.toml"),
        &package(AGENTS, "agents-runtime.workspace = true\nserde_json.workspace = true\n"),
    )?;
    write_if_changed(&agents.join("src/lib.rs"), &agents_lib(tools))?;
    let baseline = root.join(BASELINE);
    write_if_changed(
        &baseline.join("Cargo.toml"),
        &package(BASELINE, "serde.workspace = true\nserde_json.workspace = true\nschemars.workspace = true\n"),
    )?;
    write_if_changed(&baseline.join("src/lib.rs"), &baseline_lib(tools))?;
    for i in 0..tools {
        let file = format!("src/tools/{}.rs", tool_name(i));
        write_if_changed(&agents.join(&file), &agents_tool(i))?;
        write_if_changed(&baseline.join(&file), &baseline_tool(i))?;
    }
    // Remove modules left over from a run with more tools.
    for dir in [&agents, &baseline] {
        for entry in fs::read_dir(dir.join("src").join("tools"))?.filter_map(Result::ok) {
            let name = entry.file_name().to_string_lossy().into_owned();
            let stale = name
                .strip_prefix("tool_")
                .and_then(|r| r.strip_suffix(".rs"))
                .and_then(|n| n.parse::<usize>().ok())
                .is_some_and(|n| n >= tools);
            if stale {
                fs::remove_file(entry.path())?;
            }
        }
    }
    Ok(Workspace { target: root.join("target"), root, tools })
}

/// Rewrites the marked line of `file` so it holds `salt`: a one-line edit of a literal.
pub(crate) fn edit_literal(file: &Path, salt: u64) -> io::Result<()> {
    let text = fs::read_to_string(file)?;
    let mut found = false;
    let edited: Vec<String> = text
        .lines()
        .map(|line| {
            if line.ends_with(EDIT_MARKER) {
                found = true;
                format!("    let salt: u64 = {salt}; {EDIT_MARKER}")
            } else {
                line.to_owned()
            }
        })
        .collect();
    if !found {
        return Err(io::Error::other(format!("{} has no line marked `{EDIT_MARKER}`", file.display())));
    }
    fs::write(file, edited.join("\n") + "\n")
}

/// Sets the modification time of `file` to now, so cargo rebuilds its crate.
pub(crate) fn touch(file: &Path) -> io::Result<()> {
    fs::File::options().write(true).open(file)?.set_modified(SystemTime::now())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_crates_share_the_bodies() {
        let a = agents_tool(7);
        let b = baseline_tool(7);
        let body = body(7, 1);
        assert!(a.contains(&body) && b.contains(&body));
        assert!(agents_tool(3).contains("mutating"));
    }

    #[test]
    fn sync_mirrors_a_directory() {
        let dir = std::env::temp_dir().join(format!("compile-bench-sync-{}", std::process::id()));
        let (from, to) = (dir.join("from"), dir.join("to"));
        fs::create_dir_all(from.join("src")).unwrap();
        fs::create_dir_all(from.join("target")).unwrap();
        fs::write(from.join("src/lib.rs"), "a").unwrap();
        sync_dir(&from, &to).unwrap();
        assert_eq!(fs::read_to_string(to.join("src/lib.rs")).unwrap(), "a");
        assert!(!to.join("target").exists());
        fs::remove_file(from.join("src/lib.rs")).unwrap();
        fs::write(from.join("src/main.rs"), "b").unwrap();
        sync_dir(&from, &to).unwrap();
        assert!(!to.join("src/lib.rs").exists() && to.join("src/main.rs").exists());
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn edit_rewrites_only_the_marked_line() {
        let dir = std::env::temp_dir().join(format!("compile-bench-test-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let f = dir.join("t.rs");
        fs::write(&f, baseline_tool(2)).unwrap();
        edit_literal(&f, 42).unwrap();
        let text = fs::read_to_string(&f).unwrap();
        assert!(text.contains("let salt: u64 = 42;"));
        assert_eq!(text.lines().count(), baseline_tool(2).lines().count());
        fs::remove_dir_all(&dir).unwrap();
    }
}
