//! An injection suite for the example agents, offline and deterministic.
//!
//! A [gullible model](model) pursues each user task by a plan and obeys every instruction it
//! reads; a [simulated person](person) decides on each proposal from what its card shows;
//! [scenarios](scenario) are TOML files under `examples/scenarios/`, one per task and one per
//! injection goal, crossed. Each scenario is [scored](run) from its audit log (attack success,
//! severe failures by `agents_core::audit::severe`) and the application's final state
//! (utility). The [report] aggregates them per goal and in total, as a table and as JSON.
//!
//! Against whom the figures hold: a model that believes everything it reads, driven by text
//! in the applications' records and the user's pasted documents, with the person deciding
//! only on what the card shows. They say nothing about a model that plans its own attack
//! beyond the instructions, or about a person who approves what they did not ask for.

pub mod apps;
pub mod http;
pub mod model;
pub mod person;
pub mod planted;
pub mod report;
pub mod run;
pub mod scenario;
pub mod tree;
pub mod warned;
