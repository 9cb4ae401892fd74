//! The context an approved call whose run is gone runs in (made here, above the gate, which
//! arms its nested invoker), handed to the ledger that carries the call out
//! (`ledger::carry`). Used by [`Runtime::resume_orphaned`](super::Runtime::resume_orphaned)
//! and by the session's next turn.

use super::context::{RunCtx, snapshot_of};
use super::ledger::{ResumedCall, carry_claimed};
use super::pending::principal_of;
use super::place::place_of;
use super::record::RecordIds;
use super::shared::Inner;
use crate::events::EventBus;
use crate::store::ProposalRecord;
use crate::tool::Registry;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// Runs one claimed call as its run would have (under `ids`, a turn of its session that
/// carries it out, or else the ids of the run that proposed it).
pub(super) async fn carry_out<A: Registry>(
    inner: &Arc<Inner>,
    p: ProposalRecord,
    ids: Option<RecordIds>,
) -> ResumedCall {
    let in_turn = ids.is_some();
    let ctx = resumed_ctx::<A>(inner, &p, ids).await;
    carry_claimed(ctx, p, in_turn).await
}

/// The context a claimed call runs in: its run's principal, under `ids` (or the ids of the
/// run that proposed it), with the availability the run's role has now.
async fn resumed_ctx<A: Registry>(inner: &Arc<Inner>, p: &ProposalRecord, ids: Option<RecordIds>) -> Arc<RunCtx<A>> {
    let principal = principal_of(p);
    let limits = inner.settings.limits.unwrap_or(A::SPEC.limits);
    let ids = ids.unwrap_or_else(|| {
        let request_id = uuid::Uuid::new_v4().to_string();
        let mut ids = RecordIds::new::<A>(&p.run_id, &p.session_id, &request_id, &principal);
        ids.node = place_of(&inner.services.tokens, p).map(|place| place.node);
        ids
    });
    let bus = Arc::new(EventBus::new());
    let ctx = RunCtx::<A>::with_ids(inner, principal, ids, limits, bus, CancellationToken::new(), None);
    super::gate::arm_nested(&ctx);
    let (snapshot, _) = snapshot_of(&ctx).await;
    let _ = ctx.snapshot.set(snapshot);
    ctx
}
