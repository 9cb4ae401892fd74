use agents_runtime::tool;

/// What can go wrong when reading a plan.
#[derive(Debug)]
pub enum PlanError {
    NotFound,
}

/// Reads a training plan.
#[tool(permission = public)]
async fn read_plan(id: u64) -> Result<String, PlanError> {
    if id == 0 { Err(PlanError::NotFound) } else { Ok(format!("plan {id}")) }
}

fn main() {}
