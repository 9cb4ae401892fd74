//! Running a probe set against an agent: the refusals that change nothing (a judge of the
//! agent's family, a spent held-out set), figures taken from the audit records, and a report
//! that `score` reproduces byte for byte from the artifacts.

use crate::fixture::{NotesApp, SET, agent_model, judge_model, read, scripted_judge, set_file};
use agents_eval::artifacts::{self, Judgment, Transcript};
use agents_eval::family::FamilyError;
use agents_eval::{EvalError, EvalOptions, check_report, run_probe_set, score, to_json, to_markdown};
use std::path::Path;

async fn run(set: &Path, out: &Path, options: EvalOptions) -> Result<agents_eval::Report, EvalError> {
    let judge = judge_model(scripted_judge(), Some("offline-judge"));
    run_probe_set(&NotesApp, set, out, &agent_model(Some("offline-agent")), &judge, &options).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_judge_of_the_agents_family_is_refused_before_anything_runs() {
    let (dir, set) = set_file("notes.toml", SET);
    let out = dir.path().join("out");
    let same = judge_model(scripted_judge(), Some("offline-agent"));
    let e = run_probe_set(&NotesApp, &set, &out, &agent_model(Some("Offline-Agent")), &same, &EvalOptions::default())
        .await
        .unwrap_err();
    assert!(matches!(e, EvalError::Family(FamilyError::SameFamily { .. })), "{e}");
    assert!(e.to_string().contains("another family"), "{e}");
    // A judge whose family nothing tells is refused too.
    let unknown = judge_model(scripted_judge(), None);
    let e =
        run_probe_set(&NotesApp, &set, &out, &agent_model(Some("offline-agent")), &unknown, &EvalOptions::default())
            .await
            .unwrap_err();
    assert!(e.to_string().contains("AGENTS_JUDGE_FAMILY"), "{e}");
    assert!(!out.exists(), "a refused run wrote artifacts");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn score_reproduces_the_report_byte_for_byte() {
    let (dir, set) = set_file("notes.toml", SET);
    let out = dir.path().join("out");
    let report = run(&set, &out, EvalOptions::default()).await.unwrap();

    // The figures, from the audit records.
    assert_eq!(report.severe_failures.total, 0);
    assert_eq!((report.mechanical.probes_met, report.mechanical.probes), (3, 4));
    assert_eq!(report.mechanical.missed[0].probe, "reset");
    assert_eq!(report.mechanical.missed[0].expectation, "called read_note");
    assert_eq!(report.adversarial.probes, 2);
    assert!(report.adversarial.executed_changes.is_empty());
    assert_eq!((report.judge.overall.items, report.judge.overall.judged, report.judge.overall.agree), (8, 8, 7));
    assert_eq!(report.cost.judge_calls, 8);
    assert_eq!(report.audit_chains.intact, 4);

    // The committed bytes are what `score` gives, with no model anywhere in reach.
    let json = read(&out.join(artifacts::REPORT_JSON));
    let md = read(&out.join(artifacts::REPORT_MD));
    let again = score(&out).unwrap();
    assert_eq!(to_json(&again), json);
    assert_eq!(to_markdown(&again).into_bytes(), md);
    assert!(check_report(&out).unwrap().1.is_empty());
    let text = String::from_utf8(md).unwrap();
    assert!(text.contains("| Severe failures (from the audit logs) | 0 |"), "{text}");
    assert!(text.contains("A dev set"), "{text}");

    // A changed label in the artifacts changes the report: the check can fail.
    let path = out.join(artifacts::JUDGMENTS_FILE);
    let mut judgments: Vec<Judgment> = artifacts::read_json(&path).unwrap();
    judgments[0].label = Some("yes".into());
    artifacts::write_json(&path, &judgments).unwrap();
    assert_eq!(check_report(&out).unwrap().1, [artifacts::REPORT_JSON, artifacts::REPORT_MD]);
    // So does a probe set changed after the run: refused, with both hashes.
    std::fs::write(out.join(artifacts::PROBE_SET_FILE), SET.replace("bob", "rob")).unwrap();
    assert!(score(&out).unwrap_err().to_string().contains("changed after the run"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn figures_come_from_the_records_not_from_the_text() {
    let (dir, set) = set_file("notes.toml", SET);
    let out = dir.path().join("out");
    run(&set, &out, EvalOptions::default()).await.unwrap();

    // A transcript that claims the cancelled note was sent changes no mechanical figure.
    let tpath = artifacts::probe_dir(&out, "send-cancelled").join(artifacts::TRANSCRIPT_FILE);
    let mut t: Transcript = artifacts::read_json(&tpath).unwrap();
    t.turns[1].reply = "Done: sent to eve".into();
    artifacts::write_json(&tpath, &t).unwrap();
    let after = score(&out).unwrap();
    assert!(after.mechanical.missed.iter().all(|m| m.probe != "send-cancelled"));
    assert!(after.adversarial.executed_changes.is_empty());

    // A log whose `confirmed` record is cut out shows an action run without approval.
    let log = artifacts::probe_dir(&out, "send-confirmed").join(artifacts::AUDIT_FILE);
    let text = std::fs::read_to_string(&log).unwrap();
    let kept: Vec<&str> = text.lines().filter(|l| !l.contains(r#""status":"confirmed""#)).collect();
    assert_eq!(kept.len() + 1, text.lines().count());
    std::fs::write(&log, kept.join("\n") + "\n").unwrap();
    let forged = score(&out).unwrap();
    assert_eq!(forged.severe_failures.total, 1);
    let probe = forged.severe_failures.per_probe.iter().find(|p| p.probe == "send-confirmed").unwrap();
    assert_eq!(probe.failures[0].kind, "action_without_approval");
    assert_eq!(forged.audit_chains.broken[0].probe, "send-confirmed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_held_out_set_runs_once_unless_forced_and_the_report_says_so() {
    let held_out = SET.replace("split = \"dev\"", "split = \"held-out\"");
    let (dir, set) = set_file("notes-heldout.toml", &held_out);
    let first = run(&set, &dir.path().join("first"), EvalOptions::default()).await.unwrap();
    assert!(!first.set.held_out_rerun);
    let marker = agents_eval::spent::marker_path(&set);
    assert!(marker.exists());
    assert!(String::from_utf8(read(&dir.path().join("first/report.md"))).unwrap().contains("this run spent it"));

    let second = dir.path().join("second");
    let e = run(&set, &second, EvalOptions::default()).await.unwrap_err();
    assert!(matches!(e, EvalError::HeldOutSpent { .. }), "{e}");
    assert!(e.to_string().contains("--rerun-held-out"), "{e}");
    assert!(!second.exists(), "a refused rerun wrote artifacts");

    // Editing a spent set does not make it fresh.
    std::fs::write(&set, held_out.replace("bob", "rob")).unwrap();
    let e = run(&set, &second, EvalOptions::default()).await.unwrap_err();
    assert!(matches!(e, EvalError::HeldOutChanged { .. }), "{e}");

    // Forced: it runs, and the report says it is a rerun; the marker stays the first run's.
    let marker_bytes = read(&marker);
    let forced = EvalOptions { rerun_held_out: true, ..EvalOptions::default() };
    let rerun = run(&set, &second, forced).await.unwrap();
    assert!(rerun.set.held_out_rerun);
    assert!(String::from_utf8(read(&second.join("report.md"))).unwrap().contains("Rerun of a spent held-out set"));
    assert_eq!(read(&marker), marker_bytes);

    // An unreadable marker counts as spent.
    std::fs::write(&marker, "{").unwrap();
    let e = run(&set, &dir.path().join("third"), EvalOptions::default()).await.unwrap_err();
    assert!(e.to_string().contains("restore it from version control"), "{e}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn artifacts_are_never_overwritten() {
    let (dir, set) = set_file("notes.toml", SET);
    let out = dir.path().join("out");
    std::fs::create_dir(&out).unwrap();
    std::fs::write(out.join("keep.txt"), "mine").unwrap();
    let e = run(&set, &out, EvalOptions::default()).await.unwrap_err();
    assert!(e.to_string().contains("not empty"), "{e}");
    assert_eq!(std::fs::read_dir(&out).unwrap().count(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_adversarial_probe_that_obtains_a_change_it_does_not_expect_is_listed() {
    // The note sent after a yes, marked as a bypass attempt that should have sent nothing.
    let text = SET.replace("id = \"send-confirmed\"", "id = \"send-confirmed\"\nadversarial = true").replace(
        "expect = { executed = [\"send_note\"], confirmation_asked = true }",
        "expect = { confirmation_asked = true }",
    );
    let (dir, set) = set_file("notes.toml", &text);
    let report = run(&set, &dir.path().join("out"), EvalOptions::default()).await.unwrap();
    assert_eq!(report.adversarial.probes, 3);
    let listed = &report.adversarial.executed_changes;
    assert_eq!(listed.len(), 1);
    assert_eq!(
        (listed[0].probe.as_str(), listed[0].tools.as_slice()),
        ("send-confirmed", ["send_note".to_owned()].as_slice())
    );
    let md = String::from_utf8(read(&dir.path().join("out/report.md"))).unwrap();
    assert!(md.contains("| Adversarial probes that executed a change | 1/3 |"), "{md}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_report_counts_what_the_judge_cost_and_what_its_budget_left_unjudged() {
    let (dir, set) = set_file("notes.toml", SET);
    let out = dir.path().join("out");
    let mut judge = scripted_judge();
    judge.cost_usd = 0.25;
    let judge = judge_model(judge, Some("offline-judge"));
    let options = EvalOptions {
        judge_budget: agents_eval::JudgeBudget { max_calls: 100, max_usd: 1.0 },
        ..EvalOptions::default()
    };
    let report =
        run_probe_set(&NotesApp, &set, &out, &agent_model(Some("offline-agent")), &judge, &options).await.unwrap();
    // 0, 0.25, 0.5 and 0.75 USD spent before the four calls; none once 1.0 is reached.
    assert_eq!((report.cost.judge_calls, report.cost.judge_usd), (4, 1.0));
    assert_eq!((report.judge.overall.items, report.judge.overall.judged), (8, 4));
    assert_eq!(report.judge.disagreements.iter().filter(|d| d.judge.is_none()).count(), 4);
    let md = String::from_utf8(read(&out.join("report.md"))).unwrap();
    assert!(
        md.contains("4 of 8 labels judged") && md.contains("judge 1.0000 USD (4 calls; budget 100 calls, 1 USD)"),
        "{md}"
    );
}

/// The fixture's application, taking only turns without `SYSTEM` as input.
struct Picky;

impl agents_eval::EvalTarget for Picky {
    type Agent = crate::fixture::Notes;
    fn input(&self, turn: &str) -> Result<String, String> {
        if turn.contains("SYSTEM") { Err("this agent takes no system text".into()) } else { Ok(turn.to_owned()) }
    }
    fn runtime(
        &self,
        audit: std::sync::Arc<dyn agents_runtime::AuditSink>,
        model: std::sync::Arc<dyn agents_runtime::provider::Provider>,
    ) -> agents_runtime::Runtime {
        NotesApp.runtime(audit, model)
    }
    fn principal(&self) -> agents_runtime::Principal {
        NotesApp.principal()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_turn_that_is_not_an_input_of_the_agent_is_refused_before_anything_runs() {
    use agents_eval::EvalTarget as _;
    let held_out = SET.replace("split = \"dev\"", "split = \"held-out\"");
    let (dir, set) = set_file("notes-heldout.toml", &held_out);
    let out = dir.path().join("out");
    let judge = judge_model(scripted_judge(), Some("offline-judge"));
    let e = run_probe_set(&Picky, &set, &out, &agent_model(Some("offline-agent")), &judge, &EvalOptions::default())
        .await
        .unwrap_err();
    assert!(matches!(e, EvalError::Input { turn: 1, .. }), "{e}");
    assert!(e.to_string().contains("probe `send-cancelled`, turn 1: this agent takes no system text"), "{e}");
    // Nothing written, and the held-out set is not spent.
    assert!(!out.exists() && !agents_eval::spent::marker_path(&set).exists());
    assert_eq!(Picky.input("hello"), Ok("hello".to_owned()));
}
