//! What crosses the pipes between the runtime and a worker: frames of a little-endian `u32`
//! length and that many bytes of JSON.

use crate::settings::Limits;
use agents_core::Principal;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::io::{Read, Write};

/// The first frame a worker reads: which tool, and how to confine it.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct Header {
    pub(crate) tool: String,
    pub(crate) limits: Limits,
    pub(crate) allow_degraded: bool,
    pub(crate) max_message_bytes: usize,
    /// The uid and gid a worker started as root becomes.
    pub(crate) worker_user: (u32, u32),
}

/// The worker's answer to the header: confined and waiting, or refused (nothing will run).
#[derive(Debug, Serialize, Deserialize)]
pub(crate) enum Ready {
    Confined(Confinement),
    Refused(String),
}

/// What confines a worker, as it reports it once the rules are in force (all `false` and
/// empty by default: nothing yet).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub(crate) struct Confinement {
    /// The Landlock ABI in force, or `None` (degraded).
    pub(crate) landlock_abi: Option<i32>,
    pub(crate) user_namespace: bool,
    pub(crate) network_namespace: bool,
    pub(crate) seccomp: bool,
    pub(crate) degraded: bool,
    /// Declared roots that did not exist when the worker started (nothing beneath is granted).
    pub(crate) missing_roots: Vec<String>,
    /// Descriptors the worker inherited (above 2, but the protocol's own) and closed at start.
    pub(crate) inherited_closed: usize,
    /// Whether seccomp lets the tool change metadata through a descriptor it opened (it
    /// declares a write root); by path, never.
    pub(crate) metadata_by_descriptor: bool,
}

impl Confinement {
    pub(crate) fn describe(&self) -> String {
        let mut parts = Vec::new();
        match self.landlock_abi {
            Some(abi) => parts.push(format!("landlock abi {abi}")),
            None => parts.push("no landlock".to_owned()),
        }
        if self.seccomp {
            let metadata = if self.metadata_by_descriptor {
                "metadata changes by path refused"
            } else {
                "metadata changes refused"
            };
            parts.push(format!("seccomp ({metadata}, no Unix sockets)"));
        }
        parts.push("no_new_privs".to_owned());
        if self.user_namespace {
            parts.push("user namespace".to_owned());
        }
        if self.network_namespace {
            parts.push("private network namespace".to_owned());
        }
        parts.push("rlimits".to_owned());
        parts.push(format!("inherited descriptors closed ({})", self.inherited_closed));
        let mut text = parts.join(", ");
        if self.degraded {
            text.push_str("; DEGRADED: the kernel lacks part of the confinement and the application allowed it");
        }
        if !self.missing_roots.is_empty() {
            text.push_str(&format!("; roots absent at start: {}", self.missing_roots.join(", ")));
        }
        text
    }
}

/// One call, as the worker receives it: who it runs for, its ids, and its arguments as JSON
/// (already checked by the tool's typed parse).
#[derive(Debug, Serialize, Deserialize)]
pub struct Call {
    /// The principal the run acts for.
    pub principal: Principal,
    /// The run's id.
    pub run_id: String,
    /// The session's id.
    pub session_id: String,
    /// The call's id.
    pub call_id: String,
    /// The id of the confirmation token the gate redeemed (action calls only).
    pub token_id: Option<String>,
    /// The arguments.
    pub args: Value,
}

/// The call's outcome, as the worker sends it.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) enum Outcome {
    Ok(Value),
    Err(String),
}

/// The exit code of a worker that could not serve (the parent reads it as "refused").
pub(crate) const EXIT_PROTOCOL: i32 = 97;

/// Writes one frame.
pub(crate) fn write_frame<T: Serialize>(out: &mut impl Write, value: &T) -> std::io::Result<()> {
    let bytes = serde_json::to_vec(value).map_err(std::io::Error::other)?;
    let len = u32::try_from(bytes.len()).map_err(|_| std::io::Error::other("frame larger than 4 GiB"))?;
    let mut buf = Vec::with_capacity(4 + bytes.len());
    buf.extend_from_slice(&len.to_le_bytes());
    buf.extend_from_slice(&bytes);
    out.write_all(&buf)?;
    out.flush()
}

/// Why a frame was not read.
#[derive(Debug)]
pub(crate) enum FrameError {
    /// The stream ended before a whole frame.
    Closed,
    /// The announced length is over the bound (nothing more was read).
    TooLarge(usize),
    /// Not the JSON expected.
    Malformed(String),
}

/// Reads one frame of at most `max` bytes.
pub(crate) fn read_frame<T: for<'de> Deserialize<'de>>(input: &mut impl Read, max: usize) -> Result<T, FrameError> {
    let mut len = [0u8; 4];
    input.read_exact(&mut len).map_err(|_| FrameError::Closed)?;
    let len = u32::from_le_bytes(len) as usize;
    if len > max {
        return Err(FrameError::TooLarge(len));
    }
    let mut bytes = vec![0u8; len];
    input.read_exact(&mut bytes).map_err(|_| FrameError::Closed)?;
    serde_json::from_slice(&bytes).map_err(|e| FrameError::Malformed(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_frame_round_trips_and_an_oversized_one_is_refused_unread() {
        let mut buf = Vec::new();
        write_frame(&mut buf, &Outcome::Ok(serde_json::json!({"a": [1, 2]}))).unwrap();
        let back: Outcome = read_frame(&mut buf.as_slice(), 1024).unwrap();
        assert!(matches!(back, Outcome::Ok(v) if v == serde_json::json!({"a": [1, 2]})));
        assert!(matches!(read_frame::<Outcome>(&mut buf.as_slice(), 4), Err(FrameError::TooLarge(_))));
        assert!(matches!(read_frame::<Outcome>(&mut &buf[..6], 1024), Err(FrameError::Closed)));
    }
}
