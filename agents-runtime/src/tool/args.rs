//! A tool's arguments: what a parameter type must be ([`ToolArgument`]), how one field of the
//! arguments' object is read, and the typed arguments behind a type-erased box
//! ([`ErasedArgs`]) as the registry's parse hands them to the handler.

use agents_core::Tool;
use serde_json::Value;
use std::any::Any;
use std::fmt;

/// Typed arguments behind a type-erased box, as the registry passes them from its parse to the
/// tool's handler.
///
/// ```
/// use agents_runtime::tool::ErasedArgs;
///
/// assert_eq!(ErasedArgs::new(42_u32).take::<u32>(), Some(42));
/// assert_eq!(ErasedArgs::new(42_u32).take::<u64>(), None);
/// ```
pub struct ErasedArgs(
    // The value is kept as `Some(args)`, so that `take` moves it out through `downcast_mut`:
    // no `Box<T>` (and no drop code for one) is built per argument type.
    Box<dyn Any + Send>,
);

impl ErasedArgs {
    /// Erases the type of `args`.
    pub fn new<T: Send + 'static>(args: T) -> Self {
        ErasedArgs(Box::new(Some(args)))
    }

    /// The arguments, when they are a `T`; `None` when they are of another type.
    pub fn take<T: 'static>(mut self) -> Option<T> {
        // A `match`, not `and_then(Option::take)`: that would build one more function per type.
        match self.0.downcast_mut::<Option<T>>() {
            Some(slot) => slot.take(),
            None => None,
        }
    }
}

impl fmt::Debug for ErasedArgs {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ErasedArgs")
    }
}

/// A tool's parse of its JSON arguments into its typed arguments, as the registry calls it.
#[doc(hidden)]
pub type ParseArgs = fn(&Value) -> Result<ErasedArgs, String>;

/// Typed deserialization of one tool's arguments; generic over the tool only, so every agent
/// that grants it shares one copy.
pub(crate) fn parse_erased<T: Tool + ?Sized>(v: &Value) -> Result<ErasedArgs, String> {
    // A `match`, not `map`/`map_err` closures: this is instantiated once per tool, and every
    // closure is one more function to compile for each.
    match T::parse_args(v) {
        Ok(args) => Ok(ErasedArgs::new(args)),
        Err(e) => Err(e),
    }
}

/// Arguments checked by the tool's typed parse and kept as their JSON value, for a call that
/// carries them elsewhere as JSON (an isolated tool's worker process parses them again).
pub(crate) struct CheckedJson(pub(crate) Value);

/// A parse as strict as any tool's (the typed parse must accept the arguments) that keeps the
/// checked JSON value ([`CheckedJson`]) rather than the typed arguments.
pub(crate) fn parse_keeping_json<T: Tool + ?Sized>(v: &Value) -> Result<ErasedArgs, String> {
    match T::parse_args(v) {
        Ok(_) => Ok(ErasedArgs::new(CheckedJson(v.clone()))),
        Err(e) => Err(e),
    }
}

/// What a tool's parameter type must be: the model sends it as JSON and is told its shape by
/// a JSON schema, so it implements `serde::Deserialize` and `schemars::JsonSchema` (and
/// `Clone` and `Debug`, as the generated arguments type does). Implemented for every such
/// type; the trait exists so the compiler says this at the parameter, in a tool's terms.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a tool parameter: the model sends it as JSON, so it must implement `serde::Deserialize`, `schemars::JsonSchema`, `Clone` and `Debug`",
    label = "not a JSON argument",
    note = "derive them on your type: `#[derive(Clone, Debug, serde::Deserialize, schemars::JsonSchema)]`, or take a type that has them (`String`, `u64`, `Vec<String>`, ...)"
)]
pub trait ToolArgument: Sized {
    /// Reads the field `field` of the arguments' object (`None` for an absent `Option`).
    #[doc(hidden)]
    fn read_field(map: &serde_json::Map<String, Value>, field: &'static str) -> Result<Self, serde_json::Error>;
    /// The parameter's schema, with its description and secret mark, and whether it may be
    /// left out.
    #[doc(hidden)]
    fn field_schema(
        generator: &mut schemars::SchemaGenerator,
        description: &str,
        secret: bool,
    ) -> (schemars::Schema, bool);
    /// `Clone::clone`.
    #[doc(hidden)]
    fn clone_field(&self) -> Self;
    /// `Debug::fmt`.
    #[doc(hidden)]
    fn debug_field(&self) -> &dyn fmt::Debug;
}

#[diagnostic::do_not_recommend]
impl<T> ToolArgument for T
where
    T: serde::de::DeserializeOwned + schemars::JsonSchema + Clone + fmt::Debug,
{
    fn read_field(map: &serde_json::Map<String, Value>, field: &'static str) -> Result<Self, serde_json::Error> {
        arg_field(map, field)
    }

    fn field_schema(
        generator: &mut schemars::SchemaGenerator,
        description: &str,
        secret: bool,
    ) -> (schemars::Schema, bool) {
        let mut schema = generator.subschema_for::<T>();
        if !description.is_empty() {
            schema.insert("description".to_owned(), Value::from(description));
        }
        if secret {
            schema.insert("x-agents-secret".to_owned(), Value::Bool(true));
        }
        (schema, T::_schemars_private_is_option())
    }

    fn clone_field(&self) -> Self {
        self.clone()
    }

    fn debug_field(&self) -> &dyn fmt::Debug {
        self
    }
}

/// One field of the arguments' object: its value, or what serde does for a missing field
/// (`None` for an `Option`, else "missing field").
pub(crate) fn arg_field<T: serde::de::DeserializeOwned>(
    map: &serde_json::Map<String, serde_json::Value>,
    field: &'static str,
) -> Result<T, serde_json::Error> {
    match map.get(field) {
        Some(value) => T::deserialize(value),
        None => T::deserialize(MissingField(field)),
    }
}

/// What a derived `Deserialize` reads for an absent field: `None` for an `Option`, and for
/// anything else the error "missing field".
struct MissingField(&'static str);

impl<'de> serde::Deserializer<'de> for MissingField {
    type Error = serde_json::Error;

    fn deserialize_any<V: serde::de::Visitor<'de>>(self, _visitor: V) -> Result<V::Value, Self::Error> {
        Err(serde::de::Error::missing_field(self.0))
    }

    fn deserialize_option<V: serde::de::Visitor<'de>>(self, visitor: V) -> Result<V::Value, Self::Error> {
        visitor.visit_none()
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf unit
        unit_struct newtype_struct seq tuple tuple_struct map struct enum identifier ignored_any
    }
}
