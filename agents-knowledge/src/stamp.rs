//! What the files of a loaded [`SourceSet`](crate::SourceSet) looked like when they were read
//! (size and modification time) and what each directory held, so that a later start can tell
//! with a few `stat` calls whether anything may have changed, before it reads and hashes.

use agents_core::knowledge::walk_directory;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

/// One file as it was read.
#[derive(Debug, Clone, PartialEq, Eq)]
struct FileStamp {
    path: PathBuf,
    len: u64,
    modified: Option<SystemTime>,
}

/// The stamps of a set: every file read, and the listing of every directory walked.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Stamps {
    files: Vec<FileStamp>,
    directories: Vec<(PathBuf, Vec<String>)>,
}

impl Stamps {
    /// Notes a file as read, from the metadata of its open handle.
    pub(crate) fn file(&mut self, path: &Path, metadata: &std::fs::Metadata) {
        self.files.push(FileStamp { path: path.to_owned(), len: metadata.len(), modified: metadata.modified().ok() });
    }

    /// Notes a directory's files (relative paths, in walk order).
    pub(crate) fn directory(&mut self, root: &Path, files: &[String]) {
        self.directories.push((root.to_owned(), files.to_vec()));
    }

    /// Whether every directory still holds the same files and every file has the same size
    /// and modification time. A file that cannot be read now, or whose time cannot be read,
    /// counts as changed.
    pub(crate) fn unchanged(&self) -> bool {
        let same_listing = |(root, files): &(PathBuf, Vec<String>)| walk_directory(root).is_ok_and(|now| now == *files);
        let same_file = |f: &FileStamp| {
            std::fs::metadata(&f.path).is_ok_and(|m| {
                let modified = m.modified().ok();
                m.len() == f.len && modified.is_some() && modified == f.modified
            })
        };
        self.directories.iter().all(same_listing) && self.files.iter().all(same_file)
    }
}
