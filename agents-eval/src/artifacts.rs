//! The artifacts of one run of a probe set, as committed beside the report.
//!
//! ```text
//! <dir>/probe-set.toml              the set's exact bytes (its SHA-256 is in run.json)
//! <dir>/run.json                    the models, their families, the judge's budget, held-out state
//! <dir>/probes/<id>/audit.jsonl     the probe's audit log (hash-chained, one record a line)
//! <dir>/probes/<id>/transcript.json the user's turns and the agent's replies, with their cost
//! <dir>/judgments.json              each label the judge gave (or why none), with its cost
//! <dir>/report.json, report.md      the report, recomputed from the files above by `score`
//! ```
//!
//! Every JSON file is written pretty-printed with a final newline, fields in a fixed order.

use crate::family::Family;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// The copy of the probe set.
pub const PROBE_SET_FILE: &str = "probe-set.toml";
/// What was run and how.
pub const RUN_FILE: &str = "run.json";
/// The judge's labels.
pub const JUDGMENTS_FILE: &str = "judgments.json";
/// The report, as JSON.
pub const REPORT_JSON: &str = "report.json";
/// The report, as Markdown.
pub const REPORT_MD: &str = "report.md";
/// A probe's audit log, inside its directory.
pub const AUDIT_FILE: &str = "audit.jsonl";
/// A probe's transcript, inside its directory.
pub const TRANSCRIPT_FILE: &str = "transcript.json";

/// The `format` of `run.json`.
pub const RUN_FORMAT: &str = "agents.eval-run";

/// A model as the run used it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelInfo {
    /// The provider's name (`openai`, `anthropic`, `rules`, ...).
    pub provider: String,
    /// The model id.
    pub model: String,
    /// Its family, and whether it was declared.
    pub family: Family,
}

/// The judge's spending limits.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct JudgeBudget {
    /// At most this many judge calls.
    pub max_calls: u64,
    /// No judge call once this much (USD) is spent.
    pub max_usd: f64,
}

impl Default for JudgeBudget {
    /// 500 calls, 5 USD.
    fn default() -> Self {
        JudgeBudget { max_calls: 500, max_usd: 5.0 }
    }
}

/// `run.json`: what was run, with which models, under which budget.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunInfo {
    /// Must be [`RUN_FORMAT`].
    pub format: String,
    /// The SHA-256 of the probe set's bytes.
    pub set_sha256: String,
    /// The agent's name (`Agent::SPEC`'s name).
    pub agent: String,
    /// The agent's `MANIFEST_SHA256`.
    pub manifest_sha256: String,
    /// The agent's model.
    pub agent_model: ModelInfo,
    /// The judge's model.
    pub judge_model: ModelInfo,
    /// The judge's budget.
    pub judge_budget: JudgeBudget,
    /// A held-out set that had been run before (this run was forced with `--rerun-held-out`).
    pub held_out_rerun: bool,
}

/// One user turn and what the agent answered.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Turn {
    /// What the user said.
    pub user: String,
    /// The agent's last text of the run (empty when it gave none).
    pub reply: String,
    /// How the run ended (`completed`, `awaiting_confirmation`, ...).
    pub status: String,
    /// Why the run ended without an answer, when it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Prompt tokens of the turn's model calls.
    pub input_tokens: u64,
    /// Completion tokens.
    pub output_tokens: u64,
    /// Its cost in USD.
    pub cost_usd: f64,
}

/// A probe's transcript.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Transcript {
    /// The probe's id.
    pub probe: String,
    /// The turns, in order.
    pub turns: Vec<Turn>,
}

/// One label the judge was asked for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Judgment {
    /// The probe's id.
    pub probe: String,
    /// The criterion's id.
    pub criterion: String,
    /// Whether the judge was called for it (not when the budget was used up).
    pub called: bool,
    /// The label given; `None` when the judge was not asked (budget) or its answer was not a
    /// label.
    pub label: Option<String>,
    /// Why there is no label, when there is none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not_judged: Option<String>,
    /// The judge's answer as it came (for a person checking a label).
    pub answer: String,
    /// Prompt tokens.
    pub input_tokens: u64,
    /// Completion tokens.
    pub output_tokens: u64,
    /// Cost in USD.
    pub cost_usd: f64,
}

/// The directory of probe `id` under `dir`.
pub fn probe_dir(dir: &Path, id: &str) -> PathBuf {
    dir.join("probes").join(id)
}

/// Writes `value` as pretty JSON with a final newline.
pub fn write_json<T: Serialize>(path: &Path, value: &T) -> std::io::Result<()> {
    std::fs::write(path, to_json_bytes(value))
}

/// The bytes [`write_json`] writes.
pub fn to_json_bytes<T: Serialize>(value: &T) -> Vec<u8> {
    let mut bytes = serde_json::to_vec_pretty(value).expect("artifacts serialize to JSON");
    bytes.push(b'\n');
    bytes
}

/// Reads a JSON artifact; the error names the file.
pub fn read_json<T: DeserializeOwned>(path: &Path) -> Result<T, String> {
    let bytes = std::fs::read(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    serde_json::from_slice(&bytes).map_err(|e| format!("{} is not a valid artifact: {e}", path.display()))
}
