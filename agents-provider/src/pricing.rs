//! Turning token usage into money: [`PriceTable`].
//!
//! No prices are built in: list prices change, and a stale built-in price would make the
//! budget gate wrong without anyone noticing. A model missing from the table costs 0 and is
//! flagged instead: the provider logs a `tracing` warning on its first call, and
//! `price_known()` / the provider description say `false`, so a reviewer can see that the
//! budget does not count this model's calls.
//!
//! # A paid call whose usage cannot be read
//!
//! A server may leave the token counts out, or send them in a shape the reader does not
//! expect (a string, a fraction, a negative number). Such a call is never counted as free:
//! the provider logs a `tracing` warning for it and counts each count it could not read by
//! this estimate, marked [`Usage::estimated`](super::Usage::estimated):
//!
//! - **input tokens**: the size of the request body in bytes. A tokenizer makes fewer tokens
//!   than the bytes of the text it reads (about four bytes per token for English), and the
//!   JSON syntax of the request outweighs the few tokens a chat template adds per message, so
//!   this overestimates;
//! - **output tokens**: the completion limit sent with the request (`max_tokens`; Anthropic
//!   always sends one, 4096 by default), since the server cannot bill more than that; without
//!   one, the size of the answer (text, tool names and arguments) in bytes.
//!
//! The estimate is then priced like any call, so the budget gate counts it against the cap
//! before the next call. It errs towards charging too much, the safe side for a budget. A
//! provider that is not paid (a server on this machine) counts an unreadable usage as 0,
//! without a warning.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Why a price was refused: every price is a finite number of US dollars, 0 or more. A
/// negative or NaN price would count calls as free (or lower the recorded spend), an infinite
/// one would stop every call; both are typos, refused where the price enters
/// ([`ModelPrice::new`], [`PriceTable::with_price`], [`PriceTable::insert`], deserializing, and
/// `AGENTS_PRICE` in [`ProviderConfig`](super::ProviderConfig)).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error(
    "price refused{}: `{field}` is {value}; a price must be a finite number of USD per million tokens, 0 or more",
    model.as_deref().map(|m| format!(" for model `{m}`")).unwrap_or_default()
)]
pub struct PriceError {
    /// The model the price was for, when known.
    pub model: Option<String>,
    /// `input_per_million` or `output_per_million`.
    pub field: &'static str,
    /// The refused value.
    pub value: f64,
}

/// The price of one model, in US dollars per million tokens.
///
/// Built with [`ModelPrice::new`] or deserialized, it is valid (finite, 0 or more); a value
/// built from its public fields is checked when it enters a [`PriceTable`].
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "RawModelPrice")]
pub struct ModelPrice {
    /// USD per million prompt (input) tokens.
    pub input_per_million: f64,
    /// USD per million completion (output) tokens.
    pub output_per_million: f64,
}

/// The serialized form of a [`ModelPrice`], before its check.
#[derive(Deserialize)]
struct RawModelPrice {
    input_per_million: f64,
    output_per_million: f64,
}

impl TryFrom<RawModelPrice> for ModelPrice {
    type Error = PriceError;

    fn try_from(raw: RawModelPrice) -> Result<Self, PriceError> {
        ModelPrice::new(raw.input_per_million, raw.output_per_million)
    }
}

impl ModelPrice {
    /// A price in USD per million input and output tokens; negative, NaN and infinite values
    /// are refused.
    pub fn new(input_per_million: f64, output_per_million: f64) -> Result<Self, PriceError> {
        let price = ModelPrice { input_per_million, output_per_million };
        price.check().map(|()| price)
    }

    /// Whether both values are finite and 0 or more.
    pub fn check(&self) -> Result<(), PriceError> {
        for (field, value) in
            [("input_per_million", self.input_per_million), ("output_per_million", self.output_per_million)]
        {
            if !value.is_finite() || value < 0.0 {
                return Err(PriceError { model: None, field, value });
            }
        }
        Ok(())
    }

    /// The cost of a call with these token counts.
    pub fn cost(&self, input_tokens: u64, output_tokens: u64) -> f64 {
        (input_tokens as f64 * self.input_per_million + output_tokens as f64 * self.output_per_million) / 1_000_000.0
    }
}

/// Prices per model. A key is an exact model id, or a prefix ending in `*`
/// (`claude-sonnet-4-5*` covers dated snapshots); an exact key wins, then the longest prefix.
///
/// ```
/// use agents_provider::PriceTable;
///
/// let prices = PriceTable::new()
///     .with_price("gpt-4o-mini", 0.15, 0.60)?
///     .with_price("claude-sonnet-4-5*", 3.0, 15.0)?;
/// assert_eq!(prices.cost("gpt-4o-mini", 1_000_000, 1_000_000), Some(0.75));
/// assert!(prices.cost("claude-sonnet-4-5-20250929", 10, 10).is_some());
/// assert_eq!(prices.cost("gpt-4o", 10, 10), None); // unknown: no prefix matching without `*`
///
/// // A typo is refused, and the table is not changed.
/// assert!(PriceTable::new().with_price("gpt-4o", -2.5, 10.0).is_err());
/// # Ok::<(), agents_provider::PriceError>(())
/// ```
///
/// Every price in a table is finite and 0 or more, however the table was built.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PriceTable {
    prices: BTreeMap<String, ModelPrice>,
}

impl PriceTable {
    /// An empty table (every model unknown).
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a price in USD per million input and output tokens. A negative, NaN or infinite
    /// price is refused with an error naming the model and the value.
    pub fn with_price(mut self, model: impl Into<String>, input: f64, output: f64) -> Result<Self, PriceError> {
        self.insert(model, ModelPrice { input_per_million: input, output_per_million: output })?;
        Ok(self)
    }

    /// Adds or replaces a price; returns the price it replaced. A negative, NaN or infinite
    /// price is refused and the table is left as it was.
    pub fn insert(&mut self, model: impl Into<String>, price: ModelPrice) -> Result<Option<ModelPrice>, PriceError> {
        let model = model.into();
        if let Err(e) = price.check() {
            return Err(PriceError { model: Some(model), ..e });
        }
        Ok(self.prices.insert(model, price))
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

    /// The usage of one call, with its cost (0, flagged by a warning, when unpriced). Counts
    /// the server did not give in a readable form are estimated for a paid call (see the
    /// [module docs](self)).
    pub(crate) fn usage(
        &self,
        provider: &str,
        model: &str,
        paid: bool,
        answer: &super::DecodedAnswer,
        request_bytes: usize,
        max_tokens: Option<u32>,
    ) -> super::Usage {
        let estimated = paid && (answer.input_tokens.is_none() || answer.output_tokens.is_none());
        let (input_tokens, output_tokens) = if estimated {
            let answer_bytes = answer.tool_calls.iter().fold(answer.content.len(), |sum, call| {
                sum.saturating_add(call.name.len()).saturating_add(call.arguments.len())
            });
            let input = answer.input_tokens.unwrap_or(request_bytes as u64);
            let output = answer.output_tokens.unwrap_or_else(|| max_tokens.map_or(answer_bytes as u64, u64::from));
            tracing::warn!(
                provider,
                model,
                input_tokens_read = answer.input_tokens.is_some(),
                output_tokens_read = answer.output_tokens.is_some(),
                estimated_input_tokens = input,
                estimated_output_tokens = output,
                "the provider's answer has no readable token usage; this paid call is counted by \
                 an estimate (request and answer size, or max_tokens) so that the budget still \
                 counts it"
            );
            (input, output)
        } else {
            (answer.input_tokens.unwrap_or(0), answer.output_tokens.unwrap_or(0))
        };
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
        super::Usage { input_tokens, output_tokens, cost_usd, estimated }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_key_beats_prefix_and_longest_prefix_wins() {
        let t = PriceTable::new()
            .with_price("claude*", 1.0, 1.0)
            .and_then(|t| t.with_price("claude-opus*", 15.0, 75.0))
            .and_then(|t| t.with_price("claude-opus-4-1", 2.0, 2.0))
            .unwrap();
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

    const BAD: [f64; 5] = [-1.0, -0.0001, f64::NAN, f64::INFINITY, f64::NEG_INFINITY];

    #[test]
    fn with_price_and_new_refuse_negative_and_non_finite_prices() {
        for bad in BAD {
            for (i, o) in [(bad, 1.0), (1.0, bad)] {
                let e = PriceTable::new().with_price("m", i, o).unwrap_err();
                assert_eq!(e.model.as_deref(), Some("m"));
                assert!(e.to_string().contains("finite number of USD per million tokens, 0 or more"), "{e}");
                assert!(ModelPrice::new(i, o).is_err(), "{i} {o}");
            }
        }
        assert!(ModelPrice::new(0.0, 0.0).is_ok(), "a free model is a valid price");
    }

    #[test]
    fn insert_refuses_and_leaves_the_table_as_it_was() {
        let mut t = PriceTable::new().with_price("m", 1.0, 2.0).unwrap();
        let before = t.clone();
        for bad in BAD {
            let e = t.insert("m", ModelPrice { input_per_million: bad, output_per_million: 1.0 }).unwrap_err();
            assert_eq!(e.field, "input_per_million");
            let e = t.insert("other", ModelPrice { input_per_million: 1.0, output_per_million: bad }).unwrap_err();
            assert_eq!((e.model.as_deref(), e.field), (Some("other"), "output_per_million"));
            assert_eq!(t, before);
        }
        let old = t.insert("m", ModelPrice { input_per_million: 3.0, output_per_million: 4.0 }).unwrap();
        assert_eq!(old, Some(ModelPrice { input_per_million: 1.0, output_per_million: 2.0 }));
    }

    #[test]
    fn deserializing_refuses_negative_and_non_finite_prices() {
        let e =
            serde_json::from_str::<PriceTable>(r#"{"prices":{"m":{"input_per_million":-3,"output_per_million":1}}}"#)
                .unwrap_err();
        assert!(e.to_string().contains("`input_per_million` is -3"), "{e}");
        let ok =
            serde_json::from_str::<PriceTable>(r#"{"prices":{"m":{"input_per_million":3,"output_per_million":1}}}"#)
                .unwrap();
        assert_eq!(ok.cost("m", 1_000_000, 0), Some(3.0));
        // JSON has no NaN or infinity; formats that do reach the same check.
        use serde::de::value::{Error, MapDeserializer};
        for bad in BAD {
            let fields = [("input_per_million", 1.0), ("output_per_million", bad)];
            let de: MapDeserializer<'_, _, Error> = MapDeserializer::new(fields.into_iter());
            assert!(ModelPrice::deserialize(de).is_err(), "{bad}");
        }
    }
}
