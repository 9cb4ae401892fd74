//! Held-out sets are spent by their first run: a marker file beside the set, bound to the
//! set's SHA-256, makes every later run refuse unless it is forced (`--rerun-held-out`), and a
//! forced run's report says so.
//!
//! The marker is `<set file>.spent.json` (commit it with the set). It is written before the
//! first probe runs, so a run that stops half-way has spent the set too: a held-out set tells
//! the truth once, whatever happened to that run. Editing a spent set does not make it fresh:
//! the marker still names the set's file, and the run refuses with the old and new hashes. A
//! new held-out set is a new file.

use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// The `format` of a marker.
pub const SPENT_FORMAT: &str = "agents.held-out-spent";

/// The marker of a spent held-out set.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SpentMarker {
    /// [`SPENT_FORMAT`].
    pub format: String,
    /// The set's name.
    pub set: String,
    /// The SHA-256 of the set's bytes when it was first run.
    pub sha256: String,
    /// Where the first run wrote its artifacts, as given to it.
    pub artifacts: String,
}

/// Where the marker of the set at `set_path` lives.
///
/// ```
/// use std::path::Path;
/// let marker = agents_eval::spent::marker_path(Path::new("eval/helpdesk-heldout.toml"));
/// assert_eq!(marker, Path::new("eval/helpdesk-heldout.toml.spent.json"));
/// ```
pub fn marker_path(set_path: &Path) -> PathBuf {
    let mut name = set_path.file_name().unwrap_or_default().to_os_string();
    name.push(".spent.json");
    set_path.with_file_name(name)
}

/// The marker of the set at `set_path`, if there is one. An unreadable marker is an error: a
/// set that may be spent is treated as spent until the marker is restored.
pub fn read_marker(set_path: &Path) -> Result<Option<SpentMarker>, String> {
    let path = marker_path(set_path);
    match std::fs::read(&path) {
        Ok(bytes) => serde_json::from_slice::<SpentMarker>(&bytes)
            .ok()
            .filter(|m| m.format == SPENT_FORMAT)
            .map(Some)
            .ok_or_else(|| {
                format!(
                    "the held-out marker {} is not readable; restore it from version control (a held-out \
                     set that may have been run is not run again without --rerun-held-out)",
                    path.display()
                )
            }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(format!("cannot read the held-out marker {}: {e}", path.display())),
    }
}

/// Writes the marker of a set's first run; refuses to replace one.
pub fn write_marker(set_path: &Path, marker: &SpentMarker) -> Result<(), String> {
    use std::io::Write as _;
    let path = marker_path(set_path);
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&path)
        .map_err(|e| format!("cannot write the held-out marker {}: {e}", path.display()))?;
    file.write_all(&crate::artifacts::to_json_bytes(marker))
        .and_then(|()| file.sync_all())
        .map_err(|e| format!("cannot write the held-out marker {}: {e}", path.display()))
}
