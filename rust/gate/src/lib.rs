//! One gate for every route. The policy says one of five decisions; what an
//! act then does is decided here and nowhere else, for every door a
//! question comes through ([`Route`]): `chock exec`, agent hooks, the tool
//! server, `chock build`, flake inputs and Chock's own session. A dev shell
//! a command needs is built as a build, on the route of the command that
//! needed it.
//!
//! | decision | what happens |
//! |---|---|
//! | `allow` | goes ahead, nobody asked (in a hook, a shipped default's allow is "no objection": the agent's own permissions decide) |
//! | `deny` | refused, nobody asked |
//! | `ask` | one question to whoever the route can reach |
//! | `agent_review` | with a reviewer agent: its yes goes ahead, its no refuses, and when it cannot answer the question goes to a person; without one, the same question put to a person, the stricter of the two |
//! | `agent_then_human` | with a reviewer agent: its yes, then a person's; its no, or no answer from it, refuses and nobody is asked; without one, refused, nobody asked, so a person's yes alone never lifts it |
//!
//! Only Chock's own session has a reviewer agent (`chock run` and `chock
//! acp`, when `chock.zon` names its kind in `.review`): there a question
//! under `agent_review` or `agent_then_human` goes to it first
//! ([`reviewed_first`]), and [`after_review`] says what its answer leads
//! to. Every other door goes straight to [`before_asking`].
//!
//! An [`Asker`] answers a question: `yes` goes ahead, `no` is a person's
//! refusal; `unavailable` (nobody there) and `cancelled` (the client
//! dismissed it, no person answered) are refusals that name the rule to
//! add; `handed` means the agent's own prompt asks (a hook), and Chock does
//! not hear the answer. The table is in `docs/policy.md`, and the test below
//! walks every route, decision and asker.
//!
//! [`Settled::entry`] makes the one decision-log line every route writes,
//! and [`Refusal`] the words of every refusal: why, and the rule that
//! would change it. Questions read once before the first turn are
//! answered in [`start`].

#![forbid(unsafe_code)]

mod refusal;
pub mod scope;
pub mod start;

pub use refusal::{Change, Layout, Refusal};
pub use scope::{Offer, Scope, SessionGrants, Word};

pub use chock_log::Route;
use chock_log::{AnsweredBy, Entry};
use chock_policy::{Answer, Asker, Decision, Key, Layer, Question, Verdict};

/// The strictest of `items` by the decision each carries (deny, then
/// agent_then_human, ask, agent_review, allow); the first of equals, and
/// `None` for none. Every route that weighs several answers about one act
/// or one question folds them here.
pub fn strictest<T>(
    items: impl IntoIterator<Item = T>,
    decision: impl Fn(&T) -> Decision,
) -> Option<T> {
    strictest_by(items, decision)
}

/// Whether the rules refuse `verdict`'s act on `route` with nobody asked.
pub fn refused_by_rules(route: Route, verdict: &Verdict) -> bool {
    matches!(before_asking(route, verdict), Step::Settled(s) if !s.goes())
}

/// The act that answers for a call of several acts on `route`, each with
/// its verdict and its end: the first the rules refuse with nobody asked,
/// else the first refused once asked, else the strictest by decision of
/// those that go ahead; `None` for none.
pub fn answering_act<T>(
    route: Route,
    items: impl IntoIterator<Item = T>,
    ended: impl Fn(&T) -> (&Verdict, Settled),
) -> Option<T> {
    strictest_by(items, |item| {
        let (verdict, settled) = ended(item);
        match (refused_by_rules(route, verdict), settled.goes()) {
            (true, _) => (0, Decision::Deny),
            (false, false) => (1, Decision::Deny),
            (false, true) => (2, verdict.decision),
        }
    })
}

fn strictest_by<T, K: Ord>(items: impl IntoIterator<Item = T>, key: impl Fn(&T) -> K) -> Option<T> {
    items
        .into_iter()
        .reduce(|held, next| if key(&next) < key(&held) { next } else { held })
}

/// Why an act was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refused {
    /// A rule (or a shipped default) answered deny.
    Denied,
    /// `agent_then_human`: a reviewer agent must say yes first, and there is none.
    NoReviewer,
    /// A reviewer agent was asked and said no.
    ReviewerSaidNo,
    /// `agent_then_human`: the reviewer agent gave no answer (it failed, took
    /// too long, or answered something that is not one), so nobody said yes.
    ReviewFailed,
    /// A person was asked and said no.
    PersonSaidNo,
    /// Nobody could be asked, or nobody answered in time.
    Nobody,
    /// The client dismissed the question; no person answered it.
    Cancelled,
    /// A person stopped Chock (`chock stop`): every call is refused until
    /// they resume it, whatever the rules say.
    Stopped,
}

/// What the route does with the act.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// It goes ahead.
    Go,
    /// A hook leaves it to the agent's own permissions: only a shipped
    /// default allows it, and those were written for Chock's sandbox, not
    /// for the host a hook guards.
    NoObjection,
    /// The agent's own prompt asks a person (a hook's `ask`).
    Prompt,
    /// It is not done.
    Refused(Refused),
}

impl Outcome {
    /// How far the act goes, least first: refused, handed to a prompt,
    /// no objection, goes ahead.
    fn reach(self) -> u8 {
        match self {
            Outcome::Refused(_) => 0,
            Outcome::Prompt => 1,
            Outcome::NoObjection => 2,
            Outcome::Go => 3,
        }
    }
}

/// The strictest of several acts by the end each came to (the one that
/// goes least far); the first of equals, `None` for none. A call of
/// several acts is answered by it.
pub fn strictest_end<T>(
    items: impl IntoIterator<Item = T>,
    outcome: impl Fn(&T) -> Outcome,
) -> Option<T> {
    strictest_by(items, |item| outcome(item).reach())
}

/// The act's end: what happens, and what the log says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Settled {
    pub outcome: Outcome,
    /// The decision the log records: a person's allow or deny, else the rules'.
    pub decision: Decision,
    pub answered_by: AnsweredBy,
    /// How far a person's yes reaches, where the asker offered more than once.
    pub scope: Option<Scope>,
}

/// Before anyone is asked: settled by the rules, or a question to put.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    Settled(Settled),
    /// Put one question to the route's asker, then [`heard`].
    Ask,
}

fn of_layer(layer: Layer) -> AnsweredBy {
    AnsweredBy::of_layer(layer)
}

/// Whether a question under `decision` may be put to an asker at all: only
/// `ask` and `agent_review` are. An asker handed anything else answers
/// [`Answer::Unavailable`], so a caller that skipped the gate still fails closed.
pub fn askable(decision: Decision) -> bool {
    matches!(decision, Decision::Ask | Decision::AgentReview)
}

/// A reviewer agent's answer to one act.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Review {
    /// It approved the act.
    Yes,
    /// It refused the act.
    No,
    /// It gave no answer: its request failed, it took too long, or what it
    /// said is not an answer.
    Failed,
}

/// Whether a door with a reviewer agent puts a question under `decision`
/// to it before anything else: `agent_review` and `agent_then_human` are.
pub fn reviewed_first(decision: Decision) -> bool {
    decision.needs_review()
}

/// What follows a reviewer agent's `review` of an act the rules answered
/// `decision` ([`reviewed_first`]): settled, or one question to a person
/// (its end then [`heard`] under `decision`). A reviewer's yes on
/// `agent_review` is the last word; on `agent_then_human` a person must
/// say yes too. Its no refuses. A reviewer that cannot answer fails
/// closed: `agent_review` goes to a person as on a door with no reviewer,
/// `agent_then_human` is refused with nobody asked.
pub fn after_review(decision: Decision, review: Review) -> Step {
    let settled = |outcome, decision, answered_by| {
        Step::Settled(Settled {
            outcome,
            decision,
            answered_by,
            scope: None,
        })
    };
    match (review, decision) {
        (Review::Yes, Decision::AgentReview) => {
            settled(Outcome::Go, Decision::Allow, AnsweredBy::Reviewer)
        }
        (Review::Yes, Decision::AgentThenHuman) | (Review::Failed, Decision::AgentReview) => {
            Step::Ask
        }
        (Review::No, Decision::AgentReview | Decision::AgentThenHuman) => settled(
            Outcome::Refused(Refused::ReviewerSaidNo),
            Decision::Deny,
            AnsweredBy::Reviewer,
        ),
        (Review::Failed, Decision::AgentThenHuman) => settled(
            Outcome::Refused(Refused::ReviewFailed),
            decision,
            AnsweredBy::Nobody,
        ),
        // Only those two are reviewed; anything else reaching here is a
        // caller's bug, and it fails closed.
        (_, other) => settled(Outcome::Refused(Refused::Denied), other, AnsweredBy::Nobody),
    }
}

/// What `route` does with `verdict` before anyone is asked, on a door with
/// no reviewer agent (or for a question it does not review).
pub fn before_asking(route: Route, verdict: &Verdict) -> Step {
    let by = of_layer(verdict.decided_by.layer);
    let settled = |outcome, answered_by| {
        Step::Settled(Settled {
            outcome,
            decision: verdict.decision,
            answered_by,
            scope: None,
        })
    };
    match verdict.decision {
        Decision::Allow if route == Route::Hook && verdict.decided_by.layer == Layer::Default => {
            settled(Outcome::NoObjection, by)
        }
        Decision::Allow => settled(Outcome::Go, by),
        Decision::Deny => settled(Outcome::Refused(Refused::Denied), by),
        Decision::AgentThenHuman => {
            settled(Outcome::Refused(Refused::NoReviewer), AnsweredBy::Nobody)
        }
        Decision::Ask | Decision::AgentReview => Step::Ask,
    }
}

/// The end of an act whose question (asked under `decision`) got `answer`.
pub fn heard(decision: Decision, answer: Answer) -> Settled {
    let (outcome, decision, answered_by) = match answer {
        Answer::Yes => (Outcome::Go, Decision::Allow, AnsweredBy::Person),
        Answer::No => (
            Outcome::Refused(Refused::PersonSaidNo),
            Decision::Deny,
            AnsweredBy::Person,
        ),
        Answer::Unavailable => (
            Outcome::Refused(Refused::Nobody),
            decision,
            AnsweredBy::Nobody,
        ),
        Answer::Cancelled => (
            Outcome::Refused(Refused::Cancelled),
            decision,
            AnsweredBy::Client,
        ),
        Answer::Handed => (Outcome::Prompt, decision, AnsweredBy::Nobody),
    };
    Settled {
        outcome,
        decision,
        answered_by,
        scope: None,
    }
}

/// One act through the gate: the rules, then `asker` when they ask
/// (`question` is made only then).
pub fn settle(
    route: Route,
    verdict: &Verdict,
    asker: &dyn Asker,
    question: impl FnOnce() -> Question,
) -> Settled {
    match before_asking(route, verdict) {
        Step::Settled(settled) => settled,
        Step::Ask => {
            let (answer, scope) = asker.ask_with_scope(&question());
            Settled {
                scope: scope.filter(|_| answer == Answer::Yes),
                ..heard(verdict.decision, answer)
            }
        }
    }
}

/// A call while a person's stop (held in `file`) is in force: refused,
/// the person's word, whatever the rules say. The verdict names the stop
/// as its layer, so the log line says what decided.
pub fn stopped(file: &std::path::Path) -> (Verdict, Settled) {
    let mut verdict = Verdict::bare(Decision::Deny, Layer::Stop);
    verdict.decided_by.file = Some(file.to_path_buf());
    let settled = Settled {
        outcome: Outcome::Refused(Refused::Stopped),
        decision: Decision::Deny,
        answered_by: AnsweredBy::Person,
        scope: None,
    };
    (verdict, settled)
}

impl Settled {
    /// Whether the act goes ahead now (a hook's no objection and prompt
    /// leave it to the agent).
    pub fn goes(&self) -> bool {
        self.outcome == Outcome::Go
    }

    /// The decision-log line for `key` on `route`, decided by `verdict`
    /// and ended as `self`.
    pub fn entry(
        &self,
        route: Route,
        project: impl Into<String>,
        key: &Key,
        verdict: &Verdict,
        subject: Option<String>,
    ) -> Entry {
        Entry {
            scope: self.scope,
            ..line(
                route,
                project,
                key,
                verdict,
                (self.decision, self.answered_by),
                subject,
            )
        }
    }
}

/// The decision-log line for `key` on `route`, decided by `verdict`, whose
/// last word was `end` (the decision logged and who gave it).
pub fn line(
    route: Route,
    project: impl Into<String>,
    key: &Key,
    verdict: &Verdict,
    end: (Decision, AnsweredBy),
    subject: Option<String>,
) -> Entry {
    Entry {
        route,
        project: project.into(),
        action: key.action.clone(),
        agent_kind: key.agent_kind.clone(),
        model: key.model.clone(),
        tool: key.tool.clone(),
        decision: end.0,
        decided_by: chock_log::DecidedBy::from(&verdict.decided_by),
        answered_by: end.1,
        subject,
        scope: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_call_of_several_acts_is_answered_by_a_refusal_of_the_rules_then_of_a_person_then_the_strictest()
     {
        let verdict = |decision| Verdict::bare(decision, Layer::Project);
        let act = |name: &'static str, decision, answer| {
            let verdict = verdict(decision);
            let settled = settle(Route::Exec, &verdict, &move |_: &Question| answer, || {
                Question {
                    action: name.into(),
                    decision,
                    summary: String::new(),
                    detail: Vec::new(),
                    rules: Vec::new(),
                }
            });
            (name, verdict, settled)
        };
        let answering = |acts: Vec<(&'static str, Verdict, Settled)>| {
            answering_act(Route::Exec, acts, |(_, v, s)| (v, *s)).map(|(name, _, _)| name)
        };
        let allowed = act("allowed", Decision::Allow, Answer::No);
        let asked_yes = act("asked-yes", Decision::Ask, Answer::Yes);
        let asked_no = act("asked-no", Decision::Ask, Answer::No);
        let denied = act("denied", Decision::Deny, Answer::Yes);
        assert_eq!(
            answering(vec![allowed.clone(), asked_no.clone(), denied.clone()]),
            Some("denied")
        );
        assert_eq!(
            answering(vec![allowed.clone(), asked_yes.clone(), asked_no.clone()]),
            Some("asked-no")
        );
        assert_eq!(
            answering(vec![allowed.clone(), asked_yes.clone()]),
            Some("asked-yes")
        );
        assert_eq!(answering(vec![allowed]), Some("allowed"));
        assert_eq!(answering(Vec::new()), None);
    }

    /// Who is behind a route, as the table's columns name them.
    #[derive(Debug, Clone, Copy)]
    enum Behind {
        /// A person who says yes.
        Yes,
        /// A person who says no.
        No,
        /// Nobody.
        Absent,
        /// A client that dismisses every question.
        Cancels,
    }

    /// The asker each route has with `behind` there: a hook hands a
    /// question to the agent's own prompt when the agent shows one.
    fn asker(route: Route, behind: Behind) -> impl Fn(&Question) -> Answer {
        move |q: &Question| {
            assert!(
                matches!(q.decision, Decision::Ask | Decision::AgentReview),
                "an asker is never asked about {}",
                q.decision
            );
            match (route, behind) {
                (_, Behind::Absent) => Answer::Unavailable,
                (Route::Hook, _) => Answer::Handed,
                (_, Behind::Yes) => Answer::Yes,
                (_, Behind::No) => Answer::No,
                (_, Behind::Cancels) => Answer::Cancelled,
            }
        }
    }

    fn verdict(decision: Decision, layer: Layer) -> Verdict {
        Verdict::bare(decision, layer)
    }

    /// The table in docs/policy.md, route by route, with the start-time
    /// questions: every route gives one behaviour, the hook differing only
    /// where its agent's own prompt and permissions take over.
    #[test]
    fn every_route_decision_and_asker_gives_the_documented_answer() {
        use Outcome::{Go, Prompt};
        use Refused::{Cancelled, Denied, NoReviewer, Nobody, PersonSaidNo};
        let refused = Outcome::Refused;
        for route in Route::ALL {
            for behind in [Behind::Yes, Behind::No, Behind::Absent, Behind::Cancels] {
                for decision in Decision::ALL {
                    let v = verdict(decision, Layer::Project);
                    let question = || Question {
                        action: "a.b".into(),
                        decision,
                        summary: String::new(),
                        detail: vec![],
                        rules: vec![],
                    };
                    let got = settle(route, &v, &asker(route, behind), question);
                    let hook = route == Route::Hook;
                    let want = match (decision, behind) {
                        (Decision::Allow, _) => (Go, Decision::Allow, AnsweredBy::Rule),
                        (Decision::Deny, _) => (refused(Denied), Decision::Deny, AnsweredBy::Rule),
                        (Decision::AgentThenHuman, _) => {
                            (refused(NoReviewer), decision, AnsweredBy::Nobody)
                        }
                        (_, Behind::Absent) => (refused(Nobody), decision, AnsweredBy::Nobody),
                        (_, _) if hook => (Prompt, decision, AnsweredBy::Nobody),
                        (_, Behind::Yes) => (Go, Decision::Allow, AnsweredBy::Person),
                        (_, Behind::No) => {
                            (refused(PersonSaidNo), Decision::Deny, AnsweredBy::Person)
                        }
                        (_, Behind::Cancels) => (refused(Cancelled), decision, AnsweredBy::Client),
                    };
                    assert_eq!(
                        (got.outcome, got.decision, got.answered_by),
                        want,
                        "{} {decision} {behind:?}",
                        route.as_str()
                    );
                    start_questions_ask_nobody(route, behind, decision);
                }
            }
        }
    }

    /// The start-time rows of the table: before the first turn nobody is
    /// asked, whoever is behind the route, so the answer is the rule's as
    /// `start::StartRule` spends it.
    fn start_questions_ask_nobody(route: Route, behind: Behind, decision: Decision) {
        for (question, action) in start::tests::questions() {
            let rule = chock_policy::Rule::new(
                Some(chock_policy::Pattern::parse(action).expect("pattern")),
                decision,
            );
            let policy = chock_policy::Policy::from_rules(vec![rule], vec![]);
            let answer = start::at_start(&policy, "main", &question).expect("named");
            let kept = matches!(
                question,
                chock_policy::StartQuestion::WorkspaceIntegrate
                    | chock_policy::StartQuestion::ThirdPartyTool { .. }
            );
            let want = decision == Decision::Allow || (kept && decision != Decision::Deny);
            assert_eq!(
                answer.granted,
                want,
                "{} {action} {decision} {behind:?}",
                route.as_str()
            );
        }
    }

    /// The table's reviewer column: where a reviewer agent is, what its
    /// answer and then a person's lead to, and who is asked at all.
    #[test]
    fn a_reviewer_answers_first_and_a_person_only_where_the_table_says() {
        use Outcome::Go;
        use Refused::{Nobody, PersonSaidNo, ReviewFailed, ReviewerSaidNo};
        for decision in Decision::ALL {
            assert_eq!(
                reviewed_first(decision),
                matches!(decision, Decision::AgentReview | Decision::AgentThenHuman),
                "{decision}"
            );
        }
        let refused = Outcome::Refused;
        for decision in [Decision::AgentReview, Decision::AgentThenHuman] {
            for review in [Review::Yes, Review::No, Review::Failed] {
                for behind in [Behind::Yes, Behind::No, Behind::Absent] {
                    let asked = std::cell::Cell::new(false);
                    let person = |q: &Question| {
                        asked.set(true);
                        assert!(askable(q.decision), "{}", q.decision);
                        asker(Route::Run, behind)(q)
                    };
                    let got = match after_review(decision, review) {
                        Step::Settled(settled) => settled,
                        Step::Ask => heard(
                            decision,
                            person(&Question {
                                action: "a.b".into(),
                                decision: Decision::Ask,
                                summary: String::new(),
                                detail: vec![],
                                rules: vec![],
                            }),
                        ),
                    };
                    let person_asked = matches!(
                        (decision, review),
                        (Decision::AgentReview, Review::Failed)
                            | (Decision::AgentThenHuman, Review::Yes)
                    );
                    let want = match (decision, review, behind) {
                        (Decision::AgentReview, Review::Yes, _) => {
                            (Go, Decision::Allow, AnsweredBy::Reviewer)
                        }
                        (_, Review::No, _) => (
                            refused(ReviewerSaidNo),
                            Decision::Deny,
                            AnsweredBy::Reviewer,
                        ),
                        (Decision::AgentThenHuman, Review::Failed, _) => {
                            (refused(ReviewFailed), decision, AnsweredBy::Nobody)
                        }
                        (_, _, Behind::Yes) => (Go, Decision::Allow, AnsweredBy::Person),
                        (_, _, Behind::No) => {
                            (refused(PersonSaidNo), Decision::Deny, AnsweredBy::Person)
                        }
                        (_, _, _) => (refused(Nobody), decision, AnsweredBy::Nobody),
                    };
                    assert_eq!(
                        (got.outcome, got.decision, got.answered_by),
                        want,
                        "{decision} {review:?} {behind:?}"
                    );
                    assert_eq!(
                        asked.get(),
                        person_asked,
                        "{decision} {review:?} {behind:?}"
                    );
                }
            }
        }
    }

    #[test]
    fn only_a_hook_leaves_a_shipped_default_s_allow_to_the_agent() {
        let v = verdict(Decision::Allow, Layer::Default);
        for route in Route::ALL {
            let got = settle(route, &v, &chock_policy::Nobody, unreachable_question);
            let want = if route == Route::Hook {
                Outcome::NoObjection
            } else {
                Outcome::Go
            };
            assert_eq!(got.outcome, want, "{}", route.as_str());
            assert_eq!(got.answered_by, AnsweredBy::Default);
        }
    }

    fn unreachable_question() -> Question {
        Question {
            action: "never".into(),
            decision: Decision::Allow,
            summary: String::new(),
            detail: vec![],
            rules: vec![],
        }
    }

    #[test]
    fn a_stop_is_the_person_s_deny_logged_under_the_stop_layer() {
        let (verdict, settled) = stopped(std::path::Path::new("/state/stop"));
        assert_eq!(settled.outcome, Outcome::Refused(Refused::Stopped));
        assert!(!settled.goes());
        let entry = settled.entry(
            Route::Hook,
            "/p",
            &Key::new("chock.stopped"),
            &verdict,
            None,
        );
        assert_eq!(entry.decision, Decision::Deny);
        assert_eq!(entry.answered_by, AnsweredBy::Person);
        assert_eq!(entry.decided_by.layer, Layer::Stop);
        assert_eq!(entry.decided_by.file.as_deref(), Some("/state/stop"));
    }

    #[test]
    fn the_entry_carries_the_key_the_rule_and_the_end() {
        let mut v = verdict(Decision::Ask, Layer::Project);
        v.decided_by.file = Some("/p/chock.zon".into());
        v.decided_by.line = Some(3);
        let key = Key::new("call.write_file")
            .with_tool("write_file")
            .with_agent_kind("claude-code");
        let settled = heard(v.decision, Answer::Cancelled);
        let entry = settled.entry(Route::Mcp, "/p", &key, &v, Some("a.txt".into()));
        assert_eq!(entry.route, Route::Mcp);
        assert_eq!(entry.agent_kind, "claude-code");
        assert_eq!(entry.decision, Decision::Ask);
        assert_eq!(entry.answered_by, AnsweredBy::Client);
        assert_eq!(entry.decided_by.layer, Layer::Project);
        assert_eq!(entry.decided_by.line, Some(3));
        assert_eq!(entry.subject.as_deref(), Some("a.txt"));
    }
}
