//! How the combinators run, as the plan `composite!` writes calls them: the hooks of the
//! application's code (a router, a stop condition, a join, a step) with their panics
//! contained, a branch's choice read fail-closed, the members of a parallel node or a forum
//! run at once under their own stop, and a forum's rounds.

use super::tree::{NodeFailure, NodeFailureKind, Tree};
use crate::BoxFuture;
use crate::run::RunUsage;
use agents_core::compose::{Graph, Join, MemberResult, Route, Step, Stop, arm_for};
use serde_json::json;
use std::any::Any;
use std::panic::AssertUnwindSafe;

/// One member of a parallel node or a forum: its plan, run in the place it is given.
pub type Member<T> = Box<dyn FnOnce(Tree) -> BoxFuture<'static, Result<T, NodeFailure>> + Send>;

/// A value handed from one node to the next. `composite!` has checked at compile time that
/// both types are one (`agents_core::compose::check`); this only moves the value across, so a
/// mismatch here is a bug, reported as the node's failure rather than a panic.
pub fn pass<From: Any, To: Any>(value: From, path: &str) -> Result<To, NodeFailure> {
    let mut slot = Some(value);
    match (&mut slot as &mut dyn Any).downcast_mut::<Option<To>>() {
        Some(to) => to.take().ok_or_else(|| mismatch(path)),
        None => Err(mismatch(path)),
    }
}

fn mismatch(path: &str) -> NodeFailure {
    NodeFailure::new(path, NodeFailureKind::Failed, "a value did not have the type its next node takes")
}

pub(crate) use crate::provider::panic_text;

/// What a branch's router answered, as its `notice` says it.
pub(super) struct RouterAnswer<'a> {
    /// Who routed: the `Route` type's name, or `model`.
    pub(super) router: String,
    /// The arm it named (`None`: none), or why its answer names none.
    pub(super) choice: Result<Option<&'a str>, String>,
    /// A model router's spend (its `notice` is then placed at the branch's path).
    pub(super) usage: Option<RunUsage>,
}

impl<'a> RouterAnswer<'a> {
    /// A model router's answer: the arm it named, or why none; what its call spent.
    pub(super) fn model(choice: Result<&'a str, String>, usage: Option<RunUsage>) -> Self {
        RouterAnswer { router: "model".to_owned(), choice: choice.map(Some), usage: Some(usage.unwrap_or_default()) }
    }
}

impl Tree {
    /// Calls a hook of the application's code for node `id`; a panic fails the node (recorded).
    async fn hook<T>(&self, id: &str, hook: &str, call: impl FnOnce() -> T) -> Result<T, NodeFailure> {
        match std::panic::catch_unwind(AssertUnwindSafe(call)) {
            Ok(value) => Ok(value),
            Err(payload) => {
                let path = self.node_path(id);
                let message = format!("`{hook}` panicked: {}", panic_text(&*payload));
                self.notice(format!("node `{path}`: {message}; the run tree ends failed")).await;
                Err(NodeFailure::new(path, NodeFailureKind::Panicked, message))
            }
        }
    }

    /// The arm branch `id` of `graph` takes for `input`, by the router `R`: its answer when it
    /// names an arm, the branch's default otherwise (recorded either way).
    pub async fn route<R: Route<In>, In>(
        &self,
        graph: &Graph,
        id: &'static str,
        input: &In,
    ) -> Result<&'static str, NodeFailure> {
        let router = std::any::type_name::<R>();
        let choice = self.hook(id, router, || R::route(input)).await?;
        let answer = RouterAnswer { router: router.to_owned(), choice: Ok(choice), usage: None };
        self.arm(graph, id, answer).await
    }

    /// The arm a router's answer takes (its choice when it names an arm of branch `id`, the
    /// default otherwise), with the tree's `notice` that says so: a model router's is placed
    /// at the branch's path and says what its call spent.
    pub(super) async fn arm(
        &self,
        graph: &Graph,
        id: &'static str,
        answer: RouterAnswer<'_>,
    ) -> Result<&'static str, NodeFailure> {
        let path = self.node_path(id);
        let choice = answer.choice.as_ref().ok().copied().flatten();
        let Some(arm) = arm_for(graph, id, choice) else {
            return Err(NodeFailure::new(path, NodeFailureKind::Failed, "the branch has no default arm"));
        };
        let answered = match &answer.choice {
            Ok(Some(c)) => format!("{c:?}"),
            Ok(None) => "no arm".to_owned(),
            Err(why) => format!("no arm: {why}"),
        };
        let reason = format!("branch `{path}` takes arm `{arm}` (router {} answered {answered})", answer.router);
        match answer.usage {
            None => self.notice(reason).await,
            Some(usage) => {
                let result = json!({
                    "router": answer.router,
                    "arm": arm,
                    "chosen": choice == Some(arm),
                    "usage": {"input_tokens": usage.input_tokens, "output_tokens": usage.output_tokens, "cost_usd": usage.cost_usd},
                });
                self.notice_at(&path, reason, result).await;
            }
        }
        Ok(arm)
    }

    /// Whether loop `id` ends with `output`, by the stop condition `S`.
    pub async fn stop<S: Stop<T>, T>(&self, id: &str, output: &T) -> Result<bool, NodeFailure> {
        self.hook(id, std::any::type_name::<S>(), || S::stop(output)).await
    }

    /// Wrap `id`'s step `S` on `value`: the value passed on, or the step's refusal, which ends
    /// the tree (recorded).
    pub async fn step<S: Step<T>, T>(&self, id: &str, value: T) -> Result<T, NodeFailure> {
        let name = std::any::type_name::<S>();
        match self.hook(id, name, || S::step(value)).await? {
            Ok(value) => Ok(value),
            Err(reason) => {
                let path = self.node_path(id);
                self.notice(format!("wrap `{path}`: step {name} refused: {reason}; the run tree ends")).await;
                Err(NodeFailure::new(path, NodeFailureKind::Refused, format!("step {name} refused: {reason}")))
            }
        }
    }

    /// Parallel node `id`'s join `J` of its members' results.
    pub async fn join<J: Join>(&self, id: &str, items: Vec<MemberResult<J::Item>>) -> Result<J::Output, NodeFailure> {
        let joined = self.hook(id, std::any::type_name::<J>(), || J::join(items)).await?;
        joined
            .map_err(|e| NodeFailure::new(self.node_path(id), NodeFailureKind::Failed, format!("the join failed: {e}")))
    }

    /// Runs the members of node `id` at once, each in a group under this place's stop, and
    /// gives their results in the order they are declared. `fail_fast`: the first failure
    /// cancels the group (the others end `stopped`, their pending actions `skipped`) and fails
    /// the node. Otherwise every member runs to its end and each failure is handed on as its
    /// message. A stop of the tree fails the node either way.
    pub async fn members<T: Send + 'static>(
        &self,
        id: &str,
        fail_fast: bool,
        members: Vec<Member<T>>,
    ) -> Result<Vec<MemberResult<T>>, NodeFailure> {
        let group = self.group();
        let mut tasks = tokio::task::JoinSet::new();
        let count = members.len();
        for (i, member) in members.into_iter().enumerate() {
            let fut = member(group.clone());
            tasks.spawn(async move { (i, fut.await) });
        }
        let mut results: Vec<Option<MemberResult<T>>> = (0..count).map(|_| None).collect();
        let mut first: Option<NodeFailure> = None;
        while let Some(joined) = tasks.join_next().await {
            let (i, result) = match joined {
                Ok(done) => done,
                Err(e) => {
                    let message = if e.is_panic() { panic_text(&*e.into_panic()) } else { e.to_string() };
                    let failure = NodeFailure::new(
                        self.node_path(id),
                        NodeFailureKind::Panicked,
                        format!("a member panicked: {message}"),
                    );
                    self.notice(format!("{failure}; the run tree ends failed")).await;
                    group.cancel.cancel();
                    first.get_or_insert(failure);
                    continue;
                }
            };
            if let Err(failure) = &result
                && fail_fast
                && first.is_none()
            {
                group.cancel.cancel();
                first = Some(failure.clone());
            }
            results[i] = Some(result.map_err(|f| f.to_string()));
        }
        if let Some(failure) = first.filter(|_| fail_fast) {
            return Err(failure);
        }
        if self.cancel.is_cancelled() {
            return Err(NodeFailure::new(self.node_path(id), NodeFailureKind::Stopped, "stopped"));
        }
        Ok(results.into_iter().map(|r| r.unwrap_or_else(|| Err("the member's task failed".to_owned()))).collect())
    }

    /// Forum `id`: its members answer (at once), the moderator decides, for at most `rounds`
    /// rounds. A round whose members all failed, or whose moderator's run failed, is followed
    /// by another while rounds remain (a `notice` says why); a stop or a spent budget ends it
    /// at once.
    pub async fn forum<T: Send + 'static, O>(
        &self,
        id: &str,
        rounds: u32,
        members: impl Fn() -> Vec<Member<T>>,
        moderator: impl Fn(Tree, Vec<T>) -> BoxFuture<'static, Result<O, NodeFailure>>,
    ) -> Result<O, NodeFailure> {
        let path = self.node_path(id);
        for round in 1..=rounds {
            let answers: Vec<T> =
                self.members(id, false, members()).await?.into_iter().filter_map(Result::ok).collect();
            let failure = if answers.is_empty() {
                NodeFailure::new(&path, NodeFailureKind::Failed, "no member answered")
            } else {
                match moderator(self.clone(), answers).await {
                    Ok(decided) => return Ok(decided),
                    Err(f) if f.kind != NodeFailureKind::Failed => return Err(f),
                    Err(f) => f,
                }
            };
            if round < rounds {
                self.notice(format!(
                    "forum `{path}`: round {round} of {rounds} decided nothing ({failure}); another round"
                ))
                .await;
            } else {
                return Err(failure);
            }
        }
        Err(NodeFailure::new(path, NodeFailureKind::Failed, "the forum held no round"))
    }
}
