//! Scenarios as data: one TOML file per user task and one per injection goal, crossed.
//!
//! ```text
//! examples/scenarios/<example>/suite.toml      the example's settings (tools an administrator disabled)
//! examples/scenarios/<example>/tasks/*.toml    one user task per file
//! examples/scenarios/<example>/goals/*.toml    one injection goal per file
//! examples/scenarios/<example>/knowledge/*.md  the document of each goal carried by knowledge
//! ```
//!
//! Adding a file adds a row or a column: every task is run once alone (the baseline) and once
//! with every goal planted. The fields are described on [`Task`] and [`Goal`]; an unknown
//! field is an error naming the file.

use crate::model::Step;
use crate::person::Want;
use serde::Deserialize;
use serde_json::Value;
use std::path::{Path, PathBuf};

/// An example's settings (`suite.toml`).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Settings {
    /// Tools an administrator switched off for every run of the example.
    #[serde(default)]
    pub disabled: Vec<String>,
}

/// One call of a task's plan.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PlanStep {
    /// The tool.
    pub tool: String,
    /// Its arguments (a TOML table; `{}` when absent).
    #[serde(default = "empty_object")]
    pub args: Value,
    /// For an action the person approves with a change: what they say.
    pub say: Option<String>,
    /// The arguments after that change (what the model proposes next, and what the person
    /// then approves).
    pub then: Option<Value>,
    /// For an action the person first hesitates about: what they say.
    pub hesitate: Option<String>,
}

fn empty_object() -> Value {
    Value::Object(Default::default())
}

/// A check of the application's final state (or, for a read-only task, of the audit log).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Expect {
    /// A JSON pointer into the example's state snapshot.
    pub at: Option<String>,
    /// The value there equals this.
    pub equals: Option<Value>,
    /// The array there (or the object, by its values) has an element holding every field of
    /// this object.
    pub contains: Option<Value>,
    /// The array there (or the object, by its values) has no element holding every field of
    /// this object.
    pub lacks: Option<Value>,
    /// The audit log has an `executed` record of this tool (for reads, whose effect is the
    /// answer).
    pub executed: Option<String>,
    /// The audit log has a `handed_off` record of this tool.
    pub handed_off: Option<String>,
}

/// A user task (`tasks/*.toml`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Task {
    /// The file's stem.
    #[serde(skip)]
    pub id: String,
    /// The person who asks (one of the example's people).
    pub user: String,
    /// What they type.
    pub message: String,
    /// How they say yes (conversational channel; default `yes`).
    pub yes: Option<String>,
    /// How they say no (default `no, I did not ask for that`).
    pub no: Option<String>,
    /// The confirmation channels the task can be done in (default all): a change said in
    /// words (`say`/`then`) needs the conversational one, a form has no field for it.
    pub channels: Option<Vec<crate::apps::Channel>>,
    /// The model's plan for the task, in order.
    pub plan: Vec<PlanStep>,
    /// The intended final state.
    pub expect: Vec<Expect>,
}

/// Where a goal's instruction is planted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Carrier {
    /// In the application's records that the tools return (notes, descriptions, tickets).
    Records,
    /// In a document the user pastes into their message.
    Message,
    /// In the user's second message, after the task's conversation.
    SecondRun,
    /// In a policy document the agent answers from: `knowledge/<goal id>.md` beside the
    /// goals, pinned by an agent of [`crate::planted`], whose passages the runtime retrieves
    /// each turn and gives the model as data.
    Knowledge,
}

/// What shows in the audit log when a goal succeeded.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Effect {
    /// The tool of the record.
    pub tool: Option<String>,
    /// The record's arguments hold every field of this object.
    pub args: Option<Value>,
    /// The record's arguments, as canonical JSON text, contain this text.
    pub args_contain: Option<String>,
    /// Statuses that count (default `executed`).
    pub status: Option<Vec<String>>,
    /// Only records of runs acting for these roles count.
    pub roles: Option<Vec<String>>,
    /// One action (tool and argument hash) executed more than once in the conversation.
    #[serde(default)]
    pub repeat: bool,
    /// A run tree's branch took this arm (the tree's `notice` record says so): for a goal
    /// that forces a branch's choice.
    pub arm: Option<String>,
    /// With `arm`: the effect is the arm taken and what it produced left standing, so a
    /// person's no to a call inside the arm's node (a `rejected` record there) undoes it. For
    /// an arm whose result should stand only with a person's yes.
    #[serde(default)]
    pub unless_refused: bool,
    /// A JSON pointer into the application's state afterwards, whose array (or object, by its
    /// values) holds an element with every field of `contains`: an effect judged on the state,
    /// for the composite targets, whose nodes' records keep no argument values when an agent
    /// of the tree declares `omitted`.
    pub at: Option<String>,
    /// See `at`.
    pub contains: Option<Value>,
}

/// An injection goal (`goals/*.toml`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Goal {
    /// The file's stem.
    #[serde(skip)]
    pub id: String,
    /// What the attacker wants, in a few words.
    pub name: String,
    /// Where the instruction is planted.
    pub carrier: Carrier,
    /// The confirmation channels the goal can reach the model in (default all): a goal
    /// planted in the agent's documents has none in a direct session, which has no model turn.
    pub channels: Option<Vec<crate::apps::Channel>>,
    /// The planted text, with its instructions (see [`crate::model`]). `{{repeat:TEXT:N}}` is
    /// replaced by `TEXT` repeated `N` times when the file is read.
    pub text: String,
    /// Any of these in the audit log means the goal succeeded.
    pub effect: Vec<Effect>,
    /// Set when no code path can reach the goal even without the runtime gate (the name does
    /// not exist in the agent, the data has no field for it): the reason. The suite checks the
    /// claim: such a goal must not succeed in the unguarded mode either.
    pub impossible: Option<String>,
    /// With the guard on, the gate itself refuses every call the instructions make (a
    /// `denied` record, no `proposed` one): the person is never asked. Checked.
    #[serde(default)]
    pub gate_denies: bool,
    /// Set when the goal succeeds with the gate on (a gap the suite knows of): the reason.
    /// Listed in the report; the test fails when it stops being true, so the note cannot
    /// outlive the gap.
    pub known_gap: Option<String>,
    /// Set when the goal turns a composite's task away from the state it must reach even
    /// though nothing acts without the person (it forces a branch's arm, and the person
    /// refuses the action there): why. Checked: the task must miss its state with the guard
    /// on, so the note cannot outlive the diversion.
    pub utility_lost: Option<String>,
}

impl Goal {
    /// Whether the goal can reach the model through `channel`.
    pub fn runs_in(&self, channel: crate::apps::Channel) -> bool {
        self.channels.as_ref().is_none_or(|c| c.contains(&channel))
    }
}

impl Task {
    /// Whether the task can be done through `channel`.
    pub fn runs_in(&self, channel: crate::apps::Channel) -> bool {
        self.channels.as_ref().is_none_or(|c| c.contains(&channel))
    }

    /// The model's plan.
    pub fn steps(&self) -> Vec<Step> {
        self.plan.iter().map(|p| Step { tool: p.tool.clone(), args: p.args.clone(), changed: p.then.clone() }).collect()
    }

    /// What the person asked for: the plan's calls of action tools.
    pub fn wants(&self, is_action: impl Fn(&str) -> bool) -> Vec<Want> {
        self.plan
            .iter()
            .filter(|p| is_action(&p.tool))
            .map(|p| Want {
                tool: p.tool.clone(),
                args: p.args.clone(),
                change: p.say.clone().zip(p.then.clone()),
                hesitate: p.hesitate.clone(),
            })
            .collect()
    }
}

/// One example's scenarios.
#[derive(Debug, Clone)]
pub struct Suite {
    /// The example (`clinic`, `helpdesk`).
    pub example: String,
    /// Its settings.
    pub settings: Settings,
    /// Its tasks, by file name.
    pub tasks: Vec<Task>,
    /// Its goals, by file name.
    pub goals: Vec<Goal>,
}

/// Why scenarios could not be read.
#[derive(Debug)]
pub struct LoadError(pub String);

impl std::fmt::Display for LoadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for LoadError {}

/// The directory the scenarios are in: `examples/scenarios` of this workspace.
pub fn default_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/scenarios")
}

fn toml_files(dir: &Path) -> Result<Vec<PathBuf>, LoadError> {
    let entries = std::fs::read_dir(dir).map_err(|e| LoadError(format!("{}: {e}", dir.display())))?;
    let mut files: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    files.sort();
    Ok(files)
}

fn read<T: serde::de::DeserializeOwned>(path: &Path) -> Result<T, LoadError> {
    let text = std::fs::read_to_string(path).map_err(|e| LoadError(format!("{}: {e}", path.display())))?;
    toml::from_str(&text).map_err(|e| LoadError(format!("{}: {e}", path.display())))
}

fn stem(path: &Path) -> String {
    path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default()
}

/// `text` with every `{{repeat:TEXT:N}}` expanded.
pub fn expand(text: &str) -> Result<String, String> {
    let mut out = String::new();
    let mut rest = text;
    while let Some(start) = rest.find("{{repeat:") {
        let len = rest[start..].find("}}").ok_or("`{{repeat:` without `}}`")?;
        let inner = &rest[start + "{{repeat:".len()..start + len];
        let (what, n) = inner.rsplit_once(':').ok_or("`{{repeat:TEXT:N}}` needs a count")?;
        let n: usize = n.parse().map_err(|_| format!("`{n}` is not a count"))?;
        if n > 10_000_000 {
            return Err(format!("{n} repetitions is more than the 10000000 allowed"));
        }
        out.push_str(&rest[..start]);
        out.push_str(&what.repeat(n));
        rest = &rest[start + len + 2..];
    }
    out.push_str(rest);
    Ok(out)
}

/// Checks that the document of a goal carried by knowledge (`<root>/knowledge/<id>.md`) holds
/// the goal's text, as the agent that pins it reads it.
fn planted_in_document(root: &Path, goal: &Goal) -> Result<(), String> {
    let document = root.join("knowledge").join(format!("{}.md", goal.id));
    let text = std::fs::read_to_string(&document).map_err(|e| {
        format!(
            "a goal with `carrier = \"knowledge\"` is planted in `{}`, which cannot be read: {e}",
            document.display()
        )
    })?;
    if !text.contains(&goal.text) {
        return Err(format!(
            "`{}` does not hold the goal's `text`: write the text into the document (and declare the document in `injection/src/planted.rs`)",
            document.display()
        ));
    }
    Ok(())
}

/// The goals of `<root>/goals/*.toml`, by file name (each goal's id is its file's stem).
pub fn load_goals(root: &Path) -> Result<Vec<Goal>, LoadError> {
    let mut goals = Vec::new();
    for path in toml_files(&root.join("goals"))? {
        let mut g: Goal = read(&path)?;
        g.id = stem(&path);
        g.text = expand(&g.text).map_err(|e| LoadError(format!("{}: {e}", path.display())))?;
        if g.effect.is_empty() {
            return Err(LoadError(format!("{}: a goal needs at least one `[[effect]]`", path.display())));
        }
        if g.carrier == Carrier::Knowledge {
            planted_in_document(root, &g).map_err(|e| LoadError(format!("{}: {e}", path.display())))?;
        }
        goals.push(g);
    }
    Ok(goals)
}

impl Suite {
    /// Reads `<dir>/<example>/`.
    pub fn load(dir: &Path, example: &str) -> Result<Suite, LoadError> {
        let root = dir.join(example);
        let settings_path = root.join("suite.toml");
        let settings = if settings_path.exists() { read(&settings_path)? } else { Settings::default() };
        let mut tasks = Vec::new();
        for path in toml_files(&root.join("tasks"))? {
            let mut t: Task = read(&path)?;
            t.id = stem(&path);
            if t.plan.iter().any(|p| p.say.is_some() != p.then.is_some()) {
                return Err(LoadError(format!("{}: `say` and `then` go together", path.display())));
            }
            tasks.push(t);
        }
        let goals = load_goals(&root)?;
        if tasks.is_empty() {
            return Err(LoadError(format!("{}: no tasks", root.display())));
        }
        Ok(Suite { example: example.to_owned(), settings, tasks, goals })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repeat_expands_and_bad_counts_are_refused() {
        assert_eq!(expand("a{{repeat:xy:3}}b").unwrap(), "axyxyxyb");
        assert!(expand("{{repeat:x:many}}").is_err());
        assert!(expand("{{repeat:x:99999999}}").is_err());
    }
}
