//! The reviewed document: the permission manifest and the JSON Schemas of what an agent takes
//! and returns, in one canonical text with its own SHA-256.
//!
//! The `MANIFEST` constant is written at compile time by `agent!`, which sees the input and
//! output types by name only. The schemas come from the types themselves
//! ([`schemars::JsonSchema`]), so the document is built at run time, from the agent type:
//!
//! ```text
//! {"format":"agents.reviewed-manifest","io":{"input":{...},"output":{...}},"manifest":{...},"version":1}
//! ```
//!
//! - `manifest` is the agent's `MANIFEST` object: its canonical text is exactly the
//!   `MANIFEST` bytes, so its SHA-256 is `MANIFEST_SHA256` (which the audit records carry); no
//!   existing hash changes.
//! - `io.input` and `io.output` are the JSON Schemas (draft 2020-12, with their `$defs`) of the
//!   agent's `Input` and `Output` types, without the `$schema` line.
//! - The whole is canonical JSON (RFC 8785, [`crate::canonical`]); [`Reviewed::sha256`] is
//!   the SHA-256 of exactly [`Reviewed::text`].
//!
//! Commit it as the baseline ([`crate::baseline`] reads either a manifest or a reviewed
//! document) and `agents manifest diff` classifies a schema change with the other changes: an
//! input schema that may accept a value the old one refused is a widening (see
//! [`admits_no_more`]); an output schema that changed is reported.
//!
//! ```no_run
//! # fn doc<MyAgent: agents_core::Agent>() {
//! let reviewed = agents_core::reviewed::of::<MyAgent>();
//! std::fs::write("baselines/my-agent.reviewed.json", &reviewed.text).unwrap();
//! # }
//! ```

mod covers;

pub use covers::{admits_no_more, same_values};

use crate::agent::Agent;
use crate::manifest::{Manifest, ManifestError};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;

/// The value of a reviewed document's `format` field.
pub const FORMAT: &str = "agents.reviewed-manifest";
/// The reviewed document version this crate writes and reads.
pub const VERSION: u32 = 1;

/// The JSON Schemas of what an agent takes and returns, and of what each of its typed skills
/// takes and returns.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IoSchemas {
    /// The schema of the agent's `Input`.
    pub input: Value,
    /// The schema of the agent's `Output`.
    pub output: Value,
    /// Each typed skill's schemas by its name (`{"review": {"input": ..., "output": ...}}`);
    /// absent when no skill has types of its own, so such a document keeps its bytes. A
    /// skill's entry holds no `skills` of its own.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub skills: BTreeMap<String, IoSchemas>,
}

impl IoSchemas {
    /// The schemas of an input and an output, with no typed skill.
    pub fn new(input: Value, output: Value) -> Self {
        IoSchemas { input, output, skills: BTreeMap::new() }
    }

    /// The input schema a run in skill `name` is checked against: the skill's own when it is
    /// typed, else the agent's.
    pub fn input_of(&self, skill: &str) -> &Value {
        self.skills.get(skill).map_or(&self.input, |s| &s.input)
    }
}

/// A reviewed document's text and hash, as [`of`] builds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reviewed {
    /// The canonical text.
    pub text: String,
    /// Lowercase hex SHA-256 of exactly [`Reviewed::text`].
    pub sha256: String,
}

/// The reviewed document of agent `A`: its `MANIFEST` and the schemas of its input and output.
pub fn of<A: Agent>() -> Reviewed {
    let manifest = Manifest::parse(A::MANIFEST).expect("an agent's MANIFEST is a manifest");
    let mut io = IoSchemas::new(schema_of::<A::Input>(), schema_of::<A::Output>());
    for s in A::SKILL_SCHEMAS {
        io.skills.insert(s.name.to_owned(), IoSchemas::new((s.input)(), (s.output)()));
    }
    let doc = Document { manifest, io: Some(io) };
    let text = doc.to_canonical_string();
    Reviewed { sha256: crate::canonical::sha256_hex(text.as_bytes()), text }
}

/// The JSON Schema of `T` as the reviewed document holds it: draft 2020-12, without the
/// `$schema` line.
pub fn schema_of<T: schemars::JsonSchema + ?Sized>() -> Value {
    let generator = schemars::generate::SchemaSettings::draft2020_12().into_generator();
    let mut value = serde_json::to_value(generator.into_root_schema_for::<T>()).expect("a schema always serializes");
    if let Value::Object(map) = &mut value {
        map.remove("$schema");
    }
    value
}

/// A document the manifest commands and the baseline gate read: a permission manifest, or a
/// reviewed document (the manifest with the schemas of the agent's input and output).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Document {
    /// The permission manifest.
    pub manifest: Manifest,
    /// The schemas, when the document is a reviewed one.
    pub io: Option<IoSchemas>,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Raw {
    format: String,
    version: u32,
    manifest: Value,
    io: IoSchemas,
}

/// Each schema is an object or a boolean, and `io.skills` names exactly the manifest's typed
/// skills, each once, with no `skills` of its own.
fn check_schemas(io: &IoSchemas, manifest: &Manifest) -> Result<(), String> {
    let mut places = vec![("io.input".to_owned(), &io.input), ("io.output".to_owned(), &io.output)];
    for (name, s) in &io.skills {
        places.push((format!("io.skills.{name}.input"), &s.input));
        places.push((format!("io.skills.{name}.output"), &s.output));
        if !s.skills.is_empty() {
            return Err(format!("`io.skills.{name}` holds `skills`; a skill's schemas are its input and output only"));
        }
    }
    if let Some((place, _)) = places.iter().find(|(_, schema)| !(schema.is_object() || schema.is_boolean())) {
        return Err(format!("`{place}` is not a JSON Schema (an object or a boolean)"));
    }
    let mut typed: Vec<&str> =
        manifest.agent.skills.iter().filter(|s| s.io.is_some()).map(|s| s.name.as_str()).collect();
    typed.sort_unstable();
    let given: Vec<&str> = io.skills.keys().map(String::as_str).collect();
    if typed != given {
        return Err(format!(
            "`io.skills` names the skills {given:?}, but the manifest's typed skills are {typed:?}; regenerate the document from the agent"
        ));
    }
    Ok(())
}

impl Document {
    /// Reads a permission manifest ([`Manifest::parse`]) or a reviewed document, by its
    /// `format`. A reviewed document is read as strictly as a manifest: a repeated key, an
    /// unknown field, a manifest [`Manifest::parse`] refuses or a schema that is neither an
    /// object nor a boolean is refused.
    pub fn parse(text: &str) -> Result<Self, ManifestError> {
        let value = crate::manifest::read_strict(text)?;
        if value.get("format").and_then(Value::as_str) != Some(FORMAT) {
            return Manifest::parse(text).map(|manifest| Document { manifest, io: None });
        }
        let invalid = ManifestError::InvalidReviewed;
        match value.get("version").and_then(Value::as_u64) {
            Some(v) if v == u64::from(VERSION) => {}
            Some(v) => {
                return Err(invalid(format!("version {v} is not supported; this build reads version {VERSION}")));
            }
            None => return Err(invalid("no numeric `version` field".into())),
        }
        let raw: Raw = serde_json::from_value(value).map_err(|e| invalid(e.to_string()))?;
        let manifest = Manifest::parse(&crate::canonical::to_string(&raw.manifest)).map_err(|e| match e {
            ManifestError::NotAManifest(d) => invalid(format!("`manifest` is not a permission manifest: {d}")),
            other => other,
        })?;
        check_schemas(&raw.io, &manifest).map_err(invalid)?;
        Ok(Document { manifest, io: Some(raw.io) })
    }

    /// The canonical text: the manifest's own for a plain manifest.
    pub fn to_canonical_string(&self) -> String {
        let Some(io) = &self.io else { return self.manifest.to_canonical_string() };
        let manifest = serde_json::to_value(&self.manifest).expect("a manifest always serializes");
        let raw = Raw { format: FORMAT.to_owned(), version: VERSION, manifest, io: io.clone() };
        crate::canonical::to_string(&serde_json::to_value(raw).expect("a document always serializes"))
    }

    /// Lowercase hex SHA-256 of the canonical text (for a plain manifest, its
    /// `MANIFEST_SHA256`).
    pub fn sha256(&self) -> String {
        crate::canonical::sha256_hex(self.to_canonical_string().as_bytes())
    }

    /// Whether `text` is exactly this document's canonical text.
    pub fn is_canonical_text(&self, text: &[u8]) -> bool {
        text == self.to_canonical_string().as_bytes()
    }
}
