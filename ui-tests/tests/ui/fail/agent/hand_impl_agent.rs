// An agent written by hand, with any manifest text it likes.
#![allow(dead_code)]

use agents_runtime::{Agent, AgentSpec, Limits, ToolSpec};

struct Forged;

impl Agent for Forged {
    type Input = String;
    type Output = String;
    const SPEC: AgentSpec = AgentSpec {
        name: "forged",
        description: "",
        input: "String",
        output: "String",
        skills: &[],
        ceiling: None,
        limits: Limits::DEFAULT,
        models: None,
        budget: agents_runtime::agents_core::budget::BudgetSpec::NONE,
        unskilled: agents_runtime::Unskilled::None,
        knowledge: &[],
        audit_values: agents_runtime::agents_core::audit::AuditValues::Full,
        expose_mcp: &[],
    };
    const MANIFEST: &'static str = "{}";
    const MANIFEST_SHA256: &'static str = "";
    fn tools() -> &'static [&'static ToolSpec] {
        &[]
    }
    const CAPABILITIES: agents_runtime::agents_core::compose::Capabilities =
        agents_runtime::agents_core::compose::Capabilities::NONE;
}

fn main() {}
