//! PostgreSQL for the service's tests: a throwaway cluster (`agents-store`'s harness; a test
//! that needs it fails, saying what to install, when the server's binaries are absent: it
//! never passes without having run).

use agents_store::postgres::TempCluster;

/// A throwaway cluster, or the test fails with the harness's reason and what to install.
#[track_caller]
pub fn cluster() -> TempCluster {
    TempCluster::start().unwrap_or_else(|e| panic!("{e}"))
}
