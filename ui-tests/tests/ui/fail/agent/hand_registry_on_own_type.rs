// A registry on a type of one's own, to hand to `Runtime::direct`.
#![allow(dead_code)]

use agents_runtime::{Registry, RegisteredTool};

struct Forged;

impl Registry for Forged {
    fn entry_at(_index: usize) -> Option<RegisteredTool<Self>> {
        None
    }
}

fn main() {}
