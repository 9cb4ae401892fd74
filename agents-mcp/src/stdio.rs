//! Newline-delimited JSON-RPC over a byte stream, with a frame limit and answers to
//! malformed frames.
//!
//! A frame longer than the limit is dropped without being buffered and answered with
//! `-32600` (id `null`); a frame that is not JSON is answered with `-32700` (id `null`); a
//! JSON request of the wrong shape is answered with `-32600` under its own id. The stream
//! stays open in every case. Only JSON-RPC is ever written.

use crate::options::{McpError, McpOptions};
use crate::server::McpServer;
use crate::strict::{INVALID_REQUEST, strict_refusal};
use agents_runtime::{Principal, Registry, Runtime};
use rmcp::RoleServer;
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use serde_json::{Value, json};
use std::sync::Arc;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::Mutex;

const PARSE_ERROR: i64 = -32700;

/// Serves agent `A` for `principal` over stdin/stdout until the client disconnects.
///
/// Refused ([`McpError::NotExposed`]) unless the agent's manifest names `stdio`
/// (`expose: { mcp: [stdio] }`).
///
/// Nothing else may write to stdout while this runs; see the crate docs for logging.
pub async fn serve_stdio<A: Registry>(
    runtime: Runtime,
    principal: Principal,
    options: McpOptions,
) -> Result<(), McpError> {
    serve_io::<A, _, _>(runtime, principal, options, tokio::io::stdin(), tokio::io::stdout()).await
}

/// Serves agent `A` for `principal` over any newline-delimited JSON-RPC byte stream (stdio,
/// a pipe, a socket) until the peer disconnects. Refused ([`McpError::NotExposed`]) unless
/// the agent's manifest names `stdio`: the stream serves the one principal the application
/// names, as stdio does.
pub async fn serve_io<A, R, W>(
    runtime: Runtime,
    principal: Principal,
    options: McpOptions,
    read: R,
    write: W,
) -> Result<(), McpError>
where
    A: Registry,
    R: AsyncRead + Send + Unpin + 'static,
    W: AsyncWrite + Send + Unpin + 'static,
{
    crate::options::check_exposed::<A>(agents_core::expose::McpExposure::Stdio)?;
    let max = max_frame(&options)?;
    serve_lines(McpServer::<A>::new(runtime, Some(principal), options), max, read, write).await
}

/// The frame limit of `options`, refused when it is zero.
pub(crate) fn max_frame(options: &McpOptions) -> Result<usize, McpError> {
    if options.max_frame_bytes == 0 {
        return Err(McpError::Options("max_frame_bytes must be at least 1".into()));
    }
    Ok(options.max_frame_bytes)
}

/// Serves `server` over a newline-delimited JSON-RPC byte stream, frames up to `max` bytes,
/// until the peer disconnects.
pub(crate) async fn serve_lines<S, R, W>(server: S, max: usize, read: R, write: W) -> Result<(), McpError>
where
    S: rmcp::ServerHandler,
    R: AsyncRead + Send + Unpin + 'static,
    W: AsyncWrite + Send + Unpin + 'static,
{
    use rmcp::ServiceExt;
    let transport = LineTransport::new(read, write, max);
    let running = server.serve(transport).await.map_err(|e| McpError::Handshake(e.to_string()))?;
    running.waiting().await.map_err(|e| McpError::Serve(e.to_string()))?;
    Ok(())
}

struct LineTransport<R, W> {
    read: BufReader<R>,
    line: Vec<u8>,
    /// Inside an oversized frame, until its newline. Kept here because `receive` can be
    /// cancelled between reads.
    discarding: bool,
    max: usize,
    write: Arc<Mutex<W>>,
}

enum Line {
    Full,
    Oversized,
    Eof,
    Io(std::io::Error),
}

impl<R, W> LineTransport<R, W>
where
    R: AsyncRead + Send + Unpin,
    W: AsyncWrite + Send + Unpin + 'static,
{
    fn new(read: R, write: W, max: usize) -> Self {
        LineTransport {
            read: BufReader::new(read),
            line: Vec::new(),
            discarding: false,
            max,
            write: Arc::new(Mutex::new(write)),
        }
    }

    /// Reads one frame into `self.line` without letting it grow past the limit. Cancel-safe:
    /// bytes move from the reader's buffer into `self.line` in one synchronous step.
    async fn read_line(&mut self) -> Line {
        let LineTransport { read, line, discarding, max, .. } = self;
        loop {
            let (consumed, outcome) = {
                let buf = match read.fill_buf().await {
                    Ok(b) => b,
                    Err(e) => return Line::Io(e),
                };
                if buf.is_empty() {
                    return Line::Eof;
                }
                match buf.iter().position(|b| *b == b'\n') {
                    Some(i) if *discarding => {
                        *discarding = false;
                        (i + 1, None)
                    }
                    Some(i) if line.len() + i > *max => {
                        line.clear();
                        (i + 1, Some(Line::Oversized))
                    }
                    Some(i) => {
                        line.extend_from_slice(&buf[..i]);
                        (i + 1, Some(Line::Full))
                    }
                    None if *discarding => (buf.len(), None),
                    None if line.len() + buf.len() > *max => {
                        line.clear();
                        *discarding = true;
                        (buf.len(), Some(Line::Oversized))
                    }
                    None => {
                        line.extend_from_slice(buf);
                        (buf.len(), None)
                    }
                }
            };
            read.consume(consumed);
            if let Some(o) = outcome {
                return o;
            }
        }
    }
}

async fn reply_error<W: AsyncWrite + Send + Unpin>(write: &Mutex<W>, id: Value, code: i64, message: String) {
    {
        let mut bytes =
            json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}}).to_string().into_bytes();
        bytes.push(b'\n');
        let mut w = write.lock().await;
        if let Err(e) = async {
            w.write_all(&bytes).await?;
            w.flush().await
        }
        .await
        {
            tracing::warn!(error = %e, "could not write an error response");
        }
    }
}

impl<R, W> Transport<RoleServer> for LineTransport<R, W>
where
    R: AsyncRead + Send + Unpin,
    W: AsyncWrite + Send + Unpin + 'static,
{
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let write = self.write.clone();
        async move {
            let mut bytes = serde_json::to_vec(&item).map_err(std::io::Error::other)?;
            bytes.push(b'\n');
            let mut w = write.lock().await;
            w.write_all(&bytes).await?;
            w.flush().await
        }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        loop {
            match self.read_line().await {
                Line::Full => {}
                Line::Oversized => {
                    tracing::warn!(max_frame_bytes = self.max, "a frame over the size limit was dropped");
                    let msg =
                        format!("frame too large: frames are limited to {} bytes; this one was dropped", self.max);
                    reply_error(&self.write, Value::Null, INVALID_REQUEST, msg).await;
                    continue;
                }
                Line::Eof => return None,
                Line::Io(e) => {
                    tracing::error!(error = %e, "reading the MCP stream failed");
                    return None;
                }
            }
            let line = std::mem::take(&mut self.line);
            let mut frame: &[u8] = &line;
            frame = frame.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(frame);
            frame = frame.strip_suffix(b"\r").unwrap_or(frame);
            if frame.iter().all(u8::is_ascii_whitespace) {
                self.line = line;
                self.line.clear();
                continue;
            }
            // rmcp hands tool arguments over already parsed, where a duplicate key has
            // silently collapsed; the raw frame is the last place the strict rules can see.
            if let Some(refusal) = strict_refusal(frame) {
                self.line = line;
                self.line.clear();
                let (id, message) = refusal;
                tracing::debug!(%message, "frame refused by the strict parse");
                reply_error(&self.write, id, INVALID_REQUEST, message).await;
                continue;
            }
            let parsed = serde_json::from_slice::<RxJsonRpcMessage<RoleServer>>(frame);
            let failure = match parsed {
                Ok(message) => {
                    self.line = line;
                    self.line.clear();
                    return Some(message);
                }
                Err(e) => match serde_json::from_slice::<Value>(frame) {
                    Err(_) => Some((Value::Null, PARSE_ERROR, "parse error: the frame is not valid JSON".to_owned())),
                    Ok(v) => {
                        let id = v.get("id").cloned();
                        let is_request = v.get("method").is_some() && id.is_some();
                        if is_request || !v.is_object() {
                            Some((id.unwrap_or(Value::Null), INVALID_REQUEST, format!("invalid request: {e}")))
                        } else {
                            // A notification or a response we cannot read: nothing to answer.
                            tracing::debug!(error = %e, "an unreadable notification or response was ignored");
                            None
                        }
                    }
                },
            };
            self.line = line;
            self.line.clear();
            if let Some((id, code, message)) = failure {
                tracing::debug!(code, %message, "malformed frame answered");
                reply_error(&self.write, id, code, message).await;
            }
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        self.write.lock().await.shutdown().await
    }
}
