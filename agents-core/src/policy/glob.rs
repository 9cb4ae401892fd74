//! Filesystem globs: their parsing (see the [module docs](crate::policy) for the syntax), matching
//! and covering, and the normalisation a path gets before it is matched.

use super::class::{Class, parse_class};
use super::error::PolicyEntryError;
use std::fmt;
use std::path::{Component, Path, PathBuf};

/// The most alternatives one glob may expand to (braces and `/**/` each multiply them).
pub const MAX_ALTERNATIVES: usize = 64;
/// The longest glob accepted, in characters.
pub const MAX_GLOB_LEN: usize = 1024;

/// One token of a glob alternative.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Tok {
    Lit(char),
    /// `?`
    One,
    /// `*`
    Star,
    /// `**` as a whole component
    Any,
    Class(Class),
}

impl Tok {
    /// Whether every string this token matches is free of `/`.
    fn slash_free(&self) -> bool {
        match self {
            Tok::Lit(c) => *c != '/',
            Tok::One | Tok::Star | Tok::Class(_) => true,
            Tok::Any => false,
        }
    }
}

/// A token before brace expansion and star grouping.
#[derive(Debug, Clone)]
enum Raw {
    Lit(char),
    Star,
    One,
    Class(Class),
    Alt(Vec<Vec<Raw>>),
}

/// The literal directory root of a glob: the absolute path before the first component that
/// holds a pattern character (`*`, `?`, `[`, `{`, or an escape `\\`), or the whole glob when it
/// has none. `None` when that root is not an absolute path below `/` (a relative glob, one
/// that starts with a pattern, or one whose root would be `/` itself).
///
/// Isolated tools need one: the kernel's filesystem rules (Landlock) are set on directories
/// (or files), so a tool running in a confined process may reach everything beneath its
/// globs' roots, and the glob's finer shape is enforced by the capability handles only.
///
/// ```
/// use agents_core::policy::glob_literal_root;
/// assert_eq!(glob_literal_root("/srv/app/uploads/**/*.pdf"), Some("/srv/app/uploads"));
/// assert_eq!(glob_literal_root("/srv/app/*.txt"), Some("/srv/app"));
/// assert_eq!(glob_literal_root("/srv/app/report.txt"), Some("/srv/app/report.txt"));
/// assert_eq!(glob_literal_root("/data/{in,out}/**"), Some("/data"));
/// assert_eq!(glob_literal_root("**/*.txt"), None);
/// assert_eq!(glob_literal_root("/*/secrets"), None);
/// assert_eq!(glob_literal_root("/**"), None);
/// ```
pub fn glob_literal_root(glob: &str) -> Option<&str> {
    if !glob.starts_with('/') {
        return None;
    }
    let root = match glob.find(['*', '?', '[', '{', '\\']) {
        // The components before the one holding the pattern.
        Some(at) => &glob[..glob[..at].rfind('/').unwrap_or(0)],
        None => glob.trim_end_matches('/'),
    };
    (!root.is_empty()).then_some(root)
}

/// A parsed glob: its text and the alternatives it matches (any one suffices).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Glob {
    text: String,
    alternatives: Vec<Vec<Tok>>,
}

impl fmt::Display for Glob {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl Glob {
    /// Parses a glob, refusing every form listed in the [module docs](crate::policy).
    ///
    /// ```
    /// use agents_core::policy::Glob;
    /// let g = Glob::parse("/data/{in,out}/**/*.csv").unwrap();
    /// assert!(g.matches("/data/in/x.csv"));
    /// assert!(g.matches("/data/out/2026/05/x.csv"));
    /// assert!(!g.matches("/data/tmp/x.csv"));
    /// assert!(Glob::parse("/data/../etc/*").is_err());
    /// ```
    pub fn parse(text: &str) -> Result<Glob, PolicyEntryError> {
        if text.is_empty() {
            return Err(PolicyEntryError::new("an empty glob matches nothing; remove it"));
        }
        if text.chars().count() > MAX_GLOB_LEN {
            return Err(PolicyEntryError::new(format!("a glob is at most {MAX_GLOB_LEN} characters long")));
        }
        let chars: Vec<char> = text.chars().collect();
        let mut pos = 0;
        let raw = parse_seq(&chars, &mut pos, false)?;
        if pos < chars.len() {
            return Err(PolicyEntryError::new("a `}` closes no `{`; write `\\}` for the character itself"));
        }
        let mut expanded: Vec<Vec<Raw>> = vec![Vec::new()];
        expand(&raw, &mut expanded)?;
        let mut alternatives = Vec::new();
        for alt in expanded {
            let toks = group_stars(&alt)?;
            check_components(&toks)?;
            for toks in zero_directory_forms(toks) {
                if !alternatives.contains(&toks) {
                    alternatives.push(toks);
                }
            }
            if alternatives.len() > MAX_ALTERNATIVES {
                return Err(too_many());
            }
        }
        Ok(Glob { text: text.to_owned(), alternatives })
    }

    /// The glob as written.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// Whether the glob matches `path` (the whole of it).
    pub fn matches(&self, path: &str) -> bool {
        self.alternatives.iter().any(|alt| matches_alt(alt, path))
    }

    /// Whether every path `narrow` matches is also matched by `self`. Sound but not complete:
    /// `true` is certain, `false` may mean "not sure".
    pub fn covers(&self, narrow: &Glob) -> bool {
        narrow.alternatives.iter().all(|n| self.alternatives.iter().any(|w| covers_alt(w, n)))
    }
}

fn too_many() -> PolicyEntryError {
    PolicyEntryError::new(format!(
        "the glob expands to more than {MAX_ALTERNATIVES} alternatives (braces and `/**/` each multiply them); split it into several entries"
    ))
}

/// Parses a sequence up to the end, or (inside braces) up to an unescaped `,` or `}`.
fn parse_seq(chars: &[char], pos: &mut usize, in_braces: bool) -> Result<Vec<Raw>, PolicyEntryError> {
    let mut out = Vec::new();
    while let Some(&c) = chars.get(*pos) {
        match c {
            ',' | '}' if in_braces => return Ok(out),
            '}' => return Ok(out),
            '*' => out.push(Raw::Star),
            '?' => out.push(Raw::One),
            '\\' => {
                *pos += 1;
                match chars.get(*pos) {
                    Some(&e) => out.push(Raw::Lit(e)),
                    None => {
                        return Err(PolicyEntryError::new(
                            "a trailing `\\` escapes nothing; remove it or write `\\\\`",
                        ));
                    }
                }
            }
            '[' => {
                out.push(Raw::Class(parse_class(chars, pos)?));
                continue;
            }
            '{' => {
                *pos += 1;
                let mut alts = Vec::new();
                loop {
                    let alt = parse_seq(chars, pos, true)?;
                    if alt.is_empty() {
                        return Err(PolicyEntryError::new(
                            "an empty alternative in `{...}` has two readings; list only non-empty alternatives",
                        ));
                    }
                    alts.push(alt);
                    match chars.get(*pos) {
                        Some(',') => *pos += 1,
                        Some('}') => {
                            *pos += 1;
                            break;
                        }
                        _ => return Err(PolicyEntryError::new("unclosed alternatives; missing '}'")),
                    }
                }
                out.push(Raw::Alt(alts));
                continue;
            }
            c => out.push(Raw::Lit(c)),
        }
        *pos += 1;
    }
    Ok(out)
}

/// Expands braces: every sequence in `acc` is extended by each reading of `raw`.
fn expand(raw: &[Raw], acc: &mut Vec<Vec<Raw>>) -> Result<(), PolicyEntryError> {
    for item in raw {
        match item {
            Raw::Alt(alts) => {
                let mut next = Vec::new();
                for alt in alts {
                    let mut branch = acc.clone();
                    expand(alt, &mut branch)?;
                    next.extend(branch);
                    if next.len() > MAX_ALTERNATIVES {
                        return Err(too_many());
                    }
                }
                *acc = next;
            }
            other => acc.iter_mut().for_each(|seq| seq.push(other.clone())),
        }
    }
    Ok(())
}

/// Turns runs of `*` into `Star` or `Any`, refusing the ambiguous ones.
fn group_stars(raw: &[Raw]) -> Result<Vec<Tok>, PolicyEntryError> {
    let mut toks = Vec::new();
    let mut i = 0;
    while i < raw.len() {
        match &raw[i] {
            Raw::Star => {
                let mut j = i;
                while j < raw.len() && matches!(raw[j], Raw::Star) {
                    j += 1;
                }
                let at_start = i == 0 || matches!(raw[i - 1], Raw::Lit('/'));
                let at_end = j == raw.len() || matches!(raw[j], Raw::Lit('/'));
                match j - i {
                    1 => toks.push(Tok::Star),
                    2 if at_start && at_end => toks.push(Tok::Any),
                    2 => {
                        return Err(PolicyEntryError::new(
                            "`**` must be a whole path component (`/a/**/b`); write `*` to stay within one component",
                        ));
                    }
                    _ => return Err(PolicyEntryError::new("three or more `*` in a row; write `*` or `**`")),
                }
                i = j;
                continue;
            }
            Raw::Lit(c) => toks.push(Tok::Lit(*c)),
            Raw::One => toks.push(Tok::One),
            Raw::Class(c) => toks.push(Tok::Class(c.clone())),
            Raw::Alt(_) => unreachable!("braces are expanded before stars are grouped"),
        }
        i += 1;
    }
    Ok(toks)
}

/// Refuses relative globs and components a normalized path never has.
fn check_components(toks: &[Tok]) -> Result<(), PolicyEntryError> {
    match toks.first() {
        Some(Tok::Lit('/') | Tok::Any) => {}
        _ => {
            return Err(PolicyEntryError::new(
                "a glob names absolute paths; start it (and every alternative) with `/` or `**`",
            ));
        }
    }
    let mut component: Vec<&Tok> = Vec::new();
    let mut first = true;
    let check = |component: &[&Tok], first: bool, last: bool| -> Result<(), PolicyEntryError> {
        let lit = |c: char| Tok::Lit(c);
        if component.is_empty() && !first {
            return Err(PolicyEntryError::new(if last {
                "a trailing `/` never matches a normalized path; remove it (`/dir/**` names what is inside)"
            } else {
                "an empty path component (`//`) never matches a normalized path; write one `/`"
            }));
        }
        if component == [&lit('.')] || component == [&lit('.'), &lit('.')] {
            return Err(PolicyEntryError::new(
                "a `.` or `..` component never matches a normalized path; write the path it stands for",
            ));
        }
        Ok(())
    };
    for t in toks {
        if *t == Tok::Lit('/') {
            check(&component, first, false)?;
            first = false;
            component.clear();
        } else {
            component.push(t);
        }
    }
    check(&component, first, true)
}

/// `/a/**/b` also matches `/a/b`: adds, for each inner `/**/`, the reading without it.
fn zero_directory_forms(toks: Vec<Tok>) -> Vec<Vec<Tok>> {
    let mut forms = vec![toks];
    let mut i = 0;
    while i < forms.len() {
        let t = forms[i].clone();
        for k in 1..t.len().saturating_sub(1) {
            if t[k] == Tok::Any && t[k - 1] == Tok::Lit('/') && t[k + 1] == Tok::Lit('/') {
                let mut shorter = t[..k].to_vec();
                shorter.extend_from_slice(&t[k + 2..]);
                if !forms.contains(&shorter) {
                    forms.push(shorter);
                }
            }
        }
        i += 1;
        if forms.len() > MAX_ALTERNATIVES {
            break;
        }
    }
    forms
}

/// Runs the alternative as an automaton over the path's characters.
fn matches_alt(toks: &[Tok], path: &str) -> bool {
    let n = toks.len();
    let mut cur = vec![false; n + 1];
    let mut next = vec![false; n + 1];
    let close = |set: &mut [bool]| {
        for i in 0..n {
            if set[i] && matches!(toks[i], Tok::Star | Tok::Any) {
                set[i + 1] = true;
            }
        }
    };
    cur[0] = true;
    close(&mut cur);
    for c in path.chars() {
        next.iter_mut().for_each(|s| *s = false);
        let mut any = false;
        for i in 0..n {
            if !cur[i] {
                continue;
            }
            let (stay, advance) = match &toks[i] {
                Tok::Lit(l) => (false, *l == c),
                Tok::One => (false, c != '/'),
                Tok::Class(class) => (false, class.contains(c)),
                Tok::Star => (c != '/', false),
                Tok::Any => (true, false),
            };
            if stay {
                next[i] = true;
                any = true;
            }
            if advance {
                next[i + 1] = true;
                any = true;
            }
        }
        if !any {
            return false;
        }
        close(&mut next);
        std::mem::swap(&mut cur, &mut next);
    }
    cur[n]
}

/// Whether `wide` matches every string `narrow` matches (sound, not complete).
fn covers_alt(wide: &[Tok], narrow: &[Tok]) -> bool {
    let (nw, nn) = (wide.len(), narrow.len());
    // r[i * (nn + 1) + j]: wide[i..] covers narrow[j..].
    let mut r = vec![false; (nw + 1) * (nn + 1)];
    let at = |i: usize, j: usize| i * (nn + 1) + j;
    r[at(nw, nn)] = true;
    for i in (0..nw).rev() {
        for j in (0..=nn).rev() {
            let step = j < nn && r[at(i + 1, j + 1)];
            let value = match &wide[i] {
                Tok::Any => r[at(i + 1, j)] || (j < nn && r[at(i, j + 1)]),
                Tok::Star => r[at(i + 1, j)] || (j < nn && narrow[j].slash_free() && r[at(i, j + 1)]),
                Tok::One => step && narrow[j].slash_free() && !matches!(narrow[j], Tok::Star),
                Tok::Lit(c) => step && narrow[j] == Tok::Lit(*c),
                Tok::Class(w) => {
                    step && match &narrow[j] {
                        Tok::Lit(c) => w.contains(*c),
                        Tok::Class(n) => n.within(w),
                        _ => false,
                    }
                }
            };
            r[at(i, j)] = value;
        }
    }
    r[at(0, 0)]
}

/// The globs of one policy list, as the runtime matches them: a path is admitted when any
/// glob matches it. Entries that do not parse match nothing (the macros and the manifest
/// parser refuse them before they get here).
#[derive(Debug, Clone, Default)]
pub struct GlobSet {
    globs: Vec<Glob>,
}

impl GlobSet {
    /// The set of the entries that parse.
    pub fn new<S: AsRef<str>>(entries: &[S]) -> GlobSet {
        GlobSet { globs: entries.iter().filter_map(|e| Glob::parse(e.as_ref()).ok()).collect() }
    }

    /// Whether any glob matches `path`. A path that is not UTF-8 matches nothing.
    pub fn is_match(&self, path: impl AsRef<Path>) -> bool {
        match path.as_ref().to_str() {
            Some(p) => self.globs.iter().any(|g| g.matches(p)),
            None => false,
        }
    }
}

/// An absolute path with `.` and `..` resolved as text (no filesystem access, symlinks not
/// followed); `None` for a relative path or one that climbs above the root. The one
/// normalisation a path gets before it is matched against a [`GlobSet`].
///
/// ```
/// use agents_core::policy::lexical_path;
/// assert_eq!(lexical_path("/srv/up/../up/./a.txt").unwrap(), std::path::Path::new("/srv/up/a.txt"));
/// assert!(lexical_path("/../etc").is_none());
/// assert!(lexical_path("relative/a.txt").is_none());
/// ```
pub fn lexical_path(path: impl AsRef<Path>) -> Option<PathBuf> {
    let path = path.as_ref();
    if !path.is_absolute() {
        return None;
    }
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::RootDir | Component::Prefix(_) => out.push(c.as_os_str()),
            Component::CurDir => {}
            Component::ParentDir => {
                if !out.pop() {
                    return None;
                }
            }
            Component::Normal(p) => out.push(p),
        }
    }
    Some(out)
}
