//! The agent's `audit_values` in the manifest: in its bytes (and so its hash) once it keeps
//! any value, read back as written, refused when it is no setting; and its classification
//! held against the runtime's own decision (`AuditValues::admits`): when the diff reports no
//! widening, every setting the new manifest lets a runtime run under, the old one did too.

use agents_core::audit::AuditValues;
use agents_core::diff::{ChangeKind, Rule, diff};
use agents_core::manifest::{AgentEntry, Manifest};

fn manifest(values: AuditValues) -> Manifest {
    let agent = AgentEntry { audit_values: values, ..AgentEntry::new("desk", "Answers.") };
    Manifest::from_entries(agent, vec![]).unwrap()
}

#[test]
fn a_setting_that_keeps_values_is_in_the_bytes_and_the_hash() {
    let omitted = manifest(AuditValues::Omitted).to_canonical_string();
    assert!(!omitted.contains("audit_values"), "the default leaves the bytes as they were: {omitted}");
    let mut hashes = vec![manifest(AuditValues::Omitted).sha256()];
    for values in [AuditValues::Masked, AuditValues::Full] {
        let text = manifest(values).to_canonical_string();
        assert!(text.contains(&format!("\"audit_values\":\"{values}\"")), "{text}");
        assert_eq!(Manifest::parse(&text).unwrap(), manifest(values), "read back as written");
        hashes.push(manifest(values).sha256());
    }
    hashes.dedup();
    assert_eq!(hashes.len(), 3, "each setting has its own hash");
}

#[test]
fn a_manifest_without_the_key_reads_as_omitted_and_an_unknown_setting_is_refused() {
    let text = manifest(AuditValues::Omitted).to_canonical_string();
    assert_eq!(Manifest::parse(&text).unwrap().agent.audit_values, AuditValues::Omitted);
    let bad = manifest(AuditValues::Full).to_canonical_string().replace("\"full\"", "\"everything\"");
    let err = Manifest::parse(&bad).unwrap_err().to_string();
    for word in ["everything", "omitted", "masked", "full"] {
        assert!(err.contains(word), "{err}");
    }
}

#[test]
fn keeping_more_widens_and_keeping_less_narrows() {
    let (omitted, masked, full) =
        (manifest(AuditValues::Omitted), manifest(AuditValues::Masked), manifest(AuditValues::Full));
    for (a, b, kind, rule) in [
        (&omitted, &masked, ChangeKind::Widening, Rule::AuditValuesWidened),
        (&masked, &full, ChangeKind::Widening, Rule::AuditValuesWidened),
        (&omitted, &full, ChangeKind::Widening, Rule::AuditValuesWidened),
        (&full, &masked, ChangeKind::Narrowing, Rule::AuditValuesNarrowed),
        (&masked, &omitted, ChangeKind::Narrowing, Rule::AuditValuesNarrowed),
        (&full, &omitted, ChangeKind::Narrowing, Rule::AuditValuesNarrowed),
    ] {
        let d = diff(a, b);
        assert_eq!(d.changes.len(), 1, "{d}");
        assert_eq!((d.changes[0].kind, d.changes[0].rule), (kind, rule), "{d}");
        assert_eq!(d.changes[0].field, "audit_values", "{d}");
    }
    assert!(diff(&full, &full).changes.is_empty());
}

/// Differential: for every pair of settings, the diff reports a widening exactly when the new
/// manifest lets a runtime keep something the old one refused.
#[test]
fn no_widening_means_no_setting_newly_admitted() {
    for old in AuditValues::ALL {
        for new in AuditValues::ALL {
            let newly = AuditValues::ALL.into_iter().any(|used| new.admits(used) && !old.admits(used));
            let d = diff(&manifest(old), &manifest(new));
            assert_eq!(d.has_widening(), newly, "{old} -> {new}: {d}");
        }
    }
}
