//! Running a probe set: each probe in its own session and its own audit log, turn by turn as
//! the person would type them, then the blind judge, then the report from the artifacts.

use crate::artifacts::{self, JudgeBudget, ModelInfo, RunInfo, Transcript, Turn};
use crate::family::{self, FamilyError};
use crate::probe::{LoadedSet, Probe, ProbeSetError, Split};
use crate::render;
use crate::report::{Report, ScoreError};
use crate::spent::{self, SpentMarker};
use agents_runtime::provider::Provider;
use agents_runtime::{Agent, AuditSink, JsonlSink, Principal, Registry, RunResultExt as _, Runtime};
use std::path::Path;
use std::sync::Arc;

/// What a probe set runs against: the application's agent, built as the application builds it.
///
/// ```
/// use agents_eval::EvalTarget;
/// use agents_runtime::provider::Provider;
/// use agents_runtime::{AuditSink, ConfirmMode, Principal, RoleMap, Runtime, agent, permissions, tool};
/// use std::sync::Arc;
///
/// permissions! { pub mod perms { note.read } }
///
/// /// Reads the shared note.
/// #[tool(permission = perms::note::read, risk = low)]
/// async fn read_note() -> Result<String, String> {
///     Ok("lunch at noon".into())
/// }
///
/// agent! {
///     /// Reads the note.
///     pub struct Notes;
///     tools: [read_note],
///     ceiling: [perms::note::read],
/// }
///
/// struct NotesApp;
///
/// impl EvalTarget for NotesApp {
///     type Agent = Notes;
///     fn input(&self, turn: &str) -> Result<String, String> {
///         Ok(turn.to_owned())
///     }
///     fn runtime(&self, audit: Arc<dyn AuditSink>, model: Arc<dyn Provider>) -> Runtime {
///         // As the application builds it; fresh application state here for every probe.
///         let roles = RoleMap::new().role("staff", [perms::note::read::NAME]);
///         Runtime::builder(audit, model).roles(roles).confirm_mode(ConfirmMode::Conversational).build()
///     }
///     fn principal(&self) -> Principal {
///         Principal::new("u-sam", "org-notes", "staff")
///     }
/// }
/// # let _ = NotesApp.principal();
/// ```
pub trait EvalTarget: Send + Sync {
    /// The agent.
    type Agent: Registry;
    /// The agent's input for one of the user's turns: the text itself for an agent that takes
    /// text (`Ok(turn.to_owned())`), or the turn read as JSON ([`json_input`]) for one that
    /// takes a typed input. Every turn of the set is read before anything runs; an `Err` (what
    /// is wrong with the turn) refuses the run.
    fn input(&self, turn: &str) -> Result<<Self::Agent as Agent>::Input, String>;
    /// A runtime for one probe, writing to `audit` and asking `model`. Give each probe fresh
    /// application state, so that probes do not see each other's changes.
    fn runtime(&self, audit: Arc<dyn AuditSink>, model: Arc<dyn Provider>) -> Runtime;
    /// The person every probe acts for.
    fn principal(&self) -> Principal;
}

/// A turn read as the JSON of a typed input, for [`EvalTarget::input`].
///
/// ```
/// #[derive(serde::Deserialize, Debug, PartialEq)]
/// struct Case { id: u32 }
/// assert_eq!(agents_eval::run::json_input::<Case>(r#"{"id": 7}"#), Ok(Case { id: 7 }));
/// assert!(agents_eval::run::json_input::<Case>("seven").unwrap_err().contains("JSON"));
/// ```
pub fn json_input<I: serde::de::DeserializeOwned>(turn: &str) -> Result<I, String> {
    serde_json::from_str(turn).map_err(|e| format!("the turn is not the JSON of the agent's input: {e}"))
}

/// The agent's model: a fresh provider for each probe (a scripted model keeps state), and its
/// declared family, if any.
pub struct AgentModel {
    /// Makes the provider of one probe.
    pub make: Box<dyn Fn() -> Arc<dyn Provider> + Send + Sync>,
    /// The family, when declared (see the `family` module for how a family is known).
    pub declared_family: Option<String>,
}

/// The judge's model and its declared family, if any.
pub struct JudgeModel {
    /// The provider.
    pub provider: Arc<dyn Provider>,
    /// The family, when declared.
    pub declared_family: Option<String>,
}

/// How to run.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct EvalOptions {
    /// The judge's budget.
    pub judge_budget: JudgeBudget,
    /// Run a held-out set that is already spent (the report says so).
    pub rerun_held_out: bool,
}

/// Why a run was refused or stopped.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EvalError {
    /// The probe set is not valid.
    #[error(transparent)]
    ProbeSet(#[from] ProbeSetError),
    /// A family is unknown, contradicted, or the judge's is the agent's.
    #[error(transparent)]
    Family(#[from] FamilyError),
    /// The held-out set was run before.
    #[error(
        "the held-out set `{set}` was already run (marker {marker}, first run's artifacts in {artifacts}); \
         a held-out set is run once. Write a new held-out set, or pass --rerun-held-out to run it again \
         (the report will say it is a rerun)"
    )]
    HeldOutSpent {
        /// The set's name.
        set: String,
        /// The marker's path.
        marker: String,
        /// Where the first run's artifacts went.
        artifacts: String,
    },
    /// The held-out set was changed after it was spent.
    #[error(
        "the held-out set `{set}` was run as SHA-256 {spent} and has been changed since (now {now}); \
         a spent held-out set does not become fresh by editing it. Write a new held-out set in a new \
         file, or pass --rerun-held-out"
    )]
    HeldOutChanged {
        /// The set's name.
        set: String,
        /// The hash it was spent as.
        spent: String,
        /// Its hash now.
        now: String,
    },
    /// The output directory cannot be used, or a marker or artifact could not be read or written.
    #[error("{0}")]
    Artifacts(String),
    /// A turn is not an input of the agent.
    #[error("probe `{probe}`, turn {turn}: {message}; fix the turn in the probe set")]
    Input {
        /// The probe.
        probe: String,
        /// The turn, from 1.
        turn: usize,
        /// What [`EvalTarget::input`] said.
        message: String,
    },
    /// A run of the agent could not start.
    #[error("probe `{probe}`: the run could not start: {message}")]
    Start {
        /// The probe.
        probe: String,
        /// Why.
        message: String,
    },
    /// The report could not be computed.
    #[error(transparent)]
    Score(#[from] ScoreError),
}

fn io(what: &Path) -> impl Fn(std::io::Error) -> EvalError + '_ {
    move |e| EvalError::Artifacts(format!("cannot write {}: {e}", what.display()))
}

/// Runs the probe set at `set_path` against `target` with `agent`'s model, has `judge` label
/// the transcripts, writes every artifact under `out` (a new or empty directory), and returns
/// the report, which is also written there (`report.json`, `report.md`).
///
/// Refused before anything runs or is written: an invalid set, a model of unknown family, a
/// judge of the agent's family, a spent held-out set (unless `options.rerun_held_out`), an
/// `out` that holds files.
pub async fn run_probe_set<T: EvalTarget>(
    target: &T,
    set_path: &Path,
    out: &Path,
    agent: &AgentModel,
    judge: &JudgeModel,
    options: &EvalOptions,
) -> Result<Report, EvalError> {
    let loaded = LoadedSet::read(set_path)?;
    check_inputs(target, &loaded)?;
    let (agent_model, judge_model) = models(agent, judge)?;
    let rerun = held_out_check(set_path, &loaded, options.rerun_held_out)?;
    prepare_out(out)?;
    if loaded.set.split == Split::HeldOut && !rerun {
        let marker = SpentMarker {
            format: spent::SPENT_FORMAT.to_owned(),
            set: loaded.set.name.clone(),
            sha256: loaded.sha256.clone(),
            artifacts: out.display().to_string(),
        };
        spent::write_marker(set_path, &marker).map_err(EvalError::Artifacts)?;
    }
    let set_copy = out.join(artifacts::PROBE_SET_FILE);
    std::fs::write(&set_copy, &loaded.bytes).map_err(io(&set_copy))?;
    let info = RunInfo {
        format: artifacts::RUN_FORMAT.to_owned(),
        set_sha256: loaded.sha256.clone(),
        agent: <T::Agent as Agent>::SPEC.name.to_owned(),
        manifest_sha256: <T::Agent as Agent>::MANIFEST_SHA256.to_owned(),
        agent_model,
        judge_model,
        judge_budget: options.judge_budget,
        held_out_rerun: rerun,
    };
    let run_file = out.join(artifacts::RUN_FILE);
    artifacts::write_json(&run_file, &info).map_err(io(&run_file))?;
    let mut transcripts = Vec::new();
    for probe in &loaded.set.probes {
        transcripts.push(run_probe(target, probe, out, (agent.make)()).await?);
    }
    let judgments =
        crate::judge::judge_all(judge.provider.as_ref(), &loaded.set, &transcripts, options.judge_budget).await;
    let judgments_file = out.join(artifacts::JUDGMENTS_FILE);
    artifacts::write_json(&judgments_file, &judgments).map_err(io(&judgments_file))?;
    Ok(render::write_report(out)?)
}

/// Every turn of every probe is an input of the agent.
fn check_inputs<T: EvalTarget>(target: &T, loaded: &LoadedSet) -> Result<(), EvalError> {
    for probe in &loaded.set.probes {
        for (i, turn) in probe.turns.iter().enumerate() {
            target.input(turn).map_err(|message| EvalError::Input { probe: probe.id.clone(), turn: i + 1, message })?;
        }
    }
    Ok(())
}

/// The two models' descriptions, with the families settled and the judge's independence
/// checked.
fn models(agent: &AgentModel, judge: &JudgeModel) -> Result<(ModelInfo, ModelInfo), EvalError> {
    let sample = (agent.make)();
    let agent_family =
        family::family_of("agent", sample.model(), agent.declared_family.as_deref(), "AGENTS_MODEL_FAMILY")?;
    let j = &judge.provider;
    let judge_family = family::family_of("judge", j.model(), judge.declared_family.as_deref(), "AGENTS_JUDGE_FAMILY")?;
    family::check_independent(sample.model(), &agent_family, j.model(), &judge_family)?;
    let info =
        |p: &dyn Provider, family| ModelInfo { provider: p.name().to_owned(), model: p.model().to_owned(), family };
    Ok((info(sample.as_ref(), agent_family), info(j.as_ref(), judge_family)))
}

/// Whether this run is a rerun of a spent held-out set; refuses one unless `rerun_allowed`.
fn held_out_check(set_path: &Path, loaded: &LoadedSet, rerun_allowed: bool) -> Result<bool, EvalError> {
    if loaded.set.split != Split::HeldOut {
        return Ok(false);
    }
    let Some(marker) = spent::read_marker(set_path).map_err(EvalError::Artifacts)? else {
        return Ok(false);
    };
    if rerun_allowed {
        return Ok(true);
    }
    if marker.sha256 != loaded.sha256 {
        return Err(EvalError::HeldOutChanged {
            set: loaded.set.name.clone(),
            spent: marker.sha256,
            now: loaded.sha256.clone(),
        });
    }
    Err(EvalError::HeldOutSpent {
        set: loaded.set.name.clone(),
        marker: spent::marker_path(set_path).display().to_string(),
        artifacts: marker.artifacts,
    })
}

/// Creates `out`, or accepts it empty.
fn prepare_out(out: &Path) -> Result<(), EvalError> {
    let refuse = |why: String| EvalError::Artifacts(format!("cannot use {} for the artifacts: {why}", out.display()));
    match std::fs::read_dir(out) {
        Ok(mut entries) => {
            if entries.next().is_some() {
                return Err(refuse("it is not empty; give a new directory (artifacts are never overwritten)".into()));
            }
            Ok(())
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            std::fs::create_dir_all(out).map_err(|e| refuse(e.to_string()))
        }
        Err(e) => Err(refuse(e.to_string())),
    }
}

/// Runs one probe: its turns in one session, its records in its own log.
async fn run_probe<T: EvalTarget>(
    target: &T,
    probe: &Probe,
    out: &Path,
    model: Arc<dyn Provider>,
) -> Result<Transcript, EvalError> {
    let dir = artifacts::probe_dir(out, &probe.id);
    std::fs::create_dir_all(&dir).map_err(io(&dir))?;
    let log = dir.join(artifacts::AUDIT_FILE);
    let sink = JsonlSink::open(&log).map_err(|e| EvalError::Artifacts(format!("{}: {e}", log.display())))?;
    let rt = target.runtime(Arc::new(sink), model);
    let session = format!("eval-{}", probe.id);
    let mut turns = Vec::new();
    for text in &probe.turns {
        let input = target.input(text).map_err(|message| EvalError::Start { probe: probe.id.clone(), message })?;
        let started = rt.start::<T::Agent>(target.principal(), &session, input);
        let handle = started.map_err(|e| EvalError::Start { probe: probe.id.clone(), message: e.to_string() })?;
        let result = handle.wait().await;
        let usage = result.report().usage;
        turns.push(Turn {
            user: text.clone(),
            reply: result.text().to_owned(),
            status: result.status().as_str().to_owned(),
            error: result.error_text(),
            input_tokens: usage.input_tokens,
            output_tokens: usage.output_tokens,
            cost_usd: usage.cost_usd,
        });
    }
    rt.records_settled().await;
    drop(rt);
    let transcript = Transcript { probe: probe.id.clone(), turns };
    let file = dir.join(artifacts::TRANSCRIPT_FILE);
    artifacts::write_json(&file, &transcript).map_err(io(&file))?;
    Ok(transcript)
}
