//! Environment variables, granted by exact name.

use super::error::PolicyEntryError;

/// Checks an environment variable name: letters, digits and `_`, not starting with a digit.
pub fn check_env_var(name: &str) -> Result<(), PolicyEntryError> {
    let mut chars = name.chars();
    let ok = matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_');
    if ok { Ok(()) } else { Err(PolicyEntryError::new("use letters, digits and `_`, not starting with a digit")) }
}

/// Whether the declared variables grant `name`: by exact name, never as a pattern.
pub fn env_var_granted<S: AsRef<str>>(declared: &[S], name: &str) -> bool {
    declared.iter().any(|d| d.as_ref() == name)
}
