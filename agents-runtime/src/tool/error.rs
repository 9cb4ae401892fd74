//! The error a tool returns to the model.

use std::fmt;
use std::sync::Arc;

/// An error a tool returns to the model. Its text ([`ToolError::message`], also its
/// `Display`) is what the model and the audit record receive; the typed cause, when there is
/// one, stays with the Rust caller ([`std::error::Error::source`]).
#[derive(Clone)]
pub struct ToolError {
    /// What went wrong, for the model and the audit record.
    pub message: String,
    /// For an imported tool refused because its server no longer says what was pinned: the
    /// SHA-256 of what the server says now, for the call's `failed` record.
    pub(crate) listed_sha256: Option<String>,
    source: Option<Arc<dyn std::error::Error + Send + Sync + 'static>>,
}

impl ToolError {
    /// A tool error.
    pub fn new(message: impl Into<String>) -> Self {
        ToolError { message: message.into(), listed_sha256: None, source: None }
    }

    /// A tool error with its typed cause: the model reads `message`; a caller that holds the
    /// error (a tool that invoked another, a direct session) can downcast the cause.
    ///
    /// ```
    /// use agents_runtime::ToolError;
    /// use std::error::Error as _;
    ///
    /// let io = std::io::Error::new(std::io::ErrorKind::NotFound, "no such file");
    /// let e = ToolError::with_source("the report is missing", io);
    /// assert_eq!(e.to_string(), "the report is missing");
    /// let cause = e.source().and_then(|s| s.downcast_ref::<std::io::Error>()).unwrap();
    /// assert_eq!(cause.kind(), std::io::ErrorKind::NotFound);
    /// ```
    pub fn with_source(message: impl Into<String>, source: impl std::error::Error + Send + Sync + 'static) -> Self {
        ToolError { message: message.into(), listed_sha256: None, source: Some(Arc::new(source)) }
    }
}

impl fmt::Display for ToolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl fmt::Debug for ToolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("ToolError");
        d.field("message", &self.message);
        if let Some(s) = &self.source {
            d.field("source", s);
        }
        d.finish()
    }
}

impl std::error::Error for ToolError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.source.as_deref().map(|s| s as &(dyn std::error::Error + 'static))
    }
}

/// Two tool errors are equal when their texts are (what the model and the record see).
impl PartialEq for ToolError {
    fn eq(&self, other: &Self) -> bool {
        self.message == other.message
    }
}

impl Eq for ToolError {}
