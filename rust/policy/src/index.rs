//! A rule set indexed by action, so a decision costs a few hash lookups (one
//! per dot in the action) rather than a scan of every rule: a table of 512
//! rules answers about as fast as a table of one.

use std::collections::HashMap;

use crate::rule::{Key, Rule, beats};

/// Rules bucketed by the shape of their action pattern.
#[derive(Debug, Clone, Default)]
pub struct RuleSet {
    rules: Vec<Rule>,
    /// Exact action name → rules naming it.
    exact: HashMap<Box<str>, Vec<usize>>,
    /// Class prefix (`git` for `git.*`) → rules naming that class.
    classes: HashMap<Box<str>, Vec<usize>>,
    /// Rules with no action: they match every action.
    any_action: Vec<usize>,
}

impl RuleSet {
    pub fn new(rules: Vec<Rule>) -> RuleSet {
        let mut set = RuleSet {
            rules,
            ..RuleSet::default()
        };
        for (i, rule) in set.rules.iter().enumerate() {
            match &rule.action {
                None => set.any_action.push(i),
                Some(p) if p.is_class() => set.classes.entry(p.body().into()).or_default().push(i),
                Some(p) => set.exact.entry(p.as_str().into()).or_default().push(i),
            }
        }
        set
    }

    pub fn rules(&self) -> &[Rule] {
        &self.rules
    }

    pub fn len(&self) -> usize {
        self.rules.len()
    }

    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    /// The most specific matching rule, if any. The action decides first, so
    /// the buckets are tried from most to least specific action (the exact
    /// name, then each class prefix from longest to shortest, then rules with
    /// no action) and the first bucket holding a match holds the winner.
    pub fn best(&self, key: &Key) -> Option<&Rule> {
        let action = key.action.as_str();
        if let Some(found) = self.best_in(self.exact.get(action), key) {
            return Some(found);
        }
        for (at, _) in action.rmatch_indices('.') {
            if at == 0 || at + 1 >= action.len() {
                continue;
            }
            let prefix = action.get(..at).unwrap_or("");
            if let Some(found) = self.best_in(self.classes.get(prefix), key) {
                return Some(found);
            }
        }
        self.best_in(Some(&self.any_action), key)
    }

    fn best_in(&self, bucket: Option<&Vec<usize>>, key: &Key) -> Option<&Rule> {
        let mut best: Option<&Rule> = None;
        for rule in bucket?.iter().filter_map(|i| self.rules.get(*i)) {
            if rule.matches(key) && best.is_none_or(|b| beats(rule, b)) {
                best = Some(rule);
            }
        }
        best
    }

    /// The winner found by checking every rule: the definition the index
    /// must agree with (used by tests and the benchmark's baseline).
    pub fn best_by_scan(&self, key: &Key) -> Option<&Rule> {
        let mut best: Option<&Rule> = None;
        for rule in &self.rules {
            if rule.matches(key) && best.is_none_or(|b| beats(rule, b)) {
                best = Some(rule);
            }
        }
        best
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decision::Decision;
    use crate::pattern::Pattern;

    fn rule(action: Option<&str>, decision: Decision) -> Rule {
        Rule::new(
            action.map(|a| Pattern::parse(a).expect("pattern")),
            decision,
        )
    }

    #[test]
    fn exact_beats_a_longer_class_beats_a_shorter_class_beats_none() {
        let set = RuleSet::new(vec![
            rule(None, Decision::Deny),
            rule(Some("git.*"), Decision::AgentThenHuman),
            rule(Some("git.branch.*"), Decision::Ask),
            rule(Some("git.branch.delete"), Decision::Allow),
        ]);
        let answer = |a: &str| set.best(&Key::new(a)).map(|r| r.decision);
        assert_eq!(answer("git.branch.delete"), Some(Decision::Allow));
        assert_eq!(answer("git.branch.rename"), Some(Decision::Ask));
        assert_eq!(answer("git.push"), Some(Decision::AgentThenHuman));
        assert_eq!(answer("gitlab.push"), Some(Decision::Deny));
        assert_eq!(answer("git"), Some(Decision::Deny));
    }

    #[test]
    fn nothing_matches_an_empty_set() {
        assert!(RuleSet::new(Vec::new()).best(&Key::new("x")).is_none());
    }

    #[test]
    fn a_more_specific_action_wins_even_against_a_named_tool() {
        let mut with_tool = rule(Some("net.*"), Decision::Deny);
        with_tool.tool = Some(Pattern::parse("fetch_url").expect("pattern"));
        let set = RuleSet::new(vec![with_tool, rule(Some("net.fetch.*"), Decision::Allow)]);
        let key = Key::new("net.fetch.org.x").with_tool("fetch_url");
        assert_eq!(set.best(&key).map(|r| r.decision), Some(Decision::Allow));
        assert_eq!(
            set.best_by_scan(&key).map(|r| r.decision),
            Some(Decision::Allow)
        );
    }

    #[test]
    fn odd_actions_with_empty_segments_agree_with_the_scan() {
        let set = RuleSet::new(vec![
            rule(Some("a..*"), Decision::Ask),
            rule(Some("a.*"), Decision::Deny),
        ]);
        for action in ["a..b", "a.", ".a", "a..", "a.b", "..", "a"] {
            let key = Key::new(action);
            assert_eq!(
                set.best(&key).map(|r| r.decision),
                set.best_by_scan(&key).map(|r| r.decision),
                "{action}"
            );
        }
    }
}
