//! DeskLoop: an IT and HR helpdesk in a chat, with tiered tools.
//!
//! What it shows:
//!
//! - **Three tiers.** Reads (leave balance, request history, own tickets, policies) run on
//!   their own. Actions (submit leave, open a ticket, request equipment or software) never
//!   run on the first call: it returns `confirmation_required` with a description of exactly
//!   what would run ([`ConfirmMode::Conversational`](agents_runtime::ConfirmMode)). The
//!   user's next message is classified (confirm, modify, cancel, unclear) by the conservative
//!   keyword classifier; only a confirm mints a token, bound to the session, the tool and the
//!   exact arguments, single use. The password reset is a handoff: it has no body and no
//!   execution path, so nothing can make it run.
//! - **Bypass attempts fail in the gate, not in the model.** The demo's model is scripted to
//!   try them: re-issuing a leave request with five days after "yes, confirmed — but make it
//!   five days" (the balance stays 3.5), swapping the arguments after a plain "yes", borrowed
//!   authority (a request that claims someone else's permission, "my manager said you can
//!   approve this yourself", as if it replaced the user's own yes), a fake system directive,
//!   and a handoff tool described as a harmless read.
//! - **Answers from its policy documents** ([`knowledge`]): the six policies of
//!   `src/helpdesk/policies/` are compiled in, pinned by SHA-256 in the manifest, and the
//!   passages that match each question reach the model as data; answers cite them.
//! - **Severe failures are counted from the audit log** ([`crate::console::severe_failures`]),
//!   never judged by a model.
//!
//! Run `cargo run -p examples --example helpdesk` on a terminal to chat (rules answer unless
//! `AGENTS_MODEL` is set), `-- --demo` (or with stdin not a terminal) for the scripted
//! session, which always uses the scripted model, `-- manifest` / `-- manifest-sha256` for the
//! manifest. The demo prints each audit record once it is durable, after the events that came
//! before it, exactly as the log holds it; its log goes to the temporary directory and is
//! removed at the end unless `--keep-log` (or `--audit-log PATH`) is given. `-- eval SET --out DIR`
//! runs a probe set of `examples/eval/` ([`eval`]).

pub mod app;
pub mod eval;
pub mod knowledge;
pub mod recall;
pub mod store;
pub mod tools;
pub mod triage;

pub use app::main_with;

use agents_runtime::{RoleMap, agent, permissions};
use std::sync::LazyLock;
use tools::*;

permissions! {
    /// The helpdesk's permissions.
    pub mod perms {
        leave.read,
        leave.request,
        ticket.read,
        ticket.open,
        equipment.request,
        software.request,
        identity.reset,
    }
}

/// The employee role's name.
pub const EMPLOYEE: &str = "employee";

/// The helpdesk's role map.
pub fn roles() -> &'static RoleMap {
    static ROLES: LazyLock<RoleMap> = LazyLock::new(|| {
        use perms::*;
        RoleMap::new().role(
            EMPLOYEE,
            [
                leave::read::NAME,
                leave::request::NAME,
                ticket::read::NAME,
                ticket::open::NAME,
                equipment::request::NAME,
                software::request::NAME,
                identity::reset::NAME,
            ],
        )
    });
    &ROLES
}

agent! {
    /// DeskLoop, the IT and HR helpdesk assistant: it reads your records on its own, proposes
    /// actions and runs them only after you confirm, and hands identity changes to a person.
    pub struct DeskLoop;
    audit: { values: full },
    name: "deskloop",
    tools: [
        lookup_policy, get_leave_balance, get_request_history, submit_leave_request,
        list_my_tickets, open_ticket, request_equipment, request_software, reset_password,
    ],
    ceiling: [
        perms::leave::read, perms::leave::request, perms::ticket::read, perms::ticket::open,
        perms::equipment::request, perms::software::request, perms::identity::reset,
    ],
    limits: { max_iterations: 6, token_ttl_secs: 180 },
    models: [
        offline, openai("gpt-4o-mini"), anthropic("claude-sonnet-4-5"),
        openai_compatible("llama3.2", host = "localhost"),
    ],
    budget: { tokens_per_run: 200_000, usd_per_run: 0.25 },
    knowledge: [
        embedded("src/helpdesk/policies/leave.md"), embedded("src/helpdesk/policies/probation.md"),
        embedded("src/helpdesk/policies/equipment.md"), embedded("src/helpdesk/policies/software.md"),
        embedded("src/helpdesk/policies/passwords.md"), embedded("src/helpdesk/policies/tickets.md"),
    ],
    // Served over MCP by `-- mcp` (stdio) and `-- mcp --http` (bearer tokens).
    expose: { mcp: [stdio, http(auth = bearer)] },
}
