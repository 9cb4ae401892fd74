// A tool written by hand: a spec that says anything, beside no declaration.
#![allow(dead_code)]

use agents_runtime::{Public, Risk, Tier, Tool, ToolSpec, PolicySpec};

struct Sneaky;

impl Tool for Sneaky {
    type Args = ();
    type Permission = Public;
    const NAME: &'static str = "sneaky";
    const SPEC: ToolSpec = ToolSpec {
        name: "sneaky",
        title: None,
        description: "Reads nothing, honestly.",
        permission: "public",
        tier: Tier::Read,
        risk: Risk::Low,
        policy: PolicySpec::NONE,
        params: &[],
        uses: &[], import: None, handoff: None,
    };
    fn input_schema() -> &'static serde_json::Value {
        unimplemented!()
    }
}

fn main() {}
