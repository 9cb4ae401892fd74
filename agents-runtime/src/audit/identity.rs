//! Noticing that a file a sink or store keeps open was deleted, replaced or moved.

use std::io;
use std::path::{Path, PathBuf};

/// The identity (device and inode) of a database file as it was opened, with the path it was
/// opened at.
///
/// A process that keeps a file open goes on writing into it after someone deletes it (the
/// inode lives on, unlinked, until closed), replaces it (a new file under the path) or moves
/// it: its writes succeed and are lost when the process closes the file, or land where nobody
/// looks. [`FileIdentity::check`] compares the path's identity now with the one opened (one
/// `stat`, cheap enough for every write batch), so a writer stops acknowledging instead.
///
/// It is a check, not a lock: a file deleted between a batch's check and its commit is
/// noticed at the next check. On platforms without device and inode numbers it checks only
/// that the path still exists.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileIdentity {
    path: PathBuf,
    id: (u64, u64),
}

#[cfg(unix)]
fn id_of(meta: &std::fs::Metadata) -> (u64, u64) {
    use std::os::unix::fs::MetadataExt;
    (meta.dev(), meta.ino())
}

#[cfg(not(unix))]
fn id_of(_meta: &std::fs::Metadata) -> (u64, u64) {
    (0, 0)
}

impl FileIdentity {
    /// The identity of the file at `path` now (call it right after opening the file). The
    /// path is made absolute, so a later change of the working directory does not matter.
    pub fn of(path: &Path) -> io::Result<Self> {
        let path = std::path::absolute(path)?;
        let meta = std::fs::metadata(&path)?;
        Ok(FileIdentity { id: id_of(&meta), path })
    }

    /// The identity of the SQLite database file at `path` (see [`FileIdentity::of`]), or
    /// `None` for a database SQLite keeps in memory (`:memory:`, an empty path, a
    /// `file::memory:` URI): there is no file to lose.
    pub fn of_database(path: &Path) -> io::Result<Option<Self>> {
        let name = path.to_string_lossy();
        if name.is_empty() || name == ":memory:" || name.starts_with("file::memory:") {
            return Ok(None);
        }
        Self::of(path).map(Some)
    }

    /// The absolute path the file was opened at.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// `Ok` while the path still names the file that was opened; otherwise an error that says
    /// what happened and what to do.
    pub fn check(&self) -> io::Result<()> {
        let what = match std::fs::metadata(&self.path) {
            Ok(meta) if id_of(&meta) == self.id => return Ok(()),
            Ok(_) => "was replaced by another file",
            Err(e) if e.kind() == io::ErrorKind::NotFound => "was deleted or moved away",
            Err(e) => {
                return Err(io::Error::new(
                    e.kind(),
                    format!(
                        "`{}` cannot be looked at any more ({e}); nothing more is acknowledged",
                        self.path.display()
                    ),
                ));
            }
        };
        Err(io::Error::other(format!(
            "`{}` {what} while this process had it open: writes into the file it opened would be lost, so nothing \
             more is acknowledged. Restore the file (or move it back), then open it again",
            self.path.display()
        )))
    }
}
