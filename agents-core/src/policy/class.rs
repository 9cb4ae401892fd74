//! A glob's character classes (`[a-z]`, `[!abc]`): their parsing, matching and covering.

use super::error::PolicyEntryError;

/// A set of characters for `[...]`: sorted, merged ranges, never containing `/`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Class {
    negated: bool,
    ranges: Vec<(char, char)>,
}

impl Class {
    pub(super) fn contains(&self, c: char) -> bool {
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
    pub(super) fn within(&self, wide: &Class) -> bool {
        match (self.negated, wide.negated) {
            (false, false) => Class::ranges_within(&self.ranges, &wide.ranges),
            (false, true) => Class::ranges_disjoint(&self.ranges, &wide.ranges),
            // `wide` excludes only characters `self` excludes too.
            (true, true) => Class::ranges_within(&wide.ranges, &self.ranges),
            (true, false) => false,
        }
    }
}

/// Parses `[...]` starting at `[`; leaves `pos` after `]`.
pub(super) fn parse_class(chars: &[char], pos: &mut usize) -> Result<Class, PolicyEntryError> {
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
