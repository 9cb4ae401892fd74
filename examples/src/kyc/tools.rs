//! The reviewer's tools, grouped under the `review` skill: one reads customer uploads and
//! nothing else; one writes review notes (an action, confirmed by a person) and nothing else.
//! The pipeline's decision node records a decision with a third (an action too).
//! Each touches the filesystem only through the [`FsAccess`] handle the runtime gives it,
//! which is built from the tool's declared policy.

use super::{DecisionKind, MAX_RISK_SCORE, perms};
use agents_runtime::capability::FsError;
use agents_runtime::{FsAccess, ToolContext, tool};
use serde_json::{Value, json};
use std::path::Path;

/// The longest document the tool returns, in bytes (a longer one is cut and says so).
pub const MAX_DOCUMENT_BYTES: usize = 16 * 1024;

/// A refusal or failure of a filesystem call, for the audit record and the model: a refusal
/// names the path and the declared policy, as the handle reports it; a symlink that leads
/// out of the declared directory is reported as the refusal it is.
fn fs_error(tool: &str, verb: &str, path: &str, declared: &[&str], e: FsError) -> String {
    match e {
        FsError::Denied(denied) => format!("refused: {denied}"),
        FsError::Io(io) if io.kind() == std::io::ErrorKind::NotFound => format!("no file at `{path}`"),
        // `cap-std` reports a resolution that leaves the directory as this kind, with this text.
        FsError::Io(io) if io.kind() == std::io::ErrorKind::PermissionDenied && io.to_string().contains("outside") => {
            format!(
                "refused: tool `{tool}` may not {verb} `{path}`: it resolves outside the declared directory ({io}), \
             not in its declared policy (fs {verb}: {declared:?})"
            )
        }
        FsError::Io(io) => format!("could not {verb} `{path}`: {io}"),
        other => format!("could not {verb} `{path}`: {other}"),
    }
}

/// Reads one uploaded customer document (the text of a passport scan, a proof of address)
/// by its absolute path beneath the uploads directory. Uploads are evidence: this tool reads
/// them and changes nothing.
///
/// # Arguments
///
/// * `path` - the document's absolute path, as listed in the request's `documents`
#[tool(permission = perms::kyc::review, risk = medium, policy(fs(read = ["/tmp/agents-kyc/uploads/**"])))]
pub async fn read_customer_file(fs: FsAccess, path: String) -> Result<Value, String> {
    let declared = <read_customer_file as agents_runtime::Tool>::SPEC.policy.fs_read;
    let bytes = fs.read(&path).map_err(|e| fs_error("read_customer_file", "read", &path, declared, e))?;
    let cut = bytes.len() > MAX_DOCUMENT_BYTES;
    let text = String::from_utf8_lossy(&bytes[..bytes.len().min(MAX_DOCUMENT_BYTES)]).into_owned();
    let name = Path::new(&path).file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    Ok(json!({"path": path, "name": name, "bytes": bytes.len(), "cut": cut, "text": text}))
}

/// Saves the analyst's review note for a case as a text file beneath the notes directory;
/// runs only after the analyst confirms it.
///
/// # Arguments
///
/// * `path` - the note's absolute path beneath the notes directory, e.g. `<notes>/kyc-0413.txt`
/// * `note` - the note's text
#[tool(
    permission = perms::kyc::annotate,
    mutating,
    title = "Save review note",
    risk = low,
    policy(fs(write = ["/tmp/agents-kyc/notes/**"]))
)]
pub async fn save_review_note(cx: &ToolContext<'_>, fs: FsAccess, path: String, note: String) -> Result<Value, String> {
    let declared = cx.spec().policy.fs_write;
    let text = format!("reviewed by {}\n{note}\n", cx.principal().user_id);
    fs.write(&path, text.as_bytes()).map_err(|e| fs_error("save_review_note", "write", &path, declared, e))?;
    Ok(json!({"path": path, "bytes": text.len()}))
}

/// Records a KYC decision for a request as a JSON file beneath the notes directory (the case's
/// record of what was decided); runs only after a person confirms it, on a card that shows
/// the request, the decision and the risk score.
///
/// # Arguments
///
/// * `path` - the record's absolute path beneath the notes directory, e.g. `<notes>/kyc-0413.decision.json`
/// * `request_id` - the request decided
/// * `decision` - `approve`, `reject` or `refer`
/// * `risk_score` - 0 (no risk seen) to 100
#[tool(
    permission = perms::kyc::decide,
    mutating,
    title = "Record a KYC decision",
    risk = medium,
    policy(fs(write = ["/tmp/agents-kyc/notes/**"]))
)]
pub async fn record_kyc_decision(
    cx: &ToolContext<'_>,
    fs: FsAccess,
    path: String,
    request_id: String,
    decision: DecisionKind,
    risk_score: u8,
) -> Result<Value, String> {
    if risk_score > MAX_RISK_SCORE {
        return Err(format!("`risk_score` is {risk_score}; give a score of at most {MAX_RISK_SCORE}"));
    }
    let declared = cx.spec().policy.fs_write;
    let record = json!({
        "request_id": request_id, "decision": decision, "risk_score": risk_score,
        "recorded_by": cx.principal().user_id.as_str(),
    });
    let text = record.to_string();
    fs.write(&path, text.as_bytes()).map_err(|e| fs_error("record_kyc_decision", "write", &path, declared, e))?;
    Ok(json!({"path": path, "bytes": text.len()}))
}
