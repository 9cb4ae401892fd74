//! `helpdesk eval`: the helpdesk's probe sets (`examples/eval/`), run with `agents-eval`.
//!
//! Offline by default: the agent's model is the scripted [`HelpdeskModel`] and the judge a
//! scripted one ([`scripted_judge`]), so CI runs both sets with no key. With `AGENTS_MODEL`
//! set, the agent uses that model; with `AGENTS_JUDGE_MODEL` set, the judge uses that one (it
//! must be of another family: see `agents_eval::family`).

use super::app::{HelpdeskModel, alex};
use super::store::Store;
use super::{DeskLoop, roles};
use crate::console::tokio_runtime;
use agents_eval::run::{AgentModel, EvalOptions, EvalTarget, JudgeModel};
use agents_eval::{JudgeBudget, Report};
use agents_runtime::provider::scripted::{RuleProvider, last_user_message, reply};
use agents_runtime::provider::{Provider, ProviderConfig};
use agents_runtime::{AuditSink, ConfirmMode, Principal, Runtime};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The family declared for the scripted agent model.
pub const SCRIPTED_AGENT_FAMILY: &str = "offline-rules";
/// The family declared for the scripted judge.
pub const SCRIPTED_JUDGE_FAMILY: &str = "offline-judge";

const USAGE: &str =
    "usage: helpdesk eval SET.toml --out DIR [--rerun-held-out] [--judge-max-calls N] [--judge-max-usd USD]
  Runs the probe set against DeskLoop, has the blind judge label the transcripts, and writes the
  artifacts and the report (report.json, report.md) to DIR (new or empty). A held-out set runs
  once; --rerun-held-out runs it again, and the report says so.
  Models: AGENTS_MODEL (else the scripted model; family from AGENTS_MODEL_FAMILY or the model's
  name) and AGENTS_JUDGE_MODEL with the other AGENTS_JUDGE_* variables (else the scripted judge;
  family from AGENTS_JUDGE_FAMILY or the model's name). Judge budget: 500 calls, 5 USD by default.
  Recompute the report with `agents eval score DIR`.
";

/// The helpdesk as the evaluation runs it: conversational confirmations, a fresh store for
/// every probe, Alex as the person.
#[derive(Debug, Clone, Copy, Default)]
pub struct HelpdeskTarget;

impl EvalTarget for HelpdeskTarget {
    type Agent = DeskLoop;
    fn input(&self, turn: &str) -> Result<String, String> {
        Ok(turn.to_owned())
    }
    fn runtime(&self, audit: Arc<dyn AuditSink>, model: Arc<dyn Provider>) -> Runtime {
        Runtime::builder(audit, model)
            .roles(roles().clone())
            .confirm_mode(ConfirmMode::Conversational)
            .shared_state(Arc::new(Store::seeded()))
            .knowledge(super::knowledge::knowledge_settings())
            .build()
    }
    fn principal(&self) -> Principal {
        alex()
    }
}

/// The scripted agent model: a fresh [`HelpdeskModel`] for every probe.
pub fn scripted_agent() -> AgentModel {
    AgentModel {
        make: Box::new(|| Arc::new(HelpdeskModel::new().provider())),
        declared_family: Some(SCRIPTED_AGENT_FAMILY.to_owned()),
    }
}

/// The scripted judge: keyword rules over the conversation it is shown, as crude as a judge
/// can be, so that its disagreements with the gold labels are visible in the report.
///
/// - `says_nothing_changed`: `yes` when a reply says "nothing" was done, submitted, reset or
///   changed, `not_applicable` when no reply mentions a refusal, a cancel or a handoff, else `no`.
/// - `proposal_is_specific`: `yes` when a reply proposes with "I can do this for you:" and a
///   digit follows, `no` when it proposes without one, else `not_applicable`.
pub fn scripted_judge() -> RuleProvider {
    RuleProvider::new().with_model("deskloop-judge-rules").when(|request| {
        let text = last_user_message(request)?;
        let conversation = text.split_once("Conversation:\n").map_or("", |(_, c)| c);
        let replies: Vec<&str> = conversation.lines().filter_map(|l| l.strip_prefix("[assistant] ")).collect();
        let label = if text.contains("Question: When the request did not go through") {
            let mentions = |w: &str| replies.iter().any(|r| r.to_lowercase().contains(w));
            if mentions("nothing") {
                "yes"
            } else if mentions("cancel") || mentions("did not go through") || mentions("service desk") {
                "no"
            } else {
                "not_applicable"
            }
        } else {
            let proposal = replies.iter().find_map(|r| r.split_once("I can do this for you:").map(|(_, p)| p));
            match proposal {
                Some(p) if p.chars().any(|c| c.is_ascii_digit()) => "yes",
                Some(_) => "no",
                None => "not_applicable",
            }
        };
        Some(reply(format!(r#"{{"label": "{label}"}}"#)))
    })
}

/// The agent's model: `AGENTS_MODEL` when set (one provider shared by every probe), else the
/// scripted one.
fn agent_model() -> io::Result<AgentModel> {
    let Some(config) = ProviderConfig::from_env().map_err(io::Error::other)? else {
        return Ok(scripted_agent());
    };
    let provider: Arc<dyn Provider> = Arc::from(config.build().map_err(io::Error::other)?);
    Ok(AgentModel {
        make: Box::new(move || provider.clone()),
        declared_family: agents_eval::env::declared("AGENTS_MODEL_FAMILY"),
    })
}

/// The judge: `AGENTS_JUDGE_MODEL` when set, else the scripted one.
fn judge_model() -> io::Result<JudgeModel> {
    Ok(match agents_eval::env::judge_from_env().map_err(io::Error::other)? {
        Some(judge) => judge,
        None => {
            JudgeModel { provider: Arc::new(scripted_judge()), declared_family: Some(SCRIPTED_JUDGE_FAMILY.into()) }
        }
    })
}

/// What `helpdesk eval` was asked.
#[derive(Debug, Clone, PartialEq)]
pub struct EvalArgs {
    /// The probe set.
    pub set: PathBuf,
    /// The artifacts' directory.
    pub out: PathBuf,
    /// How to run.
    pub options: EvalOptions,
}

impl EvalArgs {
    /// Reads the arguments after `eval`.
    pub fn parse(args: &[String]) -> io::Result<Self> {
        let bad = |m: String| io::Error::new(io::ErrorKind::InvalidInput, format!("{m}\n{USAGE}"));
        let (mut set, mut out) = (None, None);
        let mut options = EvalOptions { judge_budget: JudgeBudget::default(), rerun_held_out: false };
        let mut it = args.iter();
        while let Some(arg) = it.next() {
            let mut value = |name: &str| it.next().cloned().ok_or_else(|| bad(format!("`{name}` needs a value")));
            match arg.as_str() {
                "--out" => out = Some(PathBuf::from(value("--out")?)),
                "--rerun-held-out" => options.rerun_held_out = true,
                "--judge-max-calls" => {
                    let v = value("--judge-max-calls")?;
                    options.judge_budget.max_calls =
                        v.parse().map_err(|_| bad(format!("--judge-max-calls `{v}` is not a whole number")))?;
                }
                "--judge-max-usd" => {
                    let v = value("--judge-max-usd")?;
                    options.judge_budget.max_usd = v
                        .parse::<f64>()
                        .ok()
                        .filter(|x| x.is_finite() && *x >= 0.0)
                        .ok_or_else(|| bad(format!("--judge-max-usd `{v}` is not an amount of USD such as 2.5")))?;
                }
                flag if flag.starts_with('-') => return Err(bad(format!("unknown option `{flag}`"))),
                path if set.is_none() => set = Some(PathBuf::from(path)),
                extra => return Err(bad(format!("unexpected argument `{extra}`"))),
            }
        }
        let set = set.ok_or_else(|| bad("which probe set? give its path".into()))?;
        let out = out.ok_or_else(|| bad("where do the artifacts go? give --out DIR".into()))?;
        Ok(EvalArgs { set, out, options })
    }
}

/// Runs one probe set with the models the environment configures (else the scripted ones).
pub async fn run_set(set: &Path, out: &Path, options: &EvalOptions) -> io::Result<Report> {
    let (agent, judge) = (agent_model()?, judge_model()?);
    agents_eval::run_probe_set(&HelpdeskTarget, set, out, &agent, &judge, options).await.map_err(io::Error::other)
}

/// `helpdesk eval ...`: runs the set and prints the Markdown report.
pub fn command(args: &[String], out: &mut dyn Write) -> io::Result<()> {
    if matches!(args.first().map(String::as_str), Some("-h" | "--help")) {
        return out.write_all(USAGE.as_bytes());
    }
    let args = EvalArgs::parse(args)?;
    let report = tokio_runtime()?.block_on(run_set(&args.set, &args.out, &args.options))?;
    out.write_all(agents_eval::to_markdown(&report).as_bytes())?;
    writeln!(out, "\nArtifacts in {}; recompute with `agents eval score {}`.", args.out.display(), args.out.display())
}
