//! `audit: { values: omitted | masked | full }`: the most of a call's values the agent's audit
//! records may keep. It becomes the manifest's `agent.audit_values` (absent when `omitted`,
//! the default) and `AgentSpec::audit_values`, which a runtime set to keep more refuses.

use agents_core::audit::AuditValues;
use syn::parse::ParseStream;
use syn::{Ident, Token};

/// What `audit` takes, for its errors.
pub(crate) const AUDIT_TAKES: &str = "how much of a call's values its records may keep, in braces, e.g. `audit: { values: masked }` (one of `omitted`, `masked`, `full`)";

/// `{ values: masked }`; each mistake kept as an error spanned on its token.
pub(crate) fn parse_audit(input: ParseStream<'_>, errors: &mut Vec<syn::Error>) -> syn::Result<AuditValues> {
    let content;
    syn::braced!(content in input);
    let mut values: Option<AuditValues> = None;
    while !content.is_empty() {
        let key: Ident = content.parse()?;
        content.parse::<Token![:]>()?;
        let value: Ident = content
            .parse()
            .map_err(|e| syn::Error::new(e.span(), "`values` takes one of `omitted`, `masked`, `full`, unquoted"))?;
        if key != "values" {
            errors.push(syn::Error::new(key.span(), format!("unknown `audit` key `{key}`; `audit` takes `values`")));
        } else if values.is_some() {
            errors.push(syn::Error::new(key.span(), "`values` is given twice; give it once"));
        } else {
            match value.to_string().parse::<AuditValues>() {
                Ok(v) => values = Some(v),
                Err(msg) => errors.push(syn::Error::new(value.span(), msg)),
            }
        }
        if !content.is_empty() {
            content.parse::<Token![,]>()?;
        }
    }
    Ok(values.unwrap_or_default())
}
