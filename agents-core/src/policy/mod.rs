//! The one meaning of a policy entry: filesystem globs, network hosts and environment
//! variables.
//!
//! Everything that reads a policy entry reads it here: `#[tool]` refuses an entry that
//! [`Glob::parse`], [`HostPattern::parse`] or [`check_env_var`] refuses; the manifest parser
//! refuses the same entries; the runtime's capability handles match with [`GlobSet`],
//! [`HostPattern::allows`] and [`env_var_granted`]; and [`crate::diff`] decides whether one
//! entry covers another with [`Glob::covers`] and [`HostPattern::covers`], which are proved
//! against those same matchers (`covers(wide, narrow)` is only `true` when every value
//! `narrow` admits is admitted by `wide`).
//!
//! # Globs
//!
//! A glob names absolute paths, matched against the whole path after the runtime has
//! normalized it (no `.` or `..` components, no repeated or trailing `/`). Characters are
//! Unicode scalar values compared exactly (no case folding, no Unicode normalization).
//!
//! | syntax | matches |
//! | --- | --- |
//! | `*` | any run of characters other than `/`, the empty run included |
//! | `?` | one character other than `/` |
//! | `**` as a whole path component | any run of characters, `/` included; `/a/**/b` also matches `/a/b` |
//! | `[abc]`, `[a-z]`, `[!a-z]` or `[^a-z]` | one character of (or, negated, not of) the set, never `/`; `-` first or last is literal |
//! | `{x,y,...}` | any of the alternatives (each may hold further syntax, nested braces too) |
//! | `\c` | the character `c` itself, also inside a class |
//! | any other character | itself |
//!
//! Refused, each with the reason in its error: an empty glob; a relative glob (every
//! alternative must start with `/` or `**`); `**` that is not a whole component (`a**`) and
//! runs of three or more `*`; an empty component (`//`), a `.` or `..` component, or a
//! trailing `/` (a normalized path has none, so the glob would read as something it never
//! matches); an unclosed `[` or `{`, a stray `}`, an empty class or alternative, a class
//! holding `/`, a reversed range, a `]` that opens a class's set (write `\]`), a trailing
//! `\`; more than [`MAX_ALTERNATIVES`] alternatives after expanding braces; more than
//! [`MAX_GLOB_LEN`] characters.
//!
//! # Hosts
//!
//! `host` or `host:port`: a DNS name of ASCII letters, digits and `-` (compared without case),
//! `*.` followed by a DNS name (every subdomain, not the name itself), a dotted-quad IPv4
//! address, or an IPv6 address in brackets (`[::1]`, written in its canonical form). A port is
//! 1 to 65535; without one, every port is allowed. No scheme, path, user or trailing dot.
//!
//! `*` alone (or `*:port`) allows **any host**: for a browsing tool that fetches pages the
//! user names, whose hosts nobody can list in advance. It is the widest entry there is: a
//! manifest diff reports it as a widening, the capability report shows it in red, and the
//! runtime's egress check still holds for it (a value copied from a tool result into its
//! arguments waits for a person). It allows every host the process can reach, internal
//! addresses (loopback, private networks, a cloud's metadata address) included: a tool that
//! must not reach those needs a narrower list, or a network boundary outside the process.
//! `*` is only the whole entry or the start of `*.`; `**`, `*.*` or `*x` are refused.
//!
//! # Environment variables
//!
//! Names of letters, digits and `_`, not starting with a digit, granted by exact name: a
//! policy entry is never a pattern.

use std::fmt;
use std::net::{Ipv4Addr, Ipv6Addr};
use std::path::{Component, Path, PathBuf};

/// The most alternatives one glob may expand to (braces and `/**/` each multiply them).
pub const MAX_ALTERNATIVES: usize = 64;
/// The longest glob accepted, in characters.
pub const MAX_GLOB_LEN: usize = 1024;

/// Why a policy entry was refused: a sentence without a trailing period.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct PolicyEntryError(String);

impl PolicyEntryError {
    fn new(msg: impl Into<String>) -> Self {
        PolicyEntryError(msg.into())
    }

    /// The reason as text.
    pub fn reason(&self) -> &str {
        &self.0
    }
}

/// A set of characters for `[...]`: sorted, merged ranges, never containing `/`.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Class {
    negated: bool,
    ranges: Vec<(char, char)>,
}

impl Class {
    fn contains(&self, c: char) -> bool {
        c != '/' && (self.ranges.iter().any(|&(lo, hi)| lo <= c && c <= hi) != self.negated)
    }

    /// Whether every character of `inner` (all of `[lo, hi]` ranges) lies in the union of
    /// `outer`'s ranges. Both are sorted and merged.
    fn ranges_within(inner: &[(char, char)], outer: &[(char, char)]) -> bool {
        inner.iter().all(|&(lo, hi)| outer.iter().any(|&(olo, ohi)| olo <= lo && hi <= ohi))
    }

    fn ranges_disjoint(a: &[(char, char)], b: &[(char, char)]) -> bool {
        a.iter().all(|&(lo, hi)| b.iter().all(|&(blo, bhi)| hi < blo || bhi < lo))
    }

    /// Whether every character this class matches is matched by `wide`. Sound: `false` may
    /// mean "not sure".
    fn within(&self, wide: &Class) -> bool {
        match (self.negated, wide.negated) {
            (false, false) => Class::ranges_within(&self.ranges, &wide.ranges),
            (false, true) => Class::ranges_disjoint(&self.ranges, &wide.ranges),
            // `wide` excludes only characters `self` excludes too.
            (true, true) => Class::ranges_within(&wide.ranges, &self.ranges),
            (true, false) => false,
        }
    }
}

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
    /// Parses a glob, refusing every form listed in the [module docs](self).
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

/// Parses `[...]` starting at `[`; leaves `pos` after `]`.
fn parse_class(chars: &[char], pos: &mut usize) -> Result<Class, PolicyEntryError> {
    let unclosed = || PolicyEntryError::new("unclosed character class; missing ']'");
    *pos += 1;
    let negated = matches!(chars.get(*pos), Some('!' | '^'));
    if negated {
        *pos += 1;
    }
    if chars.get(*pos) == Some(&']') {
        return Err(PolicyEntryError::new(
            "a `]` right after `[` reads both as a member and as the end of an empty class; write `\\]` for the character",
        ));
    }
    let mut items: Vec<char> = Vec::new();
    let mut escaped: Vec<bool> = Vec::new();
    loop {
        match chars.get(*pos) {
            None => return Err(unclosed()),
            Some(']') => {
                *pos += 1;
                break;
            }
            Some('\\') => {
                *pos += 1;
                items.push(*chars.get(*pos).ok_or_else(unclosed)?);
                escaped.push(true);
            }
            Some(&c) => {
                items.push(c);
                escaped.push(false);
            }
        }
        *pos += 1;
    }
    let mut ranges = Vec::new();
    let mut i = 0;
    while i < items.len() {
        let c = items[i];
        if i + 2 < items.len() && items[i + 1] == '-' && !escaped[i + 1] {
            let hi = items[i + 2];
            if hi < c {
                return Err(PolicyEntryError::new(format!("the range `{c}-{hi}` is reversed; write `{hi}-{c}`")));
            }
            ranges.push((c, hi));
            i += 3;
        } else {
            ranges.push((c, c));
            i += 1;
        }
    }
    if ranges.iter().any(|&(lo, hi)| lo <= '/' && '/' <= hi) {
        return Err(PolicyEntryError::new(
            "a character class never matches `/`; remove `/` from it (use `**` to cross directories)",
        ));
    }
    ranges.sort_unstable();
    let mut merged: Vec<(char, char)> = Vec::new();
    for (lo, hi) in ranges {
        match merged.last_mut() {
            Some(last) if (lo as u32) <= (last.1 as u32).saturating_add(1) => last.1 = last.1.max(hi),
            _ => merged.push((lo, hi)),
        }
    }
    Ok(Class { negated, ranges: merged })
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

/// Which hosts a pattern names.
#[derive(Debug, Clone, PartialEq, Eq)]
enum HostName {
    /// One name or address (lowercase; an IPv6 address in brackets, canonical).
    Exact(String),
    /// Every name ending in `.suffix`, not `suffix` itself.
    Subdomains(String),
    /// Every host (`*`).
    Any,
}

/// A parsed network policy entry: `host`, `host:port`, `*.domain[:port]`, `[v6][:port]`, or
/// `*[:port]` for any host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostPattern {
    host: HostName,
    port: Option<u16>,
}

impl HostPattern {
    /// Parses a host entry (see the [module docs](self)).
    ///
    /// ```
    /// use agents_core::policy::HostPattern;
    /// let p = HostPattern::parse("*.example.com:443").unwrap();
    /// assert!(p.allows("api.example.com", Some(443)));
    /// assert!(!p.allows("example.com", Some(443)));
    /// assert!(HostPattern::parse("https://example.com").is_err());
    /// ```
    pub fn parse(entry: &str) -> Result<HostPattern, PolicyEntryError> {
        let bad = |why: &str| {
            Err(PolicyEntryError::new(format!("{why}; write `host` or `host:port`, e.g. `api.example.com:443`")))
        };
        if entry.contains("://") {
            return bad("a host has no scheme");
        }
        if entry.contains(['/', '?', '#', '\\']) {
            return bad("a host has no path");
        }
        if entry.contains('@') {
            return bad("a host has no user name");
        }
        let (host, port) = if let Some(rest) = entry.strip_prefix('[') {
            let Some((ip, tail)) = rest.split_once(']') else { return bad("unclosed `[`") };
            let Ok(addr) = ip.parse::<Ipv6Addr>() else { return bad("not an IPv6 address") };
            if addr.to_string() != ip {
                return bad(&format!("write the IPv6 address in its canonical form `[{addr}]`"));
            }
            let port = match tail {
                "" => None,
                t => match t.strip_prefix(':') {
                    Some(p) => Some(p),
                    None => return bad("unexpected text after `]`"),
                },
            };
            (HostName::Exact(format!("[{addr}]")), port)
        } else {
            let (name, port) = match entry.rsplit_once(':') {
                Some((h, p)) => (h, Some(p)),
                None => (entry, None),
            };
            if name == "*" {
                (HostName::Any, port)
            } else {
                let (wild, name) = match name.strip_prefix("*.") {
                    Some(rest) => (true, rest),
                    None => (false, name),
                };
                if name.contains('*') {
                    return bad(
                        "`*` is either the whole entry (any host) or the start `*.` of every subdomain of a name \
                         (`*.example.com`)",
                    );
                }
                let label_ok = |l: &str| {
                    !l.is_empty()
                        && l.len() <= 63
                        && l.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
                        && !l.starts_with('-')
                        && !l.ends_with('-')
                };
                if name.is_empty() || name.len() > 253 || !name.split('.').all(label_ok) {
                    return bad("not a DNS name or IP address");
                }
                let last = name.rsplit('.').next().unwrap_or_default();
                if last.chars().all(|c| c.is_ascii_digit()) {
                    // Readers disagree on `127.1`, `0x7f.1` or `010.0.0.1`: only dotted quads.
                    match name.parse::<Ipv4Addr>() {
                        Ok(a) if a.to_string() == name && !wild => {}
                        Ok(_) if wild => return bad("`*.` names subdomains, and an IP address has none"),
                        _ => return bad("an IPv4 address is written as four decimal numbers, e.g. `10.0.0.1`"),
                    }
                }
                let name = name.to_ascii_lowercase();
                (if wild { HostName::Subdomains(name) } else { HostName::Exact(name) }, port)
            }
        };
        let port = match port {
            None => None,
            Some(p) => match p.parse::<u16>() {
                Ok(n) if n > 0 && p.bytes().all(|b| b.is_ascii_digit()) => Some(n),
                _ => return bad("the port is not a number from 1 to 65535"),
            },
        };
        Ok(HostPattern { host, port })
    }

    /// Whether the pattern allows `host` (as a URL parser gives it: a name, a dotted quad or
    /// a bracketed IPv6 address) on `port` (`None` when the URL has no port and its scheme
    /// none by default). Names are compared without ASCII case.
    pub fn allows(&self, host: &str, port: Option<u16>) -> bool {
        if self.port.is_some() && self.port != port {
            return false;
        }
        let host = match host.strip_prefix('[').and_then(|h| h.strip_suffix(']')) {
            Some(inner) => match inner.parse::<Ipv6Addr>() {
                Ok(a) => format!("[{a}]"),
                Err(_) => return false,
            },
            None => host.to_ascii_lowercase(),
        };
        match &self.host {
            HostName::Any => true,
            HostName::Exact(h) => *h == host,
            HostName::Subdomains(s) => {
                host.len() > s.len() + 1 && host.ends_with(s.as_str()) && {
                    host.as_bytes()[host.len() - s.len() - 1] == b'.'
                }
            }
        }
    }

    /// Whether the entry allows any host (`*`, or `*:port` on one port).
    pub fn is_any_host(&self) -> bool {
        self.host == HostName::Any
    }

    /// Whether every host and port `narrow` allows is also allowed by `self` (exact).
    pub fn covers(&self, narrow: &HostPattern) -> bool {
        let port_ok = self.port.is_none() || self.port == narrow.port;
        let host_ok = match (&self.host, &narrow.host) {
            (HostName::Any, _) => true,
            (_, HostName::Any) => false,
            (HostName::Exact(w), HostName::Exact(n)) => w == n,
            (HostName::Subdomains(s), HostName::Exact(n)) => {
                n.len() > s.len() + 1 && n.ends_with(s.as_str()) && n.as_bytes()[n.len() - s.len() - 1] == b'.'
            }
            (HostName::Subdomains(s), HostName::Subdomains(t)) => {
                t == s
                    || (t.len() > s.len() + 1 && t.ends_with(s.as_str()) && t.as_bytes()[t.len() - s.len() - 1] == b'.')
            }
            (HostName::Exact(_), HostName::Subdomains(_)) => false,
        };
        port_ok && host_ok
    }
}

/// Checks an environment variable name: letters, digits and `_`, not starting with a digit.
pub fn check_env_var(name: &str) -> Result<(), PolicyEntryError> {
    let mut chars = name.chars();
    let ok = matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_');
    if ok { Ok(()) } else { Err(PolicyEntryError::new("use letters, digits and `_`, not starting with a digit")) }
}

/// Whether the declared variables grant `name`: by exact name, never as a pattern.
pub fn env_var_granted<S: AsRef<str>>(declared: &[S], name: &str) -> bool {
    declared.iter().any(|d| d.as_ref() == name)
}

/// Whether the declared hosts allow `host` on `port` (see [`HostPattern::allows`]); entries
/// that do not parse allow nothing.
pub fn host_allowed<S: AsRef<str>>(declared: &[S], host: &str, port: Option<u16>) -> bool {
    declared.iter().any(|d| HostPattern::parse(d.as_ref()).is_ok_and(|p| p.allows(host, port)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn g(s: &str) -> Glob {
        Glob::parse(s).unwrap_or_else(|e| panic!("{s}: {e}"))
    }

    #[test]
    fn matching() {
        assert!(g("/data/*.csv").matches("/data/a.csv"));
        assert!(!g("/data/*.csv").matches("/data/x/a.csv"));
        assert!(g("/data/**").matches("/data/x/a.csv"));
        assert!(!g("/data/**").matches("/data"));
        assert!(g("/a/**/b").matches("/a/b"));
        assert!(g("/a/**/b").matches("/a/x/y/b"));
        assert!(g("**/b").matches("/b"));
        assert!(g("**").matches("/anything/at/all"));
        assert!(g("/d/[a-c]?").matches("/d/bz"));
        assert!(!g("/d/[!a-c]").matches("/d/b"));
        assert!(!g("/d/[!a-c]").matches("/d//"));
        assert!(g("/d/{x,y/z}").matches("/d/y/z"));
        assert!(g("/d/\\*").matches("/d/*"));
        assert!(!g("/d/\\*").matches("/d/a"));
        assert!(g("/é/*").matches("/é/ü"));
    }

    #[test]
    fn refusals() {
        for bad in [
            "", "data/*", "/a**", "/a/***", "/a//b", "/a/./b", "/a/../b", "/a/", "/[a", "/{a", "/a}", "/[]", "/[]a]",
            "/[a/b]", "/[z-a]", "/a\\", "/{,a}", "/{a,}", "{/a,b}",
        ] {
            assert!(Glob::parse(bad).is_err(), "{bad:?} was accepted");
        }
        assert_eq!(Glob::parse("/u/[a-z.pdf").unwrap_err().reason(), "unclosed character class; missing ']'");
    }

    #[test]
    fn covering() {
        assert!(g("/data/**").covers(&g("/data/a/*.txt")));
        assert!(g("/data/*").covers(&g("/data/{a,b}")));
        assert!(g("/data/?.txt").covers(&g("/data/[ab].txt")));
        assert!(g("/data/[a-z]").covers(&g("/data/[b-d]")));
        assert!(g("/data/[!x]").covers(&g("/data/[!w-y]")));
        assert!(g("/a/**/b").covers(&g("/a/b")));
        assert!(!g("/a/**/b").covers(&g("/a/bb")));
        assert!(!g("/data/*").covers(&g("/data/**")));
        assert!(!g("/data/[a-c]").covers(&g("/data/?")));
        assert!(!g("/data/[!x]").covers(&g("/data/[!w]")));
    }

    #[test]
    fn hosts() {
        let p = |s: &str| HostPattern::parse(s).unwrap_or_else(|e| panic!("{s}: {e}"));
        assert!(p("API.example.com").allows("api.example.com", Some(1)));
        assert!(p("[::1]:80").allows("[0::1]", Some(80)));
        assert!(!p("*.example.com").allows("example.com", None));
        assert!(!p("*.example.com").allows("xexample.com", None));
        assert!(p("*.example.com").covers(&p("*.a.example.com:1")));
        assert!(!p("*.example.com").covers(&p("*.xexample.com")));
        assert!(p("*").allows("anything.example", None) && p("*").allows("10.0.0.1", Some(8080)));
        assert!(p("*:443").allows("[::1]", Some(443)) && !p("*:443").allows("a.com", Some(80)));
        assert!(p("*").covers(&p("*.example.com:443")) && p("*").covers(&p("*:80")));
        assert!(!p("*.example.com").covers(&p("*")) && !p("*:443").covers(&p("*")));
        assert!(HostPattern::parse("*.*").unwrap_err().reason().contains("whole entry"));
        assert!(p("*").is_any_host() && p("*:443").is_any_host() && !p("*.example.com").is_any_host());
        for bad in [
            "**",
            "*.*",
            "*x",
            "*.",
            "*.a*.com",
            "a.*.com",
            "*:",
            "*:0",
            "127.1",
            "010.0.0.1",
            "*.10.0.0.1",
            "a.com:0",
            "a.com:+1",
            "[0::1]",
            "a.com.",
            "u@a.com",
        ] {
            assert!(HostPattern::parse(bad).is_err(), "{bad:?} was accepted");
        }
    }
}
