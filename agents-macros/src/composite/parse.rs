//! `composite! { /// doc  pub struct Name: In -> Out = <flow>; }` as written.
//!
//! A flow is an agent or composite (a path) or a combinator:
//! `then(a, b, ...)`, `branch(router | model, [arm, ...], default = d)`,
//! `loop(body, max = N, until = Stop)`, `parallel([m, ...], join = Join, on_failure = fail_fast | collect)`,
//! `forum([m, ...], moderator = m, rounds = N)`, `wrap(inner, before = [Step, ...], after = [Step, ...])`.

use crate::util::suggest;
use proc_macro2::Span;
use syn::ext::IdentExt;
use syn::parse::{Parse, ParseStream};
use syn::punctuated::Punctuated;
use syn::{Attribute, Ident, LitInt, Path, Token, Type, Visibility, bracketed, parenthesized};

/// The whole input.
pub(crate) struct CompositeInput {
    pub(crate) attrs: Vec<Attribute>,
    pub(crate) vis: Visibility,
    pub(crate) ident: Ident,
    pub(crate) input: Type,
    pub(crate) output: Type,
    pub(crate) flow: Flow,
}

/// Who chooses a branch's arm.
pub(crate) enum RouterInput {
    Code(Path),
    Model,
}

/// One flow, as written.
pub(crate) enum Flow {
    Leaf(Path),
    Then(Span, Vec<Flow>),
    Branch { span: Span, router: RouterInput, arms: Vec<Flow>, default: Box<Flow> },
    Loop { span: Span, body: Box<Flow>, max: u32, until: Option<Path> },
    Parallel { span: Span, members: Vec<Flow>, join: Path, collect: bool },
    Forum { span: Span, members: Vec<Flow>, moderator: Box<Flow>, rounds: u32 },
    Wrap { span: Span, inner: Box<Flow>, before: Vec<Path>, after: Vec<Path> },
}

impl Flow {
    /// Where it is written: errors about it point here.
    pub(crate) fn span(&self) -> Span {
        match self {
            Flow::Leaf(p) => syn::spanned::Spanned::span(p),
            Flow::Then(span, _)
            | Flow::Branch { span, .. }
            | Flow::Loop { span, .. }
            | Flow::Parallel { span, .. }
            | Flow::Forum { span, .. }
            | Flow::Wrap { span, .. } => *span,
        }
    }
}

impl Parse for CompositeInput {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        let attrs = input.call(Attribute::parse_outer)?;
        let vis: Visibility = input.parse()?;
        input.parse::<Token![struct]>()?;
        let ident: Ident = input.parse()?;
        input.parse::<Token![:]>()?;
        let in_ty: Type = input.parse()?;
        input.parse::<Token![->]>()?;
        let out_ty: Type = input.parse()?;
        input.parse::<Token![=]>()?;
        let flow: Flow = input.parse()?;
        if input.peek(Token![;]) {
            input.parse::<Token![;]>()?;
        }
        if !input.is_empty() {
            return Err(
                input.error("unexpected tokens after the composite's flow: one `composite!` declares one composite")
            );
        }
        Ok(CompositeInput { attrs, vis, ident, input: in_ty, output: out_ty, flow })
    }
}

const COMBINATORS: &[&str] = &["then", "branch", "loop", "parallel", "forum", "wrap"];

impl Parse for Flow {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        let fork = input.fork();
        let is_call = fork.call(Ident::parse_any).is_ok() && fork.peek(syn::token::Paren);
        if !is_call {
            return Ok(Flow::Leaf(input.parse()?));
        }
        let word = input.call(Ident::parse_any)?;
        let content;
        parenthesized!(content in input);
        let span = word.span();
        match word.to_string().as_str() {
            "then" => {
                let steps: Punctuated<Flow, Token![,]> = Punctuated::parse_terminated(&content)?;
                if steps.len() < 2 {
                    return Err(syn::Error::new(span, "`then` joins two flows or more: `then(a, b)`"));
                }
                Ok(Flow::Then(span, steps.into_iter().collect()))
            }
            "branch" => parse_branch(span, &content),
            "loop" => parse_loop(span, &content),
            "parallel" => parse_parallel(span, &content),
            "forum" => parse_forum(span, &content),
            "wrap" => parse_wrap(span, &content),
            other => Err(syn::Error::new(span, format!("unknown combinator `{other}`{}", suggest(other, COMBINATORS)))),
        }
    }
}

/// Reads `, key = ` and returns the key, or `None` at the end.
fn next_key(content: ParseStream, keys: &[&str], seen: &mut Vec<String>) -> syn::Result<Option<Ident>> {
    if content.is_empty() {
        return Ok(None);
    }
    content.parse::<Token![,]>()?;
    if content.is_empty() {
        return Ok(None);
    }
    let key = content.call(Ident::parse_any)?;
    let name = key.to_string();
    if !keys.contains(&name.as_str()) {
        return Err(syn::Error::new(key.span(), format!("unknown argument `{name}`{}", suggest(&name, keys))));
    }
    if seen.contains(&name) {
        return Err(syn::Error::new(key.span(), format!("`{name}` is given twice")));
    }
    seen.push(name);
    content.parse::<Token![=]>()?;
    Ok(Some(key))
}

fn list<T: Parse>(content: ParseStream) -> syn::Result<Vec<T>> {
    let inner;
    bracketed!(inner in content);
    Ok(Punctuated::<T, Token![,]>::parse_terminated(&inner)?.into_iter().collect())
}

fn bound(content: ParseStream, what: &str) -> syn::Result<u32> {
    let lit: LitInt = content.parse()?;
    match lit.base10_parse::<u32>() {
        Ok(n) if n >= 1 => Ok(n),
        _ => Err(syn::Error::new(lit.span(), format!("`{what}` is a whole number from 1 to {}", u32::MAX))),
    }
}

fn missing(span: Span, what: &str) -> syn::Error {
    syn::Error::new(span, what)
}

fn parse_branch(span: Span, content: ParseStream) -> syn::Result<Flow> {
    let router = if content.peek(Ident::peek_any) && content.fork().call(Ident::parse_any).is_ok_and(|i| i == "model") {
        content.call(Ident::parse_any)?;
        RouterInput::Model
    } else {
        RouterInput::Code(content.parse()?)
    };
    content.parse::<Token![,]>()?;
    let arms: Vec<Flow> = list(content)?;
    let (mut default, mut seen) = (None, Vec::new());
    while next_key(content, &["default"], &mut seen)?.is_some() {
        default = Some(Box::new(content.parse::<Flow>()?));
    }
    let default = default.ok_or_else(|| {
        missing(span, "a `branch` needs a default arm, taken when its router names no arm: add `default = <agent>`")
    })?;
    if arms.is_empty() {
        return Err(missing(
            span,
            "a `branch` needs one arm or more besides its default: `branch(router, [a, b], default = c)`",
        ));
    }
    Ok(Flow::Branch { span, router, arms, default })
}

fn parse_loop(span: Span, content: ParseStream) -> syn::Result<Flow> {
    let body = Box::new(content.parse::<Flow>()?);
    let (mut max, mut until, mut seen) = (None, None, Vec::new());
    while let Some(key) = next_key(content, &["max", "until"], &mut seen)? {
        if key == "max" {
            max = Some(bound(content, "max")?);
        } else {
            until = Some(content.parse()?);
        }
    }
    let max = max.ok_or_else(|| {
        missing(span, "a `loop` without a bound: add `max = N`, the most times its body runs (a loop ends at its bound even when `until` never holds)")
    })?;
    Ok(Flow::Loop { span, body, max, until })
}

fn parse_parallel(span: Span, content: ParseStream) -> syn::Result<Flow> {
    let members: Vec<Flow> = list(content)?;
    let (mut join, mut collect, mut seen) = (None, false, Vec::new());
    while let Some(key) = next_key(content, &["join", "on_failure"], &mut seen)? {
        if key == "join" {
            join = Some(content.parse()?);
        } else {
            let policy = content.call(Ident::parse_any)?;
            collect = match policy.to_string().as_str() {
                "fail_fast" => false,
                "collect" => true,
                other => {
                    let msg = format!("unknown failure policy `{other}`{}", suggest(other, &["fail_fast", "collect"]));
                    return Err(syn::Error::new(policy.span(), msg));
                }
            };
        }
    }
    let join =
        join.ok_or_else(|| missing(span, "a `parallel` node needs a join: add `join = <type implementing Join>`"))?;
    if members.len() < 2 {
        return Err(missing(span, "a `parallel` node runs two members or more: `parallel([a, b], join = J)`"));
    }
    Ok(Flow::Parallel { span, members, join, collect })
}

fn parse_forum(span: Span, content: ParseStream) -> syn::Result<Flow> {
    let members: Vec<Flow> = list(content)?;
    let (mut moderator, mut rounds, mut seen) = (None, None, Vec::new());
    while let Some(key) = next_key(content, &["moderator", "rounds"], &mut seen)? {
        if key == "moderator" {
            moderator = Some(Box::new(content.parse::<Flow>()?));
        } else {
            rounds = Some(bound(content, "rounds")?);
        }
    }
    let moderator = moderator
        .ok_or_else(|| missing(span, "a `forum` needs a moderator, who decides: add `moderator = <agent>`"))?;
    let rounds =
        rounds.ok_or_else(|| missing(span, "a `forum` without a bound: add `rounds = N`, the most rounds it holds"))?;
    if members.len() < 2 {
        return Err(missing(span, "a `forum` hears two members or more: `forum([a, b], moderator = m, rounds = 2)`"));
    }
    Ok(Flow::Forum { span, members, moderator, rounds })
}

fn parse_wrap(span: Span, content: ParseStream) -> syn::Result<Flow> {
    let inner = Box::new(content.parse::<Flow>()?);
    let (mut before, mut after, mut seen) = (Vec::new(), Vec::new(), Vec::new());
    while let Some(key) = next_key(content, &["before", "after"], &mut seen)? {
        if key == "before" {
            before = list(content)?;
        } else {
            after = list(content)?;
        }
    }
    if before.is_empty() && after.is_empty() {
        return Err(missing(span, "a `wrap` with no step: add `before = [Step, ...]` or `after = [Step, ...]`"));
    }
    Ok(Flow::Wrap { span, inner, before, after })
}
