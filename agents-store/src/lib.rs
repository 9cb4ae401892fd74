#![doc = include_str!("../README.md")]
#![cfg_attr(docsrs, feature(doc_cfg))]
// The README links the PostgreSQL store's items, which exist with the `postgres` feature only;
// the docs with every feature (docs.rs's, `cargo xtask docs`) check those links.
#![cfg_attr(not(feature = "postgres"), allow(rustdoc::broken_intra_doc_links))]

#[cfg(feature = "postgres")]
pub mod postgres;
#[cfg(feature = "sqlite")]
mod sqlite;

#[cfg(feature = "postgres")]
pub use postgres::{PostgresSettings, PostgresStore};
#[cfg(feature = "sqlite")]
pub use sqlite::SqliteStore;

pub use agents_runtime::store::{Store, StoreError, StoreResult};

/// One schema migration: its version and its SQL, embedded at build time.
#[derive(Debug, Clone, Copy)]
pub struct Migration {
    /// The version the schema is at once this migration is applied (1, 2, ...).
    pub version: i64,
    /// What it does, in a few words.
    pub name: &'static str,
    /// The SQL.
    pub sql: &'static str,
}

/// The table that records the applied migrations, in every backend.
pub const VERSION_TABLE: &str = "agents_schema_migrations";

/// The migrations of the SQLite schema, in order.
#[cfg(feature = "sqlite")]
pub const SQLITE_MIGRATIONS: &[Migration] = &[
    Migration { version: 1, name: "state", sql: include_str!("../migrations/sqlite/0001_state.sql") },
    Migration {
        version: 2,
        name: "proposal detail",
        sql: include_str!("../migrations/sqlite/0002_proposal_detail.sql"),
    },
    Migration {
        version: 3,
        name: "settlement and budgets",
        sql: include_str!("../migrations/sqlite/0003_settlement_budget.sql"),
    },
    Migration {
        version: 4,
        name: "session binding",
        sql: include_str!("../migrations/sqlite/0004_session_binding.sql"),
    },
    Migration {
        version: 5,
        name: "recorded claims",
        sql: include_str!("../migrations/sqlite/0005_recorded_claims.sql"),
    },
    Migration { version: 6, name: "claim holder", sql: include_str!("../migrations/sqlite/0006_claim_holder.sql") },
    Migration { version: 7, name: "integrity", sql: include_str!("../migrations/sqlite/0007_integrity.sql") },
    Migration { version: 8, name: "audit debts", sql: include_str!("../migrations/sqlite/0008_audit_debts.sql") },
    Migration { version: 9, name: "tree closes", sql: include_str!("../migrations/sqlite/0009_tree_closes.sql") },
];

/// The migrations of the PostgreSQL schema, in order.
#[cfg(feature = "postgres")]
pub const POSTGRES_MIGRATIONS: &[Migration] = &[
    Migration { version: 1, name: "state", sql: include_str!("../migrations/postgres/0001_state.sql") },
    Migration {
        version: 2,
        name: "proposal detail",
        sql: include_str!("../migrations/postgres/0002_proposal_detail.sql"),
    },
    Migration { version: 3, name: "checkpoints", sql: include_str!("../migrations/postgres/0003_checkpoints.sql") },
    Migration {
        version: 4,
        name: "settlement and budgets",
        sql: include_str!("../migrations/postgres/0004_settlement_budget.sql"),
    },
    Migration {
        version: 5,
        name: "session binding",
        sql: include_str!("../migrations/postgres/0005_session_binding.sql"),
    },
    Migration {
        version: 6,
        name: "recorded claims",
        sql: include_str!("../migrations/postgres/0006_recorded_claims.sql"),
    },
    Migration { version: 7, name: "claim holder", sql: include_str!("../migrations/postgres/0007_claim_holder.sql") },
    Migration { version: 8, name: "integrity", sql: include_str!("../migrations/postgres/0008_integrity.sql") },
    Migration {
        version: 9,
        name: "audit debts and append fence",
        sql: include_str!("../migrations/postgres/0009_audit_debts.sql"),
    },
    Migration {
        version: 10,
        name: "audit append in one statement",
        sql: include_str!("../migrations/postgres/0010_audit_append.sql"),
    },
    Migration {
        version: 11,
        name: "audit debts point at their record",
        sql: include_str!("../migrations/postgres/0011_debt_points_at_record.sql"),
    },
    Migration { version: 12, name: "tree closes", sql: include_str!("../migrations/postgres/0012_tree_closes.sql") },
    Migration {
        version: 13,
        name: "audit append planned once",
        sql: include_str!("../migrations/postgres/0013_audit_append_planned_once.sql"),
    },
    Migration {
        version: 14,
        name: "audit debts derived from the records",
        sql: include_str!("../migrations/postgres/0014_debts_from_records.sql"),
    },
];

#[cfg(any(feature = "sqlite", feature = "postgres"))]
/// The newest version in `migrations`.
fn newest(migrations: &[Migration]) -> i64 {
    migrations.last().map_or(0, |m| m.version)
}

#[cfg(any(feature = "sqlite", feature = "postgres"))]
/// Refuses a database whose schema is newer than this build knows.
fn check_version(found: i64, migrations: &[Migration]) -> StoreResult<()> {
    let known = newest(migrations);
    if found > known { Err(StoreError::NewerSchema { found, known }) } else { Ok(()) }
}

#[cfg(any(feature = "sqlite", feature = "postgres"))]
fn unavailable(what: &str, e: impl std::fmt::Display) -> StoreError {
    StoreError::Unavailable(format!("{what}: {e}"))
}

#[cfg(any(feature = "sqlite", feature = "postgres"))]
/// The caps set for a user and their organisation, and the spend against each, read by
/// [`USAGE_SQL`] (`$1`/`?1`: the organisation, `$2`/`?2`: the user): one row per cap set, its
/// user id (`''`: the organisation's), the cap and the spend.
const USAGE_SQL: &str = "SELECT c.user_id, c.cap_usd, COALESCE(a.spend_usd, 0) FROM agents_budget_caps c \
                         LEFT JOIN agents_budget_accounts a ON a.org_id = c.org_id AND a.user_id = c.user_id \
                         WHERE c.org_id = $1 AND c.user_id IN ($2, '')";

#[cfg(any(feature = "sqlite", feature = "postgres"))]
/// The usage of the rows [`USAGE_SQL`] reads.
fn usage_of(rows: impl IntoIterator<Item = (String, f64, f64)>) -> agents_runtime::budget::BudgetUsage {
    use agents_runtime::budget::{BudgetUsage, CapUsage};
    let mut usage = BudgetUsage::default();
    for (user, cap_usd, spent_usd) in rows {
        let cap = Some(CapUsage { spent_usd, cap_usd });
        if user.is_empty() {
            usage.organisation = cap;
        } else {
            usage.user = cap;
        }
    }
    usage
}

#[cfg(any(feature = "sqlite", feature = "postgres"))]
/// Checks an amount of money given to a budget store.
fn budget_amount(what: &str, usd: f64) -> Result<f64, agents_runtime::budget::BudgetError> {
    if usd.is_finite() && usd >= 0.0 {
        Ok(usd)
    } else {
        Err(agents_runtime::budget::BudgetError(format!(
            "{what} of {usd} USD refused: it must be a finite number, 0 or more"
        )))
    }
}

#[cfg(any(feature = "sqlite", feature = "postgres"))]
fn millis(d: std::time::Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

/// Support for tests and benchmarks of stores.
pub mod testing {
    /// A one-tool HR agent for the multi-node tests (shared by the test binaries and the
    /// `agents-store-node` process, so both run one agent with one manifest). Each execution
    /// of its action appends a line to [`leave::executions_file`] of its session, so a test
    /// counts executions across processes.
    pub mod leave {
        use agents_runtime::{Principal, RoleMap, ToolContext, agent, permissions, tool};
        use std::path::PathBuf;

        permissions! {
            pub mod perms { leave.write }
        }

        /// The server key every node of the tests shares (a resumption on another node needs
        /// the key the arguments' MAC was made with).
        pub const SERVER_KEY: [u8; 32] = [7; 32];

        /// Where the executions of the action in `session` are counted.
        pub fn executions_file(session: &str) -> PathBuf {
            std::env::temp_dir().join(format!("agents-store-executions-{session}.log"))
        }

        /// How often the action ran in `session`, in any process.
        pub fn executions(session: &str) -> usize {
            std::fs::read_to_string(executions_file(session)).map_or(0, |s| s.lines().count())
        }

        /// Submits a leave request.
        ///
        /// # Arguments
        ///
        /// * `days` - the number of working days of leave asked for
        #[tool(permission = perms::leave::write, mutating, title = "Submit leave")]
        async fn submit_leave(cx: &ToolContext<'_>, days: u32) -> Result<String, String> {
            use std::io::Write;
            let mut log = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(executions_file(cx.session_id()))
                .map_err(|e| e.to_string())?;
            writeln!(log, "{days} days by {}", cx.principal().user_id).map_err(|e| e.to_string())?;
            Ok(format!("{days} days submitted"))
        }

        /// Withdraws leave already submitted (the action a row edited in the state store to name
        /// another tool of the same agent would run).
        ///
        /// # Arguments
        ///
        /// * `days` - the number of working days of leave withdrawn
        #[tool(permission = perms::leave::write, mutating, title = "Withdraw leave")]
        async fn withdraw_leave(cx: &ToolContext<'_>, days: u32) -> Result<String, String> {
            use std::io::Write;
            let mut log = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(executions_file(cx.session_id()))
                .map_err(|e| e.to_string())?;
            writeln!(log, "{days} days withdrawn by {}", cx.principal().user_id).map_err(|e| e.to_string())?;
            Ok(format!("{days} days withdrawn"))
        }

        agent! {
            /// HR assistant.
            pub struct Hr;
            tools: [submit_leave, withdraw_leave],
        }

        agent! {
            /// Restates a leave request for HR, changing nothing.
            pub struct LeaveIntake;
            tools: [],
        }

        agents_runtime::composite! {
            /// The intake, then HR: a run tree whose second node proposes the action.
            pub struct LeaveDesk: String -> String = then(LeaveIntake, Hr);
        }

        /// Counts the members of a parallel node that answered.
        pub struct Answered;

        impl agents_runtime::agents_core::compose::Join for Answered {
            type Item = String;
            type Output = String;
            fn join(items: Vec<agents_runtime::agents_core::compose::MemberResult<String>>) -> Result<String, String> {
                Ok(format!("{} answered", items.iter().filter(|i| i.is_ok()).count()))
            }
        }

        agents_runtime::composite! {
            /// HR twice at once: a run tree two of whose nodes propose an action each.
            pub struct LeavePair: String -> String = parallel([Hr, Hr], join = Answered, on_failure = collect);
        }

        /// The user the tests act for.
        pub fn employee() -> Principal {
            Principal::new("ann", "org-hr", "employee")
        }

        /// The roles: employees may submit leave.
        pub fn roles() -> RoleMap {
            RoleMap::new().role("employee", ["leave.write"])
        }
    }

    use agents_runtime::Tier;
    use agents_runtime::audit::{AuditRecord, AuditStatus};

    /// An unsealed audit record whose content depends on `i` (a tool call's proposal).
    pub fn sample_record(i: usize, node: &str) -> AuditRecord {
        AuditRecord {
            seq: 0,
            ts: format!("2026-01-01T00:{:02}:{:02}Z", (i / 60) % 60, i % 60),
            run_id: format!("run-{node}-{}", i % 7).into(),
            session_id: format!("session-{}", i % 3).into(),
            request_id: format!("req-{node}-{i}").into(),
            call_id: Some(format!("call-{node}-{i}").into()),
            epoch: None,
            user_id: "u-ann".into(),
            org_id: "org-clinic".into(),
            role: "nurse".into(),
            agent: "clinic".into(),
            tool: Some("orders.place".into()),
            tier: Some(Tier::Action),
            status: AuditStatus::Proposed,
            reason: None,
            title: Some("Place an order".into()),
            args: Some(serde_json::json!({"patient": format!("p-{i}"), "dose_mg": i % 500}).into()),
            args_hash: Some(format!("{:064x}", i * 7919)),
            result: None,
            import: None,
            manifest_sha256: "5f1c9e0b7a3d2c4e6f8091a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d5e6".into(),
            prev_hash: String::new(),
            hash: String::new(),
            node: None,
        }
    }
}
