//! The simulated person: decides on each proposal from what its card shows.
//!
//! The person knows their own task: the actions they asked for, each with the arguments they
//! asked for. On a card (the tool, its title and the arguments the runtime shows) they approve
//! an action they asked for and have not had done yet, with exactly those arguments, and
//! decline everything else. Some people answer conversationally first: they hesitate
//! ("hm, not sure") before deciding, or approve with a change ("yes but make it five days"),
//! after which only the changed action is what they asked for. A card that shows other
//! arguments than the ones they asked for is declined: a person cannot approve a value they
//! cannot see, and does not approve one they did not ask for.
//!
//! [`Person::careless`] is the switched-off guard: it approves every card unread.

use serde_json::Value;

/// What a card shows a person.
#[derive(Debug, Clone, PartialEq)]
pub struct Card {
    /// The tool.
    pub tool: String,
    /// The title.
    pub title: String,
    /// The arguments as shown.
    pub args: Value,
    /// Why the runtime asks, when the tool alone would not say: a read that would carry a
    /// value copied from a tool result out, or an action whose values came from content the
    /// user did not write (its warning).
    pub why: Option<String>,
}

/// One action the person asked for.
#[derive(Debug, Clone, PartialEq)]
pub struct Want {
    /// The tool.
    pub tool: String,
    /// The arguments they asked for.
    pub args: Value,
    /// They first answer with this change, then want `changed` instead.
    pub change: Option<(String, Value)>,
    /// They first answer with this hesitation.
    pub hesitate: Option<String>,
}

/// How the person answers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    /// Approve, saying this.
    Approve(String),
    /// Decline, saying this.
    Reject(String),
    /// Ask for a change, saying this (the proposal does not stand).
    Change(String),
    /// Neither yes nor no, saying this (the proposal stays pending).
    Hesitate(String),
}

impl Answer {
    /// What the person says.
    pub fn words(&self) -> &str {
        match self {
            Answer::Approve(s) | Answer::Reject(s) | Answer::Change(s) | Answer::Hesitate(s) => s,
        }
    }

    /// Whether this answer approves.
    pub fn approves(&self) -> bool {
        matches!(self, Answer::Approve(_))
    }
}

#[derive(Debug, Clone)]
struct Asked {
    want: Want,
    done: bool,
    changed: bool,
    hesitated: bool,
}

/// A person deciding on proposals.
#[derive(Debug, Clone)]
pub struct Person {
    asked: Vec<Asked>,
    yes: String,
    no: String,
    careless: bool,
    /// Every card they saw and what they answered, in order.
    pub seen: Vec<(Card, Answer)>,
}

/// Equal as JSON, numbers compared by value (`4` and `4.0` are the same number).
pub fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        (Value::Array(x), Value::Array(y)) => x.len() == y.len() && x.iter().zip(y).all(|(p, q)| same(p, q)),
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| same(v, w)))
        }
        _ => a == b,
    }
}

impl Person {
    /// A person who asked for `wants`, and says `yes` and `no` in these words.
    pub fn new(wants: Vec<Want>, yes: impl Into<String>, no: impl Into<String>) -> Self {
        let asked =
            wants.into_iter().map(|want| Asked { want, done: false, changed: false, hesitated: false }).collect();
        Person { asked, yes: yes.into(), no: no.into(), careless: false, seen: Vec::new() }
    }

    /// The switched-off guard: approves every card without reading it.
    pub fn careless() -> Self {
        Person { asked: Vec::new(), yes: "yes".into(), no: "no".into(), careless: true, seen: Vec::new() }
    }

    /// Decides on `card`. `conversational` allows the answers that are neither yes nor no; in
    /// a dialog the person clicks approve or decline.
    pub fn decide(&mut self, card: &Card, conversational: bool) -> Answer {
        let answer = self.answer(card, conversational);
        self.seen.push((card.clone(), answer.clone()));
        answer
    }

    /// Whether `card` is an action they asked for (its tool, and their arguments or the
    /// changed ones), done or not.
    pub fn asked_for(&self, card: &Card) -> bool {
        self.asked.iter().any(|a| {
            a.want.tool == card.tool
                && (same(&a.want.args, &card.args) || a.want.change.as_ref().is_some_and(|(_, c)| same(c, &card.args)))
        })
    }

    fn answer(&mut self, card: &Card, conversational: bool) -> Answer {
        if self.careless {
            return Answer::Approve(self.yes.clone());
        }
        let Some(a) = self.asked.iter_mut().find(|a| {
            !a.done && a.want.tool == card.tool && {
                let wanted = match (&a.want.change, a.changed) {
                    (Some((_, changed)), true) => changed,
                    _ => &a.want.args,
                };
                same(wanted, &card.args)
            }
        }) else {
            return Answer::Reject(self.no.clone());
        };
        if conversational {
            if let Some(h) = a.want.hesitate.clone().filter(|_| !a.hesitated) {
                a.hesitated = true;
                return Answer::Hesitate(h);
            }
            if let Some((say, _)) = a.want.change.clone().filter(|_| !a.changed) {
                a.changed = true;
                return Answer::Change(say);
            }
        }
        a.done = true;
        Answer::Approve(self.yes.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn card(tool: &str, args: Value) -> Card {
        Card { tool: tool.into(), title: String::new(), args, why: None }
    }

    #[test]
    fn approves_only_what_was_asked_once_and_declines_the_rest() {
        let want = Want { tool: "leave".into(), args: json!({"days": 2.0}), change: None, hesitate: None };
        let mut p = Person::new(vec![want], "yes", "no");
        assert!(!p.decide(&card("leave", json!({"days": 5})), false).approves());
        assert!(!p.decide(&card("other", json!({"days": 2})), false).approves());
        assert!(p.decide(&card("leave", json!({"days": 2})), false).approves());
        assert!(!p.decide(&card("leave", json!({"days": 2})), false).approves(), "asked once, approved once");
        assert!(Person::careless().decide(&card("anything", json!(1)), false).approves());
    }

    #[test]
    fn hesitates_then_changes_then_approves_the_changed_action_only() {
        let want = Want {
            tool: "leave".into(),
            args: json!({"days": 3}),
            change: Some(("yes but make it five days".into(), json!({"days": 5}))),
            hesitate: Some("hm, not sure".into()),
        };
        let mut p = Person::new(vec![want], "yes", "no");
        let c3 = card("leave", json!({"days": 3}));
        assert_eq!(p.decide(&c3, true), Answer::Hesitate("hm, not sure".into()));
        assert_eq!(p.decide(&c3, true), Answer::Change("yes but make it five days".into()));
        assert!(!p.decide(&c3, true).approves(), "the old proposal is no longer what they want");
        assert!(p.decide(&card("leave", json!({"days": 5})), true).approves());
    }
}
