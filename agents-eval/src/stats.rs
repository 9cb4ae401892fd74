//! Agreement between a judge and gold labels: accuracy, and binary Cohen's kappa with a 95%
//! confidence interval.
//!
//! Kappa is computed exactly from the integer 2×2 table (judge × gold, each label turned
//! binary by its criterion's positive label):
//!
//! ```text
//! kappa = (n·(a+d) − M) / (n² − M),   M = (a+b)(a+c) + (c+d)(b+d)
//! ```
//!
//! which is `(p_o − p_e) / (1 − p_e)` without the rounding of the fractions. When `n² = M`
//! (both raters gave one and the same value to every item, so chance agreement is 1) or there
//! is no item, kappa is undefined and reported as such (`null` in JSON), never NaN.
//!
//! The interval is `kappa ± 1.96 · SE`, clamped to `[-1, 1]`, with the large-sample standard
//! error of Cohen (1960): `SE = sqrt(p_o (1 − p_o) / (n (1 − p_e)²))`. It is an approximation
//! for large `n`; on a small set it is wide, and when the raters agree on every item it
//! collapses to a point (`SE = 0`) although the set says little. The report names the method
//! beside the figures.

use serde::Serialize;

/// How the confidence interval is computed, as the report names it.
pub const KAPPA_CI_METHOD: &str =
    "kappa ± 1.96·SE, SE = sqrt(p_o(1−p_o) / (n(1−p_e)²)) (Cohen 1960, large-sample), clamped to [-1, 1]";

/// The 2×2 table of binary labels: `a` both positive, `b` judge positive and gold negative,
/// `c` judge negative and gold positive, `d` both negative.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct BinaryTable {
    /// Judge positive, gold positive.
    pub a: u64,
    /// Judge positive, gold negative.
    pub b: u64,
    /// Judge negative, gold positive.
    pub c: u64,
    /// Judge negative, gold negative.
    pub d: u64,
}

impl BinaryTable {
    /// The table of `(judge, gold)` pairs.
    ///
    /// ```
    /// use agents_eval::stats::BinaryTable;
    /// let t = BinaryTable::of([(true, true), (true, false), (false, false)]);
    /// assert_eq!((t.a, t.b, t.c, t.d), (1, 1, 0, 1));
    /// ```
    pub fn of(pairs: impl IntoIterator<Item = (bool, bool)>) -> Self {
        let mut t = BinaryTable::default();
        for (judge, gold) in pairs {
            match (judge, gold) {
                (true, true) => t.a += 1,
                (true, false) => t.b += 1,
                (false, true) => t.c += 1,
                (false, false) => t.d += 1,
            }
        }
        t
    }

    /// The number of items.
    pub fn n(&self) -> u64 {
        self.a + self.b + self.c + self.d
    }
}

/// Binary Cohen's kappa, or why it is undefined.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Kappa {
    /// The value; `None` when undefined.
    pub value: Option<f64>,
    /// The 95% confidence interval `[low, high]`; `None` when kappa is undefined.
    pub ci95: Option<[f64; 2]>,
    /// Why kappa is undefined, when it is.
    pub undefined: Option<String>,
}

/// Kappa of a table, with its interval (see the module documentation).
///
/// ```
/// use agents_eval::stats::{BinaryTable, kappa};
/// // 20 items: 9 both yes, 6 both no, 5 disagreements.
/// let k = kappa(&BinaryTable { a: 9, b: 2, c: 3, d: 6 });
/// assert!((k.value.unwrap() - 0.4898).abs() < 1e-4);
/// // Every item labelled yes by both: chance agreement is 1, kappa is undefined.
/// let all_yes = kappa(&BinaryTable { a: 5, b: 0, c: 0, d: 0 });
/// assert_eq!(all_yes.value, None);
/// assert!(all_yes.undefined.is_some());
/// ```
pub fn kappa(t: &BinaryTable) -> Kappa {
    let undefined = |why: &str| Kappa { value: None, ci95: None, undefined: Some(why.to_owned()) };
    let n = u128::from(t.n());
    if n == 0 {
        return undefined("no item was judged");
    }
    let (a, b, c, d) = (u128::from(t.a), u128::from(t.b), u128::from(t.c), u128::from(t.d));
    let m = (a + b) * (a + c) + (c + d) * (b + d);
    let denominator = n * n - m;
    if denominator == 0 {
        return undefined(
            "the judge and the gold labels each gave one and the same value to every item, so chance agreement is 1",
        );
    }
    let numerator = (n * (a + d)) as f64 - m as f64;
    let value = numerator / denominator as f64;
    let n_f = n as f64;
    let p_o = (a + d) as f64 / n_f;
    let one_minus_p_e = denominator as f64 / (n_f * n_f);
    let se = (p_o * (1.0 - p_o) / (n_f * one_minus_p_e * one_minus_p_e)).sqrt();
    let ci95 = [(value - 1.96 * se).max(-1.0), (value + 1.96 * se).min(1.0)];
    Kappa { value: Some(value), ci95: Some(ci95), undefined: None }
}

/// The share of `agree` among `items`; `None` when there is no item.
///
/// ```
/// assert_eq!(agents_eval::stats::accuracy(11, 12), Some(11.0 / 12.0));
/// assert_eq!(agents_eval::stats::accuracy(0, 0), None);
/// ```
pub fn accuracy(agree: u64, items: u64) -> Option<f64> {
    (items > 0).then(|| agree as f64 / items as f64)
}

/// Agreement of a judge with gold labels, on one criterion or on several together.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Agreement {
    /// Gold labels (items the judge was to label).
    pub items: u64,
    /// Items the judge labelled.
    pub judged: u64,
    /// Judged items whose label equals the gold label.
    pub agree: u64,
    /// `agree / judged`; `None` when nothing was judged.
    pub accuracy: Option<f64>,
    /// The binary table of the judged items (each label 1 when it is its criterion's positive
    /// label).
    pub table: BinaryTable,
    /// Binary Cohen's kappa of the table.
    pub kappa: Kappa,
}

/// The agreement over items `(judge's label or None when not judged, gold label, the
/// criterion's positive label)`. Accuracy and kappa are over the judged items; the items not
/// judged are counted apart.
///
/// ```
/// use agents_eval::stats::agreement;
/// let a = agreement([(Some("yes"), "yes", "yes"), (Some("no"), "yes", "yes"), (None, "no", "yes")]);
/// assert_eq!((a.items, a.judged, a.agree), (3, 2, 1));
/// assert_eq!(a.accuracy, Some(0.5));
/// ```
pub fn agreement<'a>(items: impl IntoIterator<Item = (Option<&'a str>, &'a str, &'a str)>) -> Agreement {
    let (mut n, mut judged, mut agree, mut pairs) = (0, 0, 0, Vec::new());
    for (label, gold, positive) in items {
        n += 1;
        let Some(label) = label else { continue };
        judged += 1;
        agree += u64::from(label == gold);
        pairs.push((label == positive, gold == positive));
    }
    let table = BinaryTable::of(pairs);
    Agreement { items: n, judged, agree, accuracy: accuracy(agree, judged), table, kappa: kappa(&table) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn perfect_and_opposite_agreement() {
        let k = kappa(&BinaryTable { a: 3, b: 0, c: 0, d: 2 });
        assert_eq!(k.value, Some(1.0));
        assert_eq!(k.ci95, Some([1.0, 1.0]));
        let k = kappa(&BinaryTable { a: 0, b: 2, c: 2, d: 0 });
        assert_eq!(k.value, Some(-1.0));
    }

    #[test]
    fn degenerate_tables_are_undefined_not_nan() {
        for t in
            [BinaryTable::default(), BinaryTable { a: 0, b: 0, c: 0, d: 4 }, BinaryTable { a: 4, ..Default::default() }]
        {
            let k = kappa(&t);
            assert_eq!(k.value, None, "{t:?}");
            assert_eq!(k.ci95, None);
            let json = serde_json::to_string(&k).unwrap();
            assert!(json.contains("\"value\":null") && !json.contains("NaN"), "{json}");
        }
        // One rater constant, the other not: chance agreement below 1, kappa 0.
        let k = kappa(&BinaryTable { a: 2, b: 2, c: 0, d: 0 });
        assert_eq!(k.value, Some(0.0));
    }
}
