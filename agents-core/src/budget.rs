//! An agent's budget caps per run, declared in `agent!` (`budget: { ... }`) and written in the
//! manifest. They bind every run of the agent besides the deployment's monthly caps (the
//! runtime's budget store): before each model call the runtime compares what the run has spent
//! ([`RunSpend`]) with the caps ([`BudgetEntry::exceeded`]) and ends the run when one is reached.
//!
//! Money is kept in whole micro-dollars (millionths of a US dollar), so the manifest holds
//! integers only and a cap means the same on every machine.
//!
//! ```
//! use agents_core::budget::{BudgetEntry, RunSpend};
//!
//! let caps = BudgetEntry { tokens_per_run: Some(10_000), usd_per_run_micros: Some(250_000) };
//! assert!(caps.exceeded(&RunSpend { tokens: 9_999, usd: 0.10 }).is_none());
//! assert!(caps.exceeded(&RunSpend { tokens: 10_000, usd: 0.10 }).is_some());
//! assert!(caps.exceeded(&RunSpend { tokens: 0, usd: 0.25 }).is_some());
//! ```

use serde::{Deserialize, Serialize};

/// Micro-dollars in one dollar.
pub const MICROS_PER_USD: u64 = 1_000_000;

/// The caps as `agent!` writes them into the agent's [`crate::AgentSpec`]; `None` is no cap.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct BudgetSpec {
    /// Model tokens (prompt and completion, as the providers report them) per run.
    pub tokens_per_run: Option<u64>,
    /// Cost per run, in micro-dollars.
    pub usd_per_run_micros: Option<u64>,
}

impl BudgetSpec {
    /// No cap.
    pub const NONE: BudgetSpec = BudgetSpec { tokens_per_run: None, usd_per_run_micros: None };
}

/// The caps in a manifest; each absent when not declared, and the whole entry absent when none
/// is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BudgetEntry {
    /// Model tokens per run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens_per_run: Option<u64>,
    /// Cost per run, in micro-dollars.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usd_per_run_micros: Option<u64>,
}

impl From<BudgetSpec> for BudgetEntry {
    fn from(s: BudgetSpec) -> Self {
        BudgetEntry { tokens_per_run: s.tokens_per_run, usd_per_run_micros: s.usd_per_run_micros }
    }
}

/// What a run has spent so far.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct RunSpend {
    /// Prompt and completion tokens.
    pub tokens: u64,
    /// Cost in USD.
    pub usd: f64,
}

impl BudgetEntry {
    /// Whether no cap is declared.
    pub fn is_empty(&self) -> bool {
        self.tokens_per_run.is_none() && self.usd_per_run_micros.is_none()
    }

    /// Each declared cap by its manifest name, in manifest order.
    pub fn caps(&self) -> [(&'static str, Option<u64>); 2] {
        [("tokens_per_run", self.tokens_per_run), ("usd_per_run_micros", self.usd_per_run_micros)]
    }

    /// The caps in words, as `agents manifest show` and the capability report print them.
    pub fn text(&self) -> String {
        let mut parts = Vec::new();
        if let Some(t) = self.tokens_per_run {
            parts.push(format!("{t} model tokens per run"));
        }
        if let Some(u) = self.usd_per_run_micros {
            parts.push(format!("{} USD per run", usd_text(u)));
        }
        if parts.is_empty() { "no caps per run declared".to_owned() } else { parts.join(", ") }
    }

    /// Refuses a cap of 0 (a run that may spend nothing cannot call a model: declare no model
    /// instead of a budget of 0).
    pub fn check(&self) -> Result<(), String> {
        match self.caps().into_iter().find(|(_, v)| *v == Some(0)) {
            Some((name, _)) => Err(format!("budget cap `{name}` is 0; a cap is a positive number")),
            None => Ok(()),
        }
    }

    /// The first cap `spent` has reached, as a sentence, or `None` while the run may make
    /// another model call. A spend that is not a number counts as reaching the money cap.
    pub fn exceeded(&self, spent: &RunSpend) -> Option<String> {
        if let Some(cap) = self.tokens_per_run
            && spent.tokens >= cap
        {
            return Some(format!("the run has used {} model tokens; the agent's cap is {cap} per run", spent.tokens));
        }
        if let Some(cap) = self.usd_per_run_micros {
            let cap_usd = cap as f64 / MICROS_PER_USD as f64;
            if spent.usd.is_nan() || spent.usd >= cap_usd {
                return Some(format!(
                    "the run has spent {:.6} USD; the agent's cap is {} USD per run",
                    spent.usd,
                    usd_text(cap)
                ));
            }
        }
        None
    }
}

/// Micro-dollars as a decimal amount of dollars, without trailing zeros (`250000` → `0.25`).
pub fn usd_text(micros: u64) -> String {
    let (whole, frac) = (micros / MICROS_PER_USD, micros % MICROS_PER_USD);
    if frac == 0 {
        return whole.to_string();
    }
    let digits = format!("{frac:06}");
    format!("{whole}.{}", digits.trim_end_matches('0'))
}

/// Reads a decimal amount of dollars as written in source (`0.25`, `10`, `1_000.5`) into
/// micro-dollars, exactly (no floating point). Refuses more than six decimals, a sign, an
/// exponent and amounts beyond `u64` micro-dollars.
pub fn parse_usd(text: &str) -> Result<u64, String> {
    let digits: String = text.chars().filter(|c| *c != '_').collect();
    let (whole, frac) = digits.split_once('.').unwrap_or((&digits, ""));
    let is_digits = |s: &str| s.chars().all(|c| c.is_ascii_digit());
    if whole.is_empty() || !is_digits(whole) || !is_digits(frac) {
        return Err(format!("`{text}` is not an amount of dollars; write it as `0.50` or `10`"));
    }
    if frac.len() > 6 {
        return Err(format!("`{text}` has more than six decimals; a cap is counted in micro-dollars"));
    }
    let too_large = || format!("`{text}` is too large for a cap");
    let whole: u64 = whole.parse().map_err(|_| too_large())?;
    let frac: u64 = format!("{frac:0<6}").parse().map_err(|_| too_large())?;
    whole.checked_mul(MICROS_PER_USD).and_then(|w| w.checked_add(frac)).ok_or_else(too_large)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dollars_are_read_exactly_and_written_back() {
        assert_eq!(parse_usd("0.25"), Ok(250_000));
        assert_eq!(parse_usd("1_000.5"), Ok(1_000_500_000));
        assert_eq!(parse_usd("10"), Ok(10_000_000));
        assert_eq!(usd_text(250_000), "0.25");
        assert_eq!(usd_text(10_000_000), "10");
        assert_eq!(usd_text(1), "0.000001");
        for bad in ["-1", "1e3", "0.0000001", ".5", "", "99999999999999999999"] {
            assert!(parse_usd(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_cap_of_zero_is_refused() {
        assert!(BudgetEntry { tokens_per_run: Some(0), usd_per_run_micros: None }.check().is_err());
        assert!(BudgetEntry { tokens_per_run: Some(1), usd_per_run_micros: None }.check().is_ok());
    }

    #[test]
    fn no_cap_is_never_exceeded_and_a_nan_spend_reaches_the_money_cap() {
        let none = BudgetEntry::default();
        assert!(none.exceeded(&RunSpend { tokens: u64::MAX, usd: f64::INFINITY }).is_none());
        let money = BudgetEntry { tokens_per_run: None, usd_per_run_micros: Some(1) };
        assert!(money.exceeded(&RunSpend { tokens: 0, usd: f64::NAN }).is_some());
        assert!(money.exceeded(&RunSpend { tokens: 0, usd: 0.0 }).is_none());
    }
}
