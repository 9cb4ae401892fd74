//! Network hosts: `host`, `host:port`, `*.domain`, `[v6]`, or `*` for any host.

use super::error::PolicyEntryError;
use std::net::{Ipv4Addr, Ipv6Addr};

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
    /// Parses a host entry (see the [module docs](crate::policy)).
    ///
    /// ```
    /// use agents_core::policy::HostPattern;
    /// let p = HostPattern::parse("*.example.com:443").unwrap();
    /// assert!(p.allows("api.example.com", Some(443)));
    /// assert!(!p.allows("example.com", Some(443)));
    /// assert!(HostPattern::parse("https://example.com").is_err());
    /// ```
    pub fn parse(entry: &str) -> Result<HostPattern, PolicyEntryError> {
        if entry.contains("://") {
            return Err(bad("a host has no scheme"));
        }
        if entry.contains(['/', '?', '#', '\\']) {
            return Err(bad("a host has no path"));
        }
        if entry.contains('@') {
            return Err(bad("a host has no user name"));
        }
        let (host, port) = match entry.strip_prefix('[') {
            Some(rest) => parse_ipv6(rest)?,
            None => {
                let (name, port) = match entry.rsplit_once(':') {
                    Some((h, p)) => (h, Some(p)),
                    None => (entry, None),
                };
                (parse_name(name)?, port)
            }
        };
        Ok(HostPattern { host, port: port.map(parse_port).transpose()? })
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

/// A refused host entry: `why`, and how one is written.
fn bad(why: &str) -> PolicyEntryError {
    PolicyEntryError::new(format!("{why}; write `host` or `host:port`, e.g. `api.example.com:443`"))
}

/// `[v6]` or `[v6]:port` after its `[`: the address, in its canonical form, and the port's text.
fn parse_ipv6(rest: &str) -> Result<(HostName, Option<&str>), PolicyEntryError> {
    let Some((ip, tail)) = rest.split_once(']') else { return Err(bad("unclosed `[`")) };
    let Ok(addr) = ip.parse::<Ipv6Addr>() else { return Err(bad("not an IPv6 address")) };
    if addr.to_string() != ip {
        return Err(bad(&format!("write the IPv6 address in its canonical form `[{addr}]`")));
    }
    let port = match tail {
        "" => None,
        t => match t.strip_prefix(':') {
            Some(p) => Some(p),
            None => return Err(bad("unexpected text after `]`")),
        },
    };
    Ok((HostName::Exact(format!("[{addr}]")), port))
}

/// `*`, `*.name` or `name` (a DNS name or a dotted-quad IPv4 address), without its port.
fn parse_name(name: &str) -> Result<HostName, PolicyEntryError> {
    if name == "*" {
        return Ok(HostName::Any);
    }
    let (wild, name) = match name.strip_prefix("*.") {
        Some(rest) => (true, rest),
        None => (false, name),
    };
    if name.contains('*') {
        return Err(bad("`*` is either the whole entry (any host) or the start `*.` of every subdomain of a name \
             (`*.example.com`)"));
    }
    let label_ok = |l: &str| {
        !l.is_empty()
            && l.len() <= 63
            && l.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
            && !l.starts_with('-')
            && !l.ends_with('-')
    };
    if name.is_empty() || name.len() > 253 || !name.split('.').all(label_ok) {
        return Err(bad("not a DNS name or IP address"));
    }
    let last = name.rsplit('.').next().unwrap_or_default();
    if last.chars().all(|c| c.is_ascii_digit()) {
        // Readers disagree on `127.1`, `0x7f.1` or `010.0.0.1`: only dotted quads.
        match name.parse::<Ipv4Addr>() {
            Ok(a) if a.to_string() == name && !wild => {}
            Ok(_) if wild => return Err(bad("`*.` names subdomains, and an IP address has none")),
            _ => return Err(bad("an IPv4 address is written as four decimal numbers, e.g. `10.0.0.1`")),
        }
    }
    let name = name.to_ascii_lowercase();
    Ok(if wild { HostName::Subdomains(name) } else { HostName::Exact(name) })
}

/// A port: 1 to 65535, decimal digits only.
fn parse_port(p: &str) -> Result<u16, PolicyEntryError> {
    match p.parse::<u16>() {
        Ok(n) if n > 0 && p.bytes().all(|b| b.is_ascii_digit()) => Ok(n),
        _ => Err(bad("the port is not a number from 1 to 65535")),
    }
}

/// Whether the declared hosts allow `host` on `port` (see [`HostPattern::allows`]); entries
/// that do not parse allow nothing.
pub fn host_allowed<S: AsRef<str>>(declared: &[S], host: &str, port: Option<u16>) -> bool {
    declared.iter().any(|d| HostPattern::parse(d.as_ref()).is_ok_and(|p| p.allows(host, port)))
}
