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

/// Why a principal was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PrincipalError {
    /// The named field is empty (or only white space).
    #[error("the principal's {0} is empty")]
    Empty(&'static str),
    /// The named field holds a control character or white space at either end.
    #[error("the principal's {0} holds a control character or surrounding white space")]
    Malformed(&'static str),
    /// The named field is longer than [`Principal::MAX_ID_BYTES`].
    #[error("the principal's {0} is longer than {max} bytes", max = Principal::MAX_ID_BYTES)]
    TooLong(&'static str),
}

impl Principal {
    /// The longest user id, organisation id or role a principal may carry, in bytes.
    pub const MAX_ID_BYTES: usize = 256;

    /// A principal without a linked subject, refused when the user id, organisation id or
    /// role is empty, longer than [`Principal::MAX_ID_BYTES`], holds a control character, or
    /// starts or ends with white space. The runtime refuses to run for a principal that
    /// fails these checks however it was built ([`Principal::validate`]).
    pub fn try_new(
        user_id: impl Into<String>,
        org_id: impl Into<String>,
        role: impl Into<String>,
    ) -> Result<Self, PrincipalError> {
        let p = Principal::new(user_id, org_id, role);
        p.validate()?;
        Ok(p)
    }

    /// Checks the identity fields as [`Principal::try_new`] does.
    pub fn validate(&self) -> Result<(), PrincipalError> {
        for (field, text) in [("user id", &self.user_id), ("organisation id", &self.org_id), ("role", &self.role)] {
            if text.trim().is_empty() {
                return Err(PrincipalError::Empty(field));
            }
            if text.len() > Principal::MAX_ID_BYTES {
                return Err(PrincipalError::TooLong(field));
            }
            if text.chars().any(char::is_control) || text.trim() != text.as_str() {
                return Err(PrincipalError::Malformed(field));
            }
        }
        Ok(())
    }

    /// A principal without a linked subject, unchecked (see [`Principal::try_new`]).
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
