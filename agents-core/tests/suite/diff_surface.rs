//! The classification of the agent's models and budget caps, rule by rule and against the
//! runtime's own decisions: when the diff reports no widening, every provider the new manifest
//! admits was admitted by the old one (`agents_core::models::admits`, what the runtime asks),
//! and every spend the old caps stopped, the new ones stop too (`BudgetEntry::exceeded`).

use agents_core::budget::{BudgetEntry, RunSpend};
use agents_core::diff::{ChangeKind, Rule, diff};
use agents_core::manifest::{AgentEntry, Manifest};
use agents_core::models::{ModelEntry, ModelProvider, ProviderIdentity, admits};
use proptest::prelude::*;

fn manifest(models: Option<Vec<ModelEntry>>, budget: BudgetEntry) -> Manifest {
    let agent = AgentEntry { models, budget, ..AgentEntry::new("desk", "Answers.") };
    Manifest::from_entries(agent, vec![]).unwrap()
}

fn with_models(models: Option<Vec<ModelEntry>>) -> Manifest {
    manifest(models, BudgetEntry::default())
}

fn openai(model: &str, host: &str) -> ModelEntry {
    ModelEntry::new(ModelProvider::OpenAi, model, host)
}

/// The one change from `a` to `b`, with its rule and kind.
fn only(a: &Manifest, b: &Manifest, rule: Rule, kind: ChangeKind) -> String {
    let d = diff(a, b);
    assert_eq!(d.changes.len(), 1, "{d}");
    assert_eq!((d.changes[0].rule, d.changes[0].kind), (rule, kind), "{d}");
    d.changes[0].reason.clone()
}

#[test]
fn dropping_the_declared_models_widens_and_declaring_them_narrows() {
    let (any, declared) = (with_models(None), with_models(Some(vec![openai("gpt-4.1-mini", "api.openai.com")])));
    let why = only(&declared, &any, Rule::ModelsAny, ChangeKind::Widening);
    assert!(why.contains("any provider"), "{why}");
    only(&any, &declared, Rule::ModelsDeclared, ChangeKind::Narrowing);
}

#[test]
fn a_model_on_a_new_host_widens_and_names_the_host() {
    let old = with_models(Some(vec![openai("gpt-4.1-mini", "api.openai.com")]));
    let new = with_models(Some(vec![
        openai("gpt-4.1-mini", "api.openai.com"),
        ModelEntry::new(ModelProvider::OpenAiCompatible, "gpt-4.1-mini", "proxy.example.com"),
    ]));
    let why = only(&old, &new, Rule::ModelAdded, ChangeKind::Widening);
    assert!(why.contains("new host `proxy.example.com`"), "{why}");
    only(&new, &old, Rule::ModelRemoved, ChangeKind::Narrowing);
}

#[test]
fn a_broader_host_pattern_widens_and_a_covered_model_is_neutral() {
    let exact = with_models(Some(vec![openai("m", "eu.api.example")]));
    let wild = with_models(Some(vec![openai("m", "*.api.example")]));
    only(&exact, &wild, Rule::ModelAdded, ChangeKind::Widening);
    only(&wild, &exact, Rule::ModelRemoved, ChangeKind::Narrowing);
    let both = with_models(Some(vec![openai("m", "*.api.example"), openai("m", "eu.api.example")]));
    only(&wild, &both, Rule::ModelCovered, ChangeKind::Neutral);
}

#[test]
fn a_raised_or_removed_cap_widens_and_a_lowered_or_declared_one_narrows() {
    let caps = |tokens, usd| manifest(None, BudgetEntry { tokens_per_run: tokens, usd_per_run_micros: usd });
    let why = only(&caps(Some(100), None), &caps(Some(200), None), Rule::BudgetCapRaised, ChangeKind::Widening);
    assert_eq!(why, "budget cap tokens_per_run raised from 100 to 200");
    only(&caps(Some(200), None), &caps(Some(100), None), Rule::BudgetCapLowered, ChangeKind::Narrowing);
    let why = only(&caps(None, Some(500_000)), &caps(None, None), Rule::BudgetCapRemoved, ChangeKind::Widening);
    assert_eq!(why, "budget cap usd_per_run_micros of 0.5 USD removed");
    only(&caps(None, None), &caps(None, Some(500_000)), Rule::BudgetCapDeclared, ChangeKind::Narrowing);
}

#[test]
fn models_and_caps_round_trip_through_the_canonical_text_and_none_keeps_old_bytes() {
    let m = manifest(
        Some(vec![ModelEntry::offline(), openai("gpt-4.1-mini", "api.openai.com")]),
        BudgetEntry { tokens_per_run: Some(1000), usd_per_run_micros: None },
    );
    let text = m.to_canonical_string();
    assert!(text.contains(r#""budget":{"tokens_per_run":1000}"#), "{text}");
    assert!(
        text.contains(
            r#""models":[{"host":"api.openai.com","model":"gpt-4.1-mini","provider":"openai"},{"provider":"offline"}]"#
        ),
        "{text}"
    );
    assert_eq!(Manifest::parse(&text).unwrap(), m);
    let plain = with_models(None).to_canonical_string();
    assert!(!plain.contains("models") && !plain.contains("budget"), "{plain}");
}

#[test]
fn the_reader_refuses_models_that_do_not_fit_their_kind_and_zero_caps() {
    let text = with_models(Some(vec![openai("m", "api.openai.com")])).to_canonical_string();
    for (from, to, says) in [
        (r#""host":"api.openai.com""#, r#""host":"https://api.openai.com""#, "a host has no scheme"),
        (r#""host":"api.openai.com","#, "", "names its model and its host"),
        (r#""provider":"openai""#, r#""provider":"openia""#, "unknown variant"),
    ] {
        let err = Manifest::parse(&text.replace(from, to)).unwrap_err().to_string();
        assert!(err.contains(says), "{err}");
    }
    let empty = text.replace(r#"[{"host":"api.openai.com","model":"m","provider":"openai"}]"#, "[]");
    assert!(Manifest::parse(&empty).unwrap_err().to_string().contains("empty list"));
    let zero = manifest(None, BudgetEntry { tokens_per_run: Some(1), usd_per_run_micros: None })
        .to_canonical_string()
        .replace(r#""tokens_per_run":1"#, r#""tokens_per_run":0"#);
    assert!(Manifest::parse(&zero).unwrap_err().to_string().contains("is 0"));
}

/// A small universe, so that random lists share entries and hosts cover one another.
fn model_entry() -> impl Strategy<Value = ModelEntry> {
    let kinds = prop_oneof![Just(ModelProvider::OpenAi), Just(ModelProvider::OpenAiCompatible)];
    let hosts =
        prop_oneof![Just("api.example.com"), Just("*.example.com"), Just("eu.api.example.com"), Just("other.net")];
    prop_oneof![
        1 => Just(ModelEntry::offline()),
        6 => (kinds, prop_oneof![Just("a"), Just("b")], hosts).prop_map(|(k, m, h)| ModelEntry::new(k, m, h)),
    ]
}

fn models() -> impl Strategy<Value = Option<Vec<ModelEntry>>> {
    prop::option::of(prop::collection::vec(model_entry(), 1..4))
}

fn caps() -> impl Strategy<Value = BudgetEntry> {
    let cap = prop::option::of(1u64..4);
    (cap.clone(), cap).prop_map(|(t, u)| BudgetEntry { tokens_per_run: t, usd_per_run_micros: u.map(|u| u * 250_000) })
}

/// Every provider the universe can describe.
fn probes() -> Vec<(String, String, Option<String>)> {
    let mut out = vec![("scripted".to_owned(), "script".to_owned(), None)];
    for kind in ["openai", "openai-compatible"] {
        for model in ["a", "b"] {
            for host in ["api.example.com", "eu.api.example.com", "x.eu.api.example.com", "example.com", "other.net"] {
                out.push((kind.into(), model.into(), Some(host.into())));
            }
        }
    }
    out
}

fn admitted(models: &Option<Vec<ModelEntry>>, (p, m, h): &(String, String, Option<String>)) -> bool {
    let used = ProviderIdentity { provider: p, model: m, host: h.as_deref() };
    models.as_deref().is_none_or(|list| admits(list, &used))
}

proptest! {
    #[test]
    fn no_widening_means_no_provider_is_newly_admitted(old in models(), new in models()) {
        let d = diff(&with_models(old.clone()), &with_models(new.clone()));
        let newly: Vec<_> = probes().into_iter().filter(|p| admitted(&new, p) && !admitted(&old, p)).collect();
        prop_assert!(d.has_widening() || newly.is_empty(), "no widening reported, yet {newly:?} are newly admitted:\n{d}");
        // And a change of what is admitted is never silent.
        let same = probes().iter().all(|p| admitted(&new, p) == admitted(&old, p));
        prop_assert!(same || !d.is_empty());
    }

    #[test]
    fn no_widening_means_no_spend_is_newly_allowed(old in caps(), new in caps()) {
        let d = diff(&manifest(None, old), &manifest(None, new));
        for tokens in 0..5u64 {
            for quarters in 0..5u32 {
                let spent = RunSpend { tokens, usd: f64::from(quarters) * 0.25 };
                let newly = old.exceeded(&spent).is_some() && new.exceeded(&spent).is_none();
                prop_assert!(d.has_widening() || !newly, "{spent:?} is newly allowed:\n{d}");
            }
        }
    }
}
