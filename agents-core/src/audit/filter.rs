//! Which audit records a reader asked for: the one predicate behind `agents audit show` and
//! the service's audit query.

use super::record::{AuditRecord, AuditStatus};
use crate::Tier;
use std::collections::BTreeSet;
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

/// Filters on an audit record's fields; a filter left empty selects every record.
///
/// ```
/// use agents_core::audit::{RecordFilter, Selected};
/// let mut only_tool = RecordFilter::default();
/// only_tool.tool = Some("open_ticket".into());
/// # let _ = (only_tool, Selected::Yes);
/// ```
#[derive(Debug, Clone, Default)]
pub struct RecordFilter {
    /// Only this run.
    pub run: Option<String>,
    /// Only this session.
    pub session: Option<String>,
    /// Only this user.
    pub user: Option<String>,
    /// Only this tool.
    pub tool: Option<String>,
    /// Only this call.
    pub call: Option<String>,
    /// Only these statuses (all when empty).
    pub statuses: BTreeSet<AuditStatus>,
    /// Only these tiers (all when empty; a record without a tier is then left out).
    pub tiers: BTreeSet<Tier>,
    /// Only records written at or after this time.
    pub since: Option<OffsetDateTime>,
    /// Only records written at or before this time.
    pub until: Option<OffsetDateTime>,
}

/// What [`RecordFilter::select`] made of a record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Selected {
    /// The record matches every filter.
    Yes,
    /// The record does not match.
    No,
    /// The record matches the other filters, but a time window was asked for and its
    /// timestamp is not RFC 3339: left out (a reader may count these and say so).
    UnreadableTime,
}

impl RecordFilter {
    /// Whether `r` is one of the records asked for.
    pub fn select(&self, r: &AuditRecord) -> Selected {
        let eq = |want: &Option<String>, have: Option<&str>| want.as_deref().is_none_or(|w| have == Some(w));
        let by_fields = eq(&self.run, Some(&r.run_id))
            && eq(&self.session, Some(&r.session_id))
            && eq(&self.user, Some(&r.user_id))
            && eq(&self.tool, r.tool.as_deref())
            && eq(&self.call, r.call_id.as_deref())
            && (self.statuses.is_empty() || self.statuses.contains(&r.status))
            && (self.tiers.is_empty() || r.tier.is_some_and(|t| self.tiers.contains(&t)));
        if !by_fields {
            return Selected::No;
        }
        if self.since.is_none() && self.until.is_none() {
            return Selected::Yes;
        }
        match OffsetDateTime::parse(&r.ts, &Rfc3339) {
            Ok(ts) if self.since.is_none_or(|s| ts >= s) && self.until.is_none_or(|u| ts <= u) => Selected::Yes,
            Ok(_) => Selected::No,
            Err(_) => Selected::UnreadableTime,
        }
    }
}
