use agents_runtime::tool;

type PlanResult<T> = Result<T, String>;

/// A training plan.
pub struct Plan;

/// Reads a training plan.
#[tool(permission = public)]
async fn read_plan(id: u64) -> PlanResult<Plan> {
    let _ = id;
    Ok(Plan)
}

fn main() {}
