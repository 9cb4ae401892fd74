//! Terminal helpers shared by the examples: a tail of the JSONL audit log, an audit sink that
//! shows each record as it becomes durable, a one-line view of an audit record, the
//! severe-failure count computed from the records, and the screen a demo or chat prints to.

use agents_runtime::audit::{Appended, AuditRecord, AuditSink, AuditStatus};
use agents_runtime::events::Event;
use agents_runtime::provider::{Provider, RuleProvider, provider_from_env};
use agents_runtime::run::DecisionError;
use agents_runtime::{Principal, Runtime, Verdict};
use serde_json::Value;
use std::io::{self, BufRead, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// A fresh path for an audit log under the system's temporary directory.
pub fn temp_audit_path(prefix: &str) -> PathBuf {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let nanos =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or_default();
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    std::env::temp_dir().join(format!("{prefix}-{}-{nanos}-{n}.jsonl", std::process::id()))
}

/// A record an audit sink made durable, on its way to the screen.
#[derive(Debug)]
pub struct Shown {
    /// The sealed record, as the log holds it.
    pub record: AuditRecord,
    ack: tokio::sync::oneshot::Sender<()>,
}

impl Shown {
    /// Tells the sink the record was shown, so the run goes on.
    pub fn done(self) {
        let _ = self.ack.send(());
    }
}

/// An audit sink that shows every record: it appends to `inner` and, once the record is
/// durable, hands the sealed record to the screen and waits until the screen has printed it.
///
/// Why this gives the causal order: a run publishes its events without waiting and appends
/// its records one after the other, so when a record reaches the screen every event the run
/// published before it is already in the screen's event queue, and no later event exists yet.
/// A screen that prints the queued events, then the record (see [`Screen::show_turn`]), prints
/// both in the order they happened. Records are printed as the sink sealed them, so the
/// screen and the log agree word for word. If the screen goes away the sink stops waiting.
#[derive(Debug)]
pub struct ShowingSink<S> {
    inner: S,
    to_screen: tokio::sync::mpsc::UnboundedSender<Shown>,
}

impl<S: AuditSink> ShowingSink<S> {
    /// Wraps `inner`; the receiver is the screen's end.
    pub fn new(inner: S) -> (Self, tokio::sync::mpsc::UnboundedReceiver<Shown>) {
        let (to_screen, from_sink) = tokio::sync::mpsc::unbounded_channel();
        (ShowingSink { inner, to_screen }, from_sink)
    }
}

impl<S: AuditSink> AuditSink for ShowingSink<S> {
    fn append(&self, record: AuditRecord) -> Appended<'_> {
        Appended::pending(async move {
            let sealed = self.inner.append(record).await?;
            let (ack, shown) = tokio::sync::oneshot::channel();
            if self.to_screen.send(Shown { record: sealed.clone(), ack }).is_ok() {
                let _ = shown.await;
            }
            Ok(sealed)
        })
    }
}

/// Follows a JSONL audit log: each [`poll`](Self::poll) returns the complete lines written
/// since the previous one, parsed. The file is what the audit sink made durable; this reads it
/// back as a reviewer would.
#[derive(Debug)]
pub struct AuditTail {
    path: PathBuf,
    offset: u64,
    partial: Vec<u8>,
    records: Vec<AuditRecord>,
}

impl AuditTail {
    /// Follows the log at `path` from its beginning.
    pub fn new(path: impl AsRef<Path>) -> Self {
        AuditTail { path: path.as_ref().to_owned(), offset: 0, partial: Vec::new(), records: Vec::new() }
    }

    /// The log's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The records written since the last poll.
    pub fn poll(&mut self) -> io::Result<Vec<AuditRecord>> {
        let mut file = std::fs::File::open(&self.path)?;
        file.seek(SeekFrom::Start(self.offset))?;
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes)?;
        self.offset += bytes.len() as u64;
        self.partial.extend_from_slice(&bytes);
        let mut fresh = Vec::new();
        while let Some(end) = self.partial.iter().position(|b| *b == b'\n') {
            let line: Vec<u8> = self.partial.drain(..=end).collect();
            let record: AuditRecord = serde_json::from_slice(&line[..line.len() - 1]).map_err(io::Error::other)?;
            fresh.push(record);
        }
        self.records.extend(fresh.iter().cloned());
        Ok(fresh)
    }

    /// Every record read so far, in chain order.
    pub fn records(&self) -> &[AuditRecord] {
        &self.records
    }
}

/// One line for a person: sequence number, status, tool, call, and the detail that matters;
/// arguments in canonical JSON, as the log holds them.
pub fn format_record(r: &AuditRecord) -> String {
    let mut line = format!("[audit #{:>2}] {:<11}", r.seq, r.status.as_str());
    if let Some(tool) = &r.tool {
        line.push_str(&format!(" {tool}"));
    }
    if let Some(call) = &r.call_id {
        line.push_str(&format!(" ({call})"));
    }
    if let Some(tier) = r.tier {
        line.push_str(&format!(" tier={}", tier.as_str()));
    }
    match r.status {
        AuditStatus::RunStarted => {
            if let Some(tools) =
                r.result.as_ref().and_then(|v| v.value()?.get("available_tools")).and_then(|v| v.as_array())
            {
                let names: Vec<&str> = tools.iter().filter_map(|t| t.as_str()).collect();
                line.push_str(&format!(
                    " user={} role={} org={} available=[{}]",
                    r.user_id,
                    r.role,
                    r.org_id,
                    names.join(", ")
                ));
            }
        }
        AuditStatus::Proposed | AuditStatus::HandedOff => {
            if r.values_omitted() {
                let names: Vec<&str> =
                    r.args.iter().flat_map(|a| a.as_object()).flat_map(|m| m.keys()).map(String::as_str).collect();
                line.push_str(&format!(" args=(values omitted: {})", names.join(", ")));
            } else if let Some(args) = &r.args {
                line.push_str(&format!(" args={}", canonical(args)));
            }
        }
        _ => {}
    }
    if let Some(reason) = &r.reason {
        line.push_str(&format!(" reason=\"{reason}\""));
    }
    line
}

/// The severe failures in an audit log: the one definition, from
/// [`agents_runtime::audit::severe`], that `agents audit stats` applies too.
pub use agents_runtime::audit::severe::severe_failures;

/// A multi-threaded Tokio runtime with two workers, for the examples' entry points.
pub fn tokio_runtime() -> io::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()
}

/// The provider the environment configures, else the offline model `offline` builds.
pub fn provider_or_offline(offline: impl FnOnce() -> RuleProvider) -> io::Result<Arc<dyn Provider>> {
    Ok(match provider_from_env().map_err(io::Error::other)? {
        Some(p) => Arc::from(p),
        None => Arc::new(offline()),
    })
}

/// `v` as canonical JSON, as the audit log writes it (numbers in their shortest form).
pub fn canonical(v: &Value) -> String {
    agents_runtime::agents_core::canonical::to_string(v)
}

/// A card's warning line: the runtime's own sentence saying which argument came from content
/// the user did not write (the `why` of its confirm request), escaped for the terminal.
pub fn warning_line(why: &str) -> String {
    format!("  │  ! check before deciding: {}", agents_runtime::agents_core::terminal::escape(why))
}

/// Sends a person's answer to a terminal card. When the application's policy asks a second
/// confirmation of this proposal (a value in it came from content the user did not write;
/// [`UntrustedPolicy::SecondConfirmation`](agents_runtime::untrusted::UntrustedPolicy::SecondConfirmation)),
/// the runtime answers the first approval with the warning: a second card shows it, and
/// `again` (the person's answer to that card) decides. Only an approval of the second card
/// sends the acknowledgement the runtime bound to this proposal; anything else declines it.
/// Returns the verdict that was sent.
pub async fn send_verdict(
    rt: &Runtime,
    screen: &mut Screen<'_>,
    who: &Principal,
    call_id: &str,
    verdict: Verdict,
    again: impl AsyncFnOnce(&mut Screen<'_>) -> io::Result<Verdict>,
) -> io::Result<Verdict> {
    let ack = match rt.decide(call_id, who, verdict) {
        Err(DecisionError::AcknowledgementRequired(ack)) => ack,
        other => return other.map(|()| verdict).map_err(io::Error::other),
    };
    writeln!(screen.out, "  ┌─ Second confirmation")?;
    writeln!(screen.out, "{}", warning_line(&ack.warning))?;
    write!(screen.out, "  └─ {}? [y/N] ", agents_runtime::agents_core::terminal::escape(&ack.phrase()))?;
    let second = again(screen).await?;
    let sent = if second == Verdict::Approve {
        rt.acknowledge(call_id, who, &ack.digest).await
    } else {
        rt.decide_async(call_id, who, Verdict::Reject, Some("declined at the second confirmation")).await
    };
    sent.map_err(io::Error::other)?;
    Ok(second)
}

/// `v` as JSON, cut to `max` characters with an ellipsis.
pub fn short(v: &Value, max: usize) -> String {
    let s = v.to_string();
    if s.chars().count() > max { format!("{}…", s.chars().take(max).collect::<String>()) } else { s }
}

/// One line from standard input without its line ending, read off the async runtime's
/// threads; `None` at end of input.
pub async fn read_line() -> io::Result<Option<String>> {
    tokio::task::spawn_blocking(|| {
        let mut line = String::new();
        match io::stdin().lock().read_line(&mut line)? {
            0 => Ok(None),
            _ => Ok(Some(line.trim_end().to_owned())),
        }
    })
    .await
    .map_err(io::Error::other)?
}

/// Where a demo or chat prints: the conversation, with the audit records interleaved as the
/// log receives them.
pub struct Screen<'a> {
    /// The output.
    pub out: &'a mut dyn Write,
    /// The audit log being followed.
    pub tail: AuditTail,
    /// The records a [`ShowingSink`] handed over, in chain order.
    pub shown: Vec<AuditRecord>,
    /// The argument values and results the screen was shown (the events, the cards), kept to
    /// check the audit log against them.
    pub seen: Vec<serde_json::Value>,
}

impl std::fmt::Debug for Screen<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Screen").field("tail", &self.tail).finish_non_exhaustive()
    }
}

impl<'a> Screen<'a> {
    /// Prints to `out`, following the audit log at `audit_path`.
    pub fn new(out: &'a mut dyn Write, audit_path: &Path) -> Self {
        Screen { out, tail: AuditTail::new(audit_path), shown: Vec::new(), seen: Vec::new() }
    }

    /// Prints one record a [`ShowingSink`] handed over and keeps it.
    pub fn record(&mut self, record: AuditRecord) -> io::Result<()> {
        writeln!(self.out, "      {}", format_record(&record))?;
        self.shown.push(record);
        Ok(())
    }

    /// Shows one run in causal order: its events as `show` prints them, and each record of
    /// `records` (the receiver of a [`ShowingSink`]) after the events published before it;
    /// returns when the run ended (`finished` resolved) and everything it published is shown.
    pub async fn show_turn<T>(
        &mut self,
        events: &mut tokio::sync::mpsc::Receiver<Event>,
        records: &mut tokio::sync::mpsc::UnboundedReceiver<Shown>,
        finished: impl std::future::Future<Output = T>,
        mut show: impl FnMut(&mut Self, Event) -> io::Result<()>,
    ) -> io::Result<T> {
        let mut finished = std::pin::pin!(finished);
        let outcome = loop {
            tokio::select! {
                biased;
                Some(shown) = records.recv() => {
                    // Every event published before this record is queued already.
                    while let Ok(event) = events.try_recv() {
                        show(self, event)?;
                    }
                    self.record(shown.record.clone())?;
                    shown.done();
                }
                Some(event) = events.recv() => show(self, event)?,
                outcome = &mut finished => break outcome,
            }
        };
        while let Ok(event) = events.try_recv() {
            show(self, event)?;
        }
        while let Ok(shown) = records.try_recv() {
            self.record(shown.record.clone())?;
            shown.done();
        }
        Ok(outcome)
    }

    /// Prints the audit records written since the last call, one line each.
    pub fn audit(&mut self) -> io::Result<()> {
        for r in self.tail.poll()? {
            writeln!(self.out, "      {}", format_record(&r))?;
        }
        Ok(())
    }

    /// Prints that `agent` calls `tool`, with the arguments in canonical JSON as the audit log
    /// writes them (`3`, not `3.0`). The call's id is left to the audit records that follow:
    /// the gate may file a call under the id of the proposal it confirms.
    pub fn tool_call(&mut self, agent: &str, tool: &str, args: Option<&Value>) -> io::Result<()> {
        writeln!(self.out, "  {agent} calls {tool} {}", args.map(canonical).unwrap_or_default())
    }

    /// Prints a message of `agent`, its continuation lines indented under the first.
    pub fn message(&mut self, agent: &str, text: &str) -> io::Result<()> {
        let indent = format!("\n{}", " ".repeat(agent.chars().count() + 2));
        writeln!(self.out, "{agent}: {}", text.replace('\n', &indent))
    }

    /// Prompts for the next request of a chat; `None` at end of input or on `quit` / `exit`.
    pub async fn next_request(&mut self) -> io::Result<Option<String>> {
        loop {
            write!(self.out, "\n> ")?;
            self.out.flush()?;
            let Some(line) = read_line().await? else { return Ok(None) };
            let line = line.trim();
            if line.is_empty() {
                continue;
            }
            if matches!(line, "quit" | "exit") {
                return Ok(None);
            }
            return Ok(Some(line.to_owned()));
        }
    }
}
