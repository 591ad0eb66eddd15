//! One act under two names. A host a Nix build reaches is named in its phase
//! (`nix.net.build.<host>.<port>`) and in either phase (`nix.net.<host>.<port>`):
//! a rule naming the phase decides for that phase alone, a rule naming the
//! host under `nix.net` covers both. Both names are read, and of the rules
//! matching either name the most specific one decides, exactly as among the
//! rules for one name. Every organisation bundle answers the pair the same
//! way and binds as a ceiling.

use crate::decision::Decision;
use crate::defaults::shipped_rules;
use crate::policy::{DecidedBy, Layer, Policy, Reading, Verdict, decided_by_rule};
use crate::rule::{Key, Rule, beats};

impl Policy {
    /// The answer to an act that goes by two names, `first` (the narrower
    /// one, such as the phase name) and `second`. The suggestion, when the
    /// answer is below allow, is the one for the name whose rule decided
    /// (`first` when no rule did).
    pub fn decide_either(&self, first: &Key, second: &Key, reading: Reading) -> Verdict {
        let project = |key: &Key| self.project_rules().and_then(|rules| rules.best(key));
        let (mut verdict, mut decided_key) =
            match winner((project(first), first), (project(second), second)) {
                Some((rule, key)) => (rule_verdict(Layer::Project, rule), key),
                None => match winner(
                    (shipped_rules().best(first), first),
                    (shipped_rules().best(second), second),
                ) {
                    Some((rule, key)) => (rule_verdict(Layer::Default, rule), key),
                    None => (unnamed(reading), first),
                },
            };
        for bundle in self.org_bundles() {
            let rules = bundle.rules();
            if let Some((rule, key)) =
                winner((rules.best(first), first), (rules.best(second), second))
                && rule.decision < verdict.decision
            {
                verdict = rule_verdict(Layer::Org, rule);
                decided_key = key;
            }
        }
        if verdict.decision < Decision::Allow {
            verdict.suggestion = self.decide(decided_key, reading).suggestion;
        }
        // The session's promises, over either name.
        let verdict = self.promised(verdict, &first.action);
        self.promised(verdict, &second.action)
    }
}

/// The rule that wins between the best for each name, with the name it
/// matched; `a` on a full tie of specificity and decision.
fn winner<'r, 'k>(
    a: (Option<&'r Rule>, &'k Key),
    b: (Option<&'r Rule>, &'k Key),
) -> Option<(&'r Rule, &'k Key)> {
    match (a, b) {
        ((Some(ra), ka), (Some(rb), kb)) => Some(if beats(rb, ra) { (rb, kb) } else { (ra, ka) }),
        ((Some(r), k), _) | (_, (Some(r), k)) => Some((r, k)),
        _ => None,
    }
}

fn rule_verdict(layer: Layer, rule: &Rule) -> Verdict {
    Verdict {
        decision: rule.decision,
        decided_by: decided_by_rule(layer, rule),
        suggestion: None,
    }
}

fn unnamed(reading: Reading) -> Verdict {
    Verdict {
        decision: reading.unnamed(),
        decided_by: DecidedBy::nothing(),
        suggestion: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pattern::Pattern;

    fn rule(action: &str, decision: Decision) -> Rule {
        Rule::new(Some(Pattern::parse(action).expect("pattern")), decision)
    }

    fn answer(policy: &Policy, host: &str) -> Decision {
        let phase = Key::new(format!("nix.net.build.{host}.443"));
        let either = Key::new(format!("nix.net.{host}.443"));
        policy.decide_either(&phase, &either, Reading::Act).decision
    }

    /// The seed's four rules read together: the host named in either phase
    /// is allowed, every other build fetch is asked about (the phase class is
    /// more specific than `nix.net.*`).
    #[test]
    fn the_more_specific_rule_across_both_names_decides() {
        let policy = Policy::from_rules(
            vec![
                rule("nix.net.com.github.443", Decision::Allow),
                rule("nix.net.eval.*", Decision::Allow),
                rule("nix.net.build.*", Decision::Ask),
                rule("nix.net.*", Decision::Deny),
            ],
            vec![],
        );
        assert_eq!(answer(&policy, "com.github"), Decision::Allow);
        assert_eq!(answer(&policy, "org.gnu.ftpmirror"), Decision::Ask);
        let only_net = Policy::from_rules(vec![rule("nix.net.*", Decision::Deny)], vec![]);
        assert_eq!(answer(&only_net, "com.github"), Decision::Deny);
    }

    #[test]
    fn a_phase_rule_decides_for_its_phase_alone() {
        let policy = Policy::from_rules(
            vec![rule("nix.net.build.com.github.443", Decision::Allow)],
            vec![],
        );
        assert_eq!(answer(&policy, "com.github"), Decision::Allow);
        let eval = Key::new("nix.net.eval.com.github.443");
        let either = Key::new("nix.net.com.github.443");
        assert_eq!(
            policy.decide_either(&eval, &either, Reading::Act).decision,
            Decision::Ask
        );
    }

    #[test]
    fn equally_specific_rules_on_both_names_give_the_more_restrictive() {
        let policy = Policy::from_rules(
            vec![
                rule("nix.net.build.com.github.443", Decision::Allow),
                rule("nix.net.com.github.443", Decision::Deny),
            ],
            vec![],
        );
        assert_eq!(answer(&policy, "com.github"), Decision::Deny);
    }

    #[test]
    fn nothing_named_asks_and_suggests_the_phase_name() {
        let policy = Policy::from_rules(vec![], vec![]);
        let phase = Key::new("nix.net.build.com.github.443");
        let either = Key::new("nix.net.com.github.443");
        let verdict = policy.decide_either(&phase, &either, Reading::Act);
        assert_eq!(verdict.decision, Decision::Ask);
        assert_eq!(verdict.decided_by.layer, Layer::Nothing);
        let suggestion = verdict.suggestion.expect("a suggestion below allow");
        assert!(
            suggestion.rule.contains("\"nix.net.build.com.github.443\""),
            "{}",
            suggestion.rule
        );
    }

    #[test]
    fn an_org_bundle_binds_on_either_name() {
        let policy = Policy::from_rules(
            vec![rule("nix.net.build.*", Decision::Allow)],
            vec![vec![rule("nix.net.com.evil.443", Decision::Deny)]],
        );
        assert_eq!(answer(&policy, "com.evil"), Decision::Deny);
        assert_eq!(answer(&policy, "com.github"), Decision::Allow);
        let verdict = policy.decide_either(
            &Key::new("nix.net.build.com.evil.443"),
            &Key::new("nix.net.com.evil.443"),
            Reading::Act,
        );
        assert_eq!(verdict.decided_by.layer, Layer::Org);
    }

    #[test]
    fn an_org_bundle_reads_the_pair_as_the_project_does() {
        // The bundle lets github through in either phase and nothing else.
        let policy = Policy::from_rules(
            vec![rule("nix.net.build.*", Decision::Allow)],
            vec![vec![
                rule("nix.net.*", Decision::Deny),
                rule("nix.net.com.github.443", Decision::Allow),
            ]],
        );
        assert_eq!(answer(&policy, "com.github"), Decision::Allow);
        assert_eq!(answer(&policy, "org.gnu"), Decision::Deny);
    }

    #[test]
    fn a_shipped_default_answers_when_no_project_rule_does() {
        let policy = Policy::from_rules(vec![], vec![]);
        let opaque = Key::new("nix.net.build.opaque");
        let verdict = policy.decide_either(&opaque, &opaque, Reading::Act);
        assert_eq!(verdict.decision, Decision::Allow);
        assert_eq!(verdict.decided_by.layer, Layer::Default);
    }
}
