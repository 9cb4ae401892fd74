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

/// The first 128 bits of the SHA-256 of a tool's manifest entry text, as a literal.
pub(crate) fn entry_digest(fragment: &str) -> proc_macro2::Literal {
    let digest = agents_core::canonical::sha256_hex(fragment.as_bytes());
    let n = u128::from_str_radix(&digest[..32], 16).expect("hex");
    proc_macro2::Literal::u128_suffixed(n)
}

/// Macros of this crate: a tool named like one would clash with the user's import of it, so its
/// chain macro is reached as `__agents_tool_<name>` instead of by the tool's own name.
const OWN_MACROS: &[&str] = &["agent", "tool", "permissions"];

/// The name `agent!` reaches a tool's chain macro by: the tool's own name (so that any import
/// of the tool brings it along), or `__agents_tool_<name>` for a tool named like one of this
/// crate's macros or a std macro (a macro made by a macro may not shadow the prelude's, and
/// would clash with the user's import of `agent!`). Such a tool is granted by a path to its
/// module (`tools::format`) or in the module that declares it.
pub(crate) fn chain_ident(fn_ident: &syn::Ident) -> syn::Ident {
    let plain = syn::ext::IdentExt::unraw(fn_ident).to_string();
    if OWN_MACROS.contains(&plain.as_str()) || STD_MACROS.contains(&plain.as_str()) {
        syn::Ident::new(&format!("__agents_tool_{plain}"), fn_ident.span())
    } else {
        fn_ident.clone()
    }
}

/// The standard library's macros a user's module may call by their bare names.
pub(crate) const STD_MACROS: &[&str] = &[
    "assert",
    "assert_eq",
    "assert_ne",
    "cfg",
    "column",
    "compile_error",
    "concat",
    "dbg",
    "debug_assert",
    "debug_assert_eq",
    "debug_assert_ne",
    "env",
    "eprint",
    "eprintln",
    "file",
    "format",
    "format_args",
    "include",
    "include_bytes",
    "include_str",
    "line",
    "matches",
    "module_path",
    "option_env",
    "panic",
    "print",
    "println",
    "stringify",
    "thread_local",
    "todo",
    "unimplemented",
    "unreachable",
    "vec",
    "write",
    "writeln",
];

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
