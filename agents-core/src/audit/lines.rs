//! Reading a JSONL log line by line with a bound on a line's length, so that a file of any
//! size or content is read in bounded memory.

use std::io::{self, BufRead};

/// One line as read: its bytes without the newline.
#[derive(Debug)]
pub struct RawLine<'a> {
    /// 1-based line number.
    pub number: usize,
    /// Byte offset where the line starts.
    pub offset: u64,
    /// The line's bytes, without the newline.
    pub bytes: &'a [u8],
    /// Whether a newline ended it (only the last line of a file can lack one).
    pub terminated: bool,
}

/// Why a line could not be read.
#[derive(Debug, thiserror::Error)]
pub enum LineError {
    /// The input could not be read.
    #[error("read failed after line {line}: {source}")]
    Io {
        /// Lines read before the failure.
        line: usize,
        /// What the operating system said.
        source: io::Error,
    },
    /// A line is longer than the limit (a file that is not a log, or a damaged one).
    #[error("line {line} is longer than {limit} bytes")]
    TooLong {
        /// 1-based line number.
        line: usize,
        /// The limit.
        limit: usize,
    },
}

/// Reads lines of at most `limit` bytes from a [`BufRead`], holding one line at a time.
///
/// ```
/// use agents_core::audit::lines::JsonlLines;
/// let mut lines = JsonlLines::new(&b"{}\n{\"a\":1}"[..], 16);
/// assert_eq!(lines.next_line().unwrap().unwrap().bytes, b"{}");
/// let last = lines.next_line().unwrap().unwrap();
/// assert_eq!((last.number, last.terminated), (2, false));
/// assert!(lines.next_line().unwrap().is_none());
/// ```
#[derive(Debug)]
pub struct JsonlLines<R> {
    inner: R,
    buf: Vec<u8>,
    line: usize,
    offset: u64,
    limit: usize,
}

impl<R: BufRead> JsonlLines<R> {
    /// Lines of at most `limit` bytes (without the newline).
    pub fn new(inner: R, limit: usize) -> Self {
        JsonlLines { inner, buf: Vec::new(), line: 0, offset: 0, limit }
    }

    /// Bytes consumed so far.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// The next line, `None` at the end of the input.
    pub fn next_line(&mut self) -> Result<Option<RawLine<'_>>, LineError> {
        self.buf.clear();
        let start = self.offset;
        let mut terminated = false;
        loop {
            let available = match self.inner.fill_buf() {
                Ok(b) => b,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(source) => return Err(LineError::Io { line: self.line, source }),
            };
            if available.is_empty() {
                break;
            }
            let (take, used, done) = match available.iter().position(|b| *b == b'\n') {
                Some(i) => (i, i + 1, true),
                None => (available.len(), available.len(), false),
            };
            if self.buf.len() + take > self.limit {
                return Err(LineError::TooLong { line: self.line + 1, limit: self.limit });
            }
            self.buf.extend_from_slice(&available[..take]);
            self.inner.consume(used);
            self.offset += used as u64;
            if done {
                terminated = true;
                break;
            }
        }
        if !terminated && self.buf.is_empty() {
            return Ok(None);
        }
        self.line += 1;
        Ok(Some(RawLine { number: self.line, offset: start, bytes: &self.buf, terminated }))
    }
}
