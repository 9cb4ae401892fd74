//! Running a composite as one run tree.
//!
//! A composite (declared with `composite!`, see [`agents_core::compose`]) runs with
//! [`Runtime::start_composite`](crate::Runtime::start_composite): one handle for the whole
//! tree, whose [`stop`](crate::RunHandle::stop) ends every node. The plan `composite!` writes
//! from the flow decides which node runs when; each agent node is a run of its own, started
//! and driven exactly as [`Runtime::start`](crate::Runtime::start) does, and:
//!
//! - **one principal**: every node acts for the caller's principal (no service principal
//!   anywhere), in the caller's session, with the runtime's budget store, audit sink (one
//!   chain) and decision channels. An action a node proposes waits for the same person's
//!   decision, taken through [`Runtime::decide`](crate::Runtime::decide) (or the HTTP
//!   decisions API) with the call id of its `confirm_required` event; another user cannot
//!   decide it;
//! - **one record of the tree**: the tree has a root run id with its own `run_started` and
//!   `run_finished` records; every record of a node's run carries
//!   [`AuditRecord::node`](crate::audit::AuditRecord::node), the tree's run id and the node's
//!   path (`kyc-pipeline/kyc-reviewer`); a branch's choice, a step's refusal and a contained
//!   panic are `notice` records of the tree;
//! - **events with the node's path**: the handle receives each node run's events wrapped in
//!   [`Event::Node`](crate::Event::Node), and the tree's own `done`;
//! - **limits**: each node keeps its agent's limits; [`RuntimeBuilder::tree_limit`](crate::RuntimeBuilder::tree_limit)
//!   limits the whole tree's spend (USD, tokens) through one ledger for the tree: every paid
//!   call of every node (and the tree's own router calls) is reserved in it before it is made
//!   and settled to it once made, so a node sees what the others spent and hold the moment
//!   they did, not when they end. A call is admitted only while the tree's settled spend plus
//!   the estimates its calls in flight hold stays below the limit and its own estimate (its
//!   node's previous call's cost) fits beside them; once the limit is spent no node makes
//!   another model call nor starts, and the tree ends `budget_exhausted`. The tree passes
//!   its limit by at most what its calls in flight cost beyond their estimates (a node's
//!   first call, whose cost nothing predicts, estimates 0), as the budget store's caps do;
//! - **combinators**: `then` passes each output on; `branch` asks its router (a [`Route`] of
//!   the application's code) or the model, and fails closed to its declared default for any
//!   answer that is no arm, recorded either way. A `model` router asks the runtime's model
//!   (the one every node's run uses: a composite names no model of its own, so a reviewer
//!   reads one provider in one place) with one tool, [`ROUTE_TOOL`], the arms' ids and
//!   descriptions and the branch's input; only exactly one valid call naming an arm is
//!   followed. Its call is the tree's: for the caller, in the tree's allowance and usage, its
//!   `notice` at the branch's path (see the `route` room);
//!   `loop` runs its body up to `max` times, until its [`Stop`] holds; `parallel` runs its
//!   members at once, `fail_fast` cancelling the others when one fails (their pending
//!   actions end `skipped`), `collect` handing each failure to the [`Join`]; `forum` hears its
//!   members, then its moderator, for at most `rounds` rounds (a round whose moderator fails
//!   is followed by another); `wrap` runs its [`Step`]s before and after its inner node, and a
//!   refusal ends the tree, recorded;
//! - **containment**: a panic in a hook (router, stop condition, join, step), a member's
//!   task or the plan fails its node, and the tree ends `failed` with a `notice`; the process
//!   and the runtime go on. A panicking tool is contained by the gate as in any run.
//!
//! A node that fails ends the tree: no later node starts, and
//! [`RunHandle::wait`](crate::RunHandle::wait) gives
//! [`RunError::Node`](crate::RunError::Node) with its path (or `Stopped`, `BudgetExhausted`).
//! An agent granted to another (`agent! { agents: [...] }`) runs as a child node of the
//! calling run in the same way (`<caller's path>/<callee>`; see
//! [`GrantedAgent`](crate::GrantedAgent)). Not run by a tree in this release: handoffs to
//! agents, and a durable restart of a tree (a node's pending decision still settles as any
//! run's does).
//!
//! ```ignore
//! let mut handle = runtime.start_composite::<KycPipeline>(principal, "session-1", request)?;
//! while let Some(event) = handle.events().recv().await {
//!     if let Event::Node { node, event, .. } = &event
//!         && let Event::ConfirmRequired { call_id, .. } = event.as_ref()
//!     {
//!         println!("{node} asks about {call_id}");
//!     }
//!     if matches!(event, Event::Done { .. }) { break }
//! }
//! let decision: ApprovalDecision = handle.wait().await?.output.expect("completed");
//! ```
//!
//! [`Route`]: agents_core::compose::Route
//! [`Stop`]: agents_core::compose::Stop
//! [`Join`]: agents_core::compose::Join
//! [`Step`]: agents_core::compose::Step

mod flow;
mod node;
mod route;
mod start;
mod tree;

pub use crate::run::TreeLimit;
#[doc(hidden)]
pub use flow::{Member, pass};
#[doc(hidden)]
pub use node::{Resumption, RunComposite, RunNode};
pub use route::ROUTE_TOOL;
pub use tree::{NodeFailure, NodeFailureKind, Tree};
