//! `chock compile`: the control each hook point enforces, compiled from the
//! installed policies into `.agents/policies/compiled.json`: for each hook
//! point (`tool`, `pre-commit`, `pre-push`, `ci`) the policies that apply
//! there, each with its version, its content hash (every file of its
//! folder, as `chock.lock` pins it), its rollout stage, its rules as
//! written and its guard. It is committed with the policies, so a pull
//! request that changes what a hook enforces shows it as a diff of one
//! file, and `chock sync --check` fails a CI job whose policies changed
//! without it. `chock sync` compiles first and writes what this writes.

use chock_policy::{HookPoint, PolicyPackage};
use serde_json::{Value, json};

use crate::PackageError;
use crate::lock::content_hash;

/// The compiled control's name, in the policies folder.
pub const COMPILED_FILE: &str = "compiled.json";

/// The compiled control's text for `packages`: the same packages give the
/// same bytes.
pub fn render(packages: &[PolicyPackage]) -> Result<String, PackageError> {
    let mut hooks = serde_json::Map::new();
    for point in HookPoint::ALL {
        let mut at = Vec::new();
        for package in packages.iter().filter(|p| p.applies_at(point)) {
            at.push(control(package)?);
        }
        hooks.insert(point.as_str().to_owned(), Value::Array(at));
    }
    let document = json!({
        "compiled": 1,
        "written_by": "chock compile, from .agents/policies/*/; do not edit",
        "hooks": hooks,
    });
    let mut text = serde_json::to_string_pretty(&document)
        .map_err(|e| PackageError::Refused(format!("the compiled control: {e}")))?;
    text.push('\n');
    Ok(text)
}

fn control(package: &PolicyPackage) -> Result<Value, PackageError> {
    let rules: Vec<String> = package
        .rules
        .rules()
        .iter()
        .map(|r| r.as_written())
        .collect();
    let guard = package.guard.as_ref().map(|guard| {
        let program = guard
            .program
            .strip_prefix(&package.dir)
            .unwrap_or(&guard.program);
        json!({
            "program": program.display().to_string(),
            "timeout_ms": guard.timeout_ms,
            "memory_bytes": guard.memory_bytes,
        })
    });
    Ok(json!({
        "policy": package.id,
        "version": package.version,
        "hash": content_hash(&package.dir)?,
        "rollout": package.rollout.as_str(),
        "rules": rules,
        "guard": guard,
    }))
}
