//! The helpdesk as a triage and specialists: a triage agent that only reads the policies and
//! the user's tickets, then a branch on the model's choice to the IT or the HR specialist,
//! each granted only its own tools; a choice that names neither takes the default arm,
//! DeskLoop itself. The graph manifest is committed as
//! `baselines/helpdesk-triage.composite.json`.

use super::DeskLoop;
use super::perms;
use super::tools::*;
use agents_runtime::{agent, composite};

agent! {
    /// Reads the request and the user's tickets and restates the request for a specialist,
    /// changing nothing.
    pub struct DeskTriage;
    name: "desk-triage",
    tools: [lookup_policy, list_my_tickets],
    ceiling: [perms::ticket::read],
}

agent! {
    /// The IT specialist: tickets, equipment, software and password resets.
    pub struct ItSpecialist;
    name: "it-specialist",
    tools: [lookup_policy, list_my_tickets, open_ticket, request_equipment, request_software, reset_password],
    ceiling: [
        perms::ticket::read, perms::ticket::open, perms::equipment::request,
        perms::software::request, perms::identity::reset,
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
