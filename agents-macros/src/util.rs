//! Small helpers shared by the macros.

use quote::ToTokens;

/// "did you mean" for a misspelt option.
pub(crate) fn suggest(found: &str, options: &[&str]) -> String {
    let best = options
        .iter()
        .map(|o| (strsim::jaro_winkler(found, o), *o))
        .filter(|(s, _)| *s > 0.8)
        .max_by(|a, b| a.0.total_cmp(&b.0));
    let list = options.iter().map(|o| format!("`{o}`")).collect::<Vec<_>>().join(", ");
    match best {
        Some((_, o)) => format!("; did you mean `{o}`? expected one of {list}"),
        None => format!("; expected one of {list}"),
    }
}

/// A type or path as a reviewer reads it: `Option<Vec<String>>`, `&str`.
pub(crate) fn type_string<T: ToTokens>(t: &T) -> String {
    let raw = t.to_token_stream().to_string();
    let mut out = String::with_capacity(raw.len());
    let chars: Vec<char> = raw.chars().collect();
    for (i, c) in chars.iter().enumerate() {
        if *c == ' ' {
            let prev = if i > 0 { chars[i - 1] } else { ' ' };
            let next = chars.get(i + 1).copied().unwrap_or(' ');
            let glue = matches!(prev, '<' | ':' | '&' | '(' | '[' | '\'')
                || matches!(next, '<' | '>' | ':' | ',' | ')' | ']' | ';')
                || (prev == '>' && next == '>');
            if glue {
                continue;
            }
        }
        out.push(*c);
    }
    out
}

/// The doc comment of an item, lines joined and trimmed.
pub(crate) fn doc_string(attrs: &[syn::Attribute]) -> Option<String> {
    let mut lines = Vec::new();
    for attr in attrs {
        if !attr.path().is_ident("doc") {
            continue;
        }
        if let syn::Meta::NameValue(nv) = &attr.meta
            && let syn::Expr::Lit(syn::ExprLit { lit: syn::Lit::Str(s), .. }) = &nv.value
        {
            lines.push(s.value());
        }
    }
    let text = lines.iter().map(|l| l.strip_prefix(' ').unwrap_or(l)).collect::<Vec<_>>().join("\n");
    let text = text.trim().to_owned();
    (!text.is_empty()).then_some(text)
}

/// `area::action` → `area.action`, from the last two segments of a permission path.
pub(crate) fn permission_name(path: &syn::Path) -> Option<String> {
    let segs: Vec<String> = path.segments.iter().map(|s| s.ident.to_string()).collect();
    if segs.len() < 2 || path.segments.iter().any(|s| !s.arguments.is_none()) {
        return None;
    }
    Some(format!("{}.{}", segs[segs.len() - 2], segs[segs.len() - 1]))
}

/// snake_case → CamelCase.
pub(crate) fn camel(name: &str) -> String {
    name.split('_')
        .filter(|s| !s.is_empty())
        .map(|s| {
            let mut c = s.chars();
            match c.next() {
                Some(f) => f.to_uppercase().collect::<String>() + c.as_str(),
                None => String::new(),
            }
        })
        .collect()
}

/// The parameter descriptions of a doc comment, in the rustdoc convention: a `# Arguments`
/// section of list items `` * `name` - what it is `` (a `-` item or a `:` separator is read
/// too). A description may continue on the lines below its item.
pub(crate) fn argument_docs(attrs: &[syn::Attribute]) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    let mut in_section = false;
    for attr in attrs {
        if !attr.path().is_ident("doc") {
            continue;
        }
        let syn::Meta::NameValue(nv) = &attr.meta else { continue };
        let syn::Expr::Lit(syn::ExprLit { lit: syn::Lit::Str(s), .. }) = &nv.value else { continue };
        for line in s.value().lines() {
            let line = line.trim();
            if let Some(heading) = line.strip_prefix('#') {
                in_section = heading.trim_start_matches('#').trim().eq_ignore_ascii_case("arguments");
                continue;
            }
            if !in_section || line.is_empty() {
                continue;
            }
            let item = line.strip_prefix("* ").or_else(|| line.strip_prefix("- "));
            match item.and_then(|i| i.strip_prefix('`')).and_then(|i| i.split_once('`')) {
                Some((name, rest)) => {
                    let text = rest.trim_start().trim_start_matches(['-', ':', '–']).trim();
                    out.push((name.trim_start_matches("r#").to_owned(), text.to_owned()));
                }
                None => {
                    if let Some((_, text)) = out.last_mut() {
                        text.push(' ');
                        text.push_str(line);
                    }
                }
            }
        }
    }
    out
}

/// An action tool's JSON arguments are each described (`descriptions` in the order of
/// `params`, empty when the `# Arguments` section has no entry): the person who approves the
/// call reads them, and the model fills them in from their descriptions. A read tool's
/// argument may go without one (its schema then has no description, never a placeholder).
pub(crate) fn require_argument_docs(
    tool: &str,
    params: &[&syn::Ident],
    descriptions: &[String],
    errors: &crate::context::Errors,
) {
    for (ident, desc) in params.iter().zip(descriptions) {
        if !desc.trim().is_empty() {
            continue;
        }
        let name = syn::ext::IdentExt::unraw(*ident);
        errors.spanned(
            ident,
            format!(
                "parameter `{name}` of action tool `{tool}` has no description: the model fills it in from its description, and the person who approves the call reads it\nhelp: describe it in the tool's doc comment, in a `# Arguments` section, with the line: /// * `{name}` - what it is"
            ),
        );
    }
}

/// A description without its `# Arguments` section (up to the next heading), which the
/// parameters' schemas carry instead.
pub(crate) fn without_arguments_section(doc: &str) -> String {
    let mut out: Vec<&str> = Vec::new();
    let mut skipping = false;
    for line in doc.lines() {
        if let Some(heading) = line.trim().strip_prefix('#') {
            skipping = heading.trim_start_matches('#').trim().eq_ignore_ascii_case("arguments");
            if skipping {
                continue;
            }
        }
        if !skipping {
            out.push(line);
        }
    }
    out.join("\n").trim().to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_description_leaves_the_arguments_section_out() {
        let doc = "Records an injury.\n\n# Arguments\n\n* `athlete` - the id\n\n# Errors\n\nWhen unknown.";
        assert_eq!(without_arguments_section(doc), "Records an injury.\n\n# Errors\n\nWhen unknown.");
        assert_eq!(without_arguments_section("Lists."), "Lists.");
    }

    #[test]
    fn an_action_tool_describes_every_argument_and_a_read_tool_need_not() {
        let tool = |args: proc_macro2::TokenStream| {
            crate::tool::expand(
                args,
                quote::quote! {
                    /// Records an injury.
                    ///
                    /// # Arguments
                    ///
                    /// * `athlete` - the athlete's id
                    async fn record_injury(athlete: u64, note: String) -> Result<String, String> { todo!() }
                },
            )
            .to_string()
        };
        let action = tool(quote::quote!(permission = public, mutating, title = "Record injury"));
        assert!(action.contains("parameter `note` of action tool `record_injury` has no description"), "{action}");
        assert!(!action.contains("parameter `athlete`"), "{action}");
        let read = tool(quote::quote!(permission = public));
        assert!(!read.contains("compile_error"), "{read}");
    }

    #[test]
    fn argument_descriptions_come_from_the_arguments_section() {
        let attrs: Vec<syn::Attribute> = vec![
            syn::parse_quote!(#[doc = " Records an injury."]),
            syn::parse_quote!(#[doc = ""]),
            syn::parse_quote!(#[doc = " # Arguments"]),
            syn::parse_quote!(#[doc = ""]),
            syn::parse_quote!(#[doc = " * `athlete` - the athlete's id"]),
            syn::parse_quote!(#[doc = " * `note`: what happened,"]),
            syn::parse_quote!(#[doc = "   in the physio's words"]),
            syn::parse_quote!(#[doc = ""]),
            syn::parse_quote!(#[doc = " # Errors"]),
            syn::parse_quote!(#[doc = " * `athlete` - not an argument line"]),
        ];
        assert_eq!(
            argument_docs(&attrs),
            [
                ("athlete".to_owned(), "the athlete's id".to_owned()),
                ("note".to_owned(), "what happened, in the physio's words".to_owned()),
            ]
        );
    }
}
