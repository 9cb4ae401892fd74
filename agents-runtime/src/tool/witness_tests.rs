//! The witness of an approval runs no handler on any call but the one the gate approved.

use super::*;
use crate::tool as agents_tool;
use agents_core::{Principal, Tool};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

static RAN: AtomicUsize = AtomicUsize::new(0);

/// Deletes everything: the body counts its runs.
///
/// # Arguments
///
/// * `n` - returned as it is
#[crate::tool(permission = public, mutating, title = "Delete everything")]
async fn delete_everything(n: u64) -> Result<u64, String> {
    RAN.fetch_add(1, Ordering::SeqCst);
    Ok(n)
}

fn context(approved: Option<ApprovedCall>) -> CallContext {
    CallContext {
        principal: Arc::new(Principal::new("u1", "org1", "admin")),
        run_id: "run".into(),
        session_id: "session".into(),
        call_id: "call".into(),
        spec: &<delete_everything as Tool>::SPEC,
        invoker: None,
        approved,
        state: AppState::default(),
        imports: None,
        listed_sha256: std::sync::OnceLock::new(),
    }
}

fn record(nonce: u8) -> ApprovedCall {
    ApprovedCall { token_id: "t".repeat(32), tool: "delete_everything", nonce: [nonce; 16] }
}

fn handler() -> for<'a> fn(&'a CallContext, ErasedArgs) -> ToolFuture<'a> {
    match <delete_everything as agents_tool::Dispatch<()>>::handler() {
        Handler::Action(f) => f,
        other => panic!("expected an action handler, got {other:?}"),
    }
}

crate::agent! {
    /// Deletes.
    pub struct Deleter;
    tools: [delete_everything],
}

#[tokio::test]
async fn a_context_invokes_only_what_its_tools_uses_lists() {
    // The calling tool's spec lists nothing under `uses`: even an agent that grants the
    // tool cannot reach it through this context.
    let cx = context(None);
    let r = ToolContext::<Deleter>::__new(&cx).invoke::<delete_everything>(serde_json::json!({ "n": 1 })).await;
    assert!(r.unwrap_err().message.contains("does not list it under `uses`"));
}

#[tokio::test]
async fn a_forged_or_moved_witness_runs_no_handler() {
    let before = RAN.load(Ordering::SeqCst);
    // Forged bytes (as `unsafe { std::mem::zeroed() }` would give), on a call the gate did
    // not approve and on one it did.
    for cx in [context(None), context(Some(record(7)))] {
        let r = <delete_everything as ActionTool>::run_approved(
            &cx,
            DeleteEverythingArgs { n: 1 },
            Approval::forged([0; 16]),
        )
        .await;
        assert!(r.unwrap_err().message.contains("does not belong to this call"));
    }
    // The witness of one approved call, moved to another call of the same tool.
    let (approved, other) = (context(Some(record(7))), context(Some(record(9))));
    let moved = Approval::<delete_everything>::of_call(&approved).unwrap();
    let r = <delete_everything as ActionTool>::run_approved(&other, DeleteEverythingArgs { n: 1 }, moved).await;
    assert!(r.is_err());
    // The registry's handler on a call without the gate's approval record.
    let r = handler()(&context(None), ErasedArgs::new(DeleteEverythingArgs { n: 1 })).await;
    assert!(r.unwrap_err().message.contains("was not approved for this call"));
    assert_eq!(RAN.load(Ordering::SeqCst), before, "a handler ran without this call's approval");
    // The same handler on the call the gate approved runs the body once.
    let r = handler()(&context(Some(record(7))), ErasedArgs::new(DeleteEverythingArgs { n: 3 })).await;
    assert_eq!(r.unwrap(), serde_json::json!(3));
    assert_eq!(RAN.load(Ordering::SeqCst), before + 1);
}
