//! A direct session whose client cannot ask a person: the call ends `skipped` at once and
//! the caller gets a structured "confirmation required" result; nothing runs.

use super::{Channel, Confirmation};
use crate::run::context::CallOutcome;
use crate::run::record::RecordOf;
use crate::tool::Registry;
use serde_json::json;

/// The channel of a direct session that cannot ask.
pub(in crate::run) struct Unavailable;

impl Channel for Unavailable {
    fn decide<'a, A: Registry, F: RecordOf + 'a>(
        self,
        confirmation: Confirmation<'a, A, F>,
    ) -> impl Future<Output = CallOutcome> + 'a {
        confirmation.unavailable()
    }
}

impl<'a, A: Registry, F: RecordOf> Confirmation<'a, A, F> {
    /// A direct session whose client cannot ask: audited `skipped`, and the caller gets a
    /// structured "confirmation required" result; nothing runs.
    async fn unavailable(self) -> CallOutcome {
        let proposal = self.proposal;
        let reason = "confirmation required, but the client cannot ask the user; nothing ran";
        if !proposal.skip_unasked(reason).await {
            return CallOutcome::err("the audit log is unavailable; nothing ran");
        }
        let spec = proposal.checked.spec;
        CallOutcome {
            content: json!({"status": "confirmation_required", "tool": spec.name, "title": proposal.title(), "description": proposal.description, "args": proposal.checked.redacted, "message": "Nothing ran. This action needs the user's confirmation, and this client cannot ask for it."}),
            is_error: true,
            executed: false,
        }
    }
}
