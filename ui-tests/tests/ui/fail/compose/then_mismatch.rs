// `then(a, b)` where `a` gives `u64` and `b` takes `String`.
use agents_runtime::{agent, composite};

agent! {
    /// Counts words.
    pub struct Count;
    input: String,
    output: u64,
    tools: [],
}

agent! {
    /// Summarises a text.
    pub struct Summarise;
    input: String,
    output: String,
    tools: [],
}

composite! {
    /// Counts, then summarises the count.
    pub struct Pipeline: String -> String = then(Count, Summarise);
}

fn main() {}
