//! Who a run acts for. There is no service principal.

use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};

/// The calling user, copied from the application's own authentication. A run carries exactly
/// one for its whole life; tool handlers read it and call the application's services with it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Principal {
    /// The user's id.
    pub user_id: String,
    /// The organisation (tenant) id.
    pub org_id: String,
    /// The user's role.
    pub role: String,
    /// A linked subject (for example the athlete record a self-scoped user is).
    pub subject: Option<String>,
}

impl Principal {
    /// A principal without a linked subject.
    pub fn new(user_id: impl Into<String>, org_id: impl Into<String>, role: impl Into<String>) -> Self {
        Principal { user_id: user_id.into(), org_id: org_id.into(), role: role.into(), subject: None }
    }

    /// The same principal linked to a subject.
    pub fn with_subject(mut self, subject: impl Into<String>) -> Self {
        self.subject = Some(subject.into());
        self
    }
}

/// Roles and the permissions each holds. `public` is held by every role implicitly.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RoleMap {
    roles: BTreeMap<String, BTreeSet<String>>,
}

impl RoleMap {
    /// An empty map.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a role with its permissions (replacing an earlier definition).
    pub fn role<I, S>(mut self, role: impl Into<String>, permissions: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.roles.insert(role.into(), permissions.into_iter().map(Into::into).collect());
        self
    }

    /// Whether `role` holds `permission`. Unknown roles hold only `public`.
    pub fn has_permission(&self, role: &str, permission: &str) -> bool {
        permission == crate::Public::NAME_STR || self.roles.get(role).is_some_and(|p| p.contains(permission))
    }

    /// The declared roles.
    pub fn roles(&self) -> impl Iterator<Item = (&str, &BTreeSet<String>)> {
        self.roles.iter().map(|(k, v)| (k.as_str(), v))
    }

    /// Whether the role is declared.
    pub fn contains_role(&self, role: &str) -> bool {
        self.roles.contains_key(role)
    }
}
