//! The clinic example: the manifest command, the shape of the registry, the role map, the
//! service-layer rules, and the demo's scenarios read back from its audit log.

use agents_runtime::agents_core::canonical::sha256_hex;
use agents_runtime::audit::{AuditRecord, AuditStatus};
use agents_runtime::{Agent, Risk, Tier};
use examples::clinic::app::{people, run_demo};
use examples::clinic::store::{ServiceError, Store};
use examples::clinic::{ATHLETE, Kinetix, main_with, roles};
use examples::console::severe_failures;
use std::collections::BTreeSet;

fn run(args: &[&str]) -> Vec<u8> {
    let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    let mut out = Vec::new();
    main_with(&args, &mut out).unwrap();
    out
}

#[test]
fn manifest_command_prints_exactly_the_manifest() {
    let out = run(&["manifest"]);
    assert_eq!(out, Kinetix::MANIFEST.as_bytes());
    assert_eq!(sha256_hex(&out), Kinetix::MANIFEST_SHA256);
    assert_eq!(run(&["manifest-sha256"]), format!("{}\n", Kinetix::MANIFEST_SHA256).into_bytes());
}

#[test]
fn registry_is_realistic_and_has_no_clinical_delete() {
    let tools = <Kinetix as Agent>::tools();
    assert!(tools.len() >= 24, "{} tools", tools.len());
    let actions: Vec<_> = tools.iter().filter(|t| t.tier == Tier::Action).collect();
    assert!(actions.len() >= 10, "{} mutating tools", actions.len());
    for t in &actions {
        assert!(t.title.is_some_and(|s| !s.is_empty()), "{} has no title", t.name);
    }
    let deletes: BTreeSet<&str> = tools.iter().map(|t| t.name).filter(|n| n.starts_with("delete_")).collect();
    assert_eq!(deletes, BTreeSet::from(["delete_video", "delete_videos"]));
    for name in deletes {
        let t = <Kinetix as Agent>::tool_spec(name).unwrap();
        assert!(matches!(t.risk, Risk::High | Risk::Critical), "{name}: {:?}", t.risk);
        assert!(t.description.contains("cannot be undone"), "{name}: {}", t.description);
    }
    for t in tools {
        let n = t.name;
        assert!(!["remove_", "purge_", "destroy_", "erase_"].iter().any(|p| n.starts_with(p)), "{n}");
    }
    let deactivate = <Kinetix as Agent>::tool_spec("deactivate_athlete").unwrap();
    assert_eq!(deactivate.title, Some("Delete (deactivate) athlete"));
    assert_eq!(deactivate.tier, Tier::Action);
    // The manifest a reviewer reads says the same.
    let m: serde_json::Value = serde_json::from_str(Kinetix::MANIFEST).unwrap();
    assert!(Kinetix::MANIFEST.contains("\"title\":\"Delete (deactivate) athlete\""));
    assert!(m.to_string().contains("delete_videos"));
}

#[test]
fn athlete_role_holds_exactly_the_four_permissions() {
    let (_, perms) = roles().roles().find(|(r, _)| *r == ATHLETE).unwrap();
    let got: BTreeSet<&str> = perms.iter().map(String::as_str).collect();
    assert_eq!(got, BTreeSet::from(["athlete.read", "wellness.write", "vitals.read", "device.manage"]));
    // So the athlete is never offered a clinical tool: no injury, return-to-play or screening
    // tool exists for them, only what their four permissions (and `public`) reach.
    let offered: BTreeSet<&str> = <Kinetix as Agent>::tools()
        .iter()
        .filter(|t| roles().has_permission(ATHLETE, t.permission))
        .map(|t| t.name)
        .collect();
    assert_eq!(
        offered,
        BTreeSet::from([
            "get_athlete",
            "get_vitals",
            "list_athletes",
            "list_devices",
            "open_page",
            "pair_device",
            "rotate_device_key",
            "submit_wellness"
        ])
    );
    for role in ["athlete", "physio", "doctor", "coach", "admin"] {
        assert!(roles().contains_role(role), "{role}");
    }
}

#[test]
fn sign_offs_are_gated_field_by_field_in_the_service() {
    let store = Store::seeded();
    let forbidden = |r: Result<_, ServiceError>| matches!(r, Err(ServiceError::Forbidden(_)));
    assert!(forbidden(store.update_rtp(&people::priya(), "rtp-1", None, None, false, true, false)));
    assert!(forbidden(store.update_rtp(&people::priya(), "rtp-1", None, None, false, false, true)));
    assert!(forbidden(store.update_rtp(&people::okafor(), "rtp-1", None, None, true, false, false)));
    assert!(forbidden(store.update_rtp(&people::marco(), "rtp-1", None, None, false, true, false)));
    // A refused request changes nothing, not even the fields it was allowed to change.
    assert!(forbidden(store.update_rtp(&people::priya(), "rtp-1", Some(5), None, true, true, false)));
    assert_eq!(store.inspect_rtp("rtp-1").unwrap().stage, 4);
    let e = store.update_rtp(&people::okafor(), "rtp-1", None, None, false, true, false).unwrap();
    assert_eq!(e.doctor_signoff.unwrap().by, "u-okafor");
    let e = store.update_rtp(&people::marco(), "rtp-1", None, None, false, false, true).unwrap();
    assert!(e.cleared());
    assert!(forbidden(store.create_rtp(&people::priya(), "ath-102", "inj-2", 1, "", true, true, false)));
    assert!(store.create_rtp(&people::priya(), "ath-102", "inj-2", 1, "", true, false, false).is_ok());
}

#[test]
fn tenant_and_self_scoping_live_in_the_service() {
    let store = Store::seeded();
    let jane = people::jane();
    let mine = store.list_athletes(&jane, None, None, true).unwrap();
    assert_eq!(mine.iter().map(|a| a.id.as_str()).collect::<Vec<_>>(), ["ath-101"]);
    assert!(store.list_athletes(&jane, None, Some("Tom"), false).unwrap().is_empty());
    assert!(matches!(store.get_athlete(&jane, "ath-102"), Err(ServiceError::Forbidden(_))));
    assert!(matches!(store.list_injuries(&jane, "ath-101", true), Err(ServiceError::Forbidden(_))));
    assert!(matches!(store.list_athletes(&people::sam_unlinked(), None, None, false), Err(ServiceError::Forbidden(_))));
    let erik = people::erik();
    assert!(store.list_athletes(&erik, None, None, true).unwrap().iter().all(|a| a.org_id == "org-harbour"));
    assert!(matches!(store.get_athlete(&erik, "ath-101"), Err(ServiceError::NotFound(_))));
    // Deactivation is a soft delete: the record stays, only the active lists change.
    let marco = people::marco();
    store.deactivate_athlete(&marco, "ath-104").unwrap();
    assert!(!store.list_athletes(&marco, None, None, false).unwrap().iter().any(|a| a.id == "ath-104"));
    assert!(store.list_athletes(&marco, None, None, true).unwrap().iter().any(|a| a.id == "ath-104"));
    assert_eq!(store.get_athlete(&marco, "ath-104").unwrap().deactivated_on.as_deref(), Some("2026-03-16"));
}

fn for_tool<'a>(records: &'a [AuditRecord], user: &str, tool: &str) -> Vec<&'a AuditRecord> {
    records.iter().filter(|r| r.user_id == user && r.tool.as_deref() == Some(tool)).collect()
}

fn statuses(records: &[&AuditRecord]) -> Vec<AuditStatus> {
    records.iter().map(|r| r.status).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn demo_scenarios_end_as_described() {
    let mut out = Vec::new();
    let report = run_demo(&mut out).await.unwrap();
    let text = String::from_utf8(out).unwrap();
    let records = &report.records;
    use AuditStatus::*;

    // The approved injury record executed, under the same call as its confirmation.
    let injury = for_tool(records, "u-priya", "create_injury");
    assert_eq!(statuses(&injury), [Proposed, Confirmed, Executed]);
    assert!(injury.iter().all(|r| r.call_id == injury[0].call_id && r.args_hash == injury[0].args_hash));
    assert!(text.contains("  └─ Approve? [y/N] y\n     approved by u-priya"));

    // The physio's doctor sign-off: approved by her, refused by the service, audited as failed.
    let signoff = for_tool(records, "u-priya", "update_rtp");
    assert_eq!(statuses(&signoff), [Proposed, Confirmed, Failed]);
    assert!(signoff[2].reason.as_deref().unwrap().contains("doctor sign-off requires doctor authority"));
    // The doctor's own sign-off executed.
    assert_eq!(statuses(&for_tool(records, "u-okafor", "update_rtp")), [Proposed, Confirmed, Executed]);

    // The athlete: no injury tool available at all, a fabricated call denied, peers invisible.
    let started: Vec<&AuditRecord> =
        records.iter().filter(|r| r.user_id == "u-jane" && r.status == RunStarted).collect();
    assert!(!started.is_empty());
    for r in &started {
        let tools: Vec<&str> = r.result.as_ref().and_then(|r| r.value()).unwrap()["available_tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t.as_str().unwrap())
            .collect();
        assert!(tools.iter().all(|t| !t.contains("injur") && !t.contains("rtp")), "{tools:?}");
        assert!(tools.contains(&"list_athletes"));
    }
    assert_eq!(statuses(&for_tool(records, "u-jane", "list_injuries")), [Denied]);
    assert!(text.contains("I could not find Tom among the athletes you can see."));
    assert!(text.contains("kinetix: 1 athlete(s) you can see: Jane Doe (ath-101"));
    assert_eq!(statuses(&for_tool(records, "u-jane", "submit_wellness")), [Proposed, Confirmed, Executed]);

    // The athlete pairs a device: her card shows her the code she typed, as the tool receives
    // it; the events and the audit log carry it masked.
    let pairing = for_tool(records, "u-jane", "pair_device");
    assert_eq!(statuses(&pairing), [Proposed, Confirmed, Executed]);
    // The log keeps the argument's name, not its value (not even masked).
    assert!(pairing[0].values_omitted(), "{:?}", pairing[0]);
    assert!(pairing[0].args.as_ref().unwrap().get("pairing_code").is_some());
    let card = text.lines().find(|l| l.starts_with("  │  pair_device ")).expect("the pairing card");
    assert!(card.contains(r#""pairing_code":"048213""#), "the card shows the masked value: {card}");
    let typed: Vec<&str> = text.lines().filter(|l| l.contains("048213")).collect();
    assert_eq!(typed, ["jane (athlete)> Pair my new Polar H10 for ath-101 with code 048213", card], "{text}");

    // The unlinked athlete is refused; the other tenant's physio finds nothing.
    let sam = for_tool(records, "u-sam", "list_athletes");
    assert_eq!(statuses(&sam), [Proposed, Failed]);
    assert!(sam[1].reason.as_deref().unwrap().contains("not linked"));
    let erik = for_tool(records, "u-erik", "list_injuries");
    assert_eq!(statuses(&erik), [Proposed, Failed]);
    assert!(erik[1].reason.as_deref().unwrap().starts_with("not found"));

    // Delete means deactivate; a clinical delete does not exist; the declined video stays.
    assert_eq!(statuses(&for_tool(records, "u-marco", "deactivate_athlete")), [Proposed, Confirmed, Executed]);
    assert_eq!(
        for_tool(records, "u-marco", "deactivate_athlete")[0].title.as_deref(),
        Some("Delete (deactivate) athlete")
    );
    let del = for_tool(records, "u-marco", "delete_injury");
    assert_eq!(statuses(&del), [Denied]);
    assert_eq!(del[0].reason.as_deref(), Some("unknown tool `delete_injury`"));
    assert_eq!(statuses(&for_tool(records, "u-marco", "delete_video")), [Proposed, Rejected]);
    assert!(Store::global().inspect_athlete("ath-105").is_some_and(|a| !a.active));

    assert!(severe_failures(records).is_empty(), "{:?}", severe_failures(records));
    assert!(text.contains("severe failures computed from the audit records: 0"));
    let file = std::fs::read_to_string(&report.audit_path).unwrap();
    agents_runtime::agents_core::audit::verify_jsonl(&file, Some(Kinetix::MANIFEST_SHA256)).unwrap();
    assert_eq!(file.lines().count(), records.len());
    assert!(!file.contains("048213"), "the audit log holds the pairing code");
    no_value_in_the_log(&report.seen, records, &file);
    assert!(text.contains(" args=(values omitted: "), "the demo says the values are omitted");
    std::fs::remove_file(&report.audit_path).unwrap();
}

/// By default the log holds no argument or result value the session showed: every string of
/// four bytes or more of every call's arguments, card and result is searched for in the log's
/// raw bytes, and every number of four digits or more as a JSON value (a number's digits occur
/// by chance in the hashes and timestamps). Values that are the records' own words (the user,
/// the organisation, a tool's name: the principal and the agent, not the call) are not values
/// of a call.
fn no_value_in_the_log(seen: &[serde_json::Value], records: &[AuditRecord], file: &str) {
    fn leaves(v: &serde_json::Value, out: &mut BTreeSet<String>, numbers: &mut BTreeSet<String>) {
        match v {
            serde_json::Value::String(s) => {
                out.insert(s.clone());
            }
            serde_json::Value::Number(n) => {
                numbers.insert(n.to_string());
            }
            serde_json::Value::Array(a) => a.iter().for_each(|v| leaves(v, out, numbers)),
            serde_json::Value::Object(m) => m.values().for_each(|v| leaves(v, out, numbers)),
            _ => {}
        }
    }
    let (mut values, mut numbers) = (BTreeSet::new(), BTreeSet::new());
    seen.iter().for_each(|v| leaves(v, &mut values, &mut numbers));
    let own: BTreeSet<String> = records
        .iter()
        .flat_map(|r| [Some(&r.user_id), Some(&r.org_id), Some(&r.role), Some(&r.agent), r.tool.as_ref()])
        .flatten()
        .map(|s| s.to_string())
        .collect();
    let searched: Vec<&String> = values.iter().filter(|v| v.len() >= 4 && !own.contains(*v)).collect();
    assert!(searched.len() >= 20, "the session showed too few values to search for: {searched:?}");
    let found: Vec<&&String> = searched.iter().filter(|v| file.contains(v.as_str())).collect();
    assert!(found.is_empty(), "values of the session in the audit log: {found:?}");
    let as_json = |n: &str| {
        [':', '[', ',']
            .iter()
            .any(|before| [',', '}', ']'].iter().any(|after| file.contains(&format!("{before}{n}{after}"))))
    };
    let numbers: Vec<&String> = numbers.iter().filter(|n| n.len() >= 4).collect();
    assert!(!numbers.is_empty(), "the session showed no number to search for");
    let found: Vec<&&String> = numbers.iter().filter(|n| as_json(n)).collect();
    assert!(found.is_empty(), "numbers of the session in the audit log: {found:?}");
}
