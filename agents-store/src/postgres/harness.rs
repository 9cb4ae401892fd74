//! A throwaway PostgreSQL cluster for tests and benchmarks.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// Why a throwaway cluster could not start.
#[derive(Debug, thiserror::Error)]
#[error(
    "cannot start a throwaway PostgreSQL cluster: {0}. The PostgreSQL tests need Debian's `postgresql` package, \
     whose binaries are looked for under /usr/lib/postgresql/*/bin: run `cargo xtask setup` (or `cargo xtask test`), \
     which installs it, or `apt-get install -y postgresql` yourself"
)]
pub struct HarnessError(String);

/// A PostgreSQL cluster in a temporary directory, on a free port of 127.0.0.1, with trust
/// authentication for the `postgres` user, stopped and deleted when dropped (also while a
/// panicking test unwinds).
///
/// Run as root, the server's programs run as the `postgres` user (`runuser`), since
/// PostgreSQL refuses to run as root. For tests and benchmarks only: anyone on the host can
/// connect to it as the superuser.
#[derive(Debug)]
pub struct TempCluster {
    dir: tempfile::TempDir,
    bin: PathBuf,
    port: u16,
    as_postgres: bool,
}

fn err(what: impl std::fmt::Display) -> HarnessError {
    HarnessError(what.to_string())
}

/// The newest `/usr/lib/postgresql/<version>/bin` that holds `initdb` and `pg_ctl`.
fn find_bin() -> Result<PathBuf, HarnessError> {
    let root = Path::new("/usr/lib/postgresql");
    let mut found: Vec<(u32, PathBuf)> = std::fs::read_dir(root)
        .map_err(|e| err(format!("{}: {e}", root.display())))?
        .filter_map(Result::ok)
        .filter_map(|entry| {
            let version: u32 = entry.file_name().to_str()?.parse().ok()?;
            let bin = entry.path().join("bin");
            (bin.join("initdb").is_file() && bin.join("pg_ctl").is_file()).then_some((version, bin))
        })
        .collect();
    found.sort();
    found.pop().map(|(_, bin)| bin).ok_or_else(|| err(format!("no initdb and pg_ctl under {}/*/bin", root.display())))
}

/// How many free ports a start tries before it gives up.
const PORT_TRIES: u32 = 5;

/// A port of 127.0.0.1 free at this moment (bound, then released).
fn free_port() -> Result<u16, HarnessError> {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .map_err(|e| err(format!("no free port: {e}")))
}

fn running_as_root() -> bool {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata("/proc/self").map(|m| m.uid() == 0).unwrap_or(false)
}

impl TempCluster {
    /// Creates the cluster (`initdb`), starts it (`pg_ctl start -w`, which waits until it
    /// accepts connections) and returns once it does.
    pub fn start() -> Result<Self, HarnessError> {
        let bin = find_bin()?;
        let as_postgres = running_as_root();
        let dir = tempfile::Builder::new().prefix("agents-pg-").tempdir().map_err(|e| err(format!("temp dir: {e}")))?;
        if as_postgres {
            let status = Command::new("chown")
                .arg("postgres:")
                .arg(dir.path())
                .status()
                .map_err(|e| err(format!("chown: {e}")))?;
            if !status.success() {
                return Err(err("cannot give the temp dir to the `postgres` user (is there one?)"));
            }
        }
        let mut cluster = TempCluster { dir, bin, port: 0, as_postgres };
        let data = cluster.data_dir();
        cluster.run(
            "initdb",
            &[
                "-D".as_ref(),
                data.as_os_str(),
                "-U".as_ref(),
                "postgres".as_ref(),
                "--auth=trust".as_ref(),
                "-E".as_ref(),
                "UTF8".as_ref(),
                "--no-sync".as_ref(),
            ],
        )?;
        cluster.serve()?;
        Ok(cluster)
    }

    /// Starts the server on a free port. A port is found free by binding and releasing it, so
    /// another process may take it before the server binds it: then another port is tried, up
    /// to [`PORT_TRIES`] in all. Any other failure ends the start with the server's log.
    fn serve(&mut self) -> Result<(), HarnessError> {
        let data = self.data_dir();
        let log = self.dir.path().join("server.log");
        let mut tries = 0;
        loop {
            tries += 1;
            self.port = free_port()?;
            let options = format!(
                "-p {} -k {} -c listen_addresses=127.0.0.1 -c max_connections=300 -c shared_buffers=64MB",
                self.port,
                self.dir.path().display()
            );
            let started = self.run(
                "pg_ctl",
                &[
                    "start".as_ref(),
                    "-w".as_ref(),
                    "-t".as_ref(),
                    "120".as_ref(),
                    "-D".as_ref(),
                    data.as_os_str(),
                    "-l".as_ref(),
                    log.as_os_str(),
                    "-o".as_ref(),
                    options.as_ref(),
                ],
            );
            let Err(e) = started else { return Ok(()) };
            let tail = std::fs::read_to_string(&log).unwrap_or_default();
            if tries < PORT_TRIES && tail.contains("Address already in use") {
                let _ = std::fs::remove_file(&log);
                continue;
            }
            return Err(err(format!("{e}; server log:\n{tail}")));
        }
    }

    fn data_dir(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    fn run(&self, program: &str, args: &[&std::ffi::OsStr]) -> Result<(), HarnessError> {
        let path = self.bin.join(program);
        let mut command = if self.as_postgres {
            let mut c = Command::new("runuser");
            c.args(["-u", "postgres", "--"]).arg(&path);
            c
        } else {
            Command::new(&path)
        };
        let out = command
            .args(args)
            .current_dir(self.dir.path())
            .stdin(Stdio::null())
            .output()
            .map_err(|e| err(format!("{}: {e}", path.display())))?;
        if out.status.success() {
            Ok(())
        } else {
            Err(err(format!(
                "{} failed ({}): {}{}",
                path.display(),
                out.status,
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            )))
        }
    }

    /// The port it listens on (127.0.0.1).
    pub fn port(&self) -> u16 {
        self.port
    }

    /// A connection string for database `dbname` as the superuser.
    pub fn conninfo(&self, dbname: &str) -> String {
        format!("host=127.0.0.1 port={} user=postgres dbname={dbname}", self.port)
    }

    /// Creates database `name` and returns its connection string.
    pub async fn create_database(&self, name: &str) -> Result<String, HarnessError> {
        if !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return Err(err(format!("database name `{name}`: use letters, digits and `_`")));
        }
        let (client, connection) =
            tokio_postgres::connect(&self.conninfo("postgres"), tokio_postgres::NoTls).await.map_err(err)?;
        let task = tokio::spawn(connection);
        let made = client.batch_execute(&format!("CREATE DATABASE {name}")).await.map_err(err);
        drop(client);
        let _ = task.await;
        made.map(|()| self.conninfo(name))
    }
}

impl Drop for TempCluster {
    fn drop(&mut self) {
        let data = self.data_dir();
        if let Err(e) = self.run(
            "pg_ctl",
            &["stop".as_ref(), "-w".as_ref(), "-m".as_ref(), "immediate".as_ref(), "-D".as_ref(), data.as_os_str()],
        ) {
            eprintln!("stopping the throwaway PostgreSQL cluster failed: {e}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cluster_that_cannot_start_says_what_to_install() {
        let text = HarnessError("no initdb".into()).to_string();
        assert!(
            text.contains("no initdb")
                && text.contains("cargo xtask setup")
                && text.contains("apt-get install -y postgresql"),
            "{text}"
        );
    }
}
