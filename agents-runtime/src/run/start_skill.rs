//! Starting a run in a skill named by its type (see [`agents_core::typed_skill`]): the input
//! is the skill's `Input` and the handle yields its `Output`, so a run started with another
//! input type does not compile.

use super::outcome::{RunHandle, StartError};
use super::runtime::Runtime;
use crate::tool::Registry;
use agents_core::{Agent, Principal, TypedSkill};

impl Runtime {
    /// Starts a run of `S`'s agent that works within skill `S`, taking `S::Input` and
    /// returning `S::Output`: the skill's own types when `agent!` declares them
    /// (`review(RawRequest -> Decision): [...]`), else the agent's. Only the tools the skill
    /// offers are offered to the model, a call of any other granted tool is denied
    /// (`outside skill`), and no skill-choice step is made. Otherwise as
    /// [`Runtime::start_in_skill`].
    ///
    /// ```ignore
    /// let handle = runtime.start_skill::<KycReviewerReviewSkill>(principal, "session-1", request)?;
    /// let decision: Decision = handle.wait().await?;
    /// ```
    pub fn start_skill<S>(
        &self,
        principal: Principal,
        session_id: &str,
        input: S::Input,
    ) -> Result<RunHandle<S::Output>, StartError>
    where
        S: TypedSkill,
        S::Agent: Registry,
    {
        let spec = <S::Agent as Agent>::SPEC;
        let declared = spec.skill(S::NAME).ok_or(StartError::UnknownSkill { agent: spec.name, skill: S::NAME })?;
        self.start_run::<S::Agent, S::Input, S::Output>(principal, session_id, &input, Some(declared), None)
    }
}
