//! Turning token usage into money: [`PriceTable`].
//!
//! No prices are built in: list prices change, and a stale built-in price would make the
//! budget gate wrong without anyone noticing. A model missing from the table costs 0 and is
//! flagged instead: the provider logs a `tracing` warning on its first call, and
//! `price_known()` / the provider description say `false`, so a reviewer can see that the
//! budget does not count this model's calls.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The price of one model, in US dollars per million tokens.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ModelPrice {
    /// USD per million prompt (input) tokens.
    pub input_per_million: f64,
    /// USD per million completion (output) tokens.
    pub output_per_million: f64,
}

impl ModelPrice {
    /// The cost of a call with these token counts.
    pub fn cost(&self, input_tokens: u64, output_tokens: u64) -> f64 {
        (input_tokens as f64 * self.input_per_million + output_tokens as f64 * self.output_per_million) / 1_000_000.0
    }
}

/// Prices per model. A key is an exact model id, or a prefix ending in `*`
/// (`claude-sonnet-4-5*` covers dated snapshots); an exact key wins, then the longest prefix.
///
/// ```
/// use agents_runtime::provider::PriceTable;
///
/// let prices = PriceTable::new()
///     .with_price("gpt-4o-mini", 0.15, 0.60)
///     .with_price("claude-sonnet-4-5*", 3.0, 15.0);
/// assert_eq!(prices.cost("gpt-4o-mini", 1_000_000, 1_000_000), Some(0.75));
/// assert!(prices.cost("claude-sonnet-4-5-20250929", 10, 10).is_some());
/// assert_eq!(prices.cost("gpt-4o", 10, 10), None); // unknown: no prefix matching without `*`
/// ```
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PriceTable {
    prices: BTreeMap<String, ModelPrice>,
}

impl PriceTable {
    /// An empty table (every model unknown).
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a price in USD per million input and output tokens.
    pub fn with_price(mut self, model: impl Into<String>, input: f64, output: f64) -> Self {
        self.insert(model, ModelPrice { input_per_million: input, output_per_million: output });
        self
    }

    /// Adds or replaces a price.
    pub fn insert(&mut self, model: impl Into<String>, price: ModelPrice) {
        self.prices.insert(model.into(), price);
    }

    /// The price of `model`: the exact key, else the longest `prefix*` key it starts with.
    pub fn lookup(&self, model: &str) -> Option<ModelPrice> {
        if let Some(price) = self.prices.get(model) {
            return Some(*price);
        }
        self.prices
            .iter()
            .filter_map(|(key, price)| {
                let prefix = key.strip_suffix('*')?;
                model.starts_with(prefix).then_some((prefix.len(), *price))
            })
            .max_by_key(|(len, _)| *len)
            .map(|(_, price)| price)
    }

    /// The cost of a call, or `None` when the model has no price.
    pub fn cost(&self, model: &str, input_tokens: u64, output_tokens: u64) -> Option<f64> {
        self.lookup(model).map(|p| p.cost(input_tokens, output_tokens))
    }

    /// Whether the table has no prices.
    pub fn is_empty(&self) -> bool {
        self.prices.is_empty()
    }
}

/// Prices one provider's calls and warns once when its model has no price.
#[cfg(feature = "http")]
#[derive(Debug)]
pub(crate) struct Pricer {
    table: PriceTable,
    known: bool,
    warned: std::sync::atomic::AtomicBool,
}

#[cfg(feature = "http")]
impl Pricer {
    pub(crate) fn new(table: PriceTable, model: &str) -> Self {
        let known = table.lookup(model).is_some();
        Self { table, known, warned: std::sync::atomic::AtomicBool::new(false) }
    }

    pub(crate) fn known(&self) -> bool {
        self.known
    }

    /// The usage of one call, with its cost (0, flagged by a warning, when unpriced).
    pub(crate) fn usage(&self, provider: &str, model: &str, input_tokens: u64, output_tokens: u64) -> super::Usage {
        let cost_usd = match self.table.cost(model, input_tokens, output_tokens) {
            Some(cost) => cost,
            None => {
                if !self.warned.swap(true, std::sync::atomic::Ordering::Relaxed) {
                    tracing::warn!(
                        provider,
                        model,
                        "no price is configured for this model: its calls are counted as \
                         costing 0 USD, so the budget does not limit them; add it to the \
                         provider's PriceTable (or set AGENTS_PRICE)"
                    );
                }
                0.0
            }
        };
        super::Usage { input_tokens, output_tokens, cost_usd }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_key_beats_prefix_and_longest_prefix_wins() {
        let t = PriceTable::new().with_price("claude*", 1.0, 1.0).with_price("claude-opus*", 15.0, 75.0).with_price(
            "claude-opus-4-1",
            2.0,
            2.0,
        );
        assert_eq!(t.lookup("claude-opus-4-1").unwrap().input_per_million, 2.0);
        assert_eq!(t.lookup("claude-opus-4-0").unwrap().input_per_million, 15.0);
        assert_eq!(t.lookup("claude-haiku").unwrap().input_per_million, 1.0);
        assert!(t.lookup("gpt-4o").is_none());
    }

    #[test]
    fn cost_is_per_million_tokens() {
        let p = ModelPrice { input_per_million: 3.0, output_per_million: 15.0 };
        assert!((p.cost(2_000, 500) - 0.0135).abs() < 1e-12);
    }
}
