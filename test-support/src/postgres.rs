//! A throwaway PostgreSQL cluster for the suites of crates below the runtime (feature
//! `postgres`): [`TempCluster`]. `agents-store` keeps its own, public harness, which its
//! benchmark and node binary use; this one has the same behaviour without an async client.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// How to install PostgreSQL's server binaries, said by every error.
pub const INSTALL: &str = "run `cargo xtask setup` (or `cargo xtask test`), which installs Debian's `postgresql` \
package, or `apt-get install -y postgresql` yourself";

/// A PostgreSQL cluster in a temporary directory, on a free port of 127.0.0.1, with trust
/// authentication for the `postgres` user, stopped and deleted when dropped (also while a
/// panicking test unwinds). Run as root, the server runs as the `postgres` user
/// (`runuser`). For tests only: anyone on the host can connect to it as the superuser.
#[derive(Debug)]
pub struct TempCluster {
    dir: tempfile::TempDir,
    bin: PathBuf,
    port: u16,
    as_postgres: bool,
}

/// The newest `/usr/lib/postgresql/<version>/bin` that holds `initdb` and `pg_ctl`.
fn find_bin() -> Result<PathBuf, String> {
    let root = Path::new("/usr/lib/postgresql");
    let mut found: Vec<(u32, PathBuf)> = std::fs::read_dir(root)
        .map_err(|e| format!("{}: {e}", root.display()))?
        .filter_map(Result::ok)
        .filter_map(|entry| {
            let version: u32 = entry.file_name().to_str()?.parse().ok()?;
            let bin = entry.path().join("bin");
            (bin.join("initdb").is_file() && bin.join("pg_ctl").is_file()).then_some((version, bin))
        })
        .collect();
    found.sort();
    found.pop().map(|(_, bin)| bin).ok_or_else(|| format!("no initdb and pg_ctl under {}/*/bin", root.display()))
}

impl TempCluster {
    /// Creates the cluster (`initdb`) and starts it (`pg_ctl start -w`); returns once it
    /// accepts connections. The error says what failed and how to install PostgreSQL.
    pub fn start() -> Result<Self, String> {
        Self::try_start().map_err(|e| format!("cannot start a throwaway PostgreSQL cluster: {e}; {INSTALL}"))
    }

    fn try_start() -> Result<Self, String> {
        use std::os::unix::fs::MetadataExt;
        let bin = find_bin()?;
        let as_postgres = std::fs::metadata("/proc/self").map(|m| m.uid() == 0).unwrap_or(false);
        let dir = tempfile::Builder::new().prefix("agents-pg-").tempdir().map_err(|e| format!("temp dir: {e}"))?;
        if as_postgres && !Command::new("chown").arg("postgres:").arg(dir.path()).status().is_ok_and(|s| s.success()) {
            return Err("cannot give the temp dir to the `postgres` user (is there one?)".into());
        }
        // A free port: bound and released; a race with another process fails the start with
        // the server's log in the error.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map_err(|e| format!("no free port: {e}"))?
            .port();
        let cluster = TempCluster { dir, bin, port, as_postgres };
        let data = cluster.dir.path().join("data");
        let initdb = ["-D".as_ref(), data.as_os_str(), "-U".as_ref(), "postgres".as_ref(), "--auth=trust".as_ref()];
        cluster.run("initdb", &[&initdb[..], &["-E".as_ref(), "UTF8".as_ref(), "--no-sync".as_ref()]].concat())?;
        let options = format!("-p {port} -k {} -c listen_addresses=127.0.0.1", cluster.dir.path().display());
        let log = cluster.dir.path().join("server.log");
        let start: [&OsStr; 10] = [
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
        ];
        if let Err(e) = cluster.run("pg_ctl", &start) {
            return Err(format!("{e}; server log:\n{}", std::fs::read_to_string(&log).unwrap_or_default()));
        }
        Ok(cluster)
    }

    fn run(&self, program: &str, args: &[&OsStr]) -> Result<(), String> {
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
            .map_err(|e| format!("{}: {e}", path.display()))?;
        if out.status.success() {
            return Ok(());
        }
        let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        Err(format!("{} failed ({}): {stdout}{stderr}", path.display(), out.status))
    }

    /// The port it listens on (127.0.0.1).
    pub fn port(&self) -> u16 {
        self.port
    }

    /// A connection string for database `dbname` as the superuser (`postgres` exists).
    pub fn conninfo(&self, dbname: &str) -> String {
        format!("host=127.0.0.1 port={} user=postgres dbname={dbname}", self.port)
    }
}

impl Drop for TempCluster {
    fn drop(&mut self) {
        let data = self.dir.path().join("data");
        let stop =
            ["stop".as_ref(), "-w".as_ref(), "-m".as_ref(), "immediate".as_ref(), "-D".as_ref(), data.as_os_str()];
        if let Err(e) = self.run("pg_ctl", &stop) {
            eprintln!("stopping the throwaway PostgreSQL cluster failed: {e}");
        }
    }
}
