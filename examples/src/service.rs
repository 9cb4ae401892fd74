//! What the examples' application services have in common: the reasons a service refuses.

use std::fmt;

/// Why a service refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ServiceError {
    /// The caller's role or scope does not allow this.
    Forbidden(String),
    /// No such record for the caller (records of other tenants do not exist for the caller).
    NotFound(String),
    /// The input is not acceptable: it breaks a business rule (balance, dates, severity,
    /// grades, stages).
    Invalid(String),
    /// The service is not reachable from here (the application did not hand it over).
    Unavailable(String),
}

impl fmt::Display for ServiceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ServiceError::Forbidden(m) => write!(f, "forbidden: {m}"),
            ServiceError::NotFound(m) => write!(f, "not found: {m}"),
            ServiceError::Invalid(m) => write!(f, "invalid: {m}"),
            ServiceError::Unavailable(m) => write!(f, "unavailable: {m}"),
        }
    }
}

impl std::error::Error for ServiceError {}
