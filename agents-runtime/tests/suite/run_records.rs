//! What a run's records keep of its results (a keyed digest), and the principals a runtime
//! accepts.

use crate::run_common;

use agents_runtime::RunResultExt as _;
use agents_runtime::agents_core::PrincipalError;
use agents_runtime::audit::{AuditResult, AuditStatus, MemorySink};
use agents_runtime::provider::ScriptedProvider;
use agents_runtime::provider::scripted::{reply, tool_call};
use agents_runtime::run::StartError;
use agents_runtime::{Principal, RoleMap, RunStatus, Runtime, ToolContext, agent, permissions, tool};
use hmac::{Hmac, Mac};
use run_common::*;
use sha2::{Digest, Sha256};
use std::sync::Arc;

permissions! {
    pub mod perms { data.read }
}

/// Answers yes.
#[tool(permission = perms::data::read)]
async fn answer(cx: &ToolContext<'_>) -> Result<String, String> {
    bump(cx.session_id());
    Ok("yes".into())
}

agent! {
    /// Records.
    pub struct Recorder;
    tools: [answer],
}

const KEY: [u8; 32] = [7; 32];

fn runtime(audit: Arc<MemorySink>) -> Runtime {
    let provider = Arc::new(ScriptedProvider::new([tool_call("answer", "{}"), reply("done")]));
    Runtime::builder(audit, provider).roles(RoleMap::new().role("analyst", ["data.read"])).server_key(KEY).build()
}

#[tokio::test]
async fn a_result_digest_is_keyed_so_a_guessed_result_cannot_be_confirmed_from_the_log() {
    let audit = Arc::new(MemorySink::new());
    let rt = runtime(audit.clone());
    let out = rt.start::<Recorder>(Principal::new("u1", "org1", "analyst"), "keyed", "go".into()).unwrap().wait().await;
    assert_eq!(out.status(), RunStatus::Completed, "{out:?}");
    let executed = &with_status(&audit, AuditStatus::Executed)[0];
    let Some(AuditResult::Sha256(digest)) = &executed.result else { panic!("{executed:?}") };
    // The plain SHA-256 of the canonical result (what anyone can compute for a guess) is not it.
    let plain: [u8; 32] = Sha256::digest(br#""yes""#).into();
    assert_ne!(*digest, plain);
    // The HMAC under the runtime's key is.
    let mut mac = Hmac::<Sha256>::new_from_slice(&KEY).unwrap();
    mac.update(b"result:");
    mac.update(br#""yes""#);
    assert_eq!(digest.as_slice(), mac.finalize().into_bytes().as_slice());
}

#[tokio::test]
async fn empty_or_malformed_principals_are_refused_when_built_and_when_a_run_starts() {
    assert_eq!(Principal::try_new("", "org1", "analyst"), Err(PrincipalError::Empty("user id")));
    assert_eq!(Principal::try_new("u1", "  ", "analyst"), Err(PrincipalError::Empty("organisation id")));
    assert_eq!(Principal::try_new("u1\n", "org1", "analyst"), Err(PrincipalError::Malformed("user id")));
    assert_eq!(Principal::try_new(" u1", "org1", "analyst"), Err(PrincipalError::Malformed("user id")));
    assert_eq!(Principal::try_new("u1", "org1", "x".repeat(257)), Err(PrincipalError::TooLong("role")));
    assert!(Principal::try_new("u1", "org1", "analyst").is_ok());

    let audit = Arc::new(MemorySink::new());
    let rt = runtime(audit.clone());
    let unchecked = Principal::new("", "org1", "analyst");
    let refused = rt.start::<Recorder>(unchecked.clone(), "bad-principal", "go".into()).unwrap_err();
    assert_eq!(refused, StartError::InvalidPrincipal(PrincipalError::Empty("user id")));
    assert!(matches!(
        rt.direct::<Recorder>(unchecked, "bad-principal", None).await,
        Err(StartError::InvalidPrincipal(PrincipalError::Empty("user id")))
    ));
    assert!(audit.records().is_empty(), "a refused principal leaves no trace and runs nothing");
    assert_eq!(ran("bad-principal"), 0);
}

#[test]
fn starting_a_run_outside_a_tokio_runtime_is_an_error_not_a_panic() {
    let audit = Arc::new(MemorySink::new());
    let rt = runtime(audit.clone());
    let me = Principal::new("u1", "org1", "analyst");
    let refused = rt.start::<Recorder>(me.clone(), "no-runtime", "go".into()).unwrap_err();
    assert_eq!(refused, StartError::NoAsyncRuntime);
    assert_eq!(rt.active_runs(&me), 0, "a refused start takes no slot");
    assert!(audit.records().is_empty());
}
