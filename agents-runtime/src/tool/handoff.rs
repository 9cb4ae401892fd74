//! The compile-time checks of a handoff tool that names its target: its parameter is the
//! target's input, and every agent granting it has the target's output. Written by the macros;
//! the traits exist so the compiler's message says this in a handoff's terms.

/// The one parameter `P` of the handoff tool `U` is `I`, the input of the agent `T` it hands
/// the run to (checked where `#[tool(handoff = T)]` is written).
#[diagnostic::on_unimplemented(
    message = "the handoff tool `{U}` takes `{Self}`, but the agent `{T}` it hands the run to takes `{I}`",
    label = "not the input of `{T}`",
    note = "a handoff tool's one parameter is its target's input, which the model fills: write its type as `{I}`"
)]
pub trait HandoffInput<T, U, I> {}
impl<I, T, U> HandoffInput<T, U, I> for I {}

/// Names [`HandoffInput`] for the check `#[tool]` writes.
#[doc(hidden)]
pub fn handoff_input<P: HandoffInput<T, U, I>, T, U, I>() {}

/// The output `Self` of the agent `C` is `O`, the output of the agent `T` its handoff tool `U`
/// hands the run to: the run's output is the target's (checked where `agent!` grants `U`).
#[diagnostic::on_unimplemented(
    message = "the agent `{C}` grants the handoff tool `{U}`, which hands the run to `{T}`, whose output `{O}` is not the output of `{C}`, `{Self}`",
    label = "a handoff ends the run with the output of `{T}`",
    note = "a run handed off ends with the target's output: give `{C}` the output `{O}`, hand off to an agent whose output is `{Self}`, or remove `{U}` from `tools`"
)]
pub trait HandoffOutput<C, T, U, O> {}
impl<O, C, T, U> HandoffOutput<C, T, U, O> for O {}

/// Names [`HandoffOutput`] for the check `agent!` writes.
#[doc(hidden)]
pub fn handoff_output<S: HandoffOutput<C, T, U, O>, C, T, U, O>() {}
