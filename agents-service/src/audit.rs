//! Reading the audit log back: the records a query selects, and the chain's verdict.
//!
//! The runtime's sinks only append; the service reads the same log through an [`AuditReader`]
//! (the JSONL file, the SQLite database, a state store's audit stream, or the in-memory sink
//! of tests). A query scans the
//! log in order, in bounded memory apart from the page it returns.

use agents_runtime::Tier;
use agents_runtime::agents_core::audit::{RecordFilter, Selected};
use agents_runtime::audit::{
    AuditRecord, AuditStatus, ChainError, ChainSummary, ChainVerifier, MemorySink, verify_jsonl_file,
    verify_jsonl_file_with, verify_sqlite, verify_sqlite_with,
};
use agents_runtime::store::Store;
use serde::Deserialize;
use std::io::BufRead;
use std::ops::ControlFlow;
use std::path::PathBuf;
use std::sync::Arc;
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;
use tokio::runtime::Handle;

/// Why the log could not be read (not a finding about its chain).
#[derive(Debug, thiserror::Error)]
#[error("the audit log could not be read: {0}")]
pub struct AuditReadError(pub String);

/// Reads an audit log. Calls block (file or database reads); the service runs them on tokio's
/// blocking pool.
pub trait AuditReader: Send + Sync + 'static {
    /// Hands every record, in log order, to `each` until it breaks.
    fn scan(&self, each: &mut dyn FnMut(&AuditRecord) -> ControlFlow<()>) -> Result<(), AuditReadError>;
    /// The chain's verdict (every hash and link; the manifest hash of each record when given).
    fn verify(&self) -> Result<Result<ChainSummary, ChainError>, AuditReadError>;
    /// The chain's verdict, with every record handed to `each` in log order (after a break,
    /// the records that still read) in the same pass. The readers of this crate read the log
    /// once; this default reads it twice ([`verify`](Self::verify), then
    /// [`scan`](Self::scan)).
    fn verify_each(
        &self,
        each: &mut dyn FnMut(&AuditRecord),
    ) -> Result<Result<ChainSummary, ChainError>, AuditReadError> {
        let verdict = self.verify()?;
        self.scan(&mut |r| {
            each(r);
            ControlFlow::Continue(())
        })?;
        Ok(verdict)
    }
}

impl AuditReader for MemorySink {
    fn scan(&self, each: &mut dyn FnMut(&AuditRecord) -> ControlFlow<()>) -> Result<(), AuditReadError> {
        for r in self.records() {
            if each(&r).is_break() {
                break;
            }
        }
        Ok(())
    }

    fn verify(&self) -> Result<Result<ChainSummary, ChainError>, AuditReadError> {
        self.verify_each(&mut |_| {})
    }

    fn verify_each(
        &self,
        each: &mut dyn FnMut(&AuditRecord),
    ) -> Result<Result<ChainSummary, ChainError>, AuditReadError> {
        let mut verifier = ChainVerifier::new();
        let mut broken = None;
        for (i, r) in self.records().iter().enumerate() {
            if broken.is_none()
                && let Err(e) = verifier.record(r, i + 1)
            {
                broken = Some(e);
            }
            each(r);
        }
        Ok(broken.map_or_else(|| verifier.finish(), Err))
    }
}

impl<R: AuditReader + ?Sized> AuditReader for Arc<R> {
    fn scan(&self, each: &mut dyn FnMut(&AuditRecord) -> ControlFlow<()>) -> Result<(), AuditReadError> {
        (**self).scan(each)
    }
    fn verify(&self) -> Result<Result<ChainSummary, ChainError>, AuditReadError> {
        (**self).verify()
    }
    fn verify_each(
        &self,
        each: &mut dyn FnMut(&AuditRecord),
    ) -> Result<Result<ChainSummary, ChainError>, AuditReadError> {
        (**self).verify_each(each)
    }
}

/// The JSONL log a [`JsonlSink`](agents_runtime::audit::JsonlSink) writes (plain chain).
#[derive(Debug, Clone)]
pub struct JsonlReader {
    path: PathBuf,
}

impl JsonlReader {
    /// A reader of the log at `path`.
    pub fn new(path: impl Into<PathBuf>) -> Self {
        JsonlReader { path: path.into() }
    }
}

/// The longest line read (far above any record).
const MAX_LINE: usize = 1 << 20;

impl AuditReader for JsonlReader {
    fn scan(&self, each: &mut dyn FnMut(&AuditRecord) -> ControlFlow<()>) -> Result<(), AuditReadError> {
        let file = match std::fs::File::open(&self.path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(AuditReadError(format!("{}: {e}", self.path.display()))),
        };
        let mut reader = std::io::BufReader::new(file);
        let mut line = String::new();
        loop {
            line.clear();
            let n = std::io::Read::take(&mut reader, MAX_LINE as u64 + 1)
                .read_line(&mut line)
                .map_err(|e| AuditReadError(format!("{}: {e}", self.path.display())))?;
            if n == 0 {
                return Ok(());
            }
            if n > MAX_LINE {
                return Err(AuditReadError(format!("{}: a line is longer than {MAX_LINE} bytes", self.path.display())));
            }
            // A torn last line (a crash mid-write) is not a record yet.
            if !line.ends_with('\n') {
                return Ok(());
            }
            let Ok(record) = serde_json::from_str::<AuditRecord>(line.trim_end()) else { continue };
            if each(&record).is_break() {
                return Ok(());
            }
        }
    }

    fn verify(&self) -> Result<Result<ChainSummary, ChainError>, AuditReadError> {
        if !self.path.exists() {
            return Ok(Ok(ChainSummary::empty()));
        }
        match verify_jsonl_file(&self.path, None) {
            Ok(summary) => Ok(Ok(summary)),
            Err(agents_runtime::audit::JsonlOpenError::Broken { source, .. }) => Ok(Err(source)),
            Err(e) => Err(AuditReadError(e.to_string())),
        }
    }

    fn verify_each(
        &self,
        each: &mut dyn FnMut(&AuditRecord),
    ) -> Result<Result<ChainSummary, ChainError>, AuditReadError> {
        if !self.path.exists() {
            return Ok(Ok(ChainSummary::empty()));
        }
        match verify_jsonl_file_with(&self.path, None, each) {
            Ok(summary) => Ok(Ok(summary)),
            Err(agents_runtime::audit::JsonlOpenError::Broken { source, .. }) => Ok(Err(source)),
            Err(e) => Err(AuditReadError(e.to_string())),
        }
    }
}

/// The SQLite database a [`SqliteSink`](agents_runtime::audit::SqliteSink) writes.
#[derive(Debug, Clone)]
pub struct SqliteReader {
    path: PathBuf,
}

impl SqliteReader {
    /// A reader of the database at `path`.
    pub fn new(path: impl Into<PathBuf>) -> Self {
        SqliteReader { path: path.into() }
    }
}

impl AuditReader for SqliteReader {
    fn scan(&self, each: &mut dyn FnMut(&AuditRecord) -> ControlFlow<()>) -> Result<(), AuditReadError> {
        let conn = rusqlite::Connection::open_with_flags(&self.path, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
            .map_err(|e| AuditReadError(format!("{}: {e}", self.path.display())))?;
        // The sink may be writing: wait for its lock rather than fail.
        conn.busy_timeout(std::time::Duration::from_secs(5))
            .map_err(|e| AuditReadError(format!("{}: {e}", self.path.display())))?;
        agents_core::audit::sqlite::for_each_record(&conn, |_, row| match row {
            Ok(r) => each(&r),
            Err(_) => ControlFlow::Continue(()),
        })
        .map_err(|e| AuditReadError(format!("{}: {e}", self.path.display())))
    }

    fn verify(&self) -> Result<Result<ChainSummary, ChainError>, AuditReadError> {
        match verify_sqlite(&self.path, None) {
            Ok(summary) => Ok(Ok(summary)),
            Err(agents_runtime::audit::SqliteAuditError::Broken { source, .. }) => Ok(Err(source)),
            Err(e) => Err(AuditReadError(e.to_string())),
        }
    }

    fn verify_each(
        &self,
        each: &mut dyn FnMut(&AuditRecord),
    ) -> Result<Result<ChainSummary, ChainError>, AuditReadError> {
        match verify_sqlite_with(&self.path, None, each) {
            Ok(summary) => Ok(Ok(summary)),
            Err(agents_runtime::audit::SqliteAuditError::Broken { source, .. }) => Ok(Err(source)),
            Err(e) => Err(AuditReadError(e.to_string())),
        }
    }
}

/// An audit stream held by a state store (the stream a
/// [`StoreAuditSink`](agents_runtime::store::StoreAuditSink) appends to, from every node of
/// the service): PostgreSQL (`agents_store::PostgresStore`), SQLite (`agents_store::SqliteStore`),
/// or the [`MemoryStore`](agents_runtime::store::MemoryStore).
///
/// It reads the stream a page at a time ([`Store::audit_lines`]), so a query or a
/// verification holds one page in memory. The store's rows are not trusted: each line is
/// checked as a link of the chain (its hash, its link to the line before, its `seq`), so a
/// row edited by someone who can write the database but does not hold the records' chain
/// (an edited line, one deleted or reordered) makes `/v1/audit/verify` answer `ok: false`.
/// The stream is a plain chain: an insider who rewrites a row and every hash after it is
/// caught only by a checkpoint or head kept elsewhere, as for any plain chain.
///
/// Its calls block on the tokio runtime it was made in, as every reader's calls block: the
/// service makes them on that runtime's blocking pool.
///
/// ```no_run
/// # async fn demo(store: std::sync::Arc<dyn agents_runtime::store::Store>) {
/// use agents_runtime::store::StoreAuditSink;
/// use agents_service::StoreReader;
///
/// // Every node appends to stream `audit` of the shared store, and reads it back.
/// let sink = StoreAuditSink::new(store.clone(), "audit");
/// let reader = StoreReader::new(store, "audit");
/// # let _ = (sink, reader);
/// # }
/// ```
pub struct StoreReader {
    store: Arc<dyn Store>,
    stream: String,
    runtime: Handle,
}

impl std::fmt::Debug for StoreReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StoreReader").field("stream", &self.stream).finish_non_exhaustive()
    }
}

/// Lines read from a store per page.
const STORE_PAGE: u32 = 500;

impl StoreReader {
    /// A reader of `stream` in `store`.
    ///
    /// # Panics
    ///
    /// Outside a tokio runtime: its reads run on the runtime it is made in.
    pub fn new(store: Arc<dyn Store>, stream: impl Into<String>) -> Self {
        StoreReader { store, stream: stream.into(), runtime: Handle::current() }
    }

    /// Hands each stored line to `each`, in `seq` order, until it breaks.
    fn pages(&self, each: &mut dyn FnMut(&str) -> ControlFlow<()>) -> Result<(), AuditReadError> {
        let mut after = 0;
        loop {
            let page = self
                .runtime
                .block_on(self.store.audit_lines(&self.stream, after, STORE_PAGE))
                .map_err(|e| AuditReadError(format!("audit stream `{}`: {e}", self.stream)))?;
            let Some(&(last, _)) = page.last() else { return Ok(()) };
            for (_, line) in &page {
                if each(line).is_break() {
                    return Ok(());
                }
            }
            after = last;
        }
    }
}

impl AuditReader for StoreReader {
    fn scan(&self, each: &mut dyn FnMut(&AuditRecord) -> ControlFlow<()>) -> Result<(), AuditReadError> {
        self.pages(&mut |line| match serde_json::from_str::<AuditRecord>(line) {
            Ok(record) => each(&record),
            Err(_) => ControlFlow::Continue(()),
        })
    }

    fn verify(&self) -> Result<Result<ChainSummary, ChainError>, AuditReadError> {
        self.verify_each(&mut |_| {})
    }

    fn verify_each(
        &self,
        each: &mut dyn FnMut(&AuditRecord),
    ) -> Result<Result<ChainSummary, ChainError>, AuditReadError> {
        let mut verifier = ChainVerifier::new();
        let mut broken = None;
        let mut number = 0;
        self.pages(&mut |line| {
            number += 1;
            if broken.is_none() {
                match verifier.line(line, number) {
                    Ok(record) => each(&record),
                    Err(e) => broken = Some(e),
                }
            }
            // After the break, the records that still read.
            if broken.is_some()
                && let Ok(record) = serde_json::from_str::<AuditRecord>(line)
            {
                each(&record);
            }
            ControlFlow::Continue(())
        })?;
        Ok(broken.map_or_else(|| verifier.finish(), Err))
    }
}

/// The filters of an audit query: those of `agents audit show`, plus paging.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AuditQuery {
    /// Only this run id.
    pub run: Option<String>,
    /// Only this session: its id as the log stores it, or (for the caller's own sessions) the
    /// id the caller gave `POST /v1/runs`.
    pub session: Option<String>,
    /// Only this user id.
    pub user: Option<String>,
    /// Only this tool.
    pub tool: Option<String>,
    /// Only this call id.
    pub call: Option<String>,
    /// Only these statuses, separated with commas (e.g. `executed,denied`).
    pub status: Option<String>,
    /// Only these tiers, separated with commas (`read`, `action`, `handoff`).
    pub tier: Option<String>,
    /// Only records at or after this RFC 3339 time.
    pub since: Option<String>,
    /// Only records at or before this RFC 3339 time.
    pub until: Option<String>,
    /// Only records after this sequence number (the `next_after` of the previous page).
    pub after: Option<u64>,
    /// Records per page (default 100, at most 1000).
    pub limit: Option<usize>,
}

/// The filters parsed once.
#[derive(Debug)]
pub(crate) struct Selection {
    filter: RecordFilter,
    after: Option<u64>,
    pub(crate) limit: usize,
}

/// The largest page.
pub(crate) const MAX_PAGE: usize = 1000;

impl Selection {
    pub(crate) fn parse(query: AuditQuery) -> Result<Self, String> {
        let list = |v: &Option<String>| -> Vec<String> {
            v.as_deref()
                .map(|s| s.split(',').map(|p| p.trim().to_owned()).filter(|p| !p.is_empty()).collect())
                .unwrap_or_default()
        };
        let statuses = list(&query.status)
            .into_iter()
            .map(|n| {
                serde_json::from_value::<AuditStatus>(serde_json::Value::String(n.clone())).map_err(|_| {
                    format!("unknown status `{n}`; use one of: run_started, run_finished, proposed, confirmed, executed, failed, rejected, skipped, denied, handed_off, modified, substituted, notice")
                })
            })
            .collect::<Result<_, _>>()?;
        let tiers = list(&query.tier)
            .into_iter()
            .map(|n| {
                serde_json::from_value::<Tier>(serde_json::Value::String(n.clone()))
                    .map_err(|_| format!("unknown tier `{n}`; use one of: read, action, handoff"))
            })
            .collect::<Result<_, _>>()?;
        let time = |v: &Option<String>, name: &str| -> Result<Option<OffsetDateTime>, String> {
            v.as_deref()
                .map(|s| {
                    OffsetDateTime::parse(s, &Rfc3339)
                        .map_err(|_| format!("`{name}` is not an RFC 3339 time (write it like 2026-05-27T14:00:00Z)"))
                })
                .transpose()
        };
        let since = time(&query.since, "since")?;
        let until = time(&query.until, "until")?;
        let limit = match query.limit {
            None => 100,
            Some(0) => return Err("`limit` must be at least 1".into()),
            Some(n) if n > MAX_PAGE => return Err(format!("`limit` must be at most {MAX_PAGE}")),
            Some(n) => n,
        };
        let filter = RecordFilter {
            run: query.run,
            session: query.session,
            user: query.user,
            tool: query.tool,
            call: query.call,
            statuses,
            tiers,
            since,
            until,
        };
        Ok(Selection { filter, after: query.after, limit })
    }

    pub(crate) fn selects(&self, r: &AuditRecord) -> bool {
        self.after.is_none_or(|a| r.seq > a) && self.filter.select(r) == Selected::Yes
    }
}
