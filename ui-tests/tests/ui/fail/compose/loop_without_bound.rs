// A loop with a stop condition but no bound.
use agents_runtime::agents_core::compose::Stop;
use agents_runtime::{agent, composite};

agent! {
    /// Improves a draft.
    pub struct Improve;
    input: String,
    output: String,
    tools: [],
}

pub struct Good;
impl Stop<String> for Good {
    fn stop(output: &String) -> bool {
        output.ends_with('.')
    }
}

composite! {
    /// Improves until the draft is good.
    pub struct Editor: String -> String = loop(Improve, until = Good);
}

fn main() {}
