// A branch whose arm gives `u64` while its default gives `String`.
use agents_runtime::agents_core::compose::Route;
use agents_runtime::{agent, composite};

agent! {
    /// Counts words.
    pub struct Count;
    input: String,
    output: u64,
    tools: [],
}

agent! {
    /// Answers.
    pub struct Answer;
    input: String,
    output: String,
    tools: [],
}

pub struct Always;
impl Route<String> for Always {
    fn route(_: &String) -> Option<&'static str> {
        Some("count")
    }
}

composite! {
    /// One of two arms that do not give one type.
    pub struct Desk: String -> String = branch(Always, [Count], default = Answer);
}

fn main() {}
