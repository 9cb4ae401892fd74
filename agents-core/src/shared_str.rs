//! [`SharedStr`]: an immutable string whose clones share one allocation.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::borrow::Borrow;
use std::fmt;
use std::ops::Deref;
use std::sync::Arc;

/// An immutable, shared string: cloning it increments a reference count instead of copying.
///
/// Audit records repeat the same run, session, user and agent fields in every record, so they
/// hold them as `SharedStr`. It reads like a `&str` (it derefs to `str`), compares with `str`,
/// `&str` and `String`, displays as the text, and serializes as a plain JSON string.
///
/// ```
/// use agents_core::SharedStr;
/// let user = SharedStr::from("emp-1");
/// let again = user.clone(); // no copy of the text
/// assert_eq!(again, "emp-1");
/// assert!(user.starts_with("emp"));
/// assert_eq!(serde_json::to_string(&user).unwrap(), "\"emp-1\"");
/// ```
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct SharedStr(Arc<str>);

impl SharedStr {
    /// The text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Whether `self` and `other` are clones of one text (the same allocation): then they are
    /// equal without being compared.
    pub fn ptr_eq(&self, other: &SharedStr) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Deref for SharedStr {
    type Target = str;
    fn deref(&self) -> &str {
        &self.0
    }
}

impl AsRef<str> for SharedStr {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl Borrow<str> for SharedStr {
    fn borrow(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for SharedStr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&*self.0, f)
    }
}

impl fmt::Display for SharedStr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<&str> for SharedStr {
    fn from(s: &str) -> Self {
        SharedStr(Arc::from(s))
    }
}

impl From<String> for SharedStr {
    fn from(s: String) -> Self {
        SharedStr(Arc::from(s))
    }
}

impl From<&String> for SharedStr {
    fn from(s: &String) -> Self {
        SharedStr(Arc::from(s.as_str()))
    }
}

impl From<SharedStr> for String {
    fn from(s: SharedStr) -> Self {
        s.0.to_string()
    }
}

impl PartialEq<str> for SharedStr {
    fn eq(&self, other: &str) -> bool {
        *self.0 == *other
    }
}

impl PartialEq<&str> for SharedStr {
    fn eq(&self, other: &&str) -> bool {
        *self.0 == **other
    }
}

impl PartialEq<String> for SharedStr {
    fn eq(&self, other: &String) -> bool {
        *self.0 == **other
    }
}

impl PartialEq<SharedStr> for str {
    fn eq(&self, other: &SharedStr) -> bool {
        *self == *other.0
    }
}

impl PartialEq<SharedStr> for &str {
    fn eq(&self, other: &SharedStr) -> bool {
        **self == *other.0
    }
}

impl PartialEq<SharedStr> for String {
    fn eq(&self, other: &SharedStr) -> bool {
        **self == *other.0
    }
}

impl Serialize for SharedStr {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for SharedStr {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        String::deserialize(deserializer).map(SharedStr::from)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compares_displays_and_round_trips_like_a_string() {
        let s = SharedStr::from("ünï \"q\"");
        assert_eq!(s, "ünï \"q\"");
        assert_eq!("ünï \"q\"", s);
        assert_eq!(s, String::from("ünï \"q\""));
        assert_eq!(String::from("ünï \"q\""), s);
        assert_ne!(s, "other");
        assert_eq!(s.to_string(), "ünï \"q\"");
        assert_eq!(format!("{s:?}"), format!("{:?}", "ünï \"q\""));
        let json = serde_json::to_string(&s).unwrap();
        assert_eq!(json, serde_json::to_string("ünï \"q\"").unwrap());
        assert_eq!(serde_json::from_str::<SharedStr>(&json).unwrap(), s);
        assert!(serde_json::from_str::<SharedStr>("1").is_err());
        let copy = s.clone();
        assert!(std::ptr::eq(copy.as_str(), s.as_str()), "a clone shares the text");
    }
}
