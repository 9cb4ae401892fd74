//! A skill as a type of its own, with the input it takes and the output it returns (Agents.KT's
//! `skill<In, Out>`).
//!
//! `agent!` writes one zero-sized type per skill, `<Agent><Skill>Skill` (skill `review` of
//! `KycReviewer`: `KycReviewerReviewSkill`), next to the skill enum. A skill declared
//! `review(RawRequest -> Decision): [...]` takes `RawRequest` and returns `Decision`; one
//! declared `review: [...]` takes and returns the agent's `input` and `output`. The runtime's
//! `start_skill::<S>` takes an `S::Input` and hands back the run's `S::Output`, so a run
//! started with another input type does not compile.

use crate::agent::Agent;

/// A skill of an agent as a type, with its own input and output: implemented only by
/// `agent!` (sealed like [`Agent`]).
///
/// ```
/// use agents_core::TypedSkill;
/// fn skill_name<S: TypedSkill>() -> &'static str {
///     S::NAME
/// }
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a skill type written by `agent!`",
    label = "expected one skill's own type, such as `KycReviewerReviewSkill`",
    note = "`agent!` writes one type per skill, named `<Agent><Skill>Skill` (skill `review` of `KycReviewer` is `KycReviewerReviewSkill`): start a run in it with `runtime.start_skill::<KycReviewerReviewSkill>(principal, session, input)`; the skill enum's variants go to `start_in_skill`"
)]
pub trait TypedSkill: crate::seal::DeclaredByAgentMacro + Send + Sync + 'static {
    /// The agent the skill belongs to.
    type Agent: Agent;
    /// What a run in the skill takes.
    type Input: serde::Serialize + schemars::JsonSchema + Send + 'static;
    /// What a run in the skill returns, parsed from the model's final answer.
    type Output: serde::de::DeserializeOwned + schemars::JsonSchema + Send + 'static;
    /// The skill's name, as `agent!` declares it.
    const NAME: &'static str;
}
