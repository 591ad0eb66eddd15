//! Properties over generated rule sets and keys: the answer never exceeds any
//! org ceiling, does not depend on rule order, a matching project rule always
//! beats a shipped default, and the index answers exactly as a full scan.

use chock_policy::defaults::SHIPPED;
use chock_policy::{Decision, Key, Layer, Pattern, Policy, Reading, Rule, RuleSet};
use proptest::prelude::*;

const SEGMENTS: &[&str] = &[
    "git",
    "push",
    "branch",
    "net",
    "fetch",
    "org",
    "call",
    "write_file",
    "exec",
    "a",
];

fn name(max: usize) -> impl Strategy<Value = String> {
    prop::collection::vec(prop::sample::select(SEGMENTS), 1..=max).prop_map(|s| s.join("."))
}

fn pattern() -> impl Strategy<Value = Pattern> {
    (name(3), any::<bool>()).prop_map(|(n, class)| {
        let text = if class { format!("{n}.*") } else { n };
        Pattern::parse(&text).expect("generated patterns are well formed")
    })
}

fn optional(values: &'static [&'static str]) -> impl Strategy<Value = Option<Pattern>> {
    prop::option::weighted(
        0.3,
        prop::sample::select(values).prop_map(|v| Pattern::parse(v).expect("pattern")),
    )
}

fn decision() -> impl Strategy<Value = Decision> {
    prop::sample::select(Decision::ALL.to_vec())
}

fn rule() -> impl Strategy<Value = Rule> {
    (
        prop::option::weighted(0.85, pattern()),
        optional(&["run_command", "fetch_url"]),
        optional(&["m1", "m2"]),
        optional(&["main", "reviewer"]),
        decision(),
    )
        .prop_map(|(action, tool, model, agent_kind, decision)| Rule {
            agent_kind,
            model,
            tool,
            action,
            decision,
            source: None,
        })
}

/// Keys over the same vocabulary, plus the shipped defaults' own actions.
fn key() -> impl Strategy<Value = Key> {
    let shipped = prop::sample::select(
        SHIPPED
            .iter()
            .map(|r| r.action.replace(".*", ".x"))
            .collect::<Vec<_>>(),
    );
    let action = prop_oneof![3 => name(4), 1 => shipped];
    (
        action,
        prop::option::of(prop::sample::select(vec![
            "run_command",
            "fetch_url",
            "other",
        ])),
        prop::option::of(prop::sample::select(vec!["m1", "m2"])),
        prop::sample::select(vec!["main", "reviewer", "helper"]),
    )
        .prop_map(|(action, tool, model, kind)| Key {
            agent_kind: kind.to_string(),
            model: model.map(str::to_string),
            tool: tool.map(str::to_string),
            action,
        })
}

fn reading() -> impl Strategy<Value = Reading> {
    prop::sample::select(vec![Reading::Act, Reading::Ceiling])
}

fn ceiling(rules: &[Rule], key: &Key) -> Decision {
    RuleSet::new(rules.to_vec())
        .best(key)
        .map_or(Decision::Allow, |r| r.decision)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 1024, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn the_answer_never_exceeds_any_org_ceiling(
        project in prop::collection::vec(rule(), 0..24),
        orgs in prop::collection::vec(prop::collection::vec(rule(), 0..12), 0..3),
        key in key(),
        reading in reading(),
    ) {
        let policy = Policy::from_rules(project, orgs.clone());
        let answer = policy.decide(&key, reading).decision;
        for org in &orgs {
            prop_assert!(answer <= ceiling(org, &key), "{answer} above an org ceiling");
        }
    }

    #[test]
    fn rule_order_never_matters(
        project in prop::collection::vec(rule(), 0..24),
        org in prop::collection::vec(rule(), 0..12),
        key in key(),
        reading in reading(),
        seed in any::<u64>(),
    ) {
        let before = Policy::from_rules(project.clone(), vec![org.clone()]).decide(&key, reading);
        let after = Policy::from_rules(shuffled(project, seed), vec![shuffled(org, seed.rotate_left(17))]).decide(&key, reading);
        prop_assert_eq!(before.decision, after.decision);
        prop_assert_eq!(before.decided_by.layer, after.decided_by.layer);
    }

    #[test]
    fn a_matching_project_rule_always_beats_a_default(
        project in prop::collection::vec(rule(), 1..24),
        key in key(),
    ) {
        let policy = Policy::from_rules(project.clone(), Vec::new());
        let verdict = policy.decide(&key, Reading::Act);
        let best = project.iter().filter(|r| r.matches(&key)).max_by(|a, b| {
            a.specificity().cmp(&b.specificity()).then(b.decision.cmp(&a.decision))
        });
        match best {
            Some(rule) => {
                prop_assert_eq!(verdict.decided_by.layer, Layer::Project);
                prop_assert_eq!(verdict.decision, rule.decision);
            }
            None => prop_assert_ne!(verdict.decided_by.layer, Layer::Project),
        }
    }

    #[test]
    fn the_index_answers_as_a_full_scan(rules in prop::collection::vec(rule(), 0..64), key in key()) {
        let set = RuleSet::new(rules);
        let indexed = set.best(&key).map(|r| (r.specificity(), r.decision));
        let scanned = set.best_by_scan(&key).map(|r| (r.specificity(), r.decision));
        prop_assert_eq!(indexed, scanned);
    }

    #[test]
    fn anything_short_of_allow_comes_with_a_rule_that_would_raise_it(
        project in prop::collection::vec(rule(), 0..16),
        key in key(),
    ) {
        let policy = Policy::from_rules(project.clone(), Vec::new());
        let verdict = policy.decide(&key, Reading::Act);
        if verdict.decision < Decision::Allow {
            let suggestion = verdict.suggestion.expect("a suggestion below allow");
            if !suggestion.block.contains("in place of") {
                let added: Rule = chock_zon::from_str::<SuggestedRule>(&suggestion.rule).expect("the suggestion is ZON").into_rule();
                let mut raised = project;
                raised.push(added);
                prop_assert_eq!(Policy::from_rules(raised, Vec::new()).decide(&key, Reading::Act).decision, Decision::Allow);
            }
        } else {
            prop_assert!(verdict.suggestion.is_none());
        }
    }
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct SuggestedRule {
    agent_kind: Option<Pattern>,
    model: Option<Pattern>,
    tool: Option<Pattern>,
    action: Option<Pattern>,
    decision: Decision,
}

impl SuggestedRule {
    fn into_rule(self) -> Rule {
        Rule {
            agent_kind: self.agent_kind,
            model: self.model,
            tool: self.tool,
            action: self.action,
            decision: self.decision,
            source: None,
        }
    }
}

/// A deterministic shuffle (Fisher-Yates over a small xorshift).
fn shuffled<T>(mut items: Vec<T>, seed: u64) -> Vec<T> {
    let mut state = seed | 1;
    for i in (1..items.len()).rev() {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        items.swap(i, (state % (i as u64 + 1)) as usize);
    }
    items
}
