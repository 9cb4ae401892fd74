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

mod class;
mod env;
mod error;
mod glob;
mod host;

pub use env::{check_env_var, env_var_granted};
pub use error::PolicyEntryError;
pub use glob::{Glob, GlobSet, MAX_ALTERNATIVES, MAX_GLOB_LEN, glob_literal_root, lexical_path};
pub use host::{HostPattern, host_allowed};

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
