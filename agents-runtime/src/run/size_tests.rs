//! What a waiting run holds: its task's future is sized by its largest state, and the whole of
//! that stays allocated for as long as the run waits for a person's decision. The bound below
//! keeps the states that are not live while a run waits (the model call, the tool's
//! execution, the proposal's writes, the decision's settling) out of the future the task holds.

use super::call::CallRef;
use super::context::RunCtx;
use super::gate::action;
use super::gate::checked::Checked;
use super::gate::{Apart, Hold, InPlace, gate_call};
use super::record::RecordFields;
use super::slot::SlotGuard;
use super::start::run_task;
use crate::audit::AuditStatus;
use crate::audit::MemorySink;
use crate::events::EventBus;
use crate::provider::scripted::RuleProvider;
use agents_core::SharedValue;
use agents_core::{Agent, Principal};
use std::sync::Arc;

/// Looks an item up.
///
/// # Arguments
///
/// * `name` - the item
#[crate::tool(permission = public)]
async fn lookup_item(name: String) -> Result<String, String> {
    Ok(name)
}

/// Submits an item request.
///
/// # Arguments
///
/// * `item` - the item wanted
#[crate::tool(permission = public, mutating, title = "Submit an item request")]
async fn submit_item(item: String) -> Result<String, String> {
    Ok(item)
}

crate::agent! {
    /// Answers about items and files item requests.
    pub struct Desk;
    tools: [lookup_item, submit_item],
}

fn runtime() -> crate::Runtime {
    crate::Runtime::builder(Arc::new(MemorySink::new()), Arc::new(RuleProvider::new())).build()
}

fn desk_run(runtime: &crate::Runtime, principal: Principal) -> Arc<RunCtx<Desk>> {
    RunCtx::<Desk>::in_tree(&runtime.inner, principal, "s1", Desk::SPEC.limits, Arc::new(EventBus::new()), None)
}

/// The future of a run's task as [`Runtime::start`](super::Runtime::start) spawns it (the
/// session bound and the slot taken at once, as a store that answers at once does).
fn task_size() -> usize {
    let runtime = runtime();
    let principal = Principal::new("u1", "org1", "admin");
    let slot = SlotGuard::take(&runtime.inner, &principal, "s1", 3).expect("a slot");
    let task = run_task::<Desk, String>(desk_run(&runtime, principal), None, slot, "s1".into(), 3, "submit".into());
    std::mem::size_of_val(&task)
}

/// The gate's future for one call, its checks and read calls held as `H` says: the run loop
/// boxes it with [`Apart`] and keeps the box while an action call waits for a person.
fn gate_call_size<H: Hold>() -> usize {
    let runtime = runtime();
    let ctx = desk_run(&runtime, Principal::new("u1", "org1", "admin"));
    let call = CallRef { id: "c1", given_id: "c1", name: "submit_item", arguments: r#"{"item":"a"}"# };
    std::mem::size_of_val(&gate_call::<_, H>(&ctx, call))
}

/// The size of what `make` returns, without making it.
fn size_of_made<F: FnOnce() -> Fut, Fut>(_: &F) -> usize {
    size_of::<Fut>()
}

/// The future of one action call, which the gate boxes and which lives for the whole of the
/// call's wait for a person (the dialog, the runtime's default); with a record builder as
/// small as the gate's (a function instead of its closure of six references).
#[allow(unreachable_code, unused_variables, clippy::diverging_sub_expression)]
fn action_call_size() -> usize {
    type Base = fn(AuditStatus, SharedValue) -> RecordFields;
    let make = || {
        let checked: Checked<'static, RunCtx<Desk>, Base> = unreachable!();
        let card = unreachable!();
        action::call(checked, "", None, agents_core::SharedValue::default(), unreachable!(), unreachable!(), card)
    };
    size_of_made(&make)
}

/// The bounds, in bytes, of the run's task, of an action call's boxed future and of the gate's
/// boxed future: together, what the runtime's futures hold while a run waits for a person's
/// decision.
///
/// Measured with `size_of_val`/`size_of` in this test's build (the test profile, 1.95.0,
/// x86-64): the task 5,440 bytes and the action call 16,488 at first; 1,176 and 1,080 now, and
/// the gate's boxed future, which the run keeps beside the action call's, 600 (1,192 with its
/// checks and read path held in place). What brought them down, each of which takes one over its
/// bound when undone:
/// - the run loop's steps that are not live while it waits boxed: adopting a session's
///   proposal, classifying a reply, finishing the turn (task 5,440), the model call (2,256),
///   the knowledge's passages (2,216), and the gate's call, whose read path awaits its
///   execution in place (2,816);
/// - the run's task not an `async fn` (as one, 3,208: its arguments kept beside its state);
/// - the run's task holding the slot's guard where it was handed over instead of a copy beside
///   it, and not the session's conversation, which the run's context holds (1,352);
/// - the model's answer not kept in the step that dispatches its calls (1,232);
/// - the steps before the turn (the availability snapshot, the skill's announcement) and the
///   skill's choice boxed (1,304 and 1,352);
/// - the gate's checks and read path boxed apart for a run's call ([`Apart`]: the gate's
///   future 1,192, in place);
/// - the call's asking the channel's own future, with the call's parts moved into its
///   confirmation, not kept beside it (1,520), and the dialog's the same (1,352);
/// - an import's record fields boxed in the record the call owes while it waits (1,192);
/// - the call's asking: the conversational mode's, which ends the turn instead of waiting in
///   it, boxed (the call 4,144), and in the dialog the confirmer's asking, absent when a person
///   decides through the API, boxed (the dialog 3,008 instead of 1,504);
/// - the dialog's proposing and settling boxed (the call 9,144);
/// - `first_of` and `unless_cancelled` holding their futures in place instead of as the
///   arguments of an `async fn`, kept beside its state (the call 16,488).
const TASK_BOUND: usize = 1216;
const ACTION_CALL_BOUND: usize = 1152;
const GATE_CALL_BOUND: usize = 768;

#[test]
fn a_waiting_runs_futures_hold_only_their_waiting_state() {
    let (task, call, gate) = (task_size(), action_call_size(), gate_call_size::<Apart>());
    assert!(task <= TASK_BOUND, "a run's task future is {task} bytes, over its bound of {TASK_BOUND}");
    assert!(
        call <= ACTION_CALL_BOUND,
        "an action call's future is {call} bytes, over its bound of {ACTION_CALL_BOUND}"
    );
    assert!(gate <= GATE_CALL_BOUND, "a run's gate future is {gate} bytes, over its bound of {GATE_CALL_BOUND}");
    // The bound holds only because the checks and the read path are boxed apart.
    let in_place = gate_call_size::<InPlace>();
    assert!(in_place > GATE_CALL_BOUND, "the gate held in place is {in_place} bytes: the bound above says nothing");
}
