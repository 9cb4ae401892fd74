//! The agent's `expose.mcp` in the manifest: in its bytes once declared, read back as
//! written, an unknown way refused; each way added a widening, each removed a narrowing.

use agents_core::diff::{ChangeKind, Rule, diff};
use agents_core::expose::{ExposeEntry, McpExposure};
use agents_core::manifest::{AgentEntry, Manifest};

fn manifest(ways: &[McpExposure]) -> Manifest {
    let agent = AgentEntry { expose: ExposeEntry { mcp: ways.to_vec() }, ..AgentEntry::new("desk", "Answers.") };
    Manifest::from_entries(agent, vec![]).unwrap()
}

#[test]
fn the_ways_are_in_the_bytes_sorted_and_read_back() {
    let none = manifest(&[]).to_canonical_string();
    assert!(!none.contains("expose"), "no way declared leaves the bytes as they were: {none}");
    let m = manifest(&[McpExposure::HttpBearer, McpExposure::Stdio, McpExposure::Stdio]);
    let text = m.to_canonical_string();
    assert!(text.contains(r#""expose":{"mcp":["stdio","http(auth = bearer)"]}"#), "{text}");
    assert_eq!(Manifest::parse(&text).unwrap(), m);
    assert_ne!(m.sha256(), manifest(&[]).sha256());
    let bad = text.replace("http(auth = bearer)", "http(auth = none)");
    let err = Manifest::parse(&bad).unwrap_err().to_string();
    assert!(err.contains("http(auth = none)"), "{err}");
}

#[test]
fn a_way_added_widens_and_one_removed_narrows() {
    let (stdio, both) = (manifest(&[McpExposure::Stdio]), manifest(&[McpExposure::Stdio, McpExposure::HttpService]));
    // Served at all where it was not: a widening.
    let d = diff(&manifest(&[]), &stdio);
    assert_eq!(d.changes.len(), 1, "{d}");
    assert_eq!((d.changes[0].rule, d.changes[0].kind), (Rule::McpExposureAdded, ChangeKind::Widening));
    assert!(d.changes[0].reason.contains("was not served over MCP"), "{}", d.changes[0].reason);
    // Another transport (HTTP behind the service's authentication) beside stdio: a widening.
    let d = diff(&stdio, &both);
    assert_eq!(d.changes.len(), 1, "{d}");
    assert_eq!(d.changes[0].rule, Rule::McpExposureAdded);
    assert_eq!(d.changes[0].new.as_deref(), Some("http(auth = service)"));
    assert!(d.has_widening());
    // Bearer tokens where the service authenticated: the other kind of authentication is a
    // widening, the one given up a narrowing.
    let d = diff(&both, &manifest(&[McpExposure::Stdio, McpExposure::HttpBearer]));
    let rules: Vec<(Rule, ChangeKind)> = d.changes.iter().map(|c| (c.rule, c.kind)).collect();
    assert_eq!(
        rules,
        [(Rule::McpExposureAdded, ChangeKind::Widening), (Rule::McpExposureRemoved, ChangeKind::Narrowing)]
    );
    // Removed: a narrowing only.
    let d = diff(&both, &manifest(&[]));
    assert!(!d.has_widening() && d.count(ChangeKind::Narrowing) == 2, "{d}");
}
