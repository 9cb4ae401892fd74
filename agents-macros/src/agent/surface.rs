//! The declarations of `agent!` that widen its surface beyond its tools: `models: [...]` (the
//! providers it may run on) and `budget: { ... }` (its caps per run). Each mistake is kept as an
//! error spanned on its token; the values become the manifest's `agent.models` and
//! `agent.budget` (see `agents_core::models`, `agents_core::budget`).

use crate::util::suggest;
use agents_core::budget::{BudgetEntry, parse_usd};
use agents_core::models::{ModelEntry, ModelProvider, check_host, fn_name};
use syn::parse::ParseStream;
use syn::{Ident, LitStr, Token};

/// Every kind `models: [...]` takes, as written.
const KINDS: &[&str] = &["openai", "anthropic", "openai_compatible", "offline"];
/// Every cap `budget: { ... }` takes.
const CAPS: &[&str] = &["tokens_per_run", "usd_per_run"];

/// `[openai("gpt-4.1-mini"), openai_compatible("llama3.2", host = "localhost"), offline]`.
pub(crate) fn parse_models(input: ParseStream<'_>, errors: &mut Vec<syn::Error>) -> syn::Result<Vec<ModelEntry>> {
    let content;
    let bracket = syn::bracketed!(content in input);
    let mut models: Vec<ModelEntry> = Vec::new();
    while !content.is_empty() {
        let kind: Ident = content.parse()?;
        if let Some(m) = parse_model(&kind, &content, errors)? {
            if models.contains(&m) {
                errors.push(syn::Error::new(
                    kind.span(),
                    format!("model `{m}` is declared twice; declare each model once"),
                ));
            } else {
                models.push(m);
            }
        }
        if !content.is_empty() {
            content.parse::<Token![,]>()?;
        }
    }
    if models.is_empty() && errors.is_empty() {
        errors.push(syn::Error::new(
            bracket.span.join(),
            "`models` is empty, so no provider could run the agent; declare at least one model (e.g. `openai(\"gpt-4.1-mini\")`, or `offline`), or leave `models` out to allow any provider",
        ));
    }
    Ok(models)
}

/// One model after its kind: `("id")`, `("id", host = "h")`, or nothing for `offline`.
fn parse_model(kind: &Ident, input: ParseStream<'_>, errors: &mut Vec<syn::Error>) -> syn::Result<Option<ModelEntry>> {
    let name = kind.to_string();
    let Some(provider) = ModelProvider::ALL.into_iter().find(|k| fn_name(*k) == name) else {
        errors.push(syn::Error::new(kind.span(), format!("unknown model kind `{name}`{}", suggest(&name, KINDS))));
        skip_parenthesized(input)?;
        return Ok(None);
    };
    let span = kind.span();
    if provider == ModelProvider::Offline {
        if input.peek(syn::token::Paren) {
            errors.push(syn::Error::new(span, "`offline` takes no model and no host: write `offline` alone"));
            skip_parenthesized(input)?;
        }
        return Ok(Some(ModelEntry::offline()));
    }
    let usage = match provider.default_host() {
        Some(_) => format!("write `{name}(\"model-id\")`, or `{name}(\"model-id\", host = \"...\")` for another host"),
        None => format!("write `{name}(\"model-id\", host = \"...\")`"),
    };
    if !input.peek(syn::token::Paren) {
        errors.push(syn::Error::new(span, format!("model kind `{name}` needs its model id: {usage}")));
        return Ok(None);
    }
    let args;
    syn::parenthesized!(args in input);
    let model: LitStr =
        args.parse().map_err(|e| syn::Error::new(e.span(), format!("the model id is a string: {usage}")))?;
    let host = parse_host(&args, &usage)?;
    let ok = check_model_id(&model, errors);
    let host_text = match (&host, provider.default_host()) {
        (Some(h), _) => h.value(),
        (None, Some(default)) => default.to_owned(),
        (None, None) => {
            errors.push(syn::Error::new(span, format!("model kind `{name}` has no default host: {usage}")));
            return Ok(None);
        }
    };
    if let Err(reason) = check_host(&host_text) {
        let at = host.as_ref().map_or(span, LitStr::span);
        errors.push(syn::Error::new(at, format!("model host `{host_text}` is refused: {reason}")));
        return Ok(None);
    }
    Ok(ok.then(|| ModelEntry::new(provider, &model.value(), &host_text)))
}

/// Skips `( ... )` after a refused kind, so that the next model is still read.
fn skip_parenthesized(input: ParseStream<'_>) -> syn::Result<()> {
    if input.peek(syn::token::Paren) {
        let skipped;
        syn::parenthesized!(skipped in input);
        skipped.parse::<proc_macro2::TokenStream>()?;
    }
    Ok(())
}

/// `, host = "..."` after the model id, or nothing.
fn parse_host(args: ParseStream<'_>, usage: &str) -> syn::Result<Option<LitStr>> {
    if args.is_empty() {
        return Ok(None);
    }
    args.parse::<Token![,]>()?;
    if args.is_empty() {
        return Ok(None);
    }
    let key: Ident = args.parse()?;
    if key != "host" {
        return Err(syn::Error::new(key.span(), format!("unknown model argument `{key}`; expected `host`: {usage}")));
    }
    args.parse::<Token![=]>()?;
    let host: LitStr = args.parse().map_err(|e| syn::Error::new(e.span(), format!("the host is a string: {usage}")))?;
    if !args.is_empty() {
        args.parse::<Token![,]>()?;
    }
    if !args.is_empty() {
        return Err(args.error(format!("a model takes its id and `host` only: {usage}")));
    }
    Ok(Some(host))
}

/// A model id is a non-empty string without control characters.
fn check_model_id(model: &LitStr, errors: &mut Vec<syn::Error>) -> bool {
    let v = model.value();
    let ok = !v.trim().is_empty() && !v.chars().any(char::is_control);
    if !ok {
        errors.push(syn::Error::new(
            model.span(),
            "the model id is empty or holds control characters; write the id the provider knows, e.g. `\"gpt-4.1-mini\"`",
        ));
    }
    ok
}

/// `{ tokens_per_run: 200_000, usd_per_run: 0.50 }`.
pub(crate) fn parse_budget(input: ParseStream<'_>, errors: &mut Vec<syn::Error>) -> syn::Result<BudgetEntry> {
    let content;
    syn::braced!(content in input);
    let mut budget = BudgetEntry::default();
    let mut seen: Vec<String> = Vec::new();
    while !content.is_empty() {
        let key: Ident = content.parse()?;
        content.parse::<Token![:]>()?;
        let value: syn::Lit = content.parse().map_err(|e| {
            syn::Error::new(
                e.span(),
                format!("budget cap `{key}` takes a positive number, e.g. `{key}: {}`", example(&key)),
            )
        })?;
        let name = key.to_string();
        if !CAPS.contains(&name.as_str()) {
            errors.push(syn::Error::new(key.span(), format!("unknown budget cap `{name}`{}", suggest(&name, CAPS))));
        } else if seen.contains(&name) {
            errors.push(syn::Error::new(key.span(), format!("budget cap `{name}` is given twice; give each cap once")));
        } else {
            match cap_value(&name, &value) {
                Ok(v) if name == "tokens_per_run" => budget.tokens_per_run = Some(v),
                Ok(v) => budget.usd_per_run_micros = Some(v),
                Err(msg) => errors.push(syn::Error::new(value.span(), msg)),
            }
            seen.push(name);
        }
        if !content.is_empty() {
            content.parse::<Token![,]>()?;
        }
    }
    Ok(budget)
}

/// A cap's value: a positive integer of tokens, or a positive amount of dollars.
fn cap_value(name: &str, value: &syn::Lit) -> Result<u64, String> {
    let positive = |v: u64| {
        if v == 0 { Err(format!("budget cap `{name}` is 0; a cap is a positive number")) } else { Ok(v) }
    };
    match (name, value) {
        ("tokens_per_run", syn::Lit::Int(i)) if i.suffix().is_empty() => {
            positive(i.base10_parse::<u64>().map_err(|_| format!("budget cap `{name}` is too large for a `u64`"))?)
        }
        ("usd_per_run", syn::Lit::Int(i)) if i.suffix().is_empty() => positive(parse_usd(i.base10_digits())?),
        ("usd_per_run", syn::Lit::Float(f)) if f.suffix().is_empty() => positive(parse_usd(f.base10_digits())?),
        _ => Err(format!(
            "budget cap `{name}` takes a positive number without a suffix, e.g. `{name}: {}`",
            example(name)
        )),
    }
}

/// An example value of a cap.
fn example(name: &(impl ToString + ?Sized)) -> &'static str {
    if name.to_string() == "usd_per_run" { "0.50" } else { "200_000" }
}
