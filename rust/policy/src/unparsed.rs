//! A project rule written wide (`exec.*`, `*`) also answers
//! `exec.unparsed`, the act a command gets when Chock cannot read it: an
//! `allow` there lets through what nobody could look at. `chock policy
//! check` warns about each such rule, naming what it lets through.

use crate::{Decision, Key, Layer, Pattern, Policy, Reading};

/// The act a command Chock cannot read is decided under.
pub const EXEC_UNPARSED: &str = "exec.unparsed";

/// What `exec.unparsed` stands for, in a person's words.
pub const WHAT_UNPARSED_IS: &str = "commands Chock cannot read: `eval`, a program named at run time (`$CMD`, `$(which rm)`), a shell reading a script from a pipe (`curl ... | sh`), a change to PATH or LD_PRELOAD, a git setting that runs a hidden program, and text too long, too deep or too slow to read";

/// One warning per project rule that is wider than `exec.unparsed`, is the
/// rule that answers it, and lets it through with nobody asked.
pub fn wide_rules_allowing_unparsed(policy: &Policy) -> Vec<String> {
    let mut warnings = Vec::new();
    for rule in policy.rules() {
        // A rule with no action (or `*`) answers every action.
        if let Some(action) = &rule.action
            && (action.as_str() == EXEC_UNPARSED || !action.matches(EXEC_UNPARSED))
        {
            continue;
        }
        if rule.decision < Decision::AgentReview {
            continue;
        }
        // Ask as this rule's own asker would (its literal fields), and warn
        // only when this rule is the one that answers.
        let literal = |p: &Option<Pattern>| {
            p.as_ref()
                .filter(|p| !p.as_str().contains('*'))
                .map(|p| p.as_str().to_owned())
        };
        let key = Key {
            agent_kind: literal(&rule.agent_kind).unwrap_or_else(|| "main".to_owned()),
            model: literal(&rule.model),
            tool: literal(&rule.tool),
            action: EXEC_UNPARSED.to_owned(),
        };
        let verdict = policy.decide(&key, Reading::Act);
        let by = &verdict.decided_by;
        let this_rule = by.layer == Layer::Project
            && rule
                .source
                .as_ref()
                .is_some_and(|s| Some(s.line) == by.line);
        if !this_rule || verdict.decision < Decision::AgentReview {
            continue;
        }
        let place = rule
            .source
            .as_ref()
            .map(|s| format!("{}:{}: ", s.file.display(), s.line))
            .unwrap_or_default();
        warnings.push(format!(
            "{place}`{}` also answers {EXEC_UNPARSED} with {}, so {WHAT_UNPARSED_IS} run with nobody asked; to keep asking about them, add `.{{ .action = \"{EXEC_UNPARSED}\", .decision = .ask }}`",
            rule.to_zon(),
            verdict.decision
        ));
    }
    warnings
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Rule;

    fn policy(rules: &[(&str, Decision)]) -> Policy {
        let rules = rules
            .iter()
            .enumerate()
            .filter_map(|(line, (action, decision))| {
                let mut rule = Rule::new(Pattern::parse(action).ok(), *decision);
                rule.source = Some(crate::RuleSource {
                    file: std::sync::Arc::new("chock.zon".into()),
                    line: u32::try_from(line).ok()? + 1,
                    text: (*action).to_owned(),
                });
                Some(rule)
            })
            .collect();
        Policy::from_rules(rules, Vec::new())
    }

    #[test]
    fn a_wide_allow_that_answers_unparsed_is_named() {
        let warnings = wide_rules_allowing_unparsed(&policy(&[("exec.*", Decision::Allow)]));
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert!(warnings[0].starts_with("chock.zon:1: "), "{warnings:?}");
        assert!(warnings[0].contains("eval"), "{warnings:?}");
        let warnings = wide_rules_allowing_unparsed(&policy(&[("*", Decision::Allow)]));
        assert_eq!(warnings.len(), 1, "{warnings:?}");
    }

    #[test]
    fn a_narrower_rule_or_a_question_is_not_warned_about() {
        for rules in [
            vec![
                ("exec.*", Decision::Allow),
                ("exec.unparsed", Decision::Ask),
            ],
            vec![("exec.*", Decision::Ask)],
            vec![("exec.path.*", Decision::Allow)],
            vec![("exec.unparsed", Decision::Allow)],
        ] {
            let warnings = wide_rules_allowing_unparsed(&policy(&rules));
            assert!(warnings.is_empty(), "{rules:?}: {warnings:?}");
        }
    }
}
