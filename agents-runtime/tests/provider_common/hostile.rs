//! A hostile server on 127.0.0.1: it answers every connection with the same head and a body
//! that may be endless, written in 64 KiB pieces (so the server itself holds almost nothing),
//! and counts the bytes the client took before it hung up.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// What follows the head.
#[derive(Debug, Clone)]
pub enum Body {
    /// These bytes, then the connection closes.
    Fixed(Vec<u8>),
    /// `prefix`, then `unit` repeated until `total` bytes were written (or the client hung
    /// up), then `suffix`.
    Endless { prefix: Vec<u8>, unit: Vec<u8>, suffix: Vec<u8>, total: u64 },
    /// `prefix`, then `unit(i)` for i = 0, 1, ... until `total` bytes were written.
    Numbered { prefix: Vec<u8>, unit: fn(u64) -> Vec<u8>, total: u64 },
}

type Answer = (Arc<Vec<u8>>, Arc<Body>);

pub struct Hostile {
    pub base_url: String,
    written: Arc<AtomicU64>,
    connections: Arc<AtomicUsize>,
    answer: Arc<std::sync::Mutex<Answer>>,
}

impl Hostile {
    /// Serves `head` (status line and headers, ending in an empty line) and `body`.
    pub async fn start(head: impl Into<Vec<u8>>, body: Body) -> Self {
        let answer = Arc::new(std::sync::Mutex::new((Arc::new(head.into()), Arc::new(body))));
        let current = answer.clone();
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base_url = format!("http://{}", listener.local_addr().unwrap());
        let written = Arc::new(AtomicU64::new(0));
        let connections = Arc::new(AtomicUsize::new(0));
        let (w, c) = (written.clone(), connections.clone());
        tokio::spawn(async move {
            loop {
                let Ok((mut socket, _)) = listener.accept().await else { return };
                c.fetch_add(1, Ordering::SeqCst);
                let (head, body) = current.lock().unwrap().clone();
                let w = w.clone();
                tokio::spawn(async move {
                    // Read the request head and body (the client sends a small JSON body).
                    let mut buf = vec![0u8; 64 * 1024];
                    let mut seen = Vec::new();
                    loop {
                        let Ok(n) = socket.read(&mut buf).await else { return };
                        if n == 0 {
                            return;
                        }
                        seen.extend_from_slice(&buf[..n]);
                        if let Some(at) = seen.windows(4).position(|x| x == b"\r\n\r\n") {
                            let head_text = String::from_utf8_lossy(&seen[..at]).to_ascii_lowercase();
                            let length: usize = head_text
                                .lines()
                                .find_map(|l| l.strip_prefix("content-length:"))
                                .and_then(|v| v.trim().parse().ok())
                                .unwrap_or(0);
                            if seen.len() >= at + 4 + length {
                                break;
                            }
                        }
                    }
                    if socket.write_all(&head).await.is_err() {
                        return;
                    }
                    match &*body {
                        Body::Fixed(bytes) => {
                            if socket.write_all(bytes).await.is_ok() {
                                w.fetch_add(bytes.len() as u64, Ordering::SeqCst);
                            }
                        }
                        Body::Endless { prefix, unit, suffix, total } => {
                            let mut piece = Vec::with_capacity(64 * 1024 + unit.len());
                            let mut sent = 0u64;
                            if socket.write_all(prefix).await.is_err() {
                                return;
                            }
                            sent += prefix.len() as u64;
                            w.fetch_add(prefix.len() as u64, Ordering::SeqCst);
                            while sent < *total {
                                piece.clear();
                                while piece.len() < 64 * 1024 {
                                    piece.extend_from_slice(unit);
                                }
                                if socket.write_all(&piece).await.is_err() {
                                    return;
                                }
                                sent += piece.len() as u64;
                                w.fetch_add(piece.len() as u64, Ordering::SeqCst);
                            }
                            if socket.write_all(suffix).await.is_ok() {
                                w.fetch_add(suffix.len() as u64, Ordering::SeqCst);
                            }
                        }
                        Body::Numbered { prefix, unit, total } => {
                            if socket.write_all(prefix).await.is_err() {
                                return;
                            }
                            let mut sent = prefix.len() as u64;
                            w.fetch_add(sent, Ordering::SeqCst);
                            let mut i = 0;
                            let mut piece = Vec::with_capacity(128 * 1024);
                            while sent < *total {
                                piece.clear();
                                while piece.len() < 64 * 1024 {
                                    piece.extend_from_slice(&unit(i));
                                    i += 1;
                                }
                                if socket.write_all(&piece).await.is_err() {
                                    return;
                                }
                                sent += piece.len() as u64;
                                w.fetch_add(piece.len() as u64, Ordering::SeqCst);
                            }
                        }
                    }
                    let _ = socket.shutdown().await;
                });
            }
        });
        Self { base_url, written, connections, answer }
    }

    /// Answers the next connections with `head` and `body`.
    pub fn set(&self, head: impl Into<Vec<u8>>, body: Body) {
        *self.answer.lock().unwrap() = (Arc::new(head.into()), Arc::new(body));
    }

    /// Bytes of body the server managed to write (the client's socket buffers hold some that
    /// the client never read).
    pub fn written(&self) -> u64 {
        self.written.load(Ordering::SeqCst)
    }

    pub fn connections(&self) -> usize {
        self.connections.load(Ordering::SeqCst)
    }
}

/// A 200 head for a body read until the connection closes.
pub fn head(content_type: &str) -> String {
    format!("HTTP/1.1 200 OK\r\ncontent-type: {content_type}\r\nconnection: close\r\n\r\n")
}

/// Reads a `kB` field of `/proc/self/status` as bytes.
pub fn status_bytes(field: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status")
        .expect("this test measures memory through /proc/self/status, which must exist (Linux)");
    let line = status
        .lines()
        .find(|l| l.starts_with(field))
        .unwrap_or_else(|| panic!("/proc/self/status has no {field} line"));
    let kb: u64 = line.split_whitespace().nth(1).and_then(|v| v.parse().ok()).expect("a number of kB");
    kb * 1024
}

/// Resets the process's peak RSS (`VmHWM`) to its current RSS and returns that RSS.
pub fn reset_peak() -> u64 {
    std::fs::write("/proc/self/clear_refs", "5")
        .expect("this test resets the peak RSS through /proc/self/clear_refs, which must be writable (Linux ≥ 4.0)");
    status_bytes("VmRSS:")
}

/// The growth of the peak RSS since `baseline` (from [`reset_peak`]).
pub fn peak_growth(baseline: u64) -> u64 {
    status_bytes("VmHWM:").saturating_sub(baseline)
}
