//! Typed skills: a skill of `skills: { ... }` may take and return types of its own,
//! `review(RawRequest -> Decision): [...]`; one written `review: [...]` takes and returns the
//! agent's `input` and `output`. The manifest names a typed skill's types (`io`, present only
//! when typed, so an untyped agent keeps its bytes and hash).

use crate::util::type_string;
use agents_core::skill::SkillIo;
use syn::parse::ParseStream;
use syn::{Token, Type};

/// A typed skill's own input and output types, as written.
#[derive(Clone)]
pub(crate) struct SkillTypes {
    /// The type it takes.
    pub(crate) input: Type,
    /// The type it returns.
    pub(crate) output: Type,
}

impl SkillTypes {
    /// The names the manifest keeps.
    pub(crate) fn entry(&self) -> SkillIo {
        SkillIo { input: type_string(&self.input), output: type_string(&self.output) }
    }
}

/// `(Input -> Output)` after a skill's name, when present.
pub(crate) fn parse_types(input: ParseStream) -> syn::Result<Option<SkillTypes>> {
    if !input.peek(syn::token::Paren) {
        return Ok(None);
    }
    let content;
    syn::parenthesized!(content in input);
    let input_ty: Type = content.parse()?;
    content.parse::<Token![->]>()?;
    let output: Type = content.parse()?;
    if !content.is_empty() {
        return Err(content.error("expected `)` after the skill's output type"));
    }
    Ok(Some(SkillTypes { input: input_ty, output }))
}
