//! The SQLite store: one file in WAL mode, for one node.
//!
//! [`SqliteStore`], its file and its one connection are in `connection`, the group commit of
//! the operations that wait for that connection together in `batch`; each operation of the
//! [`Store`](crate::Store) trait is in the file of its topic (`tokens`, `slots`, `proposals`,
//! `claims`, `sessions`, `audit`), which `store` puts together; the budget is in `budget`.

mod audit;
mod batch;
mod budget;
mod claims;
mod connection;
mod proposals;
mod sessions;
mod slots;
mod store;
mod tokens;

pub use connection::SqliteStore;
