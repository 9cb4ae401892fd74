#![doc = include_str!("../README.md")]
#![cfg_attr(docsrs, feature(doc_cfg))]

mod confine;
mod isolation;
mod parent;
mod protocol;
mod settings;
mod tools;
mod worker;

pub use confine::{DENIED_SYSCALLS, METADATA_BY_DESCRIPTOR_SYSCALLS, METADATA_BY_PATH_SYSCALLS};
pub use isolation::{Isolation, IsolationError, call_isolated, init, init_with, prewarm, settings};
pub use parent::refused;
pub use protocol::Call;
pub use settings::{Limits, Settings, WORKER_ENV};
pub use tools::{IsolatedTool, RunInWorker};
