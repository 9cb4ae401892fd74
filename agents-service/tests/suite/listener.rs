//! The service's own listener ([`Service::serve`](agents_service::Service::serve)) against
//! clients that hold connections open, over real loopback TCP: headers sent byte by byte are
//! cut at the header-read timeout, a quiet connection at the keep-alive timeout, and clients
//! beyond the connection cap wait in the listen queue until a connection ends.

use agents_runtime::audit::MemorySink;
use agents_service::{ConnectionLimits, DevAuthenticator, Service};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::time::{Instant, timeout};

async fn serve(limits: ConnectionLimits) -> SocketAddr {
    let audit = Arc::new(MemorySink::new());
    let service = Service::builder(Arc::new(DevAuthenticator::enabled()), audit.clone(), audit).build();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = listener.local_addr().unwrap();
    service.serve(listener, service.router(), limits).unwrap();
    base
}

fn request(base: SocketAddr) -> String {
    format!(
        "GET /v1/agents HTTP/1.1\r\nHost: {base}\r\nX-Dev-Principal: alice/acme/employee\r\nConnection: close\r\n\r\n"
    )
}

/// Whether the server closed `stream` (end of stream or reset) within `within`, reading and
/// dropping whatever it sends.
async fn closed_within(stream: &mut TcpStream, within: Duration) -> bool {
    let mut buf = [0u8; 1024];
    let deadline = Instant::now() + within;
    loop {
        match timeout(deadline.saturating_duration_since(Instant::now()), stream.read(&mut buf)).await {
            Err(_) => return false,
            Ok(Ok(0)) | Ok(Err(_)) => return true,
            Ok(Ok(_)) => {}
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn headers_sent_byte_by_byte_are_cut_at_the_header_read_timeout() {
    let mut limits = ConnectionLimits::default();
    limits.header_read_timeout = Duration::from_secs(1);
    let base = serve(limits).await;
    // Taken before the connection exists, so it is never later than the server's timer, which
    // starts when the server has accepted the connection.
    let started = Instant::now();
    let mut stream = TcpStream::connect(base).await.unwrap();
    // Headers that never end: one byte every 100 ms (each byte keeps the connection active, so
    // only the header timeout can end it). Sending stops at 20 s, far beyond the limit.
    let head = format!("GET /v1/agents HTTP/1.1\r\nHost: {base}\r\nX-Slow: {}", "a".repeat(400));
    let mut cut = false;
    for byte in head.as_bytes() {
        if stream.write_all(&[*byte]).await.is_err() {
            cut = true;
            break;
        }
        if closed_within(&mut stream, Duration::from_millis(100)).await {
            cut = true;
            break;
        }
        if started.elapsed() > Duration::from_secs(20) {
            break;
        }
    }
    assert!(cut, "a client sending its headers byte by byte was still served after {:?}", started.elapsed());
    assert!(started.elapsed() >= Duration::from_secs(1), "cut before the header timeout: {:?}", started.elapsed());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_quiet_connection_is_closed_at_the_keep_alive_timeout() {
    let mut limits = ConnectionLimits::default();
    limits.keep_alive_timeout = Duration::from_secs(1);
    limits.header_read_timeout = Duration::from_secs(60);
    let base = serve(limits).await;
    let mut stream = TcpStream::connect(base).await.unwrap();
    // Nothing sent: the connection holds a slot until the keep-alive timeout ends it.
    assert!(closed_within(&mut stream, Duration::from_secs(15)).await, "a silent connection stayed open");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clients_beyond_the_connection_cap_wait_until_a_connection_ends() {
    let mut limits = ConnectionLimits::default();
    limits.max_connections = 2;
    limits.header_read_timeout = Duration::from_secs(60);
    limits.keep_alive_timeout = Duration::from_secs(60);
    let base = serve(limits).await;
    // Two connections hold the two slots (each answered once, then kept open).
    let mut held = Vec::new();
    for _ in 0..2 {
        let mut s = TcpStream::connect(base).await.unwrap();
        let keep = request(base).replace("Connection: close", "Connection: keep-alive");
        s.write_all(keep.as_bytes()).await.unwrap();
        let mut buf = [0u8; 4096];
        let n = timeout(Duration::from_secs(10), s.read(&mut buf)).await.unwrap().unwrap();
        assert!(
            String::from_utf8_lossy(&buf[..n]).starts_with("HTTP/1.1 200"),
            "{}",
            String::from_utf8_lossy(&buf[..n])
        );
        held.push(s);
    }
    // A third client: its connection waits in the listen queue and its request is not read.
    let mut third = TcpStream::connect(base).await.unwrap();
    third.write_all(request(base).as_bytes()).await.unwrap();
    let mut buf = [0u8; 4096];
    let early = timeout(Duration::from_secs(1), third.read(&mut buf)).await;
    assert!(early.is_err(), "a client beyond the cap was served: {early:?}");
    // One held connection ends: the third is served.
    drop(held.pop());
    let n = timeout(Duration::from_secs(10), third.read(&mut buf)).await.expect("served once a slot is free").unwrap();
    assert!(String::from_utf8_lossy(&buf[..n]).starts_with("HTTP/1.1 200"), "{}", String::from_utf8_lossy(&buf[..n]));
}

#[test]
fn limits_that_cannot_be_served_are_refused() {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    rt.block_on(async {
        let audit = Arc::new(MemorySink::new());
        let service = Service::builder(Arc::new(DevAuthenticator::enabled()), audit.clone(), audit).build();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let mut limits = ConnectionLimits::default();
        // Under the event streams' keep-alive interval (15 s): quiet streams would be cut.
        limits.idle_timeout = Duration::from_secs(5);
        let err = service.serve(listener, service.router(), limits).unwrap_err().to_string();
        assert!(err.contains("idle_timeout"), "{err}");
    });
}
