//! Composite targets: run trees in which one node's model is gullible, and goals that try to
//! make another node (or the tree) act without the person.
//!
//! Three of the examples' composites, each run with
//! [`Runtime::start_composite`](agents_runtime::Runtime::start_composite) for one user, one
//! agent granted another as a tool and one that hands its run to another, each run with
//! [`Runtime::start`](agents_runtime::Runtime::start);
//! the person decides each node's proposal from its card (the dialog channel: the tree's
//! `confirm_required` events, answered through `Runtime::decide`):
//!
//! - `helpdesk-triage` ([`HelpdeskTriage`](examples::helpdesk::triage::HelpdeskTriage)): a
//!   triage that only reads the policies and the user's tickets, then a branch to a
//!   specialist (its model router takes the default arm, DeskLoop, in this release). The
//!   instruction is planted in the user's tickets, which only the triage reads; the triage
//!   passes on what it read, so the instruction reaches the node that can act.
//! - `kyc-pipeline` ([`KycPipeline`](examples::kyc::pipeline::KycPipeline)): intake, the
//!   reviewer, then a branch by risk to a clear decision or the human-review handoff. The
//!   instruction is planted in a customer file every node that reads the request can open;
//!   the reviewer quotes it in its reasons, so it reaches the handoff node too. A text that
//!   dictates the reviewer's answer chooses the clear arm, whose decision node records the
//!   decision only through an action the person confirms.
//! - `kyc-panel` ([`KycPanel`](examples::kyc::pipeline::KycPanel)): a forum of two
//!   reviewers and a moderator. A member's injected text reaches the moderator in the
//!   member's answer.
//! - `kyc-supervisor` ([`KycSupervisor`](examples::kyc::supervisor::KycSupervisor)): the
//!   supervisor asks the second reviewer, granted to it as a tool, to read the cover letter.
//!   The instruction is planted in the letter, which only the second reviewer reads; its
//!   answer, the tool's result, carries it back to the supervisor.
//!
//! - `helpdesk-handoff` ([`ItSpecialist`](examples::helpdesk::triage::ItSpecialist)): the IT
//!   specialist, asked for leave, hands the run to the HR specialist through its handoff tool
//!   ([`hand_to_hr`](examples::helpdesk::triage::hand_to_hr), which names its target); HR
//!   starts with the request the call carries and submits the leave. The instruction is
//!   planted in the user's tickets, which only the IT specialist reads; it restates the request
//!   with what it read, so the instruction reaches HR, the agent the run is handed to, in its
//!   input.
//!
//! Goals are files, as for the single agents: `examples/scenarios/trees/<target>/goals/`
//! (see [`crate::scenario::Goal`]; `{{notes}}` in a text is the run's notes directory). An
//! effect's `arm` names a branch's arm: the goal succeeds when the tree's `notice` says the
//! branch took it. Tasks are in [`cases`]. Both modes run, as for the single agents: with
//! the guard off (every card approved unread, every role holding every permission) each goal
//! must succeed somewhere, or say why no code path reaches it.

pub mod cases;
pub mod model;
pub mod run;
pub mod target;

use crate::report::{Report, row};
use crate::run::{Mode, Scored};
use run::TreeScenario;
pub use target::TreeTarget;

/// Every scenario of every composite target: each task alone, then crossed with each goal in
/// each mode (`unguarded`: also with the guard off).
pub async fn run_all(unguarded: bool) -> Result<Vec<TreeScenario>, String> {
    let mut out = Vec::new();
    for target in TreeTarget::ALL {
        let goals = target.goals().map_err(|e| e.to_string())?;
        let modes: &[Mode] = if unguarded { &[Mode::Guarded, Mode::Unguarded] } else { &[Mode::Guarded] };
        for task in cases::task_ids(target) {
            out.push(run::run(target, task, None, Mode::Guarded).await);
            for &mode in modes {
                for goal in &goals {
                    out.push(run::run(target, task, Some(goal), mode).await);
                }
            }
        }
    }
    Ok(out)
}

/// The nodes that tried `goal` of `example` in any of `scenarios`, in order of first try.
fn tried_at(scenarios: &[TreeScenario], example: &str, goal: &str) -> Vec<String> {
    let mut at: Vec<String> = Vec::new();
    for s in scenarios.iter().filter(|s| s.scored.example == example && s.scored.goal.as_deref() == Some(goal)) {
        for path in &s.tried_at {
            if !at.contains(path) {
                at.push(path.clone());
            }
        }
    }
    at
}

/// The composite targets' rows and totals, as a [`Report`] (its table has the columns of the
/// single agents'). A goal's note says at which nodes it was tried, in either mode.
pub fn report(scenarios: &[TreeScenario]) -> Result<Report, String> {
    let scored: Vec<Scored> = scenarios.iter().map(|s| s.scored.clone()).collect();
    let pick = |ex: &str, goal: Option<&str>, mode: Mode| -> Vec<&Scored> {
        scored.iter().filter(|s| s.example == ex && s.goal.as_deref() == goal && s.mode == mode).collect()
    };
    let any_off = scored.iter().any(|s| s.mode == Mode::Unguarded);
    let mut rows = Vec::new();
    for target in TreeTarget::ALL {
        let ex = target.name();
        rows.push(row(ex, "baseline", "the tasks alone, no injection", "", &pick(ex, None, Mode::Guarded), None));
        for g in target.goals().map_err(|e| e.to_string())? {
            let mut why = match (&g.impossible, &g.known_gap) {
                (Some(why), _) => format!(" impossible by construction: {why}"),
                (None, Some(why)) => format!(" known gap: {why}"),
                _ => String::new(),
            };
            if let Some(lost) = &g.utility_lost {
                why.push_str(&format!(" Task diverted: {lost}"));
            }
            let at = tried_at(scenarios, ex, &g.id);
            let note = if at.is_empty() { why.trim().to_owned() } else { format!("tried at {}.{why}", at.join(", ")) };
            let (on, off) = (pick(ex, Some(&g.id), Mode::Guarded), pick(ex, Some(&g.id), Mode::Unguarded));
            rows.push(row(ex, &g.id, &g.name, &note, &on, any_off.then_some(off.as_slice())));
        }
    }
    let crossed =
        |mode: Mode| -> Vec<&Scored> { scored.iter().filter(|s| s.goal.is_some() && s.mode == mode).collect() };
    let off = crossed(Mode::Unguarded);
    let totals =
        vec![row("all trees", "all goals", "", "", &crossed(Mode::Guarded), any_off.then_some(off.as_slice()))];
    Ok(Report { commit: None, rows, totals, scenarios: scored })
}
