//! `chock new policy <id>`: a package that passes `chock check` as written,
//! for a person to change: a manifest with one rule and guidance, and two
//! eval cases (a `git clean` the rule asks about, which the shipped
//! defaults allow, so the case fails without the policy; and a call it
//! leaves alone).

use std::path::{Path, PathBuf};

use chock_policy::package::{EVALS_DIR, MANIFEST};

use crate::PackageError;
use crate::beneath::{PackageFile, PoliciesDir};

/// Writes the skeleton of `id` under `project` and returns its folder.
/// An existing folder is never written over.
pub fn new_policy(project: &Path, id: &str) -> Result<PathBuf, PackageError> {
    crate::install::check_id(id)?;
    let policies = PoliciesDir::open(project)?;
    let dir = policies.path().join(id);
    if policies.installed(id)?.is_some() {
        return Err(PackageError::Refused(format!(
            "{} already exists: pick another id, or edit that policy",
            dir.display()
        )));
    }
    let evals = Path::new(EVALS_DIR);
    let files = [
        (PathBuf::from(MANIFEST), manifest(id)),
        (evals.join("clean-is-asked.json"), CLEAN_CASE.to_owned()),
        (evals.join("tests-run.json"), TESTS_CASE.to_owned()),
    ];
    let files: Vec<PackageFile> = files
        .into_iter()
        .map(|(rel, text)| PackageFile {
            rel,
            bytes: text.into_bytes(),
            executable: false,
        })
        .collect();
    policies.put(id, &files, false)?;
    Ok(dir)
}

fn manifest(id: &str) -> String {
    format!(
        r#".{{
    .id = "{id}",
    .version = "0.1.0",
    .summary = "Say in one line what this policy keeps from happening.",
    // Where it applies: "tool" (agents' tool calls), "pre-commit", "pre-push", "ci".
    .hooks = .{{ "tool" }},
    // Rules as chock.zon writes them; they join the project's own.
    .rules = .{{
        .{{ .action = "git.clean", .decision = .ask }},
    }},
    // A guard reads each call as JSON on stdin and prints
    // {{"decision": "allow" | "ask" | "deny", "reason": "..."}}:
    // .guard = .{{ .program = "guard.sh", .timeout_ms = 2000, .memory = "64MiB" }},
    .guidance = "Explain to agents what to do instead of what this policy refuses: here, list what `git clean -n` would delete and ask the person.",
}}
"#
    )
}

const CLEAN_CASE: &str = r#"{
  "hook": "tool",
  "agent": "claude",
  "payload": {
    "session_id": "eval",
    "hook_event_name": "PreToolUse",
    "permission_mode": "default",
    "tool_name": "Bash",
    "tool_input": { "command": "git clean -fdx" }
  },
  "expect": "ask"
}
"#;

const TESTS_CASE: &str = r#"{
  "hook": "tool",
  "agent": "claude",
  "payload": {
    "session_id": "eval",
    "hook_event_name": "PreToolUse",
    "permission_mode": "default",
    "tool_name": "Bash",
    "tool_input": { "command": "cargo test" }
  },
  "expect": "allow"
}
"#;
