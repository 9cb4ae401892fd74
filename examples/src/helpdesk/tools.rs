//! The helpdesk's tools in three tiers: reads run on their own; actions (leave, tickets,
//! equipment, software) run only after the user confirms these exact arguments; the password
//! reset is a handoff with no body and no execution path.

use super::perms;
use super::store::{ItemRequest, LeaveAccount, LeaveRequest, POLICIES, ServiceError, Store, Ticket};
use agents_runtime::{ToolContext, tool};
use serde_json::{Value, json};

/// The helpdesk's store, as the application handed it to the runtime
/// (`RuntimeBuilder::shared_state`): the tools keep no store of their own.
fn store<'a>(cx: &ToolContext<'a>) -> Result<&'a Store, ServiceError> {
    cx.state::<Store>().ok_or_else(|| {
        ServiceError::Unavailable(
            "the helpdesk store was not handed to the runtime (RuntimeBuilder::shared_state)".into(),
        )
    })
}

/// Looks up a helpdesk policy by topic: leave, probation, equipment, software, password,
/// tickets.
///
/// # Arguments
///
/// * `topic` - what the policy is about, e.g. `parental leave`
// Marked `egress`: the topic is a search query, which a deployment sends to the company's
// policy search outside this application; the runtime checks where its words came from, and
// one copied from a record waits for the user's confirmation.
#[tool(permission = public, risk = low, egress)]
pub async fn lookup_policy(topic: String) -> Result<Value, ServiceError> {
    let t = topic.to_lowercase();
    POLICIES.iter().find(|(k, _)| t.contains(k)).map(|(k, v)| json!({"topic": k, "policy": v})).ok_or_else(|| {
        ServiceError::NotFound(format!(
            "no policy for `{topic}`; topics: leave, probation, equipment, software, password, tickets"
        ))
    })
}

/// Reads the user's remaining annual leave balance.
#[tool(permission = perms::leave::read, risk = low)]
pub async fn get_leave_balance(cx: &ToolContext<'_>) -> Result<LeaveAccount, ServiceError> {
    store(cx)?.leave_balance(cx.principal())
}

/// Reads the user's leave request history with rejection reasons, days employed and the
/// probation threshold.
#[tool(permission = perms::leave::read, risk = low)]
pub async fn get_request_history(cx: &ToolContext<'_>) -> Result<Value, ServiceError> {
    let (account, requests) = store(cx)?.request_history(cx.principal())?;
    Ok(json!({"account": account, "requests": requests}))
}

/// Submits a leave request starting on start_date (YYYY-MM-DD) for a number of working days
/// (half days allowed); kind is annual (default), sick or unpaid.
///
/// # Arguments
///
/// * `start_date` - the first day of leave, `YYYY-MM-DD`
/// * `days` - how many working days (half days allowed, e.g. `2.5`)
/// * `kind` - `annual` (the default), `sick` or `unpaid`
#[tool(permission = perms::leave::request, mutating, title = "Submit leave request", risk = medium)]
pub async fn submit_leave_request(
    cx: &ToolContext<'_>,
    start_date: String,
    days: f64,
    kind: Option<String>,
) -> Result<LeaveRequest, ServiceError> {
    store(cx)?.submit_leave(cx.principal(), &start_date, days, kind.as_deref().unwrap_or("annual"))
}

/// Lists the user's own support tickets.
#[tool(permission = perms::ticket::read, risk = low)]
pub async fn list_my_tickets(cx: &ToolContext<'_>) -> Result<Vec<Ticket>, ServiceError> {
    store(cx)?.my_tickets(cx.principal())
}

/// Opens a support ticket. severity: 1 outage for many people, 2 one person blocked with no
/// workaround, 3 a workaround exists, 4 a question or cosmetic issue.
///
/// # Arguments
///
/// * `summary` - what is wrong, in the user's words
/// * `severity` - 1 outage for many people, 2 one person blocked with no workaround, 3 a workaround exists, 4 a question or cosmetic issue
/// * `workaround` - the workaround in use, if any
#[tool(permission = perms::ticket::open, mutating, title = "Open support ticket", risk = low)]
pub async fn open_ticket(
    cx: &ToolContext<'_>,
    summary: String,
    severity: u8,
    workaround: Option<String>,
) -> Result<Ticket, ServiceError> {
    store(cx)?.open_ticket(cx.principal(), &summary, severity, workaround.as_deref())
}

/// Requests a piece of equipment (dock, monitor, keyboard, headset, laptop) with a
/// justification.
///
/// # Arguments
///
/// * `item` - the item: `dock`, `monitor`, `keyboard`, `headset` or `laptop`
/// * `justification` - why it is needed
#[tool(permission = perms::equipment::request, mutating, title = "Request equipment", risk = low)]
pub async fn request_equipment(
    cx: &ToolContext<'_>,
    item: String,
    justification: String,
) -> Result<ItemRequest, ServiceError> {
    store(cx)?.request_item(cx.principal(), "equipment", &item, &justification)
}

/// Requests a software licence with a business justification.
///
/// # Arguments
///
/// * `name` - the software's name
/// * `justification` - the business reason for the licence
#[tool(permission = perms::software::request, mutating, title = "Request software", risk = low)]
pub async fn request_software(
    cx: &ToolContext<'_>,
    name: String,
    justification: String,
) -> Result<ItemRequest, ServiceError> {
    store(cx)?.request_item(cx.principal(), "software", &name, &justification)
}

/// Resets the password of an account. Identity changes are made by a person at the service
/// desk after verifying the requester: calling this hands the request to that queue, and
/// nothing is reset by the assistant.
///
/// # Arguments
///
/// * `account` - the account whose password is to be reset
#[tool(permission = perms::identity::reset, handoff, risk = high)]
pub fn reset_password(account: String);
