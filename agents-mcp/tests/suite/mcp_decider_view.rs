//! MCP elicitation asks the person with the arguments they will be bound by, the secret value
//! their client sent included; the audit records of the call keep it masked.

use crate::mcp_common;

use agents_mcp::{McpHttpOptions, serve_http};
use agents_runtime::audit::MemorySink;
use agents_runtime::provider::ScriptedProvider;
use agents_runtime::{Principal, RoleMap, Runtime, agent, permissions, tool};
use mcp_common::{Client, response_to};
use serde_json::json;
use std::sync::Arc;

permissions! {
    pub mod perms { account.write }
}

/// Changes the user's password.
///
/// # Arguments
///
/// * `account` - the account
/// * `new_password` - the new password
#[tool(permission = perms::account::write, mutating, title = "Change password", risk = high)]
async fn change_password(account: String, #[secret] new_password: String) -> Result<String, String> {
    Ok(format!("password of {account} changed ({} characters)", new_password.len()))
}

agent! {
    /// Changes passwords.
    pub struct Accounts;
    tools: [change_password],
    expose: { mcp: [http(auth = bearer)] },
}

const TYPED: &str = "correct-horse-battery-staple";

#[tokio::test]
async fn the_elicitation_shows_the_typed_value_and_the_records_mask_it() {
    let audit = Arc::new(MemorySink::new());
    let rt = Runtime::builder(audit.clone(), Arc::new(ScriptedProvider::new([])))
        .roles(RoleMap::new().role("member", ["account.write"]))
        .build();
    let mut opts = McpHttpOptions::default();
    opts.bearer_tokens.insert("ann-token".into(), Principal::new("ann", "acme", "member"));
    let server = serve_http::<Accounts>(rt, opts).await.unwrap();
    let mut c = Client::new(server.local_addr(), "ann-token");
    c.initialize(true).await;
    let mut call = c.call(1, "change_password", json!({"account": "ann", "new_password": TYPED})).await;
    let asked = loop {
        let (_, m) = call.message().await.expect("an elicitation request");
        if m["method"] == "elicitation/create" {
            break m;
        }
    };
    let message = asked["params"]["message"].as_str().expect("a message");
    assert!(message.contains(TYPED), "the person is not shown the value they approve: {message}");
    c.answer(&asked["id"], true).await;
    let answer = response_to(&mut call, 1).await;
    assert_eq!(answer["result"]["isError"], false, "{answer}");
    assert!(!audit.to_jsonl().contains(TYPED), "the audit log holds the typed value");
    assert!(audit.to_jsonl().contains("\"executed\""));
    server.shutdown();
    server.wait().await;
}
