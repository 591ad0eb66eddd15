//! Asking a person. When the rules answer `ask` or `agent_review`, the gate
//! (chock-gate) puts one [`Question`] to an [`Asker`]: the command line
//! prompts on its terminal, the tool server forwards it to the client's
//! prompt or to `chock approve`, a hook hands it to the agent's own prompt,
//! and a process with nobody behind it answers [`Answer::Unavailable`]. An
//! asker is never asked about `agent_then_human` (a person is asked only
//! after a reviewer agent's yes, and then what is left is `ask`) nor about
//! `allow` or `deny`. The question carries the rules that
//! would have answered it, so a refusal for want of a person can name
//! exactly what to write in `chock.zon`.

use serde::{Deserialize, Serialize};

use crate::decision::Decision;
use crate::policy::Suggestion;

/// One question for a person, about one act (or one group of acts, such as
/// every host a build reaches that no rule answers).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Question {
    /// The action the question is asked under (`nix.build.<attr>`, `nix.net.hosts`, ...).
    pub action: String,
    /// What the rules answered: `ask`, or a decision that also wants a reviewer.
    pub decision: Decision,
    /// One line saying what a yes lets happen.
    pub summary: String,
    /// The rest, one line each (every host with the rule that would answer it, ...).
    pub detail: Vec<String>,
    /// The rules that, written in `chock.zon`, would answer this without a
    /// question: one per act the question covers.
    pub rules: Vec<Suggestion>,
}

/// A person's answer, or the lack of one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Answer {
    /// A person said yes.
    Yes,
    /// A person said no.
    No,
    /// Nobody could be asked (no terminal, no approver connected, the
    /// question timed out).
    Unavailable,
    /// The client dismissed the question without a person answering it
    /// (Claude Code in print mode cancels every question at once): not a no.
    Cancelled,
    /// The question went to the agent's own prompt, whose answer Chock does
    /// not hear (a hook's `ask`): the agent asks the person.
    Handed,
}

/// Whatever puts a question to a person and brings the answer back.
pub trait Asker {
    fn ask(&self, question: &Question) -> Answer;

    /// [`Asker::ask`], with how far a yes reaches where this asker offers
    /// more than once (a terminal offering "always" and writing its rule).
    fn ask_with_scope(&self, question: &Question) -> (Answer, Option<Scope>) {
        (self.ask(question), None)
    }

    /// One line of free text for `question` (the agent's own question,
    /// `ask_user` with `text`), raw as typed; `None` when this asker cannot
    /// take text from a person (no terminal, a client whose prompt offers
    /// choices only), so the next way of asking is tried.
    fn ask_text(&self, _question: &Question) -> Option<String> {
        None
    }

    /// Whether a question put to this asker could reach anyone at all:
    /// false for one with nobody behind it ([`Nobody`], a terminal asker
    /// with no terminal), so a caller that must act before any question
    /// is put (the router's resolver) knows it would go unanswered.
    fn can_ask(&self) -> bool {
        true
    }
}

/// Any function from a question to an answer is an asker (scripted answers in tests).
impl<F: Fn(&Question) -> Answer> Asker for F {
    fn ask(&self, question: &Question) -> Answer {
        self(question)
    }
}

/// The asker of a process with nobody behind it: every question goes unanswered.
#[derive(Debug, Clone, Copy, Default)]
pub struct Nobody;

impl Asker for Nobody {
    fn ask(&self, _question: &Question) -> Answer {
        Answer::Unavailable
    }

    fn can_ask(&self) -> bool {
        false
    }
}

impl Question {
    /// The refusal to give when nobody could answer: what was asked and the
    /// rules that would answer it next time, one per line.
    pub fn unanswered(&self) -> String {
        let who = match self.decision {
            Decision::AgentReview => "a reviewer agent",
            Decision::AgentThenHuman => "a reviewer agent and then a person",
            _ => "a person",
        };
        let mut text = format!(
            "{} needs a yes from {who} and nobody could be asked: {}",
            self.action, self.summary
        );
        self.push_rules(&mut text, "to allow it");
        text
    }

    /// The question as a person reads it before answering: the action,
    /// what a yes lets happen, the details, and the rules that would answer
    /// it without asking.
    pub fn shown(&self) -> String {
        let mut text = format!("{}\n  {}", visible(&self.action), visible(&self.summary));
        for line in &self.detail {
            text.push_str(&format!("\n    {}", visible(line)));
        }
        self.push_rules(&mut text, "to stop being asked");
        text
    }

    /// The rules that would answer it, under the block each goes in.
    fn push_rules(&self, text: &mut String, why: &str) {
        let mut last_block: Option<&str> = None;
        for suggestion in &self.rules {
            if last_block != Some(suggestion.block.as_str()) {
                text.push_str(&format!(
                    "\n  {why}, add to {}:",
                    visible(&suggestion.block)
                ));
                last_block = Some(&suggestion.block);
            }
            text.push_str(&format!("\n    {},", visible(&suggestion.rule)));
        }
    }
}

/// `text` as a terminal shows it, character for character: each control
/// character (a line end, a carriage return, an escape sequence's ESC) and
/// each character that reorders text (the bidirectional overrides and
/// isolates) is written as its escape (`\n`, `\u{1b}`, `\u{202e}`). A
/// question is built from what an agent chose (a path, a command, a
/// host), and none of it may hide part of the question or forge a line of
/// it: every part of a question a person reads goes through here.
pub fn visible(text: &str) -> std::borrow::Cow<'_, str> {
    let hidden = |c: char| {
        c.is_control()
            || matches!(c, '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
    };
    if !text.chars().any(hidden) {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut shown = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if hidden(c) {
            shown.extend(c.escape_default());
        } else {
            shown.push(c);
        }
    }
    std::borrow::Cow::Owned(shown)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_an_agent_chose_cannot_hide_or_forge_part_of_a_question() {
        let mut q = question();
        q.summary = "write a\u{1b}[2K\rallow: nothing\u{202e}txt.exe".into();
        q.detail = vec!["line one\n  to stop being asked, add to /etc:".into()];
        let shown = q.shown();
        assert!(
            !shown.chars().any(|c| c.is_control() && c != '\n'),
            "{shown:?}"
        );
        assert!(!shown.contains('\u{202e}'), "{shown:?}");
        assert!(
            shown.contains(r"write a\u{1b}[2K\rallow: nothing\u{202e}txt.exe"),
            "{shown}"
        );
        assert!(shown.contains(r"line one\n  to stop"), "{shown}");
        assert_eq!(
            shown.lines().count(),
            question().shown().lines().count() + 1,
            "{shown}"
        );
        assert_eq!(visible("plain é text"), "plain é text");
    }

    fn question() -> Question {
        Question {
            action: "nix.net.hosts".into(),
            decision: Decision::Ask,
            summary: "2 hosts: a.example:443, b.example:80".into(),
            detail: vec![],
            rules: ["nix.net.build.example.a.443", "nix.net.build.example.b.80"]
                .iter()
                .map(|a| Suggestion {
                    rule: format!(".{{ .action = \"{a}\", .decision = .allow }}"),
                    block: ".policy.rules in /p/chock.zon".into(),
                })
                .collect(),
        }
    }

    #[test]
    fn nobody_leaves_every_question_unanswered() {
        assert_eq!(Nobody.ask(&question()), Answer::Unavailable);
    }

    #[test]
    fn a_function_is_an_asker() {
        let yes = |q: &Question| {
            if q.action == "nix.net.hosts" {
                Answer::Yes
            } else {
                Answer::No
            }
        };
        assert_eq!(yes.ask(&question()), Answer::Yes);
    }

    #[test]
    fn the_refusal_names_every_rule_under_its_block_once() {
        let text = question().unanswered();
        assert_eq!(
            text,
            "nix.net.hosts needs a yes from a person and nobody could be asked: 2 hosts: a.example:443, b.example:80\n  \
             to allow it, add to .policy.rules in /p/chock.zon:\n    \
             .{ .action = \"nix.net.build.example.a.443\", .decision = .allow },\n    \
             .{ .action = \"nix.net.build.example.b.80\", .decision = .allow },"
        );
    }
}

/// How far a person's yes reaches: this once, the rest of the session, or
/// always (the rule written into the project's `chock.zon`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Scope {
    /// This act only.
    #[default]
    Once,
    /// Every identical act (same action, agent kind and tool) until the
    /// asking session ends.
    Session,
    /// From now on: the suggested rule is written into `chock.zon`.
    Always,
}

impl Scope {
    /// The word the log and the approve socket carry.
    pub fn as_str(self) -> &'static str {
        match self {
            Scope::Once => "once",
            Scope::Session => "session",
            Scope::Always => "always",
        }
    }

    /// The scope `word` names, if any.
    pub fn parse(word: &str) -> Option<Scope> {
        match word {
            "once" => Some(Scope::Once),
            "session" => Some(Scope::Session),
            "always" => Some(Scope::Always),
            _ => None,
        }
    }
}

impl std::fmt::Display for Scope {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}
