//! The offline classifier: a reply confirms only when it is made of ways of agreeing,
//! politeness and the proposal's own title.

use super::reading::{Classification, ConfirmationClassifier, ProposalSummary};
use super::vocabulary::{CANCEL, CONSENT, MODIFY, POLITE, QUESTION_OPENERS};
use crate::BoxFuture;

/// A conservative, offline classifier (see the [module docs](super) for what it reads how).
#[derive(Debug, Clone, Copy, Default)]
pub struct KeywordClassifier;

/// The words of a reply: lowercase, ASCII for full-width forms, one apostrophe form, approving and refusing emoji as
/// words, everything else that is neither a letter, a digit nor an apostrophe a space.
fn words(s: &str) -> Vec<String> {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        // Full-width forms (typed with an East Asian input method) read as their ASCII letters.
        let c = match c {
            '\u{ff01}'..='\u{ff5e}' => char::from_u32(c as u32 - 0xfee0).unwrap_or(c),
            c => c,
        };
        match c {
            '\u{2018}' | '\u{2019}' | '\u{02bc}' | '`' => out.push('\''),
            '👍' | '👌' | '✅' | '✔' | '🆗' => out.push_str(" yes "),
            '👎' | '❌' | '🚫' | '✋' | '🛑' => out.push_str(" no "),
            c if c.is_alphanumeric() || c == '\'' => out.extend(c.to_lowercase()),
            _ => out.push(' '),
        }
    }
    out.split_whitespace().map(|w| w.trim_matches('\'').to_owned()).filter(|w| !w.is_empty()).collect()
}

/// Whether `phrase` (space-separated words) starts at `words[i]`; its length in words.
fn phrase_at(words: &[String], i: usize, phrase: &str) -> Option<usize> {
    let parts: Vec<&str> = phrase.split(' ').collect();
    (words.len() >= i + parts.len() && parts.iter().zip(&words[i..]).all(|(p, w)| *p == w)).then_some(parts.len())
}

/// The longest phrase of `list` that starts at `words[i]`, in words.
fn longest_at(words: &[String], i: usize, list: &[&str]) -> Option<usize> {
    list.iter().filter_map(|p| phrase_at(words, i, p)).max()
}

fn contains_any(words: &[String], list: &[&str]) -> bool {
    (0..words.len()).any(|i| longest_at(words, i, list).is_some())
}

/// How many words at `words[i]` name the proposal by its title: a run of at least two
/// consecutive title words, or the title's first word (its verb) alone. A run with a word that
/// refuses or changes does not count ("yes, cancel subscription" does not confirm "Cancel
/// subscription"; a person who means it can say "yes").
fn title_at(words: &[String], i: usize, title: &[String]) -> Option<usize> {
    let mut best = None;
    for start in 0..title.len() {
        let n = title[start..].iter().zip(&words[i..]).take_while(|(t, w)| t == w).count();
        if n >= 2 || (n == 1 && start == 0) {
            best = best.max(Some(n));
        }
    }
    let n = best?;
    let run = &words[i..i + n];
    (!contains_any(run, CANCEL) && !contains_any(run, MODIFY)).then_some(n)
}

/// Whether the reply is made only of consents, polite words and the proposal's title, with at
/// least one consent (over every way of reading it as such pieces: "that works for me" is
/// "that" + "works for me").
fn only_consent(words: &[String], title: &[String]) -> bool {
    // reach[i][c]: the first i words can be read as such pieces, with (c = 1) or without a consent.
    let mut reach = vec![[false; 2]; words.len() + 1];
    reach[0][0] = true;
    for i in 0..words.len() {
        for c in 0..2 {
            if !reach[i][c] {
                continue;
            }
            for p in CONSENT {
                if let Some(n) = phrase_at(words, i, p) {
                    reach[i + n][1] = true;
                }
            }
            if let Some(n) = title_at(words, i, title) {
                reach[i + n][c] = true;
            }
            if POLITE.contains(&words[i].as_str()) {
                reach[i + 1][c] = true;
            }
        }
    }
    reach[words.len()][1]
}

fn is_question(reply: &str, words: &[String]) -> bool {
    reply.contains(['?', '¿', '？', '؟']) || longest_at(words, 0, QUESTION_OPENERS).is_some()
}

impl KeywordClassifier {
    /// Classifies without a model and without the proposal (no title words are accepted).
    pub fn classify_text(reply: &str) -> Classification {
        Self::classify_reply(None, reply)
    }

    /// Classifies without a model; the words of the proposal's title may stand beside a
    /// consent ("yes, submit the leave request"), except words that refuse or change.
    pub fn classify_reply(proposal: Option<&ProposalSummary>, reply: &str) -> Classification {
        let title = proposal.map(|p| words(&p.title)).unwrap_or_default();
        let words = words(reply);
        if words.is_empty() {
            return Classification::Unclear;
        }
        let question = is_question(reply, &words);
        if !question && only_consent(&words, &title) {
            return Classification::Confirm;
        }
        let refuses = contains_any(&words, CANCEL);
        if question {
            // "No, why?" declines; any other question is not an answer.
            return if longest_at(&words, 0, CANCEL).is_some() {
                Classification::Cancel
            } else {
                Classification::Unclear
            };
        }
        let modifies = contains_any(&words, MODIFY) || words.iter().any(|w| w.chars().any(|c| c.is_numeric()));
        if modifies {
            Classification::Modify
        } else if refuses {
            Classification::Cancel
        } else {
            Classification::Unclear
        }
    }
}

impl ConfirmationClassifier for KeywordClassifier {
    fn classify<'a>(&'a self, proposal: &'a ProposalSummary, reply: &'a str) -> BoxFuture<'a, Classification> {
        let c = Self::classify_reply(Some(proposal), reply);
        Box::pin(async move { c })
    }
}
