//! Rules, the key they answer, and which rule wins. Among the rules that match
//! a key the most specific wins, field by field in the order action, tool,
//! model, agent_kind; a full tie goes to the more restrictive decision, so the
//! order rules are written in never matters.

use std::path::PathBuf;
use std::sync::Arc;

use crate::decision::Decision;
use crate::pattern::Pattern;

/// The question: who asks (`agent_kind`), through which model and tool, for
/// which act. A rule naming a tool or model never matches a key without one.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Key {
    pub agent_kind: String,
    pub model: Option<String>,
    pub tool: Option<String>,
    pub action: String,
}

impl Key {
    /// The main agent asking for `action`, with no tool or model named.
    pub fn new(action: impl Into<String>) -> Key {
        Key {
            agent_kind: "main".into(),
            model: None,
            tool: None,
            action: action.into(),
        }
    }

    pub fn with_tool(mut self, tool: impl Into<String>) -> Key {
        self.tool = Some(tool.into());
        self
    }

    pub fn with_model(mut self, model: impl Into<String>) -> Key {
        self.model = Some(model.into());
        self
    }

    pub fn with_agent_kind(mut self, kind: impl Into<String>) -> Key {
        self.agent_kind = kind.into();
        self
    }
}

/// Where a rule was written, to tell a person which line decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuleSource {
    pub file: Arc<PathBuf>,
    pub line: u32,
    /// The rule exactly as the file spells it.
    pub text: String,
}

/// One rule: optional patterns for the four fields and a decision.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rule {
    pub agent_kind: Option<Pattern>,
    pub model: Option<Pattern>,
    pub tool: Option<Pattern>,
    pub action: Option<Pattern>,
    pub decision: Decision,
    /// `None` for shipped defaults and rules built in code.
    pub source: Option<RuleSource>,
}

/// Per-field scores in comparison order: action, tool, model, agent_kind.
pub type Specificity = [u64; 4];

impl Rule {
    pub fn new(action: Option<Pattern>, decision: Decision) -> Rule {
        Rule {
            agent_kind: None,
            model: None,
            tool: None,
            action,
            decision,
            source: None,
        }
    }

    pub fn matches(&self, key: &Key) -> bool {
        field_matches(&self.action, Some(&key.action))
            && field_matches(&self.tool, key.tool.as_deref())
            && field_matches(&self.model, key.model.as_deref())
            && field_matches(&self.agent_kind, Some(&key.agent_kind))
    }

    pub fn specificity(&self) -> Specificity {
        let score = |p: &Option<Pattern>| p.as_ref().map_or(0, Pattern::score);
        [
            score(&self.action),
            score(&self.tool),
            score(&self.model),
            score(&self.agent_kind),
        ]
    }

    /// The rule on one line of ZON, fields in the order a person writes them.
    pub fn to_zon(&self) -> String {
        let mut out = String::from(".{ ");
        let fields = [
            ("agent_kind", &self.agent_kind),
            ("model", &self.model),
            ("tool", &self.tool),
            ("action", &self.action),
        ];
        for (name, pattern) in fields {
            if let Some(p) = pattern {
                out.push_str(&format!(
                    ".{name} = {}, ",
                    chock_zon::quote_string(p.as_str())
                ));
            }
        }
        out.push_str(&format!(".decision = .{} }}", self.decision));
        out
    }

    /// The rule as its file spells it, or as ZON when it has no file.
    pub fn as_written(&self) -> String {
        self.source
            .as_ref()
            .map_or_else(|| self.to_zon(), |s| s.text.clone())
    }
}

fn field_matches(pattern: &Option<Pattern>, value: Option<&str>) -> bool {
    match (pattern, value) {
        (None, _) => true,
        (Some(p), Some(v)) => p.matches(v),
        (Some(_), None) => false,
    }
}

/// Whether `a` beats `b` for the same key: more specific, or as specific and
/// more restrictive.
pub(crate) fn beats(a: &Rule, b: &Rule) -> bool {
    match a.specificity().cmp(&b.specificity()) {
        std::cmp::Ordering::Greater => true,
        std::cmp::Ordering::Less => false,
        std::cmp::Ordering::Equal => a.decision < b.decision,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(action: Option<&str>, tool: Option<&str>, decision: Decision) -> Rule {
        let mut r = Rule::new(
            action.map(|a| Pattern::parse(a).expect("pattern")),
            decision,
        );
        r.tool = tool.map(|t| Pattern::parse(t).expect("pattern"));
        r
    }

    #[test]
    fn absent_fields_match_everything_named_fields_need_a_value() {
        let key = Key::new("git.push");
        assert!(rule(None, None, Decision::Ask).matches(&key));
        assert!(!rule(None, Some("run_command"), Decision::Ask).matches(&key));
        assert!(
            rule(None, Some("run_command"), Decision::Ask).matches(&key.with_tool("run_command"))
        );
    }

    #[test]
    fn action_is_compared_before_tool() {
        let exact_action = rule(Some("git.push"), None, Decision::Allow);
        let class_with_tool = rule(Some("git.*"), Some("run_command"), Decision::Deny);
        assert!(beats(&exact_action, &class_with_tool));
    }

    #[test]
    fn a_full_tie_goes_to_the_more_restrictive() {
        let a = rule(Some("git.*"), None, Decision::Allow);
        let b = rule(Some("git.*"), None, Decision::Ask);
        assert!(beats(&b, &a));
        assert!(!beats(&a, &b));
    }

    #[test]
    fn rules_render_as_one_line_of_zon() {
        let r = rule(
            Some("net.fetch.org.ziglang.*"),
            Some("fetch_url"),
            Decision::AgentReview,
        );
        assert_eq!(
            r.to_zon(),
            ".{ .tool = \"fetch_url\", .action = \"net.fetch.org.ziglang.*\", .decision = .agent_review }"
        );
        assert_eq!(
            rule(None, None, Decision::Ask).to_zon(),
            ".{ .decision = .ask }"
        );
    }
}
