//! `agents audit keygen`: new keys in new files, secrets private, nothing overwritten, and
//! keys that the writer and `agents audit verify` accept.

use crate::common;

use agents_core::audit::{ChainKey, Checkpoint, CheckpointSigningKey, GENESIS_HASH};
use common::*;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

fn mode(p: &Path) -> u32 {
    std::fs::metadata(p).unwrap().permissions().mode() & 0o777
}

fn read(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap()
}

#[test]
fn keygen_writes_private_keys_that_seal_and_verify_a_log() {
    let dir = tempdir();
    let keys = dir.path().join("keys/audit");
    let o = agents(["audit".as_ref(), "keygen".as_ref(), keys.as_os_str()]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let (chain, signing, public) = (keys.join("chain.key"), keys.join("checkpoint.key"), keys.join("checkpoint.pub"));
    assert!(stdout(&o).contains("chain.key") && stdout(&o).contains("agents audit verify LOG --key"), "{}", stdout(&o));
    // Secrets are readable by their owner alone, from the moment they exist.
    assert_eq!(mode(&chain), 0o600);
    assert_eq!(mode(&signing), 0o600);
    assert_eq!(mode(&public) & 0o600, 0o600);
    assert_eq!(mode(&keys) & 0o077, 0, "the directory it made is private");

    // The writer's side: seal a log with the chain key, sign its head with the signing key.
    let chain_key = ChainKey::from_hex(&read(&chain)).unwrap();
    let signer = CheckpointSigningKey::from_hex(&read(&signing)).unwrap();
    assert_eq!(read(&public).trim(), signer.verifying_key().to_hex());
    let mut prev = GENESIS_HASH.to_owned();
    let mut text = String::new();
    let records = normal_run();
    let n = records.len() as u64;
    for (i, mut r) in records.into_iter().enumerate() {
        r.ts = "2026-05-27T10:00:00Z".to_owned();
        let seq = i as u64 + 1;
        r.seal_keyed(seq, &prev, &chain_key.key_at((seq - 1) / 2));
        prev.clone_from(&r.hash);
        text.push_str(&r.to_line());
        text.push('\n');
    }
    let log = write(dir.path(), "keyed.jsonl", &text);
    let cps = write(
        dir.path(),
        "cps.jsonl",
        &format!("{}\n", Checkpoint::sign(n, &prev, Some((n - 1) / 2), "2026-05-27T10:00:01Z", &signer).to_line()),
    );
    // The verifier's side: the files as `keygen` wrote them.
    let o = agents([
        "audit".as_ref(),
        "verify".as_ref(),
        log.as_os_str(),
        "--key".as_ref(),
        chain.as_os_str(),
        "--epoch-records".as_ref(),
        "2".as_ref(),
        "--checkpoints".as_ref(),
        cps.as_os_str(),
        "--checkpoint-key".as_ref(),
        public.as_os_str(),
    ]);
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    assert!(stdout(&o).contains("keyed through epoch 5; matches checkpoint 1"), "{}", stdout(&o));

    // Every run draws new keys.
    let other = dir.path().join("other");
    assert_eq!(code(&agents(["audit".as_ref(), "keygen".as_ref(), other.as_os_str()])), 0);
    assert_ne!(read(&other.join("chain.key")), read(&chain));
    assert_ne!(read(&other.join("checkpoint.key")), read(&signing));
}

#[test]
fn keygen_overwrites_nothing() {
    let dir = tempdir();
    let keys = dir.path().join("keys");
    assert_eq!(code(&agents(["audit".as_ref(), "keygen".as_ref(), keys.as_os_str()])), 0);
    let before: Vec<String> =
        ["chain.key", "checkpoint.key", "checkpoint.pub"].iter().map(|f| read(&keys.join(f))).collect();
    let o = agents(["audit".as_ref(), "keygen".as_ref(), keys.as_os_str()]);
    assert_eq!(code(&o), 2);
    assert!(stderr(&o).contains("exists already; nothing was written"), "{}", stderr(&o));
    let after: Vec<String> =
        ["chain.key", "checkpoint.key", "checkpoint.pub"].iter().map(|f| read(&keys.join(f))).collect();
    assert_eq!(before, after);

    // One file in the way is enough to write none.
    let partly = dir.path().join("partly");
    std::fs::create_dir(&partly).unwrap();
    write(&partly, "checkpoint.pub", "someone else's\n");
    let o = agents(["audit".as_ref(), "keygen".as_ref(), partly.as_os_str()]);
    assert_eq!(code(&o), 2);
    assert!(!partly.join("chain.key").exists() && !partly.join("checkpoint.key").exists());
    assert_eq!(read(&partly.join("checkpoint.pub")), "someone else's\n");

    // A file where the directory should be.
    let file = write(dir.path(), "plain-file", "x");
    let o = agents(["audit".as_ref(), "keygen".as_ref(), file.as_os_str()]);
    assert_eq!(code(&o), 2);
    assert!(stderr(&o).contains("is not a directory"), "{}", stderr(&o));
}
