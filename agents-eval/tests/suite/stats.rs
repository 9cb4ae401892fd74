//! Kappa and accuracy against a straightforward reference computation: on fixed label sets
//! with known values, and on random ones.

use agents_eval::stats::{BinaryTable, agreement, kappa};
use proptest::prelude::*;

/// The textbook computation from two label lists: observed agreement, chance agreement from
/// each rater's share of positives, `(p_o - p_e) / (1 - p_e)`, Cohen's 1960 standard error.
fn reference(judge: &[bool], gold: &[bool]) -> Option<(f64, f64, f64)> {
    let n = judge.len() as f64;
    if judge.is_empty() {
        return None;
    }
    let p_o = judge.iter().zip(gold).filter(|(j, g)| j == g).count() as f64 / n;
    let pj = judge.iter().filter(|j| **j).count() as f64 / n;
    let pg = gold.iter().filter(|g| **g).count() as f64 / n;
    let p_e = pj * pg + (1.0 - pj) * (1.0 - pg);
    if (1.0 - p_e).abs() < 1e-12 {
        return None;
    }
    let k = (p_o - p_e) / (1.0 - p_e);
    let se = (p_o * (1.0 - p_o) / (n * (1.0 - p_e).powi(2))).sqrt();
    Some((k, (k - 1.96 * se).max(-1.0), (k + 1.96 * se).min(1.0)))
}

#[test]
fn known_tables() {
    // The worked example of Cohen's kappa on Wikipedia: 20 yes/yes, 5, 10, 15 no/no; p_o 0.7,
    // p_e 0.5, kappa 0.4.
    let k = kappa(&BinaryTable { a: 20, b: 5, c: 10, d: 15 });
    assert!((k.value.unwrap() - 0.4).abs() < 1e-12);
    // The seed's held-out shape: 12 items, 11 agree, one false positive among 9 positives.
    let k = kappa(&BinaryTable { a: 8, b: 1, c: 0, d: 3 });
    let (r, lo, hi) =
        reference(&[[true; 9].as_slice(), &[false; 3]].concat(), &[[true; 8].as_slice(), &[false; 4]].concat())
            .unwrap();
    assert!((k.value.unwrap() - r).abs() < 1e-12);
    let [klo, khi] = k.ci95.unwrap();
    assert!((klo - lo).abs() < 1e-12 && (khi - hi).abs() < 1e-12);
}

#[test]
fn accuracy_counts_only_judged_items_and_says_how_many_were_not() {
    let a = agreement([(Some("a"), "a", "a"), (Some("b"), "c", "a"), (None, "a", "a"), (Some("c"), "c", "a")]);
    assert_eq!((a.items, a.judged, a.agree), (4, 3, 2));
    assert_eq!(a.accuracy, Some(2.0 / 3.0));
    // b vs c: both negative for the binary table, so they agree there.
    assert_eq!(a.table, BinaryTable { a: 1, b: 0, c: 0, d: 2 });
    assert_eq!(agreement([(None, "a", "a")]).accuracy, None);
}

proptest! {
    #[test]
    fn kappa_matches_the_reference(pairs in proptest::collection::vec((any::<bool>(), any::<bool>()), 0..60)) {
        let (judge, gold): (Vec<bool>, Vec<bool>) = pairs.iter().copied().unzip();
        let k = kappa(&BinaryTable::of(pairs.iter().copied()));
        match reference(&judge, &gold) {
            None => {
                prop_assert_eq!(k.value, None);
                prop_assert!(k.undefined.is_some());
            }
            Some((r, lo, hi)) => {
                let v = k.value.unwrap();
                prop_assert!((v - r).abs() < 1e-9, "{} vs {}", v, r);
                let [klo, khi] = k.ci95.unwrap();
                prop_assert!((klo - lo).abs() < 1e-9 && (khi - hi).abs() < 1e-9);
                prop_assert!((-1.0..=1.0).contains(&v) && klo <= v && v <= khi);
            }
        }
    }

    #[test]
    fn accuracy_matches_the_reference(items in proptest::collection::vec((proptest::option::of(0u8..3), 0u8..3), 0..40)) {
        let names = ["a", "b", "c"];
        let a = agreement(items.iter().map(|(j, g)| (j.map(|j| names[j as usize]), names[*g as usize], "a")));
        let judged: Vec<_> = items.iter().filter_map(|(j, g)| j.map(|j| (j, *g))).collect();
        let agree = judged.iter().filter(|(j, g)| j == g).count();
        prop_assert_eq!(a.items, items.len() as u64);
        prop_assert_eq!(a.judged, judged.len() as u64);
        prop_assert_eq!(a.agree, agree as u64);
        let expected = (!judged.is_empty()).then(|| agree as f64 / judged.len() as f64);
        prop_assert_eq!(a.accuracy, expected);
        let bin: Vec<(bool, bool)> = judged.iter().map(|(j, g)| (*j == 0, *g == 0)).collect();
        prop_assert_eq!(a.table, BinaryTable::of(bin));
    }
}
