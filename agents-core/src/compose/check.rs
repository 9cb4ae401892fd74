//! The type checks `composite!` writes: one function per rule, each bound by a sealed helper
//! trait whose message says what to change. Not a public API.

mod private {
    pub trait Same<T> {}
    impl<T> Same<T> for T {}
}

/// `then(a, b)`: the output of `a` is the input of `b`.
#[diagnostic::on_unimplemented(
    message = "a step gives `{Self}` but the step after it takes `{Next}`",
    label = "this takes `{Next}`, the step before gives `{Self}`",
    note = "in `then(a, b)` the output type of `a` must be the input type of `b`: put an agent between them that turns one into the other, or change a declaration"
)]
pub trait Feeds<Next>: private::Same<Next> {}
impl<T> Feeds<T> for T {}

/// The arms of a branch, the members of a parallel node or a forum: one input type, one
/// output type.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not `{Other}`: a branch's arms and the members of a parallel node or a forum take one input type and give one output type",
    label = "this takes or gives `{Self}`, the first takes or gives `{Other}`",
    note = "make every arm (and the default) or every member take and give the same types"
)]
pub trait Matches<Other>: private::Same<Other> {}
impl<T> Matches<T> for T {}

/// `loop(body, ...)`: the body's output is its next input.
#[diagnostic::on_unimplemented(
    message = "a loop's body gives `{Self}` but takes `{In}`: its output is its next input",
    label = "this body takes `{In}` and gives `{Self}`",
    note = "a loop's body takes and gives one type"
)]
pub trait LoopsBack<In>: private::Same<In> {}
impl<T> LoopsBack<T> for T {}

/// `parallel([..], join = J, ...)`: `J` joins the members' output.
#[diagnostic::on_unimplemented(
    message = "the join takes `{Self}` but the members give `{Item}`",
    label = "this join's `Join::Item` is `{Self}`",
    note = "set `type Item = {Item};` in the join's `Join` impl, or join members that give `{Self}`"
)]
pub trait JoinsItems<Item>: private::Same<Item> {}
impl<T> JoinsItems<T> for T {}

/// Checks `then`.
pub const fn feeds<Out: Feeds<In>, In>() {}
/// Checks arms and members.
pub const fn matches<T: Matches<Other>, Other>() {}
/// Checks a loop's body.
pub const fn loops_back<Out: LoopsBack<In>, In>() {}
/// Checks a parallel node's join.
pub const fn joins<J: super::Join, Item>()
where
    J::Item: JoinsItems<Item>,
{
}
/// Checks a branch's router.
pub const fn routes<R: super::Route<In>, In>() {}
/// Checks a loop's stop condition.
pub const fn stops<S: super::Stop<T>, T>() {}
/// Checks a wrap's step.
pub const fn steps<S: super::Step<T>, T>() {}
