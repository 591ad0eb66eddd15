//! The agent's task list (`update_plan`): steps, each pending, in progress
//! or completed, replaced whole by each call, the latest kept in the
//! session's state and shown to the person as lines.

use serde::{Deserialize, Serialize};

use crate::own_tools::OwnToolError;

/// The most steps a plan holds.
pub const MAX_STEPS: usize = 50;
/// The most bytes one step's text holds.
pub const MAX_STEP_BYTES: usize = 500;
/// What `update_plan` takes, as a model that called it wrong is told.
const TAKES: &str = "`steps`, a list of {\"step\": text, \"status\": \"pending\" | \"in_progress\" | \"completed\"}";

/// A plan: its steps, in order.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Plan {
    pub steps: Vec<Step>,
}

/// One step.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Step {
    /// What is to be done, one line.
    pub step: String,
    pub status: Status,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Pending,
    InProgress,
    Completed,
}

impl Plan {
    /// Reads `update_plan`'s arguments, refusing a plan outside its bounds
    /// with what to change.
    pub fn from_arguments(arguments: serde_json::Value) -> Result<Plan, OwnToolError> {
        let plan: Plan =
            serde_json::from_value(arguments).map_err(|why| OwnToolError::Unreadable {
                tool: "update_plan".into(),
                why,
                takes: TAKES.into(),
            })?;
        if plan.steps.len() > MAX_STEPS {
            return Err(OwnToolError::Argument(format!(
                "update_plan: {} steps, more than the {MAX_STEPS} a plan holds; merge some",
                plan.steps.len()
            )));
        }
        for (i, step) in plan.steps.iter().enumerate() {
            let text = step.step.trim();
            if text.is_empty() || text.contains('\n') || step.step.len() > MAX_STEP_BYTES {
                return Err(OwnToolError::Argument(format!(
                    "update_plan: step {} must be one non-empty line of at most {MAX_STEP_BYTES} bytes",
                    i + 1
                )));
            }
        }
        let in_progress = plan
            .steps
            .iter()
            .filter(|s| s.status == Status::InProgress)
            .count();
        if in_progress > 1 {
            return Err(OwnToolError::Argument(format!(
                "update_plan: {in_progress} steps are in_progress; at most one is, at a time"
            )));
        }
        Ok(plan)
    }

    /// The plan as the person reads it, one line per step.
    pub fn lines(&self) -> Vec<String> {
        self.steps
            .iter()
            .map(|s| {
                let mark = match s.status {
                    Status::Pending => "[ ]",
                    Status::InProgress => "[>]",
                    Status::Completed => "[x]",
                };
                format!("{mark} {}", s.step.trim())
            })
            .collect()
    }

    /// What the model reads back.
    pub fn summary(&self) -> String {
        let done = self
            .steps
            .iter()
            .filter(|s| s.status == Status::Completed)
            .count();
        format!(
            "plan updated: {done} of {} steps completed",
            self.steps.len()
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_plan_is_read_shown_and_bounded() {
        let plan = Plan::from_arguments(json!({"steps": [
            {"step": "read the code", "status": "completed"},
            {"step": "write the test", "status": "in_progress"},
            {"step": "run it", "status": "pending"}
        ]}))
        .expect("plan");
        assert_eq!(
            plan.lines(),
            ["[x] read the code", "[>] write the test", "[ ] run it"]
        );
        assert_eq!(plan.summary(), "plan updated: 1 of 3 steps completed");
        let two = Plan::from_arguments(json!({"steps": [
            {"step": "a", "status": "in_progress"},
            {"step": "b", "status": "in_progress"}
        ]}));
        assert!(two.unwrap_err().to_string().contains("at most one"));
        let bad = Plan::from_arguments(json!({"steps": [{"step": "a", "status": "doing"}]}));
        assert!(bad.unwrap_err().to_string().contains("in_progress"));
        let empty = Plan::from_arguments(json!({"steps": [{"step": " ", "status": "pending"}]}));
        assert!(empty.unwrap_err().to_string().contains("step 1"));
    }
}
