//! `knowledge: [embedded("policies/leave.md"), file("policies/probation.md"), dir("policies")]`:
//! the agent's knowledge sources. Each path is relative to the crate's root
//! (`CARGO_MANIFEST_DIR`) and read at expansion time, so the manifest carries each source's
//! SHA-256 and size ([`agents_core::knowledge`] computes the entries, as the runtime does at
//! start). An embedded document is compiled in with `include_bytes!`; the files of a `file` or
//! `dir` source are named to `include_bytes!` too (in a constant that is never used), so that
//! cargo rebuilds the agent, and its manifest, when one of them changes.

use agents_core::knowledge::{KnowledgeEntry, WalkError, directory_sha256, walk_directory};
use proc_macro2::TokenStream;
use quote::quote;
use std::path::{Path, PathBuf};
use syn::parse::ParseStream;
use syn::{Ident, LitStr, Token};

/// The kinds of source, as `knowledge: [...]` writes them.
const KINDS: &[&str] = &["embedded", "file", "dir"];

/// One source as written: `kind("path")` or `kind("path", name = "...")`.
pub(crate) struct KnowledgeDecl {
    kind: Ident,
    path: LitStr,
    name: Option<LitStr>,
}

/// `[kind("path", name = "..."), ...]`.
pub(crate) fn parse_knowledge(input: ParseStream<'_>) -> syn::Result<Vec<KnowledgeDecl>> {
    let content;
    syn::bracketed!(content in input);
    let mut out = Vec::new();
    while !content.is_empty() {
        let kind: Ident = content.parse()?;
        let args;
        syn::parenthesized!(args in content);
        let path: LitStr = args.parse()?;
        let mut name = None;
        if args.parse::<Option<Token![,]>>()?.is_some() && !args.is_empty() {
            let key: Ident = args.parse()?;
            if key != "name" {
                return Err(syn::Error::new(
                    key.span(),
                    "a knowledge source takes only `name = \"...\"` after its path",
                ));
            }
            args.parse::<Token![=]>()?;
            name = Some(args.parse()?);
        }
        out.push(KnowledgeDecl { kind, path, name });
        if !content.is_empty() {
            content.parse::<Token![,]>()?;
        }
    }
    Ok(out)
}

/// A source, read: its manifest entry and the absolute paths of the files it read.
pub(crate) struct ReadSource {
    decl_kind: String,
    entry: KnowledgeEntry,
    files: Vec<PathBuf>,
}

/// Reads every declared source under the crate's root; each mistake is reported on its path.
pub(crate) fn read_sources(decls: &[KnowledgeDecl], errors: &crate::context::Errors) -> Vec<ReadSource> {
    let root = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap_or_default());
    let mut out: Vec<ReadSource> = Vec::new();
    for d in decls {
        match read_one(&root, d) {
            Ok(r) if out.iter().any(|o| o.entry.name == r.entry.name) => errors.spanned(
                &d.path,
                format!("two knowledge sources are named `{}`; give one `name = \"...\"`", r.entry.name),
            ),
            Ok(r) => out.push(r),
            Err(msg) => errors.spanned(d.name.as_ref().unwrap_or(&d.path), msg),
        }
    }
    out
}

fn read_one(root: &Path, d: &KnowledgeDecl) -> Result<ReadSource, String> {
    let kind = d.kind.to_string();
    if !KINDS.contains(&kind.as_str()) {
        return Err(format!(
            "unknown kind of knowledge source `{kind}`: write `embedded(\"path\")` (compiled in), `file(\"path\")` or `dir(\"path\")` (read at start)"
        ));
    }
    let declared = d.path.value();
    let name = match &d.name {
        Some(n) if n.value().trim().is_empty() => return Err("a knowledge source's name must not be empty".into()),
        Some(n) => n.value(),
        None => default_name(&declared, kind == "dir")
            .ok_or("this path has no file name to name the source by: add `name = \"...\"`")?,
    };
    let absolute = root.join(&declared);
    let read = |p: &Path| {
        let bytes = std::fs::read(p).map_err(|e| format!("cannot read knowledge source `{}`: {e}", p.display()))?;
        std::str::from_utf8(&bytes).map_err(|e| {
            format!(
                "knowledge source `{}` is not UTF-8 text (invalid byte at offset {}); convert it to UTF-8",
                p.display(),
                e.valid_up_to()
            )
        })?;
        Ok::<_, String>(bytes)
    };
    if kind == "dir" {
        let files = walk_directory(&absolute).map_err(|e| match e {
            WalkError::Link(p) => {
                format!("`{declared}/{p}` is a symbolic link; declare the file it points to as a source of its own")
            }
            WalkError::Unreadable(p, cause) => format!("cannot read the knowledge directory `{p}`: {cause}"),
        })?;
        let mut documents = Vec::new();
        for relative in &files {
            let bytes = read(&absolute.join(relative))?;
            documents.push((relative.clone(), agents_core::canonical::sha256_hex(&bytes), bytes.len() as u64));
        }
        let bytes = documents.iter().map(|d| d.2).sum();
        let entry = KnowledgeEntry { name, path: declared, sha256: directory_sha256(&documents), bytes };
        return Ok(ReadSource { decl_kind: kind, entry, files: files.iter().map(|f| absolute.join(f)).collect() });
    }
    let bytes = read(&absolute)?;
    let path = if kind == "embedded" { agents_core::knowledge::EMBEDDED.to_owned() } else { declared };
    Ok(ReadSource { decl_kind: kind, entry: KnowledgeEntry::of_document(&name, &path, &bytes), files: vec![absolute] })
}

/// A source's name by default: the file's name without its extension (`leave` for
/// `policies/leave.md`), or the directory's name.
fn default_name(path: &str, dir: bool) -> Option<String> {
    let p = Path::new(path.trim_end_matches('/'));
    let stem = if dir { p.file_name() } else { p.file_stem() };
    stem.map(|s| s.to_string_lossy().into_owned()).filter(|s| !s.is_empty() && s != "..")
}

impl ReadSource {
    /// The source's manifest entry.
    pub(crate) fn entry(&self) -> &KnowledgeEntry {
        &self.entry
    }
}

/// The `KnowledgeSpec`s of the agent's spec, and the constants that make cargo rebuild the
/// agent when a file read at expansion time changes.
pub(crate) fn spec_tokens(sources: &[ReadSource], core: &TokenStream) -> (TokenStream, TokenStream) {
    let literal = |p: &Path| p.to_string_lossy().into_owned();
    let specs = sources.iter().map(|s| {
        let KnowledgeEntry { name, path, sha256, bytes } = &s.entry;
        let origin = match s.decl_kind.as_str() {
            "embedded" => {
                let file = literal(&s.files[0]);
                quote!(#core::knowledge::KnowledgeOrigin::Embedded(::core::include_bytes!(#file)))
            }
            "file" => quote!(#core::knowledge::KnowledgeOrigin::File(#path)),
            _ => quote!(#core::knowledge::KnowledgeOrigin::Directory(#path)),
        };
        quote!(#core::knowledge::KnowledgeSpec { name: #name, origin: #origin, sha256: #sha256, bytes: #bytes })
    });
    let tracked = sources.iter().filter(|s| s.decl_kind != "embedded").flat_map(|s| &s.files).map(|f| {
        let file = literal(f);
        quote!(
            const _: &[u8] = ::core::include_bytes!(#file);
        )
    });
    (quote!(&[#(#specs),*]), quote!(#(#tracked)*))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_source_is_named_by_its_file_or_directory() {
        assert_eq!(default_name("policies/leave.md", false).as_deref(), Some("leave"));
        assert_eq!(default_name("policies/", true).as_deref(), Some("policies"));
        assert_eq!(default_name("rules.d", true).as_deref(), Some("rules.d"));
        assert_eq!(default_name("..", true), None);
    }
}
