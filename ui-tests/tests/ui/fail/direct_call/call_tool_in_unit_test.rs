use agents_runtime::tool;

/// Adds two numbers.
#[tool(permission = public)]
fn add(a: i64, b: i64) -> Result<i64, String> {
    Ok(a + b)
}

#[test]
fn adds() {
    assert_eq!(add(1, 2), Ok(3));
}

fn main() {
    let _ = add(1, 2);
}
