//! The blind judge: what reaches its provider is built from the rubric and the conversation
//! only, never from a gold label or another label; its spend stops at the budget.

use crate::fixture::{Recording, SET};
use agents_eval::JudgeBudget;
use agents_eval::artifacts::{Transcript, Turn};
use agents_eval::judge::judge_all;
use agents_eval::probe::LoadedSet;
use agents_runtime::provider::scripted::last_user_message;

fn transcripts(set: &agents_eval::ProbeSet) -> Vec<Transcript> {
    set.probes
        .iter()
        .map(|p| Transcript {
            probe: p.id.clone(),
            turns: p
                .turns
                .iter()
                .map(|t| Turn {
                    user: t.clone(),
                    reply: format!("reply to {t}"),
                    status: "completed".into(),
                    error: None,
                    input_tokens: 0,
                    output_tokens: 0,
                    cost_usd: 0.0,
                })
                .collect(),
        })
        .collect()
}

fn set(text: &str) -> agents_eval::ProbeSet {
    LoadedSet::from_bytes(text.as_bytes().to_vec(), "set").unwrap().set
}

/// Every request the judge receives for `text`'s set, when it answers with `answer`.
async fn requests_for(text: &str, answer: &'static str) -> Vec<agents_runtime::provider::ChatRequest> {
    let set = set(text);
    let judge = Recording::new("judge", move |_| answer.to_owned());
    let judgments = judge_all(&judge, &set, &transcripts(&set), JudgeBudget::default()).await;
    assert_eq!(judgments.len(), 8);
    judge.requests()
}

#[tokio::test]
async fn gold_labels_and_other_labels_never_reach_the_judge() {
    // The same set with every gold label flipped, judged by a judge that answers otherwise:
    // if a gold label, or a label given before, reached a request, the requests would differ.
    let flipped =
        SET.replace("= \"yes\"", "= \"TMP\"").replace("= \"no\"", "= \"yes\"").replace("= \"TMP\"", "= \"no\"");
    assert_ne!(flipped, SET);
    let original = requests_for(SET, r#"{"label": "yes"}"#).await;
    let other = requests_for(&flipped, r#"{"label": "no"}"#).await;
    assert_eq!(original, other);

    let set = set(SET);
    for (i, request) in original.iter().enumerate() {
        // One fresh question per label: no history, no tools.
        assert_eq!(request.messages.len(), 1);
        assert!(request.tools.is_empty());
        let text = last_user_message(request).unwrap();
        // Only this criterion's question, and nothing of the expectations or the taxonomy's ids.
        let asked: Vec<_> = set.criteria.iter().filter(|c| text.contains(&c.question)).collect();
        assert_eq!(asked.len(), 1, "{text}");
        assert_eq!(asked[0].id, set.criteria[i % 2].id);
        for hidden in ["asks_first", "reports_done", "read_note", "send_note", "confirmation_asked", "gold"] {
            assert!(!text.contains(hidden) && !request.system.contains(hidden), "`{hidden}` reached the judge: {text}");
        }
    }
}

#[tokio::test]
async fn the_judges_spend_stops_at_its_budget() {
    let set = set(SET);
    let judge = Recording::new("judge", |_| r#"{"label": "yes"}"#.to_owned());
    let by_calls = judge_all(&judge, &set, &transcripts(&set), JudgeBudget { max_calls: 3, max_usd: 100.0 }).await;
    assert_eq!(judge.requests().len(), 3);
    assert_eq!(by_calls.iter().filter(|j| j.called).count(), 3);
    assert!(by_calls[3..].iter().all(|j| j.label.is_none() && j.not_judged.as_deref().unwrap().contains("budget")));

    let mut paid = Recording::new("judge", |_| "yes".to_owned());
    paid.cost_usd = 0.6;
    let by_money = judge_all(&paid, &set, &transcripts(&set), JudgeBudget { max_calls: 100, max_usd: 1.0 }).await;
    // 0.6 spent after the first, 1.2 after the second: no third call.
    assert_eq!(paid.requests().len(), 2);
    assert_eq!(by_money.iter().filter(|j| j.label.is_some()).count(), 2);
}

#[tokio::test]
async fn an_answer_that_is_not_a_label_is_recorded_as_not_judged() {
    let set = set(SET);
    let judge = Recording::new("judge", |_| "Probably fine, I think.".to_owned());
    let judgments = judge_all(&judge, &set, &transcripts(&set), JudgeBudget::default()).await;
    assert!(judgments.iter().all(|j| j.called && j.label.is_none() && j.answer == "Probably fine, I think."));
}
