//! Comparing lists whose entries may cover one another: a policy's globs, hosts and
//! variables, by the same matchers the runtime uses ([`crate::policy`]).

use crate::policy::{Glob, HostPattern};
use std::collections::BTreeSet;

/// One difference between two lists of policy-like entries.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum ListItem<'a> {
    /// New entry nothing old covers.
    Added { new: &'a String },
    /// New entry nothing old covers, broader than a removed one.
    Broadened { old: &'a String, new: &'a String },
    /// Removed entry nothing new covers.
    Removed { old: &'a String },
    /// Removed entry nothing new covers, replaced by a narrower one.
    Narrowed { old: &'a String, new: &'a String },
    /// New entry an old one already covers (and that no narrowing mentions).
    AddedCovered { new: &'a String, by: &'a String },
    /// Removed entry a new one still covers (and that no broadening mentions).
    RemovedCovered { old: &'a String, by: &'a String },
}

/// Compares two lists whose entries may cover one another (`covers(wide, narrow)`). An added
/// entry is a widening unless an old entry covers it; a removed entry is a narrowing unless
/// a new entry covers it. Entries that only appear in a broadened / narrowed pair are not
/// reported twice.
pub(super) fn list_diff<'a>(
    old: &'a [String],
    new: &'a [String],
    covers: impl Fn(&str, &str) -> bool,
) -> Vec<ListItem<'a>> {
    let old_set: BTreeSet<&String> = old.iter().collect();
    let new_set: BTreeSet<&String> = new.iter().collect();
    let added: Vec<&String> = new_set.difference(&old_set).copied().collect();
    let removed: Vec<&String> = old_set.difference(&new_set).copied().collect();

    let mut items = Vec::new();
    let mut mentioned_removed: BTreeSet<&String> = BTreeSet::new();
    let mut mentioned_added: BTreeSet<&String> = BTreeSet::new();

    for &a in &added {
        if !old.iter().any(|o| covers(o, a)) {
            match removed.iter().find(|r| covers(a, r)) {
                Some(&r) => {
                    mentioned_removed.insert(r);
                    items.push(ListItem::Broadened { old: r, new: a });
                }
                None => items.push(ListItem::Added { new: a }),
            }
        }
    }
    for &r in &removed {
        if !new.iter().any(|n| covers(n, r)) {
            match added.iter().find(|a| covers(r, a)) {
                Some(&a) => {
                    mentioned_added.insert(a);
                    items.push(ListItem::Narrowed { old: r, new: a });
                }
                None => items.push(ListItem::Removed { old: r }),
            }
        }
    }
    for &a in &added {
        if mentioned_added.contains(a) {
            continue;
        }
        if let Some(by) = old.iter().find(|o| covers(o, a)) {
            items.push(ListItem::AddedCovered { new: a, by });
        }
    }
    for &r in &removed {
        if mentioned_removed.contains(r) {
            continue;
        }
        if let Some(by) = new.iter().find(|n| covers(n, r)) {
            items.push(ListItem::RemovedCovered { old: r, by });
        }
    }
    items
}

/// `covers` for filesystem globs: both must parse (an entry that does not parse covers
/// nothing and is covered by nothing, so adding one is a widening).
pub(super) fn glob_covers(wide: &str, narrow: &str) -> bool {
    match (Glob::parse(wide), Glob::parse(narrow)) {
        (Ok(w), Ok(n)) => w.covers(&n),
        _ => false,
    }
}

/// What a change's reason adds for a network host entry that allows any host (`*`).
pub(super) fn any_host(field: &str, entry: &str) -> &'static str {
    if field == "policy.net.hosts" && HostPattern::parse(entry).is_ok_and(|p| p.is_any_host()) {
        " (any host: the tool may reach every host this process can)"
    } else {
        ""
    }
}

/// `covers` for network hosts, by [`HostPattern::covers`].
pub(super) fn host_covers(wide: &str, narrow: &str) -> bool {
    match (HostPattern::parse(wide), HostPattern::parse(narrow)) {
        (Ok(w), Ok(n)) => w.covers(&n),
        _ => false,
    }
}

/// `covers` for environment variables: the runtime grants a variable by its exact name.
pub(super) fn env_covers(wide: &str, narrow: &str) -> bool {
    wide == narrow
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs_cover_what_they_should() {
        assert!(glob_covers("/data/**", "/data/a/b.txt"));
        assert!(glob_covers("/data/**", "/data/*.txt"));
        assert!(glob_covers("/data/**", "/data/**/x"));
        assert!(glob_covers("/data/*", "/data/*.txt"));
        assert!(glob_covers("/data/*.txt", "/data/a?.txt"));
        assert!(glob_covers("/data/?.txt", "/data/[ab].txt"));
        assert!(glob_covers("/data/*", "/data/{a,b}"));
        assert!(glob_covers("**", "/anything/at/all"));
    }

    #[test]
    fn globs_do_not_cover_what_they_should_not() {
        assert!(!glob_covers("/data/*", "/data/a/b"));
        assert!(!glob_covers("/data/*", "/data/**"));
        assert!(!glob_covers("/data/*.txt", "/data/*"));
        assert!(!glob_covers("/data/a**", "/data/a/b"));
        assert!(!glob_covers("/data/?", "/data/ab"));
        assert!(!glob_covers("/data/**", "/etc/passwd"));
        assert!(!glob_covers("/data/[ab]", "/data/c"));
    }

    #[test]
    fn hosts_cover_ports_and_subdomains() {
        assert!(host_covers("api.example.com", "api.example.com:443"));
        assert!(!host_covers("api.example.com:443", "api.example.com"));
        assert!(!host_covers("api.example.com:443", "api.example.com:8443"));
        assert!(host_covers("*.example.com", "api.example.com"));
        assert!(host_covers("*.example.com", "*.eu.example.com"));
        assert!(!host_covers("*.example.com", "example.com"));
        assert!(!host_covers("*.example.com", "evilexample.com"));
        assert!(host_covers("[::1]", "[::1]:8080"));
        assert!(host_covers("API.Example.com", "api.example.com"));
    }

    #[test]
    fn list_diff_pairs_broadening_and_narrowing() {
        let s = |v: &[&str]| v.iter().map(|x| (*x).to_owned()).collect::<Vec<_>>();
        let (o, n) = (s(&["/a/*.txt"]), s(&["/a/**"]));
        assert_eq!(list_diff(&o, &n, glob_covers), vec![ListItem::Broadened { old: &o[0], new: &n[0] }]);
        assert_eq!(list_diff(&n, &o, glob_covers), vec![ListItem::Narrowed { old: &n[0], new: &o[0] }]);
        // Narrowing one entry while keeping a broad one: nothing is reachable that was not.
        let (o, n) = (s(&["/a/**", "/b/*"]), s(&["/a/**", "/a/x/*"]));
        let items = list_diff(&o, &n, glob_covers);
        assert_eq!(items, vec![ListItem::Removed { old: &o[1] }, ListItem::AddedCovered { new: &n[1], by: &o[0] }]);
    }
}
