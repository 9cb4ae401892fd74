//! Running out of file descriptors: `accept` fails while a client waits in the listen queue.
//! The server backs off instead of retrying in a busy loop, and serves the client once
//! descriptors are free again. Alone in its own test binary: it lowers the process's
//! descriptor limit.

use agents_mcp::{McpHttpOptions, serve_http};
use agents_runtime::audit::MemorySink;
use agents_runtime::provider::ScriptedProvider;
use agents_runtime::{Principal, RoleMap, Runtime, agent, permissions, tool};
use std::io::{Read, Seek};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

permissions! {
    pub mod perms { note.read }
}

/// Reads a note.
#[tool(permission = perms::note::read)]
async fn read_note(id: u32) -> Result<String, String> {
    Ok(format!("note {id}"))
}

agent! {
    /// Notes.
    pub struct Notes;
    tools: [read_note],
    expose: { mcp: [http(auth = bearer)] },
}

/// CPU time (user + system) of this process so far, read through a file opened beforehand
/// (there is no descriptor to open one with during the test).
fn cpu_time(stat: &mut std::fs::File) -> Duration {
    let mut text = String::new();
    stat.rewind().unwrap();
    stat.read_to_string(&mut text).unwrap();
    // Fields after the command name (which may hold spaces) start at the last ')'.
    let fields: Vec<&str> = text[text.rfind(')').unwrap() + 2..].split_whitespace().collect();
    let ticks: u64 = fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap();
    // /proc reports in USER_HZ, which Linux fixes at 100 for user space.
    Duration::from_millis(ticks * 10)
}

fn open_descriptors() -> u64 {
    std::fs::read_dir("/proc/self/fd").expect("/proc/self/fd is readable on Linux").count() as u64
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn descriptor_exhaustion_does_not_spin_the_accept_loop() {
    use rustix::process::{Resource, getrlimit, setrlimit};
    let audit = Arc::new(MemorySink::new());
    let rt = Runtime::builder(audit, Arc::new(ScriptedProvider::new([])))
        .roles(RoleMap::new().role("r", ["note.read"]))
        .build();
    let mut opts = McpHttpOptions::default();
    opts.bearer_tokens.insert("t".into(), Principal::new("u", "o", "r"));
    let s = serve_http::<Notes>(rt, opts).await.unwrap();
    let addr = s.local_addr();
    let mut stat = std::fs::File::open("/proc/self/stat").unwrap();

    let original = getrlimit(Resource::Nofile);
    let mut low = original;
    low.current = Some(open_descriptors() + 32);
    setrlimit(Resource::Nofile, low).expect("lowering the soft descriptor limit");
    // Use up every descriptor, then give one to a client: its connection waits in the listen
    // queue, and the server has none left to accept it with.
    let mut filler = Vec::new();
    loop {
        match std::fs::File::open("/dev/null") {
            Ok(f) => filler.push(f),
            Err(e) => {
                assert_eq!(e.raw_os_error(), Some(24), "EMFILE expected, got {e}");
                break;
            }
        }
    }
    drop(filler.pop());
    let mut client = tokio::net::TcpStream::connect(addr).await.expect("the kernel completes the handshake");
    assert!(std::fs::File::open("/dev/null").is_err(), "no descriptor is left");

    let window = Duration::from_secs(2);
    let before = cpu_time(&mut stat);
    tokio::time::sleep(window).await;
    let used = cpu_time(&mut stat) - before;
    let share = used.as_secs_f64() / window.as_secs_f64();
    eprintln!(
        "CPU time of the process over {window:?} out of descriptors: {used:?} ({:.1}% of one core)",
        share * 100.0
    );

    // Descriptors come back; the waiting client is served.
    drop(filler);
    setrlimit(Resource::Nofile, original).unwrap();
    client
        .write_all(
            format!("GET /mcp HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nConnection: close\r\n\r\n", addr.port()).as_bytes(),
        )
        .await
        .unwrap();
    let mut answer = Vec::new();
    tokio::time::timeout(Duration::from_secs(10), client.read_to_end(&mut answer)).await.expect("an answer").unwrap();
    let answer = String::from_utf8_lossy(&answer);
    assert!(answer.starts_with("HTTP/1.1 401"), "served once descriptors are free: {answer}");

    // A busy loop would use about one whole core; backing off uses next to nothing.
    assert!(share < 0.10, "the accept loop used {:.0}% of a core while out of descriptors", share * 100.0);
    s.shutdown();
    s.wait().await;
}
