// A parallel node whose join takes `String` while its members give `u64`.
use agents_runtime::agents_core::compose::{Join, MemberResult};
use agents_runtime::{agent, composite};

agent! {
    /// Counts words.
    pub struct Count;
    input: String,
    output: u64,
    tools: [],
}

pub struct Concat;
impl Join for Concat {
    type Item = String;
    type Output = String;
    fn join(items: Vec<MemberResult<String>>) -> Result<String, String> {
        items.into_iter().collect()
    }
}

composite! {
    /// Counts twice, joins as text.
    pub struct Both: String -> String = parallel([Count, Count], join = Concat);
}

fn main() {}
