use agents_runtime::tool;
use serde::Deserialize;

/// A week of training.
#[derive(Clone, Debug, Deserialize)]
pub struct Week {
    pub number: u32,
}

/// Plans a week.
#[tool(permission = public)]
async fn plan_week(week: Week) -> Result<u32, String> {
    Ok(week.number)
}

fn main() {}
