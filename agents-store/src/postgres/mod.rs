//! The PostgreSQL store: one database shared by every node of a service.
//!
//! [`PostgresStore`] and its pool are in `connection`, its settings in `settings`; each
//! operation of the [`Store`](crate::Store) trait is in the file of its topic (`tokens`,
//! `slots`, `proposals`, `claims`, `sessions`, `audit`), which `store` puts together. How
//! nodes hear decisions as they are committed is in `listen`. The budget, the audit
//! checkpoints and the throwaway clusters of the tests have their own files.

mod audit;
mod budget;
mod checkpoints;
mod claims;
mod connection;
mod harness;
mod lane;
mod listen;
mod proposals;
mod sessions;
mod settings;
mod slots;
mod store;
mod tokens;

pub use checkpoints::{CheckpointReadError, PostgresCheckpoints};
pub use connection::PostgresStore;
pub use harness::{HarnessError, TempCluster};
pub use listen::{DECISIONS_CHANNEL, DECISIONS_LISTENER};
pub use settings::PostgresSettings;
