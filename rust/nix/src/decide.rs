//! Answers: the rules first, a person for what they leave open, and one
//! line in the decision log (on the route the request came by) for every
//! answer a build acts on.
//! A plan reads the rules and nothing else: it asks nobody and logs nothing,
//! as `chock policy explain` does.

use chock_log::{AnsweredBy, Entry, Log};
use chock_policy::names::{self, Phase};
use chock_policy::{
    Answer, Asker, DecidedBy, Decision, Layer, NameError, Policy, Question, Reading, Suggestion,
    Verdict,
};
use serde::Serialize;

use crate::error::Refusal;
use crate::request::Who;

/// One answer: what the rules said and, when a person was asked, what they said.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Decided {
    pub action: String,
    /// What the act is about, by name (a derivation, an installable).
    pub subject: Option<String>,
    /// The rules' answer.
    pub decision: Decision,
    pub decided_by: DecidedBy,
    /// The rule that would allow it, when the rules did not.
    pub suggestion: Option<Suggestion>,
    /// What the person said, when one was asked.
    pub answer: Option<Answer>,
}

impl Decided {
    fn new(action: String, subject: Option<String>, verdict: Verdict) -> Decided {
        Decided {
            action,
            subject,
            decision: verdict.decision,
            decided_by: verdict.decided_by,
            suggestion: verdict.suggestion,
            answer: None,
        }
    }

    /// Whether the act may go ahead: a rule allowed it or a person said yes.
    pub fn granted(&self) -> bool {
        self.decision == Decision::Allow || self.answer == Some(Answer::Yes)
    }

    /// Whether a person is still to be asked.
    pub fn open(&self) -> bool {
        !matches!(self.decision, Decision::Allow | Decision::Deny) && self.answer.is_none()
    }

    fn verdict(&self) -> Verdict {
        Verdict {
            decision: self.decision,
            decided_by: self.decided_by.clone(),
            suggestion: self.suggestion.clone(),
        }
    }

    /// The refusal a rule's deny gives, with nobody asked.
    pub(crate) fn denied(&self) -> Refusal {
        Refusal::Denied {
            action: self.action.clone(),
            subject: self.subject.clone(),
            verdict: Box::new(self.verdict()),
        }
    }
}

/// Whether answers are acted on (a build: people are asked, lines logged)
/// or only reported (a plan).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Plan,
    Build,
}

/// Reads the rules for a build, asks, and logs.
pub(crate) struct Decider<'a> {
    pub policy: &'a Policy,
    pub who: &'a Who,
    pub asker: &'a dyn Asker,
    pub log: &'a Log,
    /// The route every line carries (`build`, `mcp`).
    pub route: &'a str,
    pub project: String,
    pub mode: Mode,
}

impl Decider<'_> {
    /// The rules' answer to one action.
    pub(crate) fn decide(&self, action: &str, subject: Option<String>) -> Decided {
        let verdict = self.policy.decide(&self.who.key(action), Reading::Act);
        Decided::new(action.to_owned(), subject, verdict)
    }

    /// The rules' answer for a host a build reaches, read under its build
    /// name and its either-phase name; the action kept is the build name.
    pub(crate) fn decide_host(
        &self,
        host: &str,
        port: u16,
        subject: Option<String>,
    ) -> Result<Decided, NameError> {
        let phase = names::nix_net(Phase::Build, host, port)?;
        let either = names::nix_net_either(host, port)?;
        let verdict =
            self.policy
                .decide_either(&self.who.key(&phase), &self.who.key(either), Reading::Act);
        Ok(Decided::new(phase, subject, verdict))
    }

    /// Logs a rule's final answer (allow or deny); open ones wait for a person.
    pub(crate) fn record(&self, decided: &Decided) {
        if self.mode == Mode::Build && !decided.open() {
            self.append(decided);
        }
    }

    /// Puts `question` to a person for the open answers in `covered`, sets
    /// each one's answer and logs it. No is a refusal; so is nobody there.
    pub(crate) fn ask(
        &self,
        question: Question,
        covered: &mut [&mut Decided],
    ) -> Result<(), Refusal> {
        let answer = self.asker.ask(&question);
        for decided in covered.iter_mut() {
            decided.answer = Some(answer);
            self.append(decided);
        }
        match answer {
            Answer::Yes => Ok(()),
            Answer::No => Err(Refusal::Declined {
                action: question.action,
                summary: question.summary,
            }),
            Answer::Unavailable => Err(Refusal::Unanswered {
                question: Box::new(question),
            }),
        }
    }

    fn append(&self, decided: &Decided) {
        let (decision, answered_by) = match decided.answer {
            Some(Answer::Yes) => (Decision::Allow.as_str(), AnsweredBy::Person),
            Some(Answer::No) => (Decision::Deny.as_str(), AnsweredBy::Person),
            Some(Answer::Unavailable) => (decided.decision.as_str(), AnsweredBy::Nobody),
            None => (
                decided.decision.as_str(),
                match decided.decided_by.layer {
                    Layer::Project | Layer::Org => AnsweredBy::Rule,
                    Layer::Default => AnsweredBy::Default,
                    Layer::Nothing => AnsweredBy::Nobody,
                },
            ),
        };
        let entry = Entry {
            route: self.route.to_owned(),
            project: self.project.clone(),
            action: decided.action.clone(),
            agent_kind: self.who.agent_kind.clone(),
            model: self.who.model.clone(),
            tool: self.who.tool.clone(),
            decision: decision.into(),
            decided_by: chock_log::DecidedBy {
                layer: layer_name(decided.decided_by.layer).into(),
                file: decided
                    .decided_by
                    .file
                    .as_ref()
                    .map(|f| f.display().to_string()),
                line: decided.decided_by.line,
            },
            answered_by,
            subject: decided.subject.clone(),
        };
        self.log.append(&entry);
    }
}

fn layer_name(layer: Layer) -> &'static str {
    match layer {
        Layer::Project => "project",
        Layer::Org => "org",
        Layer::Default => "default",
        Layer::Nothing => "nothing",
    }
}

/// What gave an answer, for a sentence: the rule as written and where.
pub(crate) fn describe(verdict: &Verdict) -> String {
    let by = &verdict.decided_by;
    match (&by.rule, &by.file, by.line) {
        (Some(rule), Some(file), Some(line)) => format!("{rule} ({}:{line})", file.display()),
        (Some(rule), _, _) => format!("{rule} ({})", by.layer.describe()),
        _ => "no rule (an act no rule names is asked about)".into(),
    }
}

/// The question for one open answer: `summary`, the rule that would answer
/// it, and what gave the answer.
pub(crate) fn single_question(decided: &Decided, summary: String) -> Question {
    Question {
        action: decided.action.clone(),
        decision: decided.decision,
        summary,
        detail: vec![format!(
            "answered {} by {}",
            decided.decision,
            describe(&decided.verdict())
        )],
        rules: decided.suggestion.iter().cloned().collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chock_policy::{Pattern, Rule};

    fn decider<'a>(
        policy: &'a Policy,
        who: &'a Who,
        log: &'a Log,
        asker: &'a dyn Asker,
    ) -> Decider<'a> {
        Decider {
            policy,
            who,
            asker,
            log,
            route: "mcp",
            project: "/p".into(),
            mode: Mode::Build,
        }
    }

    fn entries(log: &Log) -> Vec<Entry> {
        log.records()
            .expect("records")
            .filter_map(|line| line.ok()?.record.ok())
            .map(|record| record.entry)
            .collect()
    }

    #[test]
    fn every_answer_a_build_acts_on_is_one_line() {
        let dir = tempfile::tempdir().expect("tempdir");
        let log = Log::at(dir.path(), chock_log::Rotation::default());
        let policy = Policy::from_rules(
            vec![Rule::new(
                Some(Pattern::parse("nix.net.build.com.github.443").expect("pattern")),
                Decision::Allow,
            )],
            vec![],
        );
        let who = Who::default();
        let yes = |_: &Question| Answer::Yes;
        let d = decider(&policy, &who, &log, &yes);
        let allowed = d
            .decide_host("github.com", 443, Some("/nix/store/x.drv".into()))
            .expect("named");
        assert!(allowed.granted() && !allowed.open());
        d.record(&allowed);
        let mut open = d.decide_host("a.example", 80, None).expect("named");
        assert!(open.open());
        d.record(&open);
        let question = single_question(&open, "fetch from a.example:80".into());
        d.ask(question, &mut [&mut open]).expect("yes");
        assert!(open.granted());
        let records = entries(&log);
        assert_eq!(records.len(), 2, "{records:?}");
        let first = &records[0];
        assert_eq!(first.action, "nix.net.build.com.github.443");
        assert_eq!(first.answered_by, AnsweredBy::Rule);
        assert_eq!(first.route, "mcp", "the route the request came by");
        assert_eq!(first.subject.as_deref(), Some("/nix/store/x.drv"));
        let second = &records[1];
        assert_eq!(second.action, "nix.net.build.example.a.80");
        assert_eq!(
            (second.decision.as_str(), second.answered_by),
            ("allow", AnsweredBy::Person)
        );
    }

    #[test]
    fn nobody_there_is_a_refusal_naming_the_rule_and_is_logged_as_nobody() {
        let dir = tempfile::tempdir().expect("tempdir");
        let log = Log::at(dir.path(), chock_log::Rotation::default());
        let policy = Policy::from_rules(vec![], vec![]);
        let who = Who::default();
        let d = decider(&policy, &who, &log, &chock_policy::Nobody);
        let mut open = d.decide("nix.build.default", Some("/p#default".into()));
        let question = single_question(&open, "build /p#default".into());
        let refusal = d.ask(question, &mut [&mut open]).expect_err("nobody");
        let text = refusal.to_string();
        assert!(
            text.contains(".{ .action = \"nix.build.default\", .decision = .allow },"),
            "{text}"
        );
        let records = entries(&log);
        assert_eq!(records[0].answered_by, AnsweredBy::Nobody);
        assert_eq!(records[0].decision, "ask");
    }
}
