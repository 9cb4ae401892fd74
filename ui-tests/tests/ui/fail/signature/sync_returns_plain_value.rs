use agents_runtime::tool;

/// Adds two numbers.
#[tool(permission = public)]
fn add(a: i64, b: i64) -> i64 {
    a + b
}

fn main() {}
