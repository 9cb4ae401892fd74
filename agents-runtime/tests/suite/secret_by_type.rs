//! A parameter is secret in the spec and the manifest however its secrecy is declared: with
//! `#[secret]` or by a type that names `Secret`.

use agents_runtime::agents_core::manifest::Manifest;
use agents_runtime::{Agent, Secret, Tool, agent, permissions, tool};

permissions! {
    pub mod perms { vault.read }
}

#[derive(Debug)]
struct E;
impl std::fmt::Display for E {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("e")
    }
}

/// Opens the vault.
#[tool(permission = perms::vault::read)]
fn open_vault(
    id: u64,
    #[secret] by_attribute: String,
    by_type: Secret<String>,
    nested: Option<Secret<u64>>,
    plain: String,
) -> Result<u64, E> {
    let _ = (by_attribute, by_type, nested, plain);
    Ok(id)
}

agent! {
    /// Holds the vault tool.
    struct Vault;
    name: "vault",
    tools: [open_vault],
}

#[test]
fn secrecy_by_attribute_or_by_type_is_recorded() {
    let secret: Vec<(&str, bool)> = <open_vault as Tool>::SPEC.params.iter().map(|p| (p.name, p.secret)).collect();
    assert_eq!(secret, [("id", false), ("by_attribute", true), ("by_type", true), ("nested", true), ("plain", false)]);
    let m = Manifest::parse(<Vault as Agent>::MANIFEST).unwrap();
    let flags: Vec<(&str, bool)> = m.tools[0].parameters.iter().map(|p| (p.name.as_str(), p.secret)).collect();
    assert_eq!(flags, secret);
}
