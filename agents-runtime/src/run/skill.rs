//! Skills that scope (see [`agents_core::skill`]): the skill a run works within and the
//! tools it offers, the skill-choice step offered to the model when the application named
//! none, and the reading of its answer, which fails closed.
//!
//! A run of an agent with skills works within one. The application names it
//! ([`Runtime::start_in_skill`](super::Runtime::start_in_skill)), or the model's first answer
//! chooses it: that call is offered one tool only, [`CHOICE_TOOL`], whose argument is an
//! enum of the skill names. An answer that is not exactly one call of it naming a declared
//! skill ends the run ([`RunError::SkillChoice`](super::RunError::SkillChoice)) before any
//! tool is offered; there is no default skill. The choice is a model call like any other:
//! it passes the budget gate and counts as one of the turn's iterations. Once chosen, only
//! the skill's tools are sent to the model, and the gate denies a call of any other granted
//! tool (`outside skill`), a tool's nested calls included (`agent!` refuses a skill that does
//! not offer the tools its tools invoke). An agent without skills works as one implicit skill
//! offering every granted tool: no choice, no `skill_chosen` record. A skill with input and
//! output types of its own is never offered to the choice: the application starts it, with its
//! input ([`Runtime::start_skill`](super::Runtime::start_skill)). A direct session (MCP,
//! the application's own calls) works within no skill: every available tool serves it.

use super::choice::{one_call_argument, shown};
use crate::provider::{ChatResponse, ToolDefinition};
use crate::tool::Registry;
use agents_core::SkillSpec;
use agents_core::skill::SkillChooser;
use serde_json::{Value, json};

/// The name of the one tool the skill-choice step offers.
pub const CHOICE_TOOL: &str = "choose_skill";

/// The skill a run works within: its name, who chose it, and, by position in the agent's
/// `tools()`, whether it offers each tool.
#[derive(Debug, Clone)]
pub(super) struct Scope {
    pub(super) skill: &'static SkillSpec,
    pub(super) by: SkillChooser,
    offered: Vec<bool>,
}

impl Scope {
    /// Skill `skill` of agent `A`, chosen by `by`.
    pub(super) fn of<A: Registry>(skill: &'static SkillSpec, by: SkillChooser) -> Self {
        let offered = A::tools().iter().map(|t| A::SPEC.skill_offers(skill, t.name)).collect();
        Scope { skill, by, offered }
    }

    /// Whether the skill offers the tool at `index` of the agent's `tools()`.
    pub(super) fn offers(&self, index: usize) -> bool {
        self.offered.get(index).copied().unwrap_or(false)
    }

    /// The names of the tools it offers, in `tools()` order.
    pub(super) fn tool_names<A: Registry>(&self) -> Vec<&'static str> {
        A::tools().iter().zip(&self.offered).filter(|(_, on)| **on).map(|(t, _)| t.name).collect()
    }

    /// What its `skill_chosen` record keeps in `result`.
    pub(super) fn record_value<A: Registry>(&self) -> Value {
        json!({"skill": self.skill.name, "by": self.by.as_str(), "tools": self.tool_names::<A>()})
    }
}

/// The skills the model may choose: those that take and return the agent's input and output
/// (a typed skill is started by the application, with its own input).
fn choosable<A: Registry>() -> impl Iterator<Item = &'static SkillSpec> {
    A::SPEC.skills.iter().filter(|s| s.io.is_none())
}

/// The one tool of the skill-choice step: its argument an enum of `A`'s skill names.
pub(super) fn choice_tool<A: Registry>() -> ToolDefinition {
    let names: Vec<&str> = choosable::<A>().map(|s| s.name).collect();
    ToolDefinition {
        name: CHOICE_TOOL.to_owned(),
        description: "Choose the one skill this request needs; only its tools will be offered afterwards.".to_owned(),
        input_schema: json!({
            "type": "object",
            "properties": {"skill": {"type": "string", "enum": names}},
            "required": ["skill"],
            "additionalProperties": false
        }),
    }
}

/// The instruction of the skill-choice step (names from code only: the skills and their
/// tools, as `agent!` declares them).
pub(super) fn choice_instruction<A: Registry>() -> String {
    let skills: Vec<String> =
        choosable::<A>().map(|s| format!("`{}` (tools: {})", s.name, s.tools.join(", "))).collect();
    format!(
        "\n\nFirst choose the skill this request needs by calling `{CHOICE_TOOL}` once, and nothing else. The skills: {}.",
        skills.join("; ")
    )
}

/// The skill the model's answer to the choice step names; any other answer is refused with
/// why (a value the model wrote is quoted escaped and cut).
pub(super) fn read_choice<A: Registry>(response: &ChatResponse) -> Result<&'static SkillSpec, String> {
    let skill = one_call_argument(response, CHOICE_TOOL, "skill", "the skill choice")?;
    choosable::<A>().find(|s| s.name == skill).ok_or_else(|| {
        let declared: Vec<String> = choosable::<A>().map(|s| format!("`{}`", s.name)).collect();
        format!("`{CHOICE_TOOL}` named {}, which is none of the skills ({})", shown(&skill), declared.join(", "))
    })
}
