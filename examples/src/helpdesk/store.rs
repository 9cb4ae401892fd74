//! The helpdesk's own services over an in-memory store: leave, tickets, equipment and
//! software requests. Every service takes the caller's [`Principal`] and only ever touches
//! that user's records in that organisation.

use super::perms;
use agents_runtime::Principal;
use serde::Serialize;
use std::sync::{Arc, LazyLock, Mutex, MutexGuard};

pub use crate::service::ServiceError;

type Result<T> = std::result::Result<T, ServiceError>;

/// An employee's leave account.
#[derive(Debug, Clone, Serialize)]
pub struct LeaveAccount {
    /// Days of annual leave left.
    pub balance_days: f64,
    /// Days employed so far.
    pub days_employed: u32,
    /// Days of employment before leave may be taken without a manager's exception.
    pub probation_days: u32,
}

/// A leave request.
#[derive(Debug, Clone, Serialize)]
pub struct LeaveRequest {
    /// Id.
    pub id: String,
    /// First day.
    pub start_date: String,
    /// Working days.
    pub days: f64,
    /// `annual`, `sick`, `unpaid`.
    pub kind: String,
    /// `submitted`, `approved`, `rejected`.
    pub status: String,
    /// Why it was rejected, if it was.
    pub rejection_reason: Option<String>,
}

/// A support ticket.
#[derive(Debug, Clone, Serialize)]
pub struct Ticket {
    /// Id.
    pub id: String,
    /// What is wrong.
    pub summary: String,
    /// 1 (outage) to 4 (question).
    pub severity: u8,
    /// A workaround the user has, if any.
    pub workaround: Option<String>,
    /// `open`, `in_progress`, `closed`.
    pub status: String,
}

/// An equipment or software request.
#[derive(Debug, Clone, Serialize)]
pub struct ItemRequest {
    /// Id.
    pub id: String,
    /// `equipment` or `software`.
    pub kind: String,
    /// What.
    pub item: String,
    /// Why.
    pub justification: String,
    /// `submitted`.
    pub status: String,
}

#[derive(Debug, Clone)]
struct Employee {
    user_id: String,
    org_id: String,
    account: LeaveAccount,
    leave: Vec<LeaveRequest>,
    tickets: Vec<Ticket>,
    items: Vec<ItemRequest>,
}

#[derive(Debug, Default)]
struct Data {
    employees: Vec<Employee>,
    next_id: u32,
}

/// The helpdesk's store and services.
#[derive(Debug)]
pub struct Store {
    data: Mutex<Data>,
}

static GLOBAL: LazyLock<Arc<Store>> = LazyLock::new(|| Arc::new(Store::seeded()));

fn require(p: &Principal, permission: &str) -> Result<()> {
    if super::roles().has_permission(&p.role, permission) {
        Ok(())
    } else {
        Err(ServiceError::Forbidden(format!("role `{}` does not hold `{permission}`", p.role)))
    }
}

/// A short policy text per topic.
pub const POLICIES: &[(&str, &str)] = &[
    (
        "leave",
        "Annual leave is requested at least 5 working days ahead and cannot exceed the remaining balance. Half days are allowed.",
    ),
    (
        "probation",
        "During the first 90 days of employment, leave needs a manager's exception; the request is otherwise rejected with reason `probation`.",
    ),
    (
        "equipment",
        "Standard equipment (dock, monitor, keyboard, headset) is approved by IT within 3 working days; laptops need a manager's approval.",
    ),
    (
        "software",
        "Licensed software is requested with a business justification; IT checks licences and security review status.",
    ),
    (
        "password",
        "Password resets and any identity change are done by a person at the service desk after identity verification. The assistant cannot reset passwords.",
    ),
    (
        "tickets",
        "Severity 1: outage for many people. 2: one person blocked, no workaround. 3: a workaround exists. 4: a question or cosmetic issue.",
    ),
];

impl Store {
    /// The application's store, seeded once per process (what the tools use).
    pub fn global() -> &'static Store {
        &GLOBAL
    }

    /// The process's store as the runtime shares it with the tools
    /// (`RuntimeBuilder::shared_state`); the tools reach it only through their context.
    pub fn shared() -> Arc<Store> {
        GLOBAL.clone()
    }

    /// A new store with the seeded employees.
    pub fn seeded() -> Store {
        let alex = Employee {
            user_id: "u-alex".into(),
            org_id: "org-deskloop".into(),
            account: LeaveAccount { balance_days: 3.5, days_employed: 212, probation_days: 90 },
            leave: vec![
                LeaveRequest {
                    id: "LV-1041".into(),
                    start_date: "2026-01-12".into(),
                    days: 2.0,
                    kind: "annual".into(),
                    status: "approved".into(),
                    rejection_reason: None,
                },
                LeaveRequest {
                    id: "LV-1077".into(),
                    start_date: "2026-02-23".into(),
                    days: 5.0,
                    kind: "annual".into(),
                    status: "rejected".into(),
                    rejection_reason: Some("exceeds remaining balance (3.5 days)".into()),
                },
            ],
            tickets: vec![Ticket {
                id: "TCK-2210".into(),
                summary: "VPN drops every hour".into(),
                severity: 3,
                workaround: Some("reconnect manually".into()),
                status: "in_progress".into(),
            }],
            items: Vec::new(),
        };
        let robin = Employee {
            user_id: "u-robin".into(),
            org_id: "org-deskloop".into(),
            account: LeaveAccount { balance_days: 11.0, days_employed: 40, probation_days: 90 },
            leave: Vec::new(),
            tickets: Vec::new(),
            items: Vec::new(),
        };
        Store { data: Mutex::new(Data { employees: vec![alex, robin], next_id: 3000 }) }
    }

    fn lock(&self) -> MutexGuard<'_, Data> {
        self.data.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn me<'d>(d: &'d mut Data, p: &Principal) -> Result<&'d mut Employee> {
        d.employees
            .iter_mut()
            .find(|e| e.user_id == p.user_id && e.org_id == p.org_id)
            .ok_or_else(|| ServiceError::NotFound(format!("no employee record for `{}`", p.user_id)))
    }

    fn next_id(d: &mut Data, prefix: &str) -> String {
        d.next_id += 1;
        format!("{prefix}-{}", d.next_id)
    }

    /// The caller's leave balance.
    pub fn leave_balance(&self, p: &Principal) -> Result<LeaveAccount> {
        require(p, perms::leave::read::NAME)?;
        let mut d = self.lock();
        Ok(Self::me(&mut d, p)?.account.clone())
    }

    /// The caller's leave requests with the account facts a resubmission needs.
    pub fn request_history(&self, p: &Principal) -> Result<(LeaveAccount, Vec<LeaveRequest>)> {
        require(p, perms::leave::read::NAME)?;
        let mut d = self.lock();
        let me = Self::me(&mut d, p)?;
        Ok((me.account.clone(), me.leave.clone()))
    }

    /// Submits a leave request; annual leave is taken from the balance when submitted.
    pub fn submit_leave(&self, p: &Principal, start_date: &str, days: f64, kind: &str) -> Result<LeaveRequest> {
        require(p, perms::leave::request::NAME)?;
        if !(days > 0.0 && (days * 2.0).fract() == 0.0) {
            return Err(ServiceError::Invalid("days are whole or half days, more than zero".into()));
        }
        if !matches!(kind, "annual" | "sick" | "unpaid") {
            return Err(ServiceError::Invalid("kind is `annual`, `sick` or `unpaid`".into()));
        }
        let mut d = self.lock();
        let id = Self::next_id(&mut d, "LV");
        let me = Self::me(&mut d, p)?;
        if kind == "annual" && days > me.account.balance_days {
            return Err(ServiceError::Invalid(format!(
                "{days} days exceed the remaining balance of {} days",
                me.account.balance_days
            )));
        }
        if kind == "annual" {
            me.account.balance_days -= days;
        }
        let r = LeaveRequest {
            id,
            start_date: start_date.into(),
            days,
            kind: kind.into(),
            status: "submitted".into(),
            rejection_reason: None,
        };
        me.leave.push(r.clone());
        Ok(r)
    }

    /// The caller's tickets.
    pub fn my_tickets(&self, p: &Principal) -> Result<Vec<Ticket>> {
        require(p, perms::ticket::read::NAME)?;
        let mut d = self.lock();
        Ok(Self::me(&mut d, p)?.tickets.clone())
    }

    /// Opens a ticket.
    pub fn open_ticket(&self, p: &Principal, summary: &str, severity: u8, workaround: Option<&str>) -> Result<Ticket> {
        require(p, perms::ticket::open::NAME)?;
        if !(1..=4).contains(&severity) {
            return Err(ServiceError::Invalid("severity is 1 to 4".into()));
        }
        let mut d = self.lock();
        let id = Self::next_id(&mut d, "TCK");
        let t = Ticket {
            id,
            summary: summary.into(),
            severity,
            workaround: workaround.map(str::to_owned),
            status: "open".into(),
        };
        Self::me(&mut d, p)?.tickets.push(t.clone());
        Ok(t)
    }

    /// Requests equipment or software.
    pub fn request_item(&self, p: &Principal, kind: &str, item: &str, justification: &str) -> Result<ItemRequest> {
        let permission =
            if kind == "software" { perms::software::request::NAME } else { perms::equipment::request::NAME };
        require(p, permission)?;
        if item.trim().is_empty() || justification.trim().is_empty() {
            return Err(ServiceError::Invalid("an item and a justification are required".into()));
        }
        let mut d = self.lock();
        let id = Self::next_id(&mut d, if kind == "software" { "SW" } else { "EQ" });
        let r = ItemRequest {
            id,
            kind: kind.into(),
            item: item.into(),
            justification: justification.into(),
            status: "submitted".into(),
        };
        Self::me(&mut d, p)?.items.push(r.clone());
        Ok(r)
    }

    /// A user's balance, unscoped: for tests and the demo's narration, never reachable from a
    /// tool.
    pub fn inspect_balance(&self, user_id: &str) -> Option<f64> {
        self.lock().employees.iter().find(|e| e.user_id == user_id).map(|e| e.account.balance_days)
    }

    /// A user's leave requests, unscoped: for tests and the demo's narration.
    pub fn inspect_leave(&self, user_id: &str) -> Vec<LeaveRequest> {
        self.lock().employees.iter().find(|e| e.user_id == user_id).map(|e| e.leave.clone()).unwrap_or_default()
    }

    /// A user's equipment and software requests, unscoped: for tests and evaluations, never
    /// reachable from a tool.
    pub fn inspect_items(&self, user_id: &str) -> Vec<ItemRequest> {
        self.lock().employees.iter().find(|e| e.user_id == user_id).map(|e| e.items.clone()).unwrap_or_default()
    }

    /// A user's tickets, unscoped: for tests and evaluations.
    pub fn inspect_tickets(&self, user_id: &str) -> Vec<Ticket> {
        self.lock().employees.iter().find(|e| e.user_id == user_id).map(|e| e.tickets.clone()).unwrap_or_default()
    }

    /// Puts back exactly the seeded data, so independent scenarios (an evaluation suite's) can
    /// share the process's store one after another. Never reachable from a tool.
    pub fn reset(&self) {
        let seeded = Store::seeded().data.into_inner().unwrap_or_else(|e| e.into_inner());
        *self.lock() = seeded;
    }
}
