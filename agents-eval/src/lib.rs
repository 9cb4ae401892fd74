#![doc = include_str!("../README.md")]

pub mod artifacts;
pub mod env;
pub mod family;
pub mod judge;
pub mod mechanical;
pub mod probe;
pub mod render;
pub mod report;
pub mod run;
pub mod spent;
pub mod stats;

pub use artifacts::JudgeBudget;
pub use probe::{LoadedSet, ProbeSet};
pub use render::{check_report, to_json, to_markdown, write_report};
pub use report::{Report, ScoreError, score};
pub use run::{AgentModel, EvalError, EvalOptions, EvalTarget, JudgeModel, run_probe_set};
