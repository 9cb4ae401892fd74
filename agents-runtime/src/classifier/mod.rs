//! Conversational confirmation: while a proposal is pending, the user's next message is
//! classified as confirm, modify, cancel or unclear.
//!
//! # The invariant: composition can only make confirming harder
//!
//! Readings are ordered from the most to the least permissive:
//! `Confirm` < `Unclear` < `Modify` < `Cancel`. `Confirm` runs the proposal; `Unclear` keeps
//! it pending (the person is asked again); `Modify` and `Cancel` end it (`Cancel` also tells
//! the model not to retry). When several classifiers read one reply, the reply reads as the
//! **strictest** of their readings ([`Classification::strictest`]):
//!
//! - the reply confirms **only if every classifier reads `Confirm`**;
//! - a classifier (a model, say) can turn any reading into a stricter one, and no classifier
//!   can turn `Cancel`, `Modify` or `Unclear` into `Confirm`, however it is fooled;
//! - the result does not depend on the order in which classifiers are asked.
//!
//! [`ModelClassifier`] composes its model's reading with the offline [`KeywordClassifier`]'s
//! this way, and [`Chain`] composes any classifiers. This holds against a classifier model
//! that is wrong or manipulated by the reply's text: such a model can withhold a
//! confirmation, never grant one. A model that cannot be asked, or answers anything but one
//! of the four labels, reads as `Unclear`.
//!
//! # The offline classifier
//!
//! [`KeywordClassifier`] confirms a reply made only of ordinary ways of agreeing ("Yes,
//! please go ahead.", "sounds good", "ok 👍", "oui", "はい"), politeness ("please",
//! "thanks") and words of the proposal's own title ("yes, submit the leave request").
//! Anything else in the reply keeps it from confirming:
//!
//! - a question (a question mark, or a reply that opens as a question: "can you", "what") is
//!   not consent: `Unclear`, unless it opens with a refusal (`Cancel`);
//! - a change (a number, "but", "instead", "make it", ...) is `Modify`;
//! - a refusal anywhere ("no", "stop", "don't", "cancel", "never mind", ...) is `Cancel`;
//! - everything else (instructions, claims of authority, look-alike letters from another
//!   script) is `Unclear`.
//!
//! The test table in this module lists more than a hundred realistic replies with their
//! expected reading.

mod chain;
mod keyword;
mod model;
mod reading;
#[cfg(test)]
mod tests;
mod vocabulary;

pub use chain::Chain;
pub use keyword::KeywordClassifier;
pub use model::ModelClassifier;
pub use reading::{Classification, ConfirmationClassifier, ProposalSummary};
