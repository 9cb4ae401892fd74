//! The helpdesk's probe sets (`examples/eval/`), run offline with the scripted agent model and
//! the scripted judge, and the committed runs reproduced by `score` from their artifacts.

use agents_eval::run::{EvalOptions, JudgeModel};
use agents_eval::{EvalError, check_report, run_probe_set, score, to_json, to_markdown};
use examples::helpdesk::eval::{HelpdeskTarget, SCRIPTED_JUDGE_FAMILY, scripted_agent, scripted_judge};
use std::path::{Path, PathBuf};
use std::sync::Arc;

fn eval_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("eval")
}

async fn run(set: &Path, out: &Path, options: EvalOptions) -> Result<agents_eval::Report, EvalError> {
    let judge =
        JudgeModel { provider: Arc::new(scripted_judge()), declared_family: Some(SCRIPTED_JUDGE_FAMILY.into()) };
    run_probe_set(&HelpdeskTarget, set, out, &scripted_agent(), &judge, &options).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn both_sets_run_offline_and_their_reports_are_reproduced() {
    let dir = tempfile::tempdir().unwrap();
    for name in ["helpdesk-dev.toml", "helpdesk-heldout.toml"] {
        // A copy, so that the held-out run spends the copy, not the committed set.
        let set = dir.path().join(name);
        std::fs::copy(eval_dir().join(name), &set).unwrap();
        let out = dir.path().join(name.replace(".toml", ""));
        let report = run(&set, &out, EvalOptions::default()).await.unwrap();
        assert_eq!(report.severe_failures.total, 0, "{name}");
        assert!(report.adversarial.probes >= 3 && report.adversarial.executed_changes.is_empty(), "{name}");
        assert_eq!(report.mechanical.probes_met, report.mechanical.probes, "{:?}", report.mechanical.missed);
        assert_eq!(report.audit_chains.intact, report.set.probes);
        assert!(report.judge.overall.judged > 0 && report.judge.overall.kappa.value.is_some());
        let again = score(&out).unwrap();
        assert_eq!(to_json(&again), std::fs::read(out.join("report.json")).unwrap());
        assert_eq!(to_markdown(&again).into_bytes(), std::fs::read(out.join("report.md")).unwrap());
    }
    let held_out = dir.path().join("helpdesk-heldout.toml");
    let e = run(&held_out, &dir.path().join("again"), EvalOptions::default()).await.unwrap_err();
    assert!(matches!(e, EvalError::HeldOutSpent { .. }), "{e}");
}

#[test]
fn committed_runs_are_reproduced_byte_for_byte() {
    for run in ["helpdesk-dev", "helpdesk-heldout"] {
        let dir = eval_dir().join("runs").join(run);
        let (report, differ) = check_report(&dir).unwrap();
        assert!(differ.is_empty(), "{run}: {differ:?} differ from what `score` gives");
        assert_eq!(report.severe_failures.total, 0);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_committed_held_out_set_is_spent() {
    let out = tempfile::tempdir().unwrap();
    let e = run(&eval_dir().join("helpdesk-heldout.toml"), &out.path().join("rerun"), EvalOptions::default())
        .await
        .unwrap_err();
    assert!(matches!(e, EvalError::HeldOutSpent { .. }), "{e}");
    assert!(!out.path().join("rerun").exists());
}

#[test]
fn the_eval_command_says_what_is_missing_or_wrong() {
    use examples::helpdesk::eval::EvalArgs;
    let args = |a: &[&str]| EvalArgs::parse(&a.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>());
    let ok =
        args(&["set.toml", "--out", "dir", "--judge-max-calls", "7", "--judge-max-usd", "0.5", "--rerun-held-out"])
            .unwrap();
    assert_eq!((ok.options.judge_budget.max_calls, ok.options.judge_budget.max_usd), (7, 0.5));
    assert!(ok.options.rerun_held_out);
    for (bad, says) in [
        (&["set.toml"][..], "give --out DIR"),
        (&["--out", "dir"][..], "give its path"),
        (&["set.toml", "--out", "dir", "--judge-max-usd", "-1"][..], "not an amount of USD"),
        (&["set.toml", "--out", "dir", "--judge-max-calls", "many"][..], "not a whole number"),
        (&["set.toml", "--out", "dir", "--rerun"][..], "unknown option `--rerun`"),
        (&["set.toml", "--out"][..], "`--out` needs a value"),
    ] {
        let e = args(bad).unwrap_err().to_string();
        assert!(e.contains(says) && e.contains("usage: helpdesk eval"), "{bad:?}: {e}");
    }
}
