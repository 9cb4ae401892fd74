//! The agent's `audit_values`: how much of a call's values its audit records may keep.

use super::model::{Change, ChangeKind, change};
use super::rule::Rule;
use crate::audit::AuditValues;

/// Omitted → masked → full keeps more of what a person typed or a tool returned in the log:
/// a widening; the reverse is a narrowing.
pub(super) fn diff_audit_values(a: AuditValues, b: AuditValues, out: &mut Vec<Change>) {
    if a == b {
        return;
    }
    let (kind, rule, reason) = if b > a {
        let why = format!(
            "audit values widened from `{a}` to `{b}`: the audit log may now keep {}",
            if b == AuditValues::Full { "the values of calls and their results" } else { "the values of calls" }
        );
        (ChangeKind::Widening, Rule::AuditValuesWidened, why)
    } else {
        (ChangeKind::Narrowing, Rule::AuditValuesNarrowed, format!("audit values narrowed from `{a}` to `{b}`"))
    };
    out.push(change(kind, rule, None, "audit_values", Some(a.to_string()), Some(b.to_string()), reason));
}
