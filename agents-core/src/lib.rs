#![doc = include_str!("../README.md")]
#![cfg_attr(docsrs, feature(doc_cfg))]

pub mod agent;
pub mod audit;
pub mod baseline;
pub mod budget;
pub mod canonical;
pub mod compose;
pub mod constant;
pub mod diff;
pub mod expose;
pub mod graph;
pub mod knowledge;
pub mod manifest;
pub mod mcp_lock;
pub mod models;
pub mod permission;
pub mod policy;
pub mod principal;
pub mod redact;
#[cfg(feature = "report")]
pub mod report;
pub mod reviewed;
pub mod secret;
pub mod shared_str;
pub mod shared_value;
pub mod skill;
pub mod strict;
pub mod subagent;
pub mod terminal;
pub mod tool;
pub mod typed_skill;

#[doc(hidden)]
pub mod seal;

pub use agent::{Agent, AgentSpec, Limits, Skill, SkillSpec};
pub use permission::{FitsCeilingOf, Grants, Permission, Public, WithinCeiling};
pub use principal::{Principal, PrincipalError, RoleMap};
pub use secret::Secret;
pub use shared_str::SharedStr;
pub use shared_value::SharedValue;
pub use tool::{ImportSpec, ParamSpec, PolicySpec, Risk, Tier, Tool, ToolSpec};
pub use typed_skill::TypedSkill;

/// A boxed future that may move between threads: what the traits of the crates built on this
/// one return (a provider's answer, an interceptor's decision, an audit sink's lookup, ...).
/// It is the same type as `futures::future::BoxFuture`, so an implementation may name either.
pub type BoxFuture<'a, T> = std::pin::Pin<Box<dyn std::future::Future<Output = T> + Send + 'a>>;
