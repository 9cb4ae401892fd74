//! Skills that scope: a run works within one skill of its agent, and only the tools that skill
//! offers are offered to the model or let through the gate.
//!
//! A skill offers the tools it lists. A granted tool that no skill lists is offered under
//! every skill when the agent says `unskilled: shared`, and under none by default
//! (`unskilled: none`). An agent without skills has one implicit skill that offers every
//! granted tool. [`offers`] is that rule, written once for the runtime (on an
//! [`AgentSpec`](crate::AgentSpec)), the manifest diff and the report (on an
//! [`AgentEntry`](crate::manifest::AgentEntry)).

use serde::{Deserialize, Serialize};

/// What happens to the granted tools that no skill lists (the `unskilled` key of `agent!`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Unskilled {
    /// Offered under no skill: a tool must be listed by a skill to be offered (the default).
    #[default]
    None,
    /// Offered under every skill.
    Shared,
}

impl Unskilled {
    /// Whether it is the default (`none`), which a manifest leaves out.
    pub fn is_none(&self) -> bool {
        *self == Unskilled::None
    }

    /// The name `agent!` and the manifest write.
    pub const fn as_str(self) -> &'static str {
        match self {
            Unskilled::None => "none",
            Unskilled::Shared => "shared",
        }
    }
}

/// Whether a skill offers a tool: it lists it, or no skill lists it and the agent shares such
/// tools. The one rule of skills' scope.
///
/// ```
/// use agents_core::skill::{Unskilled, offers};
/// assert!(offers(true, true, Unskilled::None));
/// assert!(!offers(false, false, Unskilled::None));
/// assert!(offers(false, false, Unskilled::Shared));
/// assert!(!offers(false, true, Unskilled::Shared));
/// ```
pub const fn offers(listed_by_skill: bool, listed_by_any_skill: bool, unskilled: Unskilled) -> bool {
    listed_by_skill || (!listed_by_any_skill && matches!(unskilled, Unskilled::Shared))
}

/// A skill in a manifest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SkillEntry {
    /// The skill's name.
    pub name: String,
    /// Its tools, sorted.
    pub tools: Vec<String>,
    /// The names of its own input and output types; absent when it takes and returns the
    /// agent's, so an untyped skill keeps its manifest bytes and hash.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub io: Option<SkillIo>,
}

impl SkillEntry {
    /// A skill's entry from its parts.
    pub fn of(name: &str, tools: Vec<String>, io: Option<SkillIo>) -> Self {
        SkillEntry { name: name.to_owned(), tools, io }
    }

    /// Its name as `agent!` writes it: `review`, or `review(RawRequest -> Decision)` when typed.
    ///
    /// ```
    /// use agents_core::skill::{SkillEntry, SkillIo};
    /// assert_eq!(SkillEntry::of("read", vec![], None).label(), "read");
    /// let io = SkillIo::from_spec(("RawRequest", "Decision"));
    /// assert_eq!(SkillEntry::of("review", vec![], Some(io)).label(), "review(RawRequest -> Decision)");
    /// ```
    pub fn label(&self) -> String {
        match &self.io {
            Some(io) => format!("{}({} -> {})", self.name, io.input, io.output),
            None => self.name.clone(),
        }
    }
}

/// The names of a typed skill's own input and output types, as the manifest keeps them
/// (`"io": {"input": "RawRequest", "output": "Decision"}` in the skill's entry).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SkillIo {
    /// The input type's name.
    pub input: String,
    /// The output type's name.
    pub output: String,
}

impl SkillIo {
    /// From a skill spec's `(input, output)` names.
    pub fn from_spec((input, output): (&str, &str)) -> Self {
        SkillIo { input: input.to_owned(), output: output.to_owned() }
    }
}

/// Who chose the skill a run works within.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SkillChooser {
    /// The application, when it started the run.
    Application,
    /// The model, in the run's skill-choice step.
    Model,
}

impl SkillChooser {
    /// The snake_case name.
    pub const fn as_str(self) -> &'static str {
        match self {
            SkillChooser::Application => "application",
            SkillChooser::Model => "model",
        }
    }
}
