//! The judge's and the agent's real models from the environment.
//!
//! The agent's model is read as every example reads it (`AGENTS_MODEL`, `AGENTS_BASE_URL`,
//! `AGENTS_API_KEY`, `AGENTS_PRICE`, ... : [`agents_provider::config`]); its family may be
//! declared in `AGENTS_MODEL_FAMILY`. The judge's is read from the same variables with
//! `AGENTS_JUDGE_` in place of `AGENTS_` (`AGENTS_JUDGE_MODEL`, `AGENTS_JUDGE_BASE_URL`,
//! `AGENTS_JUDGE_API_KEY`, `AGENTS_JUDGE_PRICE`, ...; the hosted providers' own key variables,
//! `OPENAI_API_KEY` and `ANTHROPIC_API_KEY`, and `AGENTS_ALLOW_CLEARTEXT_KEY` are shared), and
//! its family from `AGENTS_JUDGE_FAMILY`.
//!
//! [`agents_provider::config`]: agents_runtime::provider::config

use agents_runtime::provider::{ConfigError, Provider, ProviderConfig};

/// The name the judge's configuration reads for the agent's variable `name`.
///
/// ```
/// use agents_eval::env::judge_variable;
/// assert_eq!(judge_variable("AGENTS_MODEL"), "AGENTS_JUDGE_MODEL");
/// assert_eq!(judge_variable("ANTHROPIC_API_KEY"), "ANTHROPIC_API_KEY");
/// assert_eq!(judge_variable("AGENTS_ALLOW_CLEARTEXT_KEY"), "AGENTS_ALLOW_CLEARTEXT_KEY");
/// ```
pub fn judge_variable(name: &str) -> String {
    match name.strip_prefix("AGENTS_") {
        Some(rest) if name != "AGENTS_ALLOW_CLEARTEXT_KEY" => format!("AGENTS_JUDGE_{rest}"),
        _ => name.to_owned(),
    }
}

/// The judge's provider configuration read through `lookup`; `Ok(None)` when
/// `AGENTS_JUDGE_MODEL` is unset.
pub fn judge_config(lookup: impl Fn(&str) -> Option<String>) -> Result<Option<ProviderConfig>, String> {
    ProviderConfig::from_vars(|name| lookup(&judge_variable(name))).map_err(|e| {
        format!("the judge's configuration (the AGENTS_JUDGE_* variables, read as AGENTS_* are for the agent): {e}")
    })
}

/// The judge from the process environment: its provider and declared family, or `None` when
/// `AGENTS_JUDGE_MODEL` is unset.
pub fn judge_from_env() -> Result<Option<crate::run::JudgeModel>, String> {
    let Some(config) = judge_config(|name| std::env::var(name).ok())? else {
        return Ok(None);
    };
    let provider: Box<dyn Provider> = config.build().map_err(|e: ConfigError| format!("the judge's provider: {e}"))?;
    Ok(Some(crate::run::JudgeModel { provider: provider.into(), declared_family: declared("AGENTS_JUDGE_FAMILY") }))
}

/// A family declared in the variable `name` (unset or empty: none).
pub fn declared(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lookup<'a>(vars: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |name| vars.iter().find(|(k, _)| *k == name).map(|(_, v)| (*v).to_owned())
    }

    #[test]
    fn the_judge_reads_its_own_variables_not_the_agents() {
        let vars = [
            ("AGENTS_MODEL", "anthropic:claude-sonnet-4-5"),
            ("ANTHROPIC_API_KEY", "k"),
            ("AGENTS_JUDGE_MODEL", "openai-compatible:gemma3@http://localhost:11434/v1"),
        ];
        let config = judge_config(lookup(&vars)).unwrap().unwrap();
        assert_eq!(config.model, "gemma3");
        assert!(judge_config(lookup(&vars[..2])).unwrap().is_none());
        let bad = [("AGENTS_JUDGE_MODEL", "gemini")];
        let e = judge_config(lookup(&bad)).unwrap_err();
        assert!(e.contains("AGENTS_JUDGE_*"), "{e}");
    }
}
