//! A call's secret values never leave the runtime: random secrets, tools that echo them or
//! fail quoting them (as written, base64, hex, percent-encoded), scanned for in the audit
//! records, the events and every result or error text, in all four forms.
//!
//! `AGENTS_REDACTION_CASES` sets the number of cases (10^4 by default; the full proof runs
//! 10^5: `AGENTS_REDACTION_CASES=100000 cargo test -p agents-runtime --test run_redaction_fuzz`).

use agents_runtime::audit::MemorySink;
use agents_runtime::provider::ScriptedProvider;
use agents_runtime::provider::scripted::reply;
use agents_runtime::{Principal, RoleMap, Runtime, Secret, ToolContext, agent, permissions, tool};
use base64::Engine as _;
use proptest::prelude::*;
use std::sync::Arc;

permissions! {
    pub mod perms { vault.open }
}

fn forms(secret: &str) -> [String; 4] {
    [
        secret.to_owned(),
        base64::engine::general_purpose::STANDARD.encode(secret),
        hex::encode(secret),
        secret.bytes().map(|b| format!("%{b:02X}")).collect(),
    ]
}

/// A login the tool checks.
#[derive(Debug, Clone, serde::Deserialize, schemars::JsonSchema)]
pub struct Login {
    user: String,
    pin: Secret<String>,
}

/// Uses a secret and says so in one of its forms, as a result or as an error.
#[tool(permission = perms::vault::open)]
async fn use_secret(cx: &ToolContext<'_>, login: Login, form: u8, fail: bool) -> Result<String, String> {
    let _ = cx;
    let pin = login.pin.expose();
    let shown = forms(pin)[usize::from(form % 4)].clone();
    let text = format!("{} used {shown} just now", login.user);
    if fail { Err(text) } else { Ok(text) }
}

/// Returns the secret nested in a structure.
#[tool(permission = perms::vault::open)]
async fn nest_secret(cx: &ToolContext<'_>, token: Secret<String>) -> Result<serde_json::Value, String> {
    let _ = cx;
    Ok(serde_json::json!({"outer": [{"token": token.expose()}], token.expose().clone(): 1}))
}

agent! {
    /// Vault user.
    pub struct Vault;
    tools: [use_secret, nest_secret],
}

fn cases() -> u32 {
    std::env::var("AGENTS_REDACTION_CASES").ok().and_then(|n| n.parse().ok()).unwrap_or(10_000)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), ..ProptestConfig::default() })]

    #[test]
    fn no_secret_value_leaks_in_any_form(
        secret in "[A-Za-z0-9_-]{8,24}",
        user in "[a-z]{1,6}",
        form in 0u8..4,
        fail in any::<bool>(),
        nested in any::<bool>(),
        bad_type in any::<bool>(),
    ) {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(async {
            let audit = Arc::new(MemorySink::new());
            let provider = Arc::new(ScriptedProvider::new([reply("unused")]));
            let runtime = Runtime::builder(audit.clone(), provider)
                .roles(RoleMap::new().role("user", ["vault.open"]))
                .record_raw_results(true)
                .build();
            let session = runtime.direct::<Vault>(Principal::new("u1", "org1", "user"), "fuzz", None).await.unwrap();
            let mut events = session.subscribe();
            let (name, args) = if nested {
                ("nest_secret", serde_json::json!({"token": secret}).to_string())
            } else if bad_type {
                // The form is not a number: the typed parse refuses the call, quoting what it read.
                ("use_secret", serde_json::json!({"login": {"user": user, "pin": secret}, "form": secret, "fail": fail}).to_string())
            } else {
                ("use_secret", serde_json::json!({"login": {"user": user, "pin": secret}, "form": form, "fail": fail}).to_string())
            };
            let out = session.call("c1", name, &args).await;
            drop(session);
            runtime.records_settled().await;
            let mut seen = format!("{out:?}{}", serde_json::to_string(&audit.records()).unwrap());
            while let Ok(e) = events.try_recv() {
                seen.push_str(&format!("{e:?}"));
            }
            for f in forms(&secret) {
                prop_assert!(!seen.contains(&f), "`{}` leaked as `{}` in {}", secret, f, seen);
            }
            Ok(())
        })?;
    }
}
