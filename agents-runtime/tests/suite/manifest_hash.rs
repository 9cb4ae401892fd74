//! The manifest hash moves with every capability change and with nothing else.

use agents_runtime::agents_core::manifest::Manifest;
use agents_runtime::{Agent, agent, permissions, tool};

permissions! {
    pub mod perms { athlete.read, athlete.write, injury.read }
}

#[derive(Debug)]
struct E;
impl std::fmt::Display for E {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("e")
    }
}

macro_rules! variant {
    ($m:ident, $agent:ident, [$($attr:tt)*], $($extra:ident)?) => {
        mod $m {
            use super::*;
            /// Reads an athlete's file.
            ///
            /// # Arguments
            ///
            /// * `id` - the athlete's id
            /// * `api_key` - the key of the files' store
            #[tool($($attr)*)]
            pub(crate) fn read_file(id: u64, #[secret] api_key: String) -> Result<u64, E> {
                let _ = api_key;
                Ok(id)
            }
            /// Another tool.
            #[tool(permission = perms::athlete::read)]
            pub(crate) fn extra(id: u64) -> Result<u64, E> {
                Ok(id)
            }
            agent! {
                /// An agent.
                pub(crate) struct $agent;
                name: "variant",
                tools: [read_file $(, $extra)?],
            }
        }
    };
}

variant!(base, Base, [permission = perms::athlete::read, risk = medium, policy(fs(read = ["/data/*.csv"]))],);
variant!(same, Same, [risk = medium, policy(fs(read = ["/data/*.csv"])), permission = perms::athlete::read],);
variant!(
    new_tool,
    NewTool,
    [permission = perms::athlete::read, risk = medium, policy(fs(read = ["/data/*.csv"]))],
    extra
);
variant!(
    other_permission,
    OtherPermission,
    [permission = perms::injury::read, risk = medium, policy(fs(read = ["/data/*.csv"]))],
);
variant!(
    made_action,
    MadeAction,
    [permission = perms::athlete::read, mutating, title = "Read", risk = medium, policy(fs(read = ["/data/*.csv"]))],
);
mod made_handoff {
    use super::*;
    /// Reads an athlete's file.
    #[tool(permission = perms::athlete::read, handoff, risk = medium, policy(fs(read = ["/data/*.csv"])))]
    pub(crate) fn read_file(id: u64, #[secret] api_key: String);
    agent! {
        /// An agent.
        pub(crate) struct MadeHandoff;
        name: "variant",
        tools: [read_file],
    }
}
variant!(
    glob_added,
    GlobAdded,
    [permission = perms::athlete::read, risk = medium, policy(fs(read = ["/data/*.csv", "/data/*.json"]))],
);
variant!(
    host_added,
    HostAdded,
    [
        permission = perms::athlete::read,
        risk = medium,
        policy(fs(read = ["/data/*.csv"]), net(hosts = ["api.example.com"]))
    ],
);
variant!(lower_risk, LowerRisk, [permission = perms::athlete::read, risk = low, policy(fs(read = ["/data/*.csv"]))],);

#[test]
fn reordering_arguments_changes_nothing() {
    assert_eq!(base::Base::MANIFEST, same::Same::MANIFEST);
    assert_eq!(base::Base::MANIFEST_SHA256, same::Same::MANIFEST_SHA256);
}

#[test]
fn every_capability_change_changes_the_hash() {
    let variants = [
        ("a new tool", new_tool::NewTool::MANIFEST_SHA256),
        ("a changed permission", other_permission::OtherPermission::MANIFEST_SHA256),
        ("mutating added", made_action::MadeAction::MANIFEST_SHA256),
        ("read turned handoff", made_handoff::MadeHandoff::MANIFEST_SHA256),
        ("a glob added", glob_added::GlobAdded::MANIFEST_SHA256),
        ("a host added", host_added::HostAdded::MANIFEST_SHA256),
        ("a lower risk", lower_risk::LowerRisk::MANIFEST_SHA256),
    ];
    for (what, hash) in variants {
        assert_ne!(hash, base::Base::MANIFEST_SHA256, "{what} did not change the hash");
    }
    // handoff → action is a change too
    assert_ne!(made_action::MadeAction::MANIFEST_SHA256, made_handoff::MadeHandoff::MANIFEST_SHA256);
}

#[test]
fn hash_is_sha256_of_exactly_the_manifest_bytes_and_round_trips() {
    for (m, h) in [
        (base::Base::MANIFEST, base::Base::MANIFEST_SHA256),
        (made_action::MadeAction::MANIFEST, made_action::MadeAction::MANIFEST_SHA256),
    ] {
        assert_eq!(agents_runtime::agents_core::canonical::sha256_hex(m.as_bytes()), h);
        let parsed = Manifest::parse(m).unwrap();
        assert_eq!(parsed.to_canonical_string(), m);
        let value: serde_json::Value = serde_json::from_str(m).unwrap();
        assert_eq!(serde_json::to_value(&parsed).unwrap(), value);
    }
}

#[test]
fn runtime_rebuild_is_byte_identical() {
    let rebuilt = Manifest::from_specs(&base::Base::SPEC, base::Base::tools()).unwrap();
    assert_eq!(rebuilt.to_canonical_string(), base::Base::MANIFEST);
    let rebuilt = Manifest::from_specs(&host_added::HostAdded::SPEC, host_added::HostAdded::tools()).unwrap();
    assert_eq!(rebuilt.to_canonical_string(), host_added::HostAdded::MANIFEST);
}

#[test]
fn secrets_are_flags_never_values() {
    let m = Manifest::parse(base::Base::MANIFEST).unwrap();
    let p = &m.tool("read_file").unwrap().parameters;
    assert!(p.iter().any(|p| p.name == "api_key" && p.secret));
    assert!(!base::Base::MANIFEST.contains("•••"));
}

const _: () = assert!(base::Base::MANIFEST_SHA256.len() == 64, "usable in const context");

mod tricky {
    use super::*;
    use std::collections::BTreeMap;

    /// Reads a "quoted" file: a back\slash, a tab	here, ünïcödé, an emoji 🦀 and a brace {.
    #[tool(
        permission = perms::athlete::read,
        title = "Read \"the\" file {now}",
        risk = high,
        policy(fs(read = ["/srv/{a,b}/**/*.txt", "/data/[ab]?.csv"]), net(hosts = ["api.example.com:443"]), env(vars = ["APP_REGION"]))
    )]
    pub(crate) fn read_quoted(path: Option<Vec<String>>, limits: BTreeMap<String, (u8, i64)>) -> Result<u64, E> {
        Ok(path.map_or(0, |p| p.len() as u64) + limits.len() as u64)
    }

    agent! {
        /// An agent with text that needs escaping.
        pub(crate) struct Tricky;
        name: "tricky",
        tools: [read_quoted],
    }
}

#[test]
fn specs_keep_text_that_needs_escaping() {
    use agents_runtime::Tool;
    let spec = &<tricky::read_quoted as Tool>::SPEC;
    assert_eq!(
        spec.description,
        "Reads a \"quoted\" file: a back\\slash, a tab\there, ünïcödé, an emoji 🦀 and a brace {."
    );
    assert_eq!(spec.title, Some("Read \"the\" file {now}"));
    assert_eq!(spec.policy.fs_read, ["/srv/{a,b}/**/*.txt", "/data/[ab]?.csv"]);
    assert_eq!(spec.policy.net_hosts, ["api.example.com:443"]);
    assert_eq!(spec.policy.env_vars, ["APP_REGION"]);
    let types: Vec<&str> = spec.params.iter().map(|p| p.rust_type).collect();
    assert_eq!(types, ["Option<Vec<String>>", "BTreeMap<String, (u8, i64)>"]);
    // The spec the runtime reads and the manifest the macro wrote say the same.
    let rebuilt = Manifest::from_specs(&tricky::Tricky::SPEC, tricky::Tricky::tools()).unwrap();
    assert_eq!(rebuilt.to_canonical_string(), tricky::Tricky::MANIFEST);
}
