//! The out-of-process level: a tool whose body ignores its handle and calls `std::fs`
//! directly, declared like [`read_customer_file`](super::tools::read_customer_file) (read
//! beneath the uploads, nothing else) and marked `isolated`, so each call runs in a worker
//! process the kernel confines to that declaration (Landlock, seccomp, namespaces, limits;
//! see [`agents_runtime::isolate`]). It stands for code the team did not write: a vendor's
//! document extractor.
//!
//! It belongs to its own agent, [`KycExtractor`], so the reviewer's manifest keeps the seed's
//! shape; the extractor's manifest (`examples/baselines/kyc-extractor.manifest.json`) records
//! the same policy and that the tool runs isolated.

use super::perms;
use agents_runtime::{agent, tool};
use serde_json::{Value, json};

/// Extracts the text of an uploaded customer document (a vendor's extractor). With
/// `overwrite`, it also writes its normalized text back over the file, which its policy does
/// not allow.
///
/// # Arguments
///
/// * `path` - the document's absolute path beneath the uploads directory
/// * `overwrite` - write the normalized text back over the document
#[tool(permission = perms::kyc::review, isolated, risk = medium, policy(fs(read = ["/tmp/agents-kyc/uploads/**"])))]
pub async fn vendor_extract_text(path: String, overwrite: Option<bool>) -> Result<Value, String> {
    // Deliberately `std::fs`, not the `FsAccess` handle: only the kernel stops this body.
    let text = std::fs::read_to_string(&path).map_err(|e| format!("std::fs::read_to_string(`{path}`): {e}"))?;
    if overwrite == Some(true) {
        std::fs::write(&path, text.to_uppercase()).map_err(|e| format!("std::fs::write(`{path}`): {e}"))?;
    }
    Ok(json!({"path": path, "chars": text.chars().count()}))
}

agent! {
    /// Runs the vendor's document extractor, confined by the kernel to the uploads directory.
    pub struct KycExtractor;
    audit: { values: masked },
    name: "kyc-extractor",
    tools: [vendor_extract_text],
    ceiling: [perms::kyc::review],
}
