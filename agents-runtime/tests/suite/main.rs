//! The crate's integration tests, one module per topic, linked into one test binary (one
//! link of the runtime and its dependencies instead of one per file).
//!
//! To add tests: write `tests/suite/<topic>.rs` (its `//!` says what it shows), add
//! `mod <topic>;` below in alphabetical order, and reach the shared helpers as
//! `use crate::run_common;` (`audit_common`, `provider_common`, ...). Run one file's tests with
//! `cargo test -p agents-runtime --test suite <topic>::`.
//!
//! A test that changes the whole process (environment variables, resource limits, a panic
//! hook, Landlock or seccomp, re-running its own executable) stays a file of its own at
//! `tests/<name>.rs`, its own binary, and declares the helpers it uses with `mod run_common;`:
//! `isolate`, `isolate_without_init`, `audit_crash`, `provider_hostile_memory` and `run_model`.

// Each topic is a private module: a `pub` item there is as reachable as it was in a binary of
// its own.
#![allow(unreachable_pub)]

#[path = "../audit_common/mod.rs"]
mod audit_common;
#[path = "../provider_common/mod.rs"]
mod provider_common;
#[path = "../run_common/mod.rs"]
mod run_common;
// The desk the granted-agent and handoff tests share (permissions, tools, agents, runtime).
mod desk_common;

mod args_parse;
mod audit_jsonl;
mod audit_keyed;
mod audit_mutations;
mod audit_sqlite;
mod compose;
mod composite;
mod composite_router;
mod decider_view;
mod macros_basic;
mod manifest_hash;
mod param_descriptions;
mod provider_anthropic;
mod provider_config;
mod provider_fuzz;
mod provider_hostile;
mod provider_openai;
mod provider_run;
mod provider_scripted;
mod registry_backstop;
mod run_authority;
mod run_availability;
mod run_confirm;
mod run_contained;
mod run_conversational;
mod run_declared;
mod run_declared_values;
mod run_egress;
mod run_endings;
mod run_events;
mod run_handoff;
mod run_history;
mod run_interceptors;
mod run_knowledge;
mod run_knowledge_injection;
mod run_knowledge_off;
mod run_limits;
mod run_origins;
mod run_proposals;
mod run_records;
mod run_redaction_fuzz;
mod run_result;
mod run_second_confirmation;
mod run_sessions;
mod run_skills;
mod run_smoke;
mod run_subagents;
mod run_values;
mod secret_by_type;
mod session_memory;
mod subagents;
