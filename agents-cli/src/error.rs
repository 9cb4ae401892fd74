//! Errors that stop a command, with a hint that says what to do.

use std::fmt;

/// Exit code: the command ran and found nothing wrong.
pub(crate) const EXIT_OK: i32 = 0;
/// Exit code: the command ran and found something (a widening, a broken chain, a severe
/// failure, a baseline mismatch).
pub(crate) const EXIT_FINDING: i32 = 1;
/// Exit code: the command could not run (a missing file, a file of the wrong kind, bad
/// arguments). `clap` uses the same code for usage errors.
pub(crate) const EXIT_ERROR: i32 = 2;

/// An error that stops a command.
#[derive(Debug)]
pub(crate) struct CliError {
    message: String,
    hint: Option<String>,
}

impl CliError {
    pub(crate) fn new(message: impl Into<String>) -> Self {
        CliError { message: message.into(), hint: None }
    }

    pub(crate) fn hint(mut self, hint: impl Into<String>) -> Self {
        self.hint = Some(hint.into());
        self
    }
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Messages quote paths, names and parser messages that may hold any character.
        write!(f, "error: {}", crate::term::esc(&self.message))?;
        if let Some(h) = &self.hint {
            write!(f, "\nhint: {}", crate::term::esc(h))?;
        }
        Ok(())
    }
}

/// The result of a command: its exit code, or an error.
pub(crate) type CmdResult = Result<i32, CliError>;
