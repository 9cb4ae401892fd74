//! PostgreSQL for the service's tests: a throwaway cluster (`agents-store`'s harness; a test
//! that needs it fails, saying what to install, when the server's binaries are absent: it
//! never passes without having run), and the service's audit reader over a state store's audit
//! stream in it, which the nodes of a service append to through `StoreAuditSink`.

use agents_runtime::audit::{AuditRecord, ChainError, ChainSummary, verify_jsonl_bytes};
use agents_service::{AuditReadError, AuditReader};
use agents_store::postgres::TempCluster;
use std::ops::ControlFlow;
use tokio::runtime::Handle;

/// A throwaway cluster, or the test fails with the harness's reason and what to install.
#[track_caller]
pub fn cluster() -> TempCluster {
    TempCluster::start().unwrap_or_else(|e| panic!("{e}"))
}

/// Reads the audit stream `stream` of the database it connected to, in `seq` order, each line
/// verified as a link of the chain by the JSONL log's verifier.
///
/// Its calls block on the tokio runtime it connected on: the service makes them on that
/// runtime's blocking pool.
pub struct StreamReader {
    client: tokio_postgres::Client,
    stream: String,
    runtime: Handle,
}

impl StreamReader {
    /// Connects to `conninfo` on the current runtime (its connection is a task there).
    pub async fn connect(conninfo: &str, stream: &str) -> StreamReader {
        let (client, connection) =
            tokio_postgres::connect(conninfo, tokio_postgres::NoTls).await.expect("the audit reader connects");
        tokio::spawn(connection);
        StreamReader { client, stream: stream.to_owned(), runtime: Handle::current() }
    }

    fn lines(&self) -> Result<Vec<String>, AuditReadError> {
        let query = "SELECT line FROM agents_audit WHERE stream = $1 ORDER BY seq";
        let rows = self
            .runtime
            .block_on(self.client.query(query, &[&self.stream]))
            .map_err(|e| AuditReadError(format!("audit stream `{}`: {e}", self.stream)))?;
        Ok(rows.iter().map(|r| r.get(0)).collect())
    }
}

impl AuditReader for StreamReader {
    fn scan(&self, each: &mut dyn FnMut(&AuditRecord) -> ControlFlow<()>) -> Result<(), AuditReadError> {
        for line in self.lines()? {
            let Ok(record) = serde_json::from_str::<AuditRecord>(&line) else { continue };
            if each(&record).is_break() {
                break;
            }
        }
        Ok(())
    }

    fn verify(&self) -> Result<Result<ChainSummary, ChainError>, AuditReadError> {
        // The stream's lines as the JSONL log would hold them, checked by its verifier.
        let mut text = String::new();
        for line in self.lines()? {
            text.push_str(&line);
            text.push('\n');
        }
        Ok(verify_jsonl_bytes(text.as_bytes(), None))
    }

    fn verify_each(
        &self,
        each: &mut dyn FnMut(&AuditRecord),
    ) -> Result<Result<ChainSummary, ChainError>, AuditReadError> {
        // Every record that reads, then the chain's verdict (two reads: a test's small stream).
        self.scan(&mut |r| {
            each(r);
            ControlFlow::Continue(())
        })?;
        self.verify()
    }
}
