//! Where a macro's input stands in its source file, for the two mistakes a macro cannot see in
//! its own tokens: `#[tool]` on a function inside an `impl` (or `trait`) block, and a second
//! `agent!` declaring the same type in the same scope.
//!
//! A macro is given only its own tokens, and its expansion is compiled where it stands: a tool
//! written in an `impl` block would expand to items an `impl` block cannot hold, and a second
//! agent of one name to impls that conflict with the first's, a dozen errors about code the
//! user did not write. The file is read (and scanned once per modification) to find the
//! braces around the token: a light scan of comments, literals and braces, not a parse.
//!
//! The answers err on the side of silence: when the file cannot be read (no local file, a
//! token made by another macro, a proc-macro server that does not say where a token is), or
//! the text at the token's position is not the token, the scan answers "not known" and the
//! macro expands as usual. A wrong "in an `impl` block" would refuse a tool that compiles, so
//! a block counts as one only when its header starts with `impl` or `trait` (after
//! attributes and `pub`, `unsafe`, `default`).

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

/// What opens a braced block, as far as the checks need to know.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Opener {
    /// `impl ... {` or `trait ... {`: a function in it is an associated function.
    ImplOrTrait,
    /// `agent! {`: the block of an agent declaration.
    AgentMacro,
    /// Anything else: a module, a function body, an expression, another macro's input.
    Other,
}

/// A braced block: the byte range from its `{` to its `}` (inclusive) and its opener.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Block {
    pub(crate) open: usize,
    pub(crate) close: usize,
    pub(crate) opener: Opener,
}

/// A scanned file: its text's identifiers (with their byte offsets) and its blocks.
#[derive(Debug, Default)]
pub(crate) struct Scan {
    idents: Vec<(usize, String)>,
    blocks: Vec<Block>,
    /// The text, to turn a line and column into a byte offset.
    text: String,
}

impl Scan {
    /// The byte offset of a one-based line and column (the column counted in characters).
    fn offset(&self, line: usize, column: usize) -> Option<usize> {
        let start = if line <= 1 { 0 } else { self.text.match_indices('\n').nth(line - 2)?.0 + 1 };
        let rest = &self.text[start..];
        let within = rest.char_indices().nth(column.checked_sub(1)?).map_or(rest.len(), |(i, _)| i);
        Some(start + within)
    }

    /// The innermost block around `offset`.
    pub(crate) fn enclosing(&self, offset: usize) -> Option<Block> {
        self.blocks.iter().filter(|b| b.open < offset && offset < b.close).min_by_key(|b| b.close - b.open).copied()
    }

    /// The identifier that starts at `offset`, if one does.
    pub(crate) fn ident_at(&self, offset: usize) -> Option<&str> {
        let i = self.idents.binary_search_by_key(&offset, |(o, _)| *o).ok()?;
        Some(&self.idents[i].1)
    }

    /// The identifier before the one at `offset`.
    pub(crate) fn ident_before(&self, offset: usize) -> Option<&str> {
        let i = self.idents.binary_search_by_key(&offset, |(o, _)| *o).ok()?;
        Some(&self.idents[i.checked_sub(1)?].1)
    }
}

/// Scans Rust source text for identifiers and braced blocks, skipping comments and literals.
pub(crate) fn scan(text: &str) -> Scan {
    let b = text.as_bytes();
    let mut scan = Scan::default();
    // Open blocks; the header of the next block (its first keyword and attribute depth).
    let mut open: Vec<(usize, Opener)> = Vec::new();
    let mut header: Vec<&str> = Vec::new();
    let (mut i, mut groups) = (0, 0usize);
    let ident_char = |c: u8| c.is_ascii_alphanumeric() || c == b'_' || c >= 0x80;
    while i < b.len() {
        let c = b[i];
        match c {
            b'/' if b.get(i + 1) == Some(&b'/') => i = text[i..].find('\n').map_or(b.len(), |n| i + n),
            b'/' if b.get(i + 1) == Some(&b'*') => i = skip_block_comment(b, i),
            b'"' => i = skip_string(b, i + 1),
            b'\'' => i = skip_quote(b, i),
            b'r' | b'b' | b'c' if raw_string_start(b, i).is_some() => {
                i = raw_string_start(b, i).map_or(i + 1, |(hashes, body)| skip_raw(b, body, hashes));
            }
            c if ident_char(c) && !c.is_ascii_digit() => {
                let start = i;
                while i < b.len() && ident_char(b[i]) {
                    i += 1;
                }
                let word = &text[start..i];
                if b.get(i) == Some(&b'"') && matches!(word, "b" | "c") {
                    continue;
                }
                scan.idents.push((start, word.to_owned()));
                if groups == 0 {
                    header.push(word);
                }
                continue;
            }
            b'(' | b'[' => groups += 1,
            b')' | b']' => groups = groups.saturating_sub(1),
            b'!' if groups == 0 => header.push("!"),
            b';' => header.clear(),
            b'{' => {
                open.push((i, opener(&header)));
                header.clear();
                groups = 0;
            }
            b'}' => {
                if let Some((start, opener)) = open.pop() {
                    scan.blocks.push(Block { open: start, close: i, opener });
                }
                header.clear();
                groups = 0;
            }
            _ => {}
        }
        i += 1;
    }
    scan.text = text.to_owned();
    scan
}

/// What a block's header (its words at depth 0, attributes and visibility groups left out)
/// says it is.
fn opener(header: &[&str]) -> Opener {
    let first = header.iter().find(|w| !matches!(**w, "pub" | "unsafe" | "default"));
    match first.copied() {
        Some("impl" | "trait") => Opener::ImplOrTrait,
        _ if header.ends_with(&["agent", "!"]) => Opener::AgentMacro,
        _ => Opener::Other,
    }
}

/// The offset after the block comment opening at `i` (`/* ... */`, nested as Rust nests them).
fn skip_block_comment(b: &[u8], mut i: usize) -> usize {
    let mut depth = 0usize;
    while i + 1 < b.len() {
        match (b[i], b[i + 1]) {
            (b'/', b'*') => {
                depth += 1;
                i += 2;
            }
            (b'*', b'/') => {
                depth -= 1;
                i += 2;
                if depth == 0 {
                    return i - 1;
                }
            }
            _ => i += 1,
        }
    }
    b.len()
}

/// From just after an opening `"` to its closing `"`.
fn skip_string(b: &[u8], mut i: usize) -> usize {
    while i < b.len() {
        match b[i] {
            b'\\' => i += 2,
            b'"' => return i,
            _ => i += 1,
        }
    }
    b.len()
}

/// A character literal (`'a'`, `'\n'`, `'\u{1F600}'`) or a lifetime (`'a`): returns the last
/// byte of a literal, or the quote of a lifetime (whose name is then read as an identifier).
fn skip_quote(b: &[u8], i: usize) -> usize {
    if b.get(i + 1) == Some(&b'\\') {
        return b[i + 2..].iter().position(|&c| c == b'\'').map_or(b.len(), |n| i + 2 + n);
    }
    // One character (of up to four bytes) and a closing quote: a character literal.
    let width = match b.get(i + 1) {
        Some(c) if *c < 0x80 => 1,
        Some(c) if *c >= 0xF0 => 4,
        Some(c) if *c >= 0xE0 => 3,
        Some(_) => 2,
        None => return b.len(),
    };
    if b.get(i + 1 + width) == Some(&b'\'') { i + 1 + width } else { i }
}

/// `r"`, `r#"`, `br"`, `cr#"`: the number of `#` and the offset of the body.
fn raw_string_start(b: &[u8], i: usize) -> Option<(usize, usize)> {
    if i > 0 && (b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_') {
        return None;
    }
    let mut j = i;
    if b[j] != b'r' {
        j += 1;
        if b.get(j) != Some(&b'r') {
            return None;
        }
    }
    j += 1;
    let hashes = b[j..].iter().take_while(|&&c| c == b'#').count();
    (b.get(j + hashes) == Some(&b'"')).then_some((hashes, j + hashes + 1))
}

/// From the body of a raw string to its closing `"` and `#`s.
fn skip_raw(b: &[u8], mut i: usize, hashes: usize) -> usize {
    while i < b.len() {
        if b[i] == b'"' && b[i + 1..].iter().take(hashes).filter(|&&c| c == b'#').count() == hashes {
            return i + hashes;
        }
        i += 1;
    }
    b.len()
}

/// The file a token was written in and its byte offset there, when the compiler says (its
/// line and column, read against the file's text).
pub(crate) fn location(span: proc_macro2::Span) -> Option<(PathBuf, usize)> {
    if !proc_macro::is_available() {
        return None;
    }
    let span = span.unwrap();
    let path = span.local_file()?;
    let scan = scan_file(&path)?;
    let offset = scan.offset(span.line(), span.column())?;
    Some((path, offset))
}

/// The scan of a file, remembered per path and modification time (a long-lived proc-macro
/// server may see the file change).
pub(crate) fn scan_file(path: &PathBuf) -> Option<Arc<Scan>> {
    type Cache = HashMap<PathBuf, (Option<SystemTime>, Arc<Scan>)>;
    static CACHE: Mutex<Option<Cache>> = Mutex::new(None);
    let mtime = std::fs::metadata(path).and_then(|m| m.modified()).ok();
    let mut cache = CACHE.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    let cache = cache.get_or_insert_with(HashMap::new);
    if let Some((t, s)) = cache.get(path)
        && *t == mtime
        && mtime.is_some()
    {
        return Some(Arc::clone(s));
    }
    let text = std::fs::read_to_string(path).ok()?;
    let s = Arc::new(scan(&text));
    cache.insert(path.clone(), (mtime, Arc::clone(&s)));
    Some(s)
}

/// Whether the identifier `ident` (a function's name) is written inside an `impl` or `trait`
/// block; `false` when this cannot be told.
pub(crate) fn in_impl_block(ident: &syn::Ident) -> bool {
    let Some((path, offset)) = location(ident.span()) else { return false };
    let Some(scan) = scan_file(&path) else { return false };
    let plain = syn::ext::IdentExt::unraw(ident).to_string();
    if scan.ident_at(offset).map(|w| w.trim_start_matches("r#")) != Some(plain.as_str()) {
        return false;
    }
    scan.enclosing(offset).is_some_and(|b| b.opener == Opener::ImplOrTrait)
}

/// Agents this compilation has declared, by file and type name: the offsets of their names.
static AGENTS: Mutex<Vec<(PathBuf, String, usize)>> = Mutex::new(Vec::new());

/// Whether the agent type `ident` is a second declaration of a name an `agent!` in the same
/// scope has declared already in this compilation. Both declarations are confirmed in the
/// file as it is now: each is the `struct` of an `agent! { ... }` written there, and both
/// blocks stand in the same block (a long-lived proc-macro server may remember declarations
/// of a file's older text, and an agent made by another macro is not told apart).
pub(crate) fn earlier_agent(ident: &syn::Ident) -> bool {
    let Some((path, offset)) = location(ident.span()) else { return false };
    let name = ident.to_string();
    let mut agents = AGENTS.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    let earlier: Vec<usize> =
        agents.iter().filter(|(p, n, o)| *p == path && *n == name && *o != offset).map(|(_, _, o)| *o).collect();
    if !agents.iter().any(|(p, n, o)| *p == path && *n == name && *o == offset) {
        agents.push((path.clone(), name.clone(), offset));
    }
    drop(agents);
    if earlier.is_empty() {
        return false;
    }
    let Some(scan) = scan_file(&path) else { return false };
    let scope = |at: usize| -> Option<usize> {
        if scan.ident_at(at) != Some(name.as_str()) || scan.ident_before(at) != Some("struct") {
            return None;
        }
        let block = scan.enclosing(at).filter(|b| b.opener == Opener::AgentMacro)?;
        Some(scan.enclosing(block.open).map_or(usize::MAX, |b| b.open))
    };
    let Some(here) = scope(offset) else { return false };
    earlier.into_iter().any(|o| o < offset && scope(o) == Some(here))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opener_at(text: &str, word: &str) -> Option<Opener> {
        let scan = scan(text);
        let at = text.find(word).unwrap();
        scan.enclosing(at).map(|b| b.opener)
    }

    #[test]
    fn a_function_in_an_impl_or_trait_block_is_found() {
        let text = "struct S;\n#[attr] unsafe impl<T: Fn(u8)> X for S where T: Copy {\n    /// Doc with { and \"\n    #[tool(permission = public)]\n    fn open(p: String) {}\n}";
        assert_eq!(opener_at(text, "open"), Some(Opener::ImplOrTrait));
        assert_eq!(opener_at("pub(crate) trait T { fn open(); }", "open"), Some(Opener::ImplOrTrait));
    }

    #[test]
    fn a_function_elsewhere_is_not_in_an_impl_block() {
        // A function returning `impl Trait`, one in a function body inside an impl, and
        // braces in comments, strings, raw strings and character literals.
        let text = r####"
            fn f() -> impl Fn() { || {} }
            impl S { fn g() { /* { */ let _ = "}"; let _ = r#"{"#; let _ = '{'; let _: &'static str = "";
                #[tool(permission = public)] fn open() {} } }
            mod m { fn close() {} }
        "####;
        assert_eq!(opener_at(text, "open"), Some(Opener::Other));
        assert_eq!(opener_at(text, "close"), Some(Opener::Other));
        assert_eq!(opener_at("fn top() {}", "top"), None);
    }

    #[test]
    fn an_agent_block_and_its_struct_are_found() {
        let text = "mod m { agent! { /// Helps.\n pub struct Clinic; tools: [a], } }";
        let scan = scan(text);
        let at = text.find("Clinic").unwrap();
        assert_eq!(scan.enclosing(at).map(|b| b.opener), Some(Opener::AgentMacro));
        assert_eq!(scan.ident_at(at), Some("Clinic"));
        assert_eq!(scan.ident_before(at), Some("struct"));
    }
}
