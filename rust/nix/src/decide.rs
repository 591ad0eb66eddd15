//! Answers: the rules first, a person for what they leave open, and one
//! line in the decision log (on the route the request came by) for every
//! answer a build acts on.
//! A plan reads the rules and nothing else: it asks nobody and logs nothing,
//! as `chock policy explain` does.

use chock_gate::{Outcome, Route, Settled, Step};
use chock_log::Log;
use chock_policy::names::{self, Phase};
use chock_policy::{
    Answer, Asker, DecidedBy, Decision, NameError, Policy, Question, Reading, Suggestion, Verdict,
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
    /// The gate's end for it, once there is one: the rules' own, or the
    /// person's answer heard; `None` while a person is still to be asked.
    #[serde(skip)]
    end: Option<Settled>,
}

impl Decided {
    fn new(action: String, subject: Option<String>, verdict: Verdict) -> Decided {
        let end = match chock_gate::before_asking(Route::Build, &verdict) {
            Step::Settled(settled) => Some(settled),
            Step::Ask => None,
        };
        Decided {
            action,
            subject,
            decision: verdict.decision,
            decided_by: verdict.decided_by,
            suggestion: verdict.suggestion,
            answer: None,
            end,
        }
    }

    /// Records the person's `answer`, how far a yes reached, and the end
    /// the gate makes of it.
    fn heard(&mut self, answer: Answer, scope: Option<chock_gate::Scope>) {
        self.answer = Some(answer);
        self.end = Some(chock_gate::Settled {
            scope,
            ..chock_gate::heard(self.decision, answer)
        });
    }

    /// Whether the act may go ahead: a rule allowed it or a person said yes.
    pub fn granted(&self) -> bool {
        self.end.is_some_and(|s| s.goes())
    }

    /// Whether a person is still to be asked.
    pub fn open(&self) -> bool {
        self.end.is_none()
    }

    /// Whether the rules refused it with nobody asked (`deny`, and
    /// `agent_then_human`, which no route can ask a reviewer agent about).
    pub fn refused_by_rules(&self) -> bool {
        self.answer.is_none() && self.end.is_some_and(|s| !s.goes())
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
    /// The route every line carries (`build`, `mcp`, `exec`).
    pub route: Route,
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

    /// Logs a rule's final answer; open ones wait for a person.
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
        let (answer, scope) = self.asker.ask_with_scope(&question);
        for decided in covered.iter_mut() {
            decided.heard(answer, scope.filter(|_| answer == Answer::Yes));
            self.append(decided);
        }
        match chock_gate::heard(question.decision, answer).outcome {
            Outcome::Go => Ok(()),
            Outcome::Refused(chock_gate::Refused::PersonSaidNo) => Err(Refusal::Declined {
                action: question.action,
                summary: question.summary,
            }),
            _ => Err(Refusal::Unanswered {
                cancelled: answer == Answer::Cancelled,
                question: Box::new(question),
            }),
        }
    }

    fn append(&self, decided: &Decided) {
        let Some(settled) = decided.end else {
            return;
        };
        let key = self.who.key(&decided.action);
        let entry = settled.entry(
            self.route,
            self.project.clone(),
            &key,
            &decided.verdict(),
            decided.subject.clone(),
        );
        self.log.append(&entry);
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
    use chock_log::{AnsweredBy, Entry};
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
            route: Route::Mcp,
            project: "/p".into(),
            mode: Mode::Build,
        }
    }

    fn one_rule(action: &str, decision: Decision) -> Policy {
        Policy::from_rules(
            vec![Rule::new(
                Some(Pattern::parse(action).expect("pattern")),
                decision,
            )],
            vec![],
        )
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
        let policy = one_rule("nix.net.build.com.github.443", Decision::Allow);
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
        assert_eq!(first.route.as_str(), "mcp", "the route the request came by");
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
        assert_eq!(records[0].decision.as_str(), "ask");
    }

    /// A person's yes alone never lifts agent_then_human: nobody is asked
    /// and the build is refused by the rules, whoever is there.
    #[test]
    fn agent_then_human_is_refused_with_nobody_asked() {
        let dir = tempfile::tempdir().expect("tempdir");
        let log = Log::at(dir.path(), chock_log::Rotation::default());
        let policy = one_rule("nix.build.*", Decision::AgentThenHuman);
        let who = Who::default();
        let yes = |q: &Question| -> Answer { panic!("asked about {}", q.action) };
        let d = decider(&policy, &who, &log, &yes);
        let decided = d.decide("nix.build.default", None);
        assert!(!decided.open() && !decided.granted() && decided.refused_by_rules());
        d.record(&decided);
        let records = entries(&log);
        assert_eq!(
            (records[0].decision.as_str(), records[0].answered_by),
            ("agent_then_human", AnsweredBy::Nobody)
        );
    }
}
