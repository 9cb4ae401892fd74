//! Why a policy entry was refused.

/// Why a policy entry was refused: a sentence without a trailing period.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct PolicyEntryError(String);

impl PolicyEntryError {
    pub(super) fn new(msg: impl Into<String>) -> Self {
        PolicyEntryError(msg.into())
    }

    /// The reason as text.
    pub fn reason(&self) -> &str {
        &self.0
    }
}
