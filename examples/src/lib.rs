//! Runnable agents from the seeds, offline by default.
//!
//! - [`clinic`]: Kinetix, an assistant inside a clinical system (dialog confirmations,
//!   inherited authority, no hard delete of clinical records).
//! - [`helpdesk`]: DeskLoop, an IT and HR helpdesk in a chat (conversational confirmations,
//!   tokens bound to the exact arguments, a handoff tool with no execution path).
//! - [`kyc`]: a KYC reviewer from the permission-manifest seed (typed input and output, a
//!   skill, a filesystem policy enforced at the gate and in process, a tool-call budget).

pub mod clinic;
pub mod console;
pub mod helpdesk;
pub mod kyc;
pub mod service;
