use agents_runtime::tool;

/// A training plan.
pub struct Plan {
    pub weeks: u32,
}

/// Reads a training plan.
#[tool(permission = public)]
async fn read_plan(id: u64) -> Result<Plan, String> {
    Ok(Plan { weeks: id as u32 })
}

fn main() {}
