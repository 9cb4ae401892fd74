//! The MCP servers the agent's imported tools come from, each named once: a server added
//! (widening: the agent's calls reach a new party), removed (narrowing), or reached at another
//! endpoint (widening: another program or host receives the calls; a new host is named as
//! such). A server's pins are compared per tool (`import` of [`super::tool`]).

use super::model::{Change, ChangeKind, change};
use super::rule::Rule;
use crate::manifest::Manifest;
use crate::mcp_lock::endpoint_host;
use std::collections::BTreeMap;

/// Each server the manifest's tools are imported from, with its endpoint (`None` in a
/// manifest written before endpoints were recorded).
fn servers(m: &Manifest) -> BTreeMap<&str, Option<&str>> {
    let mut out = BTreeMap::new();
    for import in m.tools.iter().filter_map(|t| t.import.as_ref()) {
        let endpoint = import.endpoint.as_deref();
        let slot = out.entry(import.server.as_str()).or_insert(endpoint);
        if slot.is_none() {
            *slot = endpoint;
        }
    }
    out
}

fn shown(endpoint: Option<&str>) -> String {
    endpoint.unwrap_or("an endpoint the manifest does not name").to_owned()
}

/// Every change of the servers, by server name.
pub(super) fn diff_servers(old: &Manifest, new: &Manifest, out: &mut Vec<Change>) {
    let (a, b) = (servers(old), servers(new));
    let field = |server: &str| format!("mcp_servers.{server}");
    for (server, was) in &a {
        match b.get(server) {
            None => out.push(change(
                ChangeKind::Narrowing,
                Rule::McpServerRemoved,
                None,
                &field(server),
                Some(shown(*was)),
                None,
                format!("MCP server `{server}` removed: no tool is imported from it"),
            )),
            Some(now) if now != was => out.push(endpoint_changed(server, *was, *now, field(server))),
            Some(_) => {}
        }
    }
    for (server, now) in b.iter().filter(|(s, _)| !a.contains_key(*s)) {
        out.push(change(
            ChangeKind::Widening,
            Rule::McpServerAdded,
            None,
            &field(server),
            None,
            Some(shown(*now)),
            format!("MCP server `{server}` added ({}): the agent's calls reach a new party", shown(*now)),
        ));
    }
}

/// A server reached elsewhere: always a widening, named a new host when the host differs.
fn endpoint_changed(server: &str, was: Option<&str>, now: Option<&str>, field: String) -> Change {
    let (old_host, new_host) = (was.and_then(endpoint_host), now.and_then(endpoint_host));
    let why = match (old_host, new_host) {
        (_, Some(h)) if old_host != new_host => format!("its calls go to a new host, `{h}`"),
        _ => "another program or address receives its calls".to_owned(),
    };
    change(
        ChangeKind::Widening,
        Rule::McpEndpointChanged,
        None,
        &field,
        Some(shown(was)),
        Some(shown(now)),
        format!("MCP server `{server}` is reached at `{}`, not `{}`: {why}", shown(now), shown(was)),
    )
}
