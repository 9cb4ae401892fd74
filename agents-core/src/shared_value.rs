//! [`SharedValue`]: an immutable JSON value whose clones share one allocation.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;
use std::fmt;
use std::ops::Deref;
use std::sync::Arc;

/// An immutable, shared JSON value: cloning it increments a reference count instead of copying
/// the tree.
///
/// The records of one tool call (`proposed`, then `executed` or `failed`, ...) carry the same
/// redacted arguments, so audit records hold them as `SharedValue`. It reads like a
/// [`Value`] (it derefs to one), compares with `Value`, and serializes exactly as the value
/// itself.
///
/// ```
/// use agents_core::SharedValue;
/// use serde_json::json;
/// let args = SharedValue::from(json!({"id": 7}));
/// let again = args.clone(); // no copy of the tree
/// assert_eq!(again, json!({"id": 7}));
/// assert_eq!(args["id"], 7);
/// assert_eq!(serde_json::to_string(&args).unwrap(), r#"{"id":7}"#);
/// ```
#[derive(Clone, PartialEq, Eq, Default)]
pub struct SharedValue(Arc<Value>);

impl SharedValue {
    /// The value.
    pub fn as_value(&self) -> &Value {
        &self.0
    }

    /// Whether `self` and `other` are clones of one value (the same allocation): then they
    /// are equal without being compared.
    pub fn ptr_eq(&self, other: &SharedValue) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }

    /// The value, copied only when another clone still shares it.
    pub fn into_value(self) -> Value {
        Arc::try_unwrap(self.0).unwrap_or_else(|shared| (*shared).clone())
    }
}

impl Deref for SharedValue {
    type Target = Value;
    fn deref(&self) -> &Value {
        &self.0
    }
}

impl AsRef<Value> for SharedValue {
    fn as_ref(&self) -> &Value {
        &self.0
    }
}

impl fmt::Debug for SharedValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&*self.0, f)
    }
}

impl fmt::Display for SharedValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&*self.0, f)
    }
}

impl From<Value> for SharedValue {
    fn from(v: Value) -> Self {
        SharedValue(Arc::new(v))
    }
}

impl From<SharedValue> for Value {
    fn from(v: SharedValue) -> Self {
        v.into_value()
    }
}

impl PartialEq<Value> for SharedValue {
    fn eq(&self, other: &Value) -> bool {
        *self.0 == *other
    }
}

impl PartialEq<SharedValue> for Value {
    fn eq(&self, other: &SharedValue) -> bool {
        *self == *other.0
    }
}

impl Serialize for SharedValue {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for SharedValue {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Value::deserialize(deserializer).map(SharedValue::from)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn clones_share_and_compare_as_the_value() {
        let a = SharedValue::from(json!({"tags": ["x"], "n": 1.5}));
        let b = a.clone();
        assert!(Arc::ptr_eq(&a.0, &b.0));
        assert_eq!(a, b);
        assert_eq!(json!({"tags": ["x"], "n": 1.5}), a);
        assert_ne!(a, json!({"tags": []}));
        assert_eq!(format!("{a:?}"), format!("{:?}", json!({"tags": ["x"], "n": 1.5})));
        assert_eq!(a.to_string(), json!({"tags": ["x"], "n": 1.5}).to_string());
        drop(b);
        assert_eq!(a.into_value(), json!({"tags": ["x"], "n": 1.5}));
    }

    #[test]
    fn round_trips_as_plain_json() {
        let v: SharedValue = serde_json::from_str(r#"{"a":[1,null,"s"]}"#).unwrap();
        assert_eq!(v, json!({"a": [1, null, "s"]}));
        assert_eq!(serde_json::to_string(&v).unwrap(), r#"{"a":[1,null,"s"]}"#);
        let shared = v.clone();
        assert_eq!(shared.into_value(), json!({"a": [1, null, "s"]}), "a shared value is copied out");
    }
}
