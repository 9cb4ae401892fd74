//! The first step of `#[tool]`: the function and the attribute's arguments as written. Only
//! the grammar is read here (which keys exist, what shape each value has); what the values
//! mean is decided in [`super::check`].

use crate::context::Errors;
use crate::util::{suggest, type_string};
use agents_core::Risk;
use proc_macro2::{Span, TokenStream};
use quote::quote;
use syn::meta::ParseNestedMeta;
use syn::parse::{Parse, ParseStream};
use syn::spanned::Spanned;
use syn::{Attribute, Ident, LitStr, Signature, Token, Visibility};

/// Every argument `#[tool(...)]` takes, as the parser reads them (the rustdoc of the macro
/// lists the same).
pub(crate) const ARGS: &[&str] =
    &["permission", "mutating", "handoff", "title", "risk", "policy", "name", "isolated", "egress"];
/// The sections of `policy(...)`.
const POLICY_ARGS: &[&str] = &["fs", "net", "env"];
/// The keys of `fs(...)`.
const FS_ARGS: &[&str] = &["read", "write"];
/// The values of `risk`.
const RISKS: &[&str] = &["low", "medium", "high", "critical"];

/// The function as written; the body is optional so a handoff tool can have none. The body
/// is kept as tokens (a braced group): it is re-emitted, never inspected as syntax, and
/// parsing every statement would cost each build for nothing.
pub(crate) struct ToolFn {
    pub(crate) attrs: Vec<Attribute>,
    pub(crate) vis: Visibility,
    pub(crate) sig: Signature,
    pub(crate) body: Option<proc_macro2::Group>,
}

impl ToolFn {
    /// Parses the function with its body set aside first: syn reads every token it is given
    /// (each one fetched from the compiler), and the body is only re-emitted.
    pub(crate) fn split(item: TokenStream) -> syn::Result<Self> {
        let mut trees: Vec<proc_macro2::TokenTree> = item.into_iter().collect();
        let body = match trees.last() {
            Some(proc_macro2::TokenTree::Group(g)) if g.delimiter() == proc_macro2::Delimiter::Brace => {
                let g = g.clone();
                trees.pop();
                Some(g)
            }
            _ => None,
        };
        let head: TokenStream = trees.into_iter().collect();
        match body {
            Some(body) => {
                let mut func: ToolFn = syn::parse2(quote!(#head ;))?;
                func.body = Some(body);
                Ok(func)
            }
            None => syn::parse2(head),
        }
    }

    /// The function's name without `r#`: the tool's default name and the base of hidden names.
    pub(crate) fn plain_name(&self) -> String {
        syn::ext::IdentExt::unraw(&self.sig.ident).to_string()
    }
}

impl Parse for ToolFn {
    /// The function without its body (see [`ToolFn::split`]): a signature ending in `;`.
    fn parse(input: ParseStream<'_>) -> syn::Result<Self> {
        let attrs = input.call(Attribute::parse_outer)?;
        let vis: Visibility = input.parse()?;
        let sig: Signature = input.parse()?;
        if !input.peek(Token![;]) {
            return Err(input.error("expected the function body `{ ... }` or `;`"));
        }
        input.parse::<Token![;]>()?;
        Ok(ToolFn { attrs, vis, sig, body: None })
    }
}

/// `policy(fs(...), net(...), env(...))` as written.
#[derive(Default)]
pub(crate) struct Policy {
    pub(crate) fs_read: Vec<LitStr>,
    pub(crate) fs_write: Vec<LitStr>,
    pub(crate) net_hosts: Vec<LitStr>,
    pub(crate) env_vars: Vec<LitStr>,
    /// Each section that was written, even empty: a capability handle needs its section.
    pub(crate) fs_declared: bool,
    pub(crate) net_declared: bool,
    pub(crate) env_declared: bool,
}

/// The arguments of `#[tool(...)]` as written.
#[derive(Default)]
pub(crate) struct ToolArgs {
    /// Every argument was read (false after a syntax error, which stops the parser): a rule
    /// that reports a missing argument holds back, since it may be there.
    pub(crate) complete: bool,
    /// `permission = path` or `permission = public`.
    pub(crate) permission: Option<syn::Path>,
    pub(crate) mutating: Option<Span>,
    pub(crate) handoff: Option<Span>,
    /// `handoff = Target`: the agent a call hands the run to.
    pub(crate) handoff_target: Option<syn::Path>,
    pub(crate) title: Option<LitStr>,
    pub(crate) risk: Option<(Risk, Span)>,
    pub(crate) policy: Policy,
    pub(crate) name: Option<LitStr>,
    /// `isolated`: each call runs in a child process the kernel confines to the policy.
    pub(crate) isolated: Option<Span>,
    /// `egress`: the tool's arguments leave the application; the gate checks where they came from.
    pub(crate) egress: Option<Span>,
}

/// Reads `#[tool(...)]`'s arguments; each mistake is reported and the rest is still read.
pub(crate) fn args(tokens: TokenStream, errors: &Errors) -> ToolArgs {
    let mut args = ToolArgs { complete: true, ..ToolArgs::default() };
    let mut seen: Vec<String> = Vec::new();
    let parser = syn::meta::parser(|meta| {
        let key = meta.path.get_ident().map(|i| i.to_string()).unwrap_or_else(|| type_string(&meta.path));
        if ARGS.contains(&key.as_str()) {
            if seen.contains(&key) {
                errors.spanned(&meta.path, format!("duplicate `tool` argument `{key}`; give each argument once"));
            }
            seen.push(key.clone());
        }
        arg(&meta, &key, &mut args, errors)
    });
    if let Err(e) = syn::parse::Parser::parse2(parser, tokens) {
        errors.push(e);
        // The arguments after the mistake were not read: a "missing" argument may be there.
        args.complete = false;
    }
    args
}

/// One argument, by its key.
fn arg(meta: &ParseNestedMeta<'_>, key: &str, args: &mut ToolArgs, errors: &Errors) -> syn::Result<()> {
    match key {
        "permission" => {
            args.permission = Some(parse_value(
                meta,
                "the path of a permission declared with `permissions!`, e.g. `permission = perms::athlete::read`, or `permission = public` (not a string)",
            )?);
        }
        "mutating" => args.mutating = Some(parse_flag(meta, errors)?),
        "handoff" if meta.input.peek(Token![=]) => {
            // Still a handoff tool when the target is misspelt: no second error for its body.
            args.handoff = Some(meta.path.span());
            match parse_value(
                meta,
                "no value (a flag: a call files a record for a person), or the agent a call hands the run to, as the path of a type declared with `agent!`, e.g. `handoff = HrSpecialist`",
            ) {
                Ok(target) => args.handoff_target = Some(target),
                Err(e) => errors.push(e),
            }
        }
        "handoff" => args.handoff = Some(parse_flag(meta, errors)?),
        "isolated" => args.isolated = Some(parse_flag(meta, errors)?),
        "egress" => args.egress = Some(parse_flag(meta, errors)?),
        "title" => {
            args.title = Some(parse_value(
                meta,
                "the text a person reads before approving, as a string, e.g. `title = \"Record injury\"`",
            )?);
        }
        "name" => {
            args.name = Some(parse_value(
                meta,
                "the name the model calls the tool by, as a string, e.g. `name = \"list-athletes\"`",
            )?);
        }
        "risk" => args.risk = parse_risk(meta, errors)?.or(args.risk),
        "policy" => parse_policy(meta, &mut args.policy, errors)?,
        other => {
            errors.spanned(&meta.path, format!("unknown `tool` argument `{other}`{}", suggest(other, ARGS)));
            skip_value(meta)?;
        }
    }
    Ok(())
}

/// `risk = low | medium | high | critical`, without quotes.
fn parse_risk(meta: &ParseNestedMeta<'_>, errors: &Errors) -> syn::Result<Option<(Risk, Span)>> {
    let ident: Ident =
        parse_value(meta, "one of `low`, `medium`, `high`, `critical`, written without quotes, e.g. `risk = high`")?;
    let risk = match ident.to_string().as_str() {
        "low" => Risk::Low,
        "medium" => Risk::Medium,
        "high" => Risk::High,
        "critical" => Risk::Critical,
        other => {
            errors.spanned(&ident, format!("unknown risk `{other}`{}", suggest(other, RISKS)));
            return Ok(None);
        }
    };
    Ok(Some((risk, ident.span())))
}

/// `policy(fs(...), net(...), env(...))`.
fn parse_policy(meta: &ParseNestedMeta<'_>, policy: &mut Policy, errors: &Errors) -> syn::Result<()> {
    expect_parens(meta, "policy(fs(read = [\"/srv/app/**\"]), net(hosts = [\"api.example.com:443\"]))")?;
    meta.parse_nested_meta(|pm| {
        let section = pm.path.get_ident().map(|i| i.to_string()).unwrap_or_default();
        match section.as_str() {
            "fs" => {
                expect_parens(&pm, "fs(read = [\"/srv/app/uploads/**\"], write = [\"/srv/app/out/**\"])")?;
                policy.fs_declared = true;
                pm.parse_nested_meta(|fm| parse_fs_entry(&fm, policy, errors))
            }
            "net" => {
                expect_parens(&pm, "net(hosts = [\"api.example.com:443\"])")?;
                policy.net_declared = true;
                pm.parse_nested_meta(|nm| {
                    list_entry(
                        &nm,
                        "net",
                        ("hosts", "hosts = [\"api.example.com:443\"]"),
                        &mut policy.net_hosts,
                        errors,
                    )
                })
            }
            "env" => {
                expect_parens(&pm, "env(vars = [\"APP_REGION\"])")?;
                policy.env_declared = true;
                pm.parse_nested_meta(|em| {
                    list_entry(&em, "env", ("vars", "vars = [\"APP_REGION\"]"), &mut policy.env_vars, errors)
                })
            }
            other => {
                errors.spanned(&pm.path, format!("unknown `policy` section `{other}`{}", suggest(other, POLICY_ARGS)));
                skip_value(&pm)
            }
        }
    })
}

/// `read = [...]` or `write = [...]` inside `fs(...)`.
fn parse_fs_entry(fm: &ParseNestedMeta<'_>, policy: &mut Policy, errors: &Errors) -> syn::Result<()> {
    let key = fm.path.get_ident().map(|i| i.to_string()).unwrap_or_default();
    match key.as_str() {
        "read" => policy.fs_read.extend(parse_str_list(fm, "read = [\"/srv/app/uploads/**\"]")?),
        "write" => policy.fs_write.extend(parse_str_list(fm, "write = [\"/srv/app/out/**\"]")?),
        other => {
            errors.spanned(&fm.path, format!("unknown `fs` policy argument `{other}`{}", suggest(other, FS_ARGS)));
            skip_value(fm)?;
        }
    }
    Ok(())
}

/// The one key of a section that takes a list (`hosts` of `net`, `vars` of `env`).
fn list_entry(
    meta: &ParseNestedMeta<'_>,
    section: &str,
    (key, example): (&str, &str),
    into: &mut Vec<LitStr>,
    errors: &Errors,
) -> syn::Result<()> {
    if meta.path.is_ident(key) {
        into.extend(parse_str_list(meta, example)?);
    } else {
        let k = type_string(&meta.path);
        errors.spanned(&meta.path, format!("unknown `{section}` policy argument `{k}`{}", suggest(&k, &[key])));
        skip_value(meta)?;
    }
    Ok(())
}

/// `key = ["a", "b"]`; a value of another shape is refused with what the key takes
/// (`example` is the right form, e.g. `read = ["/srv/app/**"]`).
fn parse_str_list(meta: &ParseNestedMeta<'_>, example: &str) -> syn::Result<Vec<LitStr>> {
    let key = type_string(&meta.path);
    let takes = format!("`{key}` takes a list of strings in square brackets, e.g. `{example}`");
    if !meta.input.peek(Token![=]) {
        return Err(syn::Error::new(meta.path.span(), format!("{takes}; `{key}` needs a value")));
    }
    let value = meta.value()?;
    if !value.peek(syn::token::Bracket) {
        let found: syn::Expr = value.parse().map_err(|e| syn::Error::new(e.span(), &takes))?;
        return Err(syn::Error::new_spanned(found, takes));
    }
    let content;
    let bracket = syn::bracketed!(content in value);
    let items = content
        .parse_terminated(|p: ParseStream<'_>| p.parse::<LitStr>(), Token![,])
        .map_err(|e| syn::Error::new(e.span(), format!("{takes}; each entry is a string literal")))?;
    if items.is_empty() {
        return Err(syn::Error::new(
            bracket.span.join(),
            format!(
                "`{key} = []` admits nothing, so the tool could never use it: list what it may use, e.g. `{example}`, or leave `{key}` out"
            ),
        ));
    }
    Ok(items.into_iter().collect())
}

/// `key = value` for an argument that takes one value of the shape `T`; a missing or
/// wrong-shaped value is refused with what the argument takes (`takes`, with an example).
fn parse_value<T: Parse>(meta: &ParseNestedMeta<'_>, takes: &str) -> syn::Result<T> {
    let key = type_string(&meta.path);
    if !meta.input.peek(Token![=]) {
        return Err(syn::Error::new(meta.path.span(), format!("`{key}` takes {takes}")));
    }
    let value = meta.value()?;
    let fork = value.fork();
    match fork.parse::<T>() {
        Ok(_) if fork.is_empty() || fork.peek(Token![,]) => value.parse(),
        _ => {
            let found: syn::Expr =
                value.parse().map_err(|e| syn::Error::new(e.span(), format!("`{key}` takes {takes}")))?;
            Err(syn::Error::new_spanned(found, format!("`{key}` takes {takes}")))
        }
    }
}

/// A flag (`mutating`, `handoff`, `isolated`, `egress`): written alone. `mutating = true` is
/// refused with the right form, and the value is consumed so the arguments after it are
/// still read. Returns where the flag was written.
fn parse_flag(meta: &ParseNestedMeta<'_>, errors: &Errors) -> syn::Result<Span> {
    let key = type_string(&meta.path);
    if meta.input.peek(Token![=]) {
        let value: syn::Expr = meta.value()?.parse()?;
        errors.spanned(
            &value,
            format!("`{key}` is a flag and takes no value: write `#[tool(..., {key}, ...)]`, and leave it out for a read tool"),
        );
    } else if meta.input.peek(syn::token::Paren) {
        let content;
        syn::parenthesized!(content in meta.input);
        let _: TokenStream = content.parse()?;
        errors.spanned(&meta.path, format!("`{key}` is a flag and takes no value: write `#[tool(..., {key}, ...)]`"));
    }
    Ok(meta.path.span())
}

/// A section written `key(...)`; another shape is refused with the right form.
fn expect_parens(meta: &ParseNestedMeta<'_>, example: &str) -> syn::Result<()> {
    if meta.input.peek(syn::token::Paren) {
        return Ok(());
    }
    let key = type_string(&meta.path);
    let takes = format!("`{key}` takes its entries in parentheses, e.g. `{example}`");
    if meta.input.peek(Token![=]) {
        let value: syn::Expr = meta.value()?.parse().map_err(|e| syn::Error::new(e.span(), &takes))?;
        return Err(syn::Error::new_spanned(value, takes));
    }
    Err(syn::Error::new(meta.path.span(), takes))
}

/// Skips `= value` or `(...)` after an unknown key so parsing can go on and report more.
fn skip_value(meta: &ParseNestedMeta<'_>) -> syn::Result<()> {
    if meta.input.peek(Token![=]) {
        let _: syn::Expr = meta.value()?.parse()?;
    } else if meta.input.peek(syn::token::Paren) {
        let content;
        syn::parenthesized!(content in meta.input);
        let _: TokenStream = content.parse()?;
    }
    Ok(())
}
