//! What the scale benches share: a small agent and its scripted model, a keep-alive HTTP
//! client, an audit sink that notes when each record became durable, and the figures
//! (percentiles, the resident set, arguments from the command line).
//!
//! The benches are bench binaries that print ratios against a baseline measured in the same
//! run (`cargo bench -p scale --bench <name>`); the workspace README quotes their output.
//!
//! ```
//! use std::time::Duration;
//! let mut times = vec![Duration::from_millis(3), Duration::from_millis(1), Duration::from_millis(2)];
//! times.sort();
//! assert_eq!(scale::figures::percentile(&times, 0.5), Duration::from_millis(2));
//! ```

pub mod desk;
pub mod figures;
pub mod http;
pub mod timed;
