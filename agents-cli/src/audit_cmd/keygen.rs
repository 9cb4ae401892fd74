//! `agents audit keygen DIR`: the keys of a keyed audit chain, each written to a new file.
//!
//! - `chain.key`: the chain key (64 hex digits), the seed every epoch's sealing key steps from.
//!   The writer starts its evolving sealing key from it (`SealingKey::create_file`); the
//!   verifier keeps it to check every seal (`agents audit verify --key`). Secret: mode 0600.
//! - `checkpoint.key`: the Ed25519 key the writer signs checkpoints of the chain head with
//!   (`CheckpointSigningKey::from_hex`). Secret: mode 0600.
//! - `checkpoint.pub`: its public half, which verifies those checkpoints
//!   (`agents audit verify --checkpoint-key`). Mode 0644.
//!
//! Nothing is overwritten: if any of the three files exists, nothing is written. A file is
//! created with its final mode (no moment in which a secret is readable by others), and a
//! failure part-way removes what this run wrote.

use super::emit;
use crate::error::{CliError, CmdResult, EXIT_OK};
use crate::term;
use agents_core::audit::{ChainKey, CheckpointSigningKey};
use std::fs::OpenOptions;
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use zeroize::Zeroizing;

/// The file names `keygen` writes, and their modes.
pub(crate) const CHAIN_KEY: &str = "chain.key";
pub(crate) const SIGNING_KEY: &str = "checkpoint.key";
pub(crate) const VERIFYING_KEY: &str = "checkpoint.pub";
const SECRET_MODE: u32 = 0o600;
const PUBLIC_MODE: u32 = 0o644;

/// Writes a new chain key and checkpoint key pair into `dir` (created with mode 0700 when
/// missing) and says how to use them.
pub(crate) fn keygen(dir: &Path, out: &mut dyn Write) -> CmdResult {
    let shown = term::path(dir);
    match std::fs::metadata(dir) {
        Ok(meta) if !meta.is_dir() => {
            return Err(CliError::new(format!("`{shown}` is not a directory"))
                .hint("name a directory for the three key files (it is created when missing)"));
        }
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(dir)
                .map_err(|e| CliError::new(format!("cannot create `{shown}`: {e}")))?;
        }
        Err(e) => return Err(CliError::new(format!("cannot read `{shown}`: {e}"))),
    }
    let files = [CHAIN_KEY, SIGNING_KEY, VERIFYING_KEY].map(|name| dir.join(name));
    let existing: Vec<String> = files.iter().filter(|p| p.symlink_metadata().is_ok()).map(|p| term::path(p)).collect();
    if !existing.is_empty() {
        return Err(CliError::new(format!("`{}` exists already; nothing was written", existing.join("`, `")))
            .hint("keys are never overwritten: a log sealed with the old key could no longer be verified. Choose another directory, or move the old keys away first"));
    }
    let random = |e: agents_core::audit::KeyError| CliError::new(format!("cannot generate a key: {e}"));
    let chain = ChainKey::generate().map_err(random)?;
    let signer = CheckpointSigningKey::generate().map_err(random)?;
    // The hex texts are wiped from memory when they are dropped.
    let contents: [(&PathBuf, Zeroizing<String>, u32); 3] = [
        (&files[0], Zeroizing::new(format!("{}\n", *chain.to_hex())), SECRET_MODE),
        (&files[1], Zeroizing::new(format!("{}\n", *signer.to_hex())), SECRET_MODE),
        (&files[2], Zeroizing::new(format!("{}\n", signer.verifying_key().to_hex())), PUBLIC_MODE),
    ];
    let mut written: Vec<&Path> = Vec::new();
    for (path, text, mode) in &contents {
        if let Err(e) = write_new(path, text, *mode) {
            for p in &written {
                let _ = std::fs::remove_file(p);
            }
            return Err(CliError::new(format!("cannot write `{}`: {e}; no key file was kept", term::path(path))));
        }
        written.push(path);
    }
    let [chain_path, signing_path, verifying_path] = files.map(|p| term::path(&p));
    emit(
        out,
        format_args!(
            "wrote {chain_path} (chain key, mode 0600)\n\
             wrote {signing_path} (checkpoint signing key, mode 0600)\n\
             wrote {verifying_path} (checkpoint public key)\n\n\
             The writer starts its sealing key from the chain key once\n  \
             (SealingKey::create_file(state, &ChainKey::from_hex(..)?, policy)) and signs checkpoints with\n  \
             CheckpointSigningKey::from_hex(..). Then move {chain_path} off the writer's machine: the writer's\n  \
             key steps forward each epoch and forgets the old one, and only the chain key can check every seal.\n\
             Verify with:\n  \
             agents audit verify LOG --key {chain_path} --checkpoints CHECKPOINTS --checkpoint-key {verifying_path}\n"
        ),
    );
    Ok(EXIT_OK)
}

/// Creates `path` (which must not exist) with `mode` from the start, writes `text`, syncs.
fn write_new(path: &Path, text: &str, mode: u32) -> std::io::Result<()> {
    let mut file = OpenOptions::new().write(true).create_new(true).mode(mode).open(path)?;
    file.write_all(text.as_bytes())?;
    file.sync_all()
}
