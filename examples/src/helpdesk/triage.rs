//! The helpdesk as a triage and specialists: a triage agent that only reads the policies and
//! the user's tickets, then a branch on the model's choice to the IT or the HR specialist,
//! each granted only its own tools; a choice that names neither takes the default arm,
//! DeskLoop itself. The graph manifest is committed as
//! `baselines/helpdesk-triage.composite.json`.
//!
//! A leave question that reaches the IT specialist is handed to the HR specialist
//! ([`hand_to_hr`], a handoff tool that names its target): the IT specialist's run ends with
//! HR's answer, and its ceiling holds everything HR reaches, which its manifest shows.

use super::DeskLoop;
use super::perms;
use super::tools::*;
use agents_runtime::{agent, composite, tool};

/// Hands a leave question (balances, leave requests) to the HR specialist, who answers it;
/// this run ends with that answer.
///
/// # Arguments
/// * `request` - the user's request, restated for HR.
#[tool(permission = perms::leave::read, handoff = HrSpecialist)]
pub fn hand_to_hr(request: String);

agent! {
    /// Reads the request and the user's tickets and restates the request for a specialist,
    /// changing nothing.
    pub struct DeskTriage;
    name: "desk-triage",
    tools: [lookup_policy, list_my_tickets],
    ceiling: [perms::ticket::read],
}

agent! {
    /// The IT specialist: tickets, equipment, software and password resets; a leave question
    /// goes to the HR specialist.
    pub struct ItSpecialist;
    name: "it-specialist",
    tools: [
        lookup_policy, list_my_tickets, open_ticket, request_equipment, request_software, reset_password,
        hand_to_hr,
    ],
    ceiling: [
        perms::ticket::read, perms::ticket::open, perms::equipment::request,
        perms::software::request, perms::identity::reset,
        // Everything the HR specialist reaches, which a handoff to it may run.
        perms::leave::read, perms::leave::request,
    ],
}

agent! {
    /// The HR specialist: leave balances and leave requests.
    pub struct HrSpecialist;
    name: "hr-specialist",
    tools: [lookup_policy, get_leave_balance, get_request_history, submit_leave_request],
    ceiling: [perms::leave::read, perms::leave::request],
}

composite! {
    /// Triage, then the IT or the HR specialist as the model chooses; any other choice goes
    /// to DeskLoop.
    pub struct HelpdeskTriage: String -> String =
        then(DeskTriage, branch(model, [ItSpecialist, HrSpecialist], default = DeskLoop));
}
