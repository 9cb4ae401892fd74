//! A model's family, so that the judge never grades writing of its own family.
//!
//! The family is known in one of two ways:
//!
//! 1. **Declared** in the configuration (`AGENTS_MODEL_FAMILY`, `AGENTS_JUDGE_FAMILY`, or
//!    [`AgentModel::declared_family`](crate::run::AgentModel::declared_family)). A declaration that
//!    contradicts the table below for a model the table knows is refused: a family is declared
//!    for models the table does not know (a local fine-tune, a scripted model), not to rename a
//!    known one.
//! 2. **Derived** from the model's name by [`KNOWN_PREFIXES`]: a router's `vendor/` part first
//!    (`google/gemini-2.5-pro` is `google`), else the model name's prefix
//!    (`claude-sonnet-4-5` is `anthropic`).
//!
//! A model neither declared nor known is refused: the judge's independence cannot be checked.
//! Both families, and whether each was declared, are written into the run's artifacts and the
//! report.

use serde::{Deserialize, Serialize};

/// Model-name prefixes and router vendor names, and the family each belongs to (lowercase).
pub const KNOWN_PREFIXES: &[(&str, &str)] = &[
    ("claude", "anthropic"),
    ("anthropic", "anthropic"),
    ("gpt", "openai"),
    ("chatgpt", "openai"),
    ("o1", "openai"),
    ("o3", "openai"),
    ("o4", "openai"),
    ("openai", "openai"),
    ("gemini", "google"),
    ("gemma", "google"),
    ("google", "google"),
    ("llama", "meta"),
    ("meta-llama", "meta"),
    ("mistral", "mistral"),
    ("mistralai", "mistral"),
    ("mixtral", "mistral"),
    ("codestral", "mistral"),
    ("ministral", "mistral"),
    ("qwen", "qwen"),
    ("qwq", "qwen"),
    ("deepseek", "deepseek"),
    ("grok", "xai"),
    ("x-ai", "xai"),
    ("command", "cohere"),
    ("cohere", "cohere"),
    ("phi", "microsoft"),
];

/// A model's family and how it was known.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Family {
    /// The family, lowercase.
    pub name: String,
    /// Whether the configuration declared it (else the table gave it).
    pub declared: bool,
}

/// Why a family could not be settled.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FamilyError {
    /// The model is not in the table and no family was declared.
    #[error(
        "the family of the {role}'s model `{model}` is not known; declare it ({variable}=<family>, \
         e.g. anthropic, openai, google, meta, mistral), so that the judge's independence can be checked"
    )]
    Unknown {
        /// `agent` or `judge`.
        role: &'static str,
        /// The model.
        model: String,
        /// The variable that declares it.
        variable: &'static str,
    },
    /// The declaration contradicts the table.
    #[error(
        "the {role}'s model `{model}` is of the {known} family, but `{declared}` was declared; \
         a declaration names the family of a model the table does not know, it cannot rename a known one"
    )]
    Contradicted {
        /// `agent` or `judge`.
        role: &'static str,
        /// The model.
        model: String,
        /// What the table says.
        known: String,
        /// What was declared.
        declared: String,
    },
    /// The judge's family is the agent's.
    #[error(
        "the judge's model `{judge_model}` is of the {family} family, like the agent's model \
         `{agent_model}`; a blind judge must be of another family so that nothing grades its own \
         writing: configure a judge model of another family"
    )]
    SameFamily {
        /// The shared family.
        family: String,
        /// The agent's model.
        agent_model: String,
        /// The judge's model.
        judge_model: String,
    },
}

/// The family the table gives `model`, if any.
///
/// ```
/// use agents_eval::family::known_family;
/// assert_eq!(known_family("claude-sonnet-4-5"), Some("anthropic"));
/// assert_eq!(known_family("google/gemini-2.5-pro"), Some("google"));
/// assert_eq!(known_family("GPT-4o-mini"), Some("openai"));
/// assert_eq!(known_family("deskloop-rules"), None);
/// ```
pub fn known_family(model: &str) -> Option<&'static str> {
    let model = model.trim().to_ascii_lowercase();
    let lookup = |part: &str| {
        KNOWN_PREFIXES
            .iter()
            .filter(|(prefix, _)| {
                part.strip_prefix(prefix).is_some_and(|rest| rest.is_empty() || !rest.starts_with(char::is_alphabetic))
            })
            .max_by_key(|(prefix, _)| prefix.len())
            .map(|(_, family)| *family)
    };
    match model.split_once('/') {
        Some((vendor, name)) => lookup(vendor).or_else(|| lookup(name)),
        None => lookup(&model),
    }
}

/// The family of `model` for `role` (`agent` or `judge`), from `declared` or the table.
pub fn family_of(
    role: &'static str,
    model: &str,
    declared: Option<&str>,
    variable: &'static str,
) -> Result<Family, FamilyError> {
    let declared = declared.map(|d| d.trim().to_ascii_lowercase()).filter(|d| !d.is_empty());
    match (declared, known_family(model)) {
        (Some(d), Some(k)) if d != k => {
            Err(FamilyError::Contradicted { role, model: model.to_owned(), known: k.to_owned(), declared: d })
        }
        (Some(d), _) => Ok(Family { name: d, declared: true }),
        (None, Some(k)) => Ok(Family { name: k.to_owned(), declared: false }),
        (None, None) => Err(FamilyError::Unknown { role, model: model.to_owned(), variable }),
    }
}

/// Refuses a judge of the agent's family.
pub fn check_independent(
    agent_model: &str,
    agent: &Family,
    judge_model: &str,
    judge: &Family,
) -> Result<(), FamilyError> {
    if agent.name == judge.name {
        return Err(FamilyError::SameFamily {
            family: agent.name.clone(),
            agent_model: agent_model.to_owned(),
            judge_model: judge_model.to_owned(),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefixes_need_a_word_boundary() {
        assert_eq!(known_family("o3-mini"), Some("openai"));
        assert_eq!(known_family("phi-4"), Some("microsoft"));
        assert_eq!(known_family("phixtral"), None);
        assert_eq!(known_family("commander"), None);
        assert_eq!(known_family("meta-llama/llama-3.1-70b"), Some("meta"));
        assert_eq!(known_family("openrouter/unknown"), None);
    }

    #[test]
    fn declarations_name_unknown_models_only() {
        let f = family_of("agent", "my-finetune", Some(" Acme "), "AGENTS_MODEL_FAMILY").unwrap();
        assert_eq!(f, Family { name: "acme".into(), declared: true });
        assert!(matches!(
            family_of("judge", "gemini-2.5-pro", Some("openai"), "AGENTS_JUDGE_FAMILY"),
            Err(FamilyError::Contradicted { .. })
        ));
        assert!(matches!(
            family_of("judge", "my-finetune", None, "AGENTS_JUDGE_FAMILY"),
            Err(FamilyError::Unknown { .. })
        ));
    }
}
