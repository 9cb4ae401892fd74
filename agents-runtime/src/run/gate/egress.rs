//! The egress check of a call whose tool reaches the outside world (its policy declares a
//! network host, or it is marked `egress`); see [`crate::provenance`] for what it compares.
//!
//! A tool imported from an MCP server is `egress` by default (its arguments leave for the
//! server's operator; see the `agents-mcp` crate's `import`): steps 2 and 3 apply to it, step 1 does not
//! (the hosts in its arguments are the server's business, and its arguments reach only it).
//!
//! 1. **Hosts.** Every URL (`scheme://…`, `//host…`) and every bare host name (`name.tld`,
//!    with an optional port and path) in the arguments' string values, as written and after
//!    normalising (so `https%3A%2F%2Fevil.example` is read as a URL), must be within the
//!    tool's declared hosts; a tool marked `egress` without hosts declares none, so any is
//!    refused. A refusal is a `denied` record naming the value and the declared hosts; nothing
//!    runs. E-mail addresses are not hosts to this check (their provenance is checked).
//! 2. **Provenance.** Every value is classified (user, application, a tool result, unknown) and
//!    the facts are recorded in a `notice` record (`reason` says it in words, `result` holds
//!    the [`Provenance`] as JSON) before the call's own records, and handed to interceptors.
//! 3. **Confirmation.** A read call with a value copied from a tool result (and not typed by
//!    the user) goes through the same proposal machinery as an action, on every channel: a
//!    `proposed` record, a card whose `why` says which argument came from which result, a
//!    person's decision, a token bound to the exact arguments. An action is confirmed anyway;
//!    its card gets the same `why`.
//!
//! A tool that does not reach out pays for none of this: its calls do not look at the
//! arguments, and its results are kept for the check only when the agent has a tool that
//! reaches out.

use crate::capability::NetAccess;
use crate::provenance::normalise;
use agents_core::ToolSpec;
use serde_json::Value;

/// The first URL or host name in `args` outside the tool's declared hosts, as a refusal.
pub(super) fn host_refusal(spec: &'static ToolSpec, args: &Value) -> Option<String> {
    let net = NetAccess::for_spec(spec);
    let mut refused = None;
    strings(args, &mut |s| {
        if refused.is_some() {
            return;
        }
        for text in [s.to_owned(), normalise(s)] {
            for token in text.split(|c: char| c.is_whitespace() || matches!(c, '"' | '\'' | '<' | '>' | '(' | ')')) {
                if let Some(false) = allowed(&net, token) {
                    refused = Some(format!(
                        "`{token}` is outside the hosts `{}` declares (net hosts: {:?}); nothing ran",
                        spec.name, spec.policy.net_hosts
                    ));
                    return;
                }
            }
        }
    });
    refused
}

/// Whether a token that names a host is allowed; `None` for a token that names none.
fn allowed(net: &NetAccess, token: &str) -> Option<bool> {
    let token = token.trim_matches(|c: char| matches!(c, ',' | ';' | '.' | '!' | '?' | '[' | ']' | '{' | '}' | '`'));
    if let Some(at) = token.find("://") {
        // A URL (any scheme): only http(s) to a declared host passes; one that does not parse
        // names a host the check cannot read, and is refused.
        let url = &token
            [token[..at].rfind(|c: char| !c.is_ascii_alphanumeric() && !"+-.".contains(c)).map_or(0, |i| i + 1)..];
        return Some(url::Url::parse(url).is_ok_and(|u| net.allows_url(&u)));
    }
    if let Some(rest) = token.strip_prefix("//") {
        return Some(url::Url::parse(&format!("https://{rest}")).is_ok_and(|u| net.allows_url(&u)));
    }
    let host_port = token.split(['/', '?', '#']).next().unwrap_or_default();
    let (host, port) = match host_port.rsplit_once(':') {
        Some((h, p)) if !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()) => (h, p.parse::<u16>().ok()),
        _ => (host_port, None),
    };
    if !is_host_name(host) && host.parse::<std::net::Ipv4Addr>().is_err() {
        return None;
    }
    Some(net.allows(host, port))
}

/// `name.tld`: two labels or more of letters, digits and hyphens, the last of letters only
/// (two or more), so that dates, versions and numbers are not read as hosts.
fn is_host_name(s: &str) -> bool {
    let labels: Vec<&str> = s.split('.').collect();
    labels.len() >= 2
        && labels
            .iter()
            .all(|l| !l.is_empty() && l.len() <= 63 && l.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-'))
        && labels.last().is_some_and(|t| t.len() >= 2 && t.bytes().all(|b| b.is_ascii_alphabetic()))
}

/// Every string of `value`.
fn strings(value: &Value, f: &mut impl FnMut(&str)) {
    match value {
        Value::String(s) => f(s),
        Value::Array(a) => a.iter().for_each(|v| strings(v, f)),
        Value::Object(o) => o.values().for_each(|v| strings(v, f)),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_names_are_told_from_dates_versions_and_words() {
        for h in ["evil.example", "a.b-c.io", "x.example.org"] {
            assert!(is_host_name(h), "{h}");
        }
        for h in ["2003-05-14", "v1.2", "e.g.", "leave", "1.2.3.4", "a..b", ".example"] {
            assert!(!is_host_name(h), "{h}");
        }
    }
}
