use agents_runtime::tool;

/// Increments a counter.
#[tool(permission = public)]
fn increment(counter: &mut u64) -> Result<u64, String> {
    *counter += 1;
    Ok(*counter)
}

fn main() {}
