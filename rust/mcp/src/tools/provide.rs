//! provide_tool: a program the session has not got, built from one flake
//! attribute and answered as the paths of its `bin/` programs.
//!
//! The tool exists only when `nix.build` answered allow at start (session.rs).
//! A call is decided under `call.provide_tool`, then built exactly as
//! nix_build builds (`nix.build.<attr>`, every host the build reaches,
//! missing flake inputs), so nothing it reaches goes unasked or unlogged.
//! What it built is shown to every later run_command, where running one of
//! its programs is named `exec.nix.store.*` (not `exec.devshell.*`: the
//! agent asked for it, the project did not declare it).

use std::path::Path;

use chock_inputs::FlakeInputs;
use chock_policy::names;
use serde::Deserialize;

use super::{Call, ToolError};
use crate::build::{self, ToBuild};
use crate::gate::{Act, Asking};

/// The tool's name, and its `call.*` action's last part.
pub const PROVIDE_TOOL: &str = "provide_tool";
/// The most programs listed for one build.
const LISTED_PROGRAMS: usize = 200;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProvideTool {
    /// The attribute path in the flake's outputs, one name per level.
    attribute: Vec<String>,
    /// An input of the project's `flake.lock` (`nixpkgs`) whose outputs
    /// `attribute` names; without it, the project's own flake.
    input: Option<String>,
}

pub async fn provide_tool(call: &Call<'_>, args: ProvideTool) -> Result<String, ToolError> {
    build::check_attribute(PROVIDE_TOOL, &args.attribute)?;
    let project = &call.session.project.dir;
    let (attribute, installable) = match &args.input {
        None => (
            args.attribute.clone(),
            format!(".#{}", args.attribute.join(".")),
        ),
        Some(input) => {
            check_input(project, input)?;
            let mut path = vec!["inputs".to_string(), input.clone()];
            path.extend(args.attribute.iter().cloned());
            build::check_attribute(PROVIDE_TOOL, &path)?;
            (path, format!("{input}#{}", args.attribute.join(".")))
        }
    };
    let act = Act {
        tool: PROVIDE_TOOL,
        action: names::call(PROVIDE_TOOL)?,
        subject: Some(installable.clone()),
        detail: vec![format!("build: {installable}")],
    };
    call.gate(&act, Asking::Person).await?;
    let built = build::build(
        call,
        ToBuild {
            tool: PROVIDE_TOOL,
            flake: None,
            attribute,
        },
    )
    .await?;
    let outputs: Vec<String> = built.built.values().cloned().collect();
    let programs = programs(&outputs);
    if programs.is_empty() {
        return Err(ToolError::NotFound(format!(
            "provide_tool: {installable} was built ({}) but has no programs: none of its outputs has a `bin/` folder. Use nix_build for something that is not a program.",
            outputs.join(", ")
        )));
    }
    build::show_to_commands(call.session, &outputs)
        .await
        .map_err(|e| {
            ToolError::Nix(format!(
                "provide_tool: {installable} was built, but its closure could not be read: {e}"
            ))
        })?;
    let mut text = format!(
        "{installable} was built ({}). Its programs:\n",
        built.plan.derivation
    );
    for program in &programs {
        text.push_str(&format!("  {program}\n"));
    }
    if programs.len() == LISTED_PROGRAMS {
        text.push_str(&format!("  (the first {LISTED_PROGRAMS} only)\n"));
    }
    text.push_str(
        "Run one with run_command, its full path as the program (argv[0]); it is decided under exec.nix.store.*, which asks the person unless a rule allows it.",
    );
    Ok(text)
}

/// An input the project's `flake.lock` names at its root, as a flake.
fn check_input(project: &Path, input: &str) -> Result<(), ToolError> {
    chock_nix::check_attribute(std::slice::from_ref(&input.to_string()))
        .map_err(|e| ToolError::Argument(format!("provide_tool: `input`: {e}")))?;
    let lock = FlakeInputs::open(project)
        .map_err(|e| ToolError::Nix(format!("provide_tool: {e}")))?
        .ok_or_else(|| {
            ToolError::NotFound(format!(
                "provide_tool: the project has no flake.lock, so it has no input `{input}`; leave `input` out to build from the project's own flake"
            ))
        })?;
    let lock = lock.lock();
    let roots: Vec<&str> = lock
        .nodes
        .iter()
        .map(|n| n.name.as_str())
        .chain(lock.follows.iter().map(|f| f.from.as_str()))
        .filter(|name| !name.contains('/'))
        .collect();
    match lock.nodes.iter().find(|n| n.name == input) {
        Some(node) if !node.flake => Err(ToolError::Argument(format!(
            "provide_tool: input `{input}` is not a flake (`flake = false`), so it has no outputs to build"
        ))),
        _ if roots.contains(&input) => Ok(()),
        _ => Err(ToolError::NotFound(format!(
            "provide_tool: the project's flake.lock has no input `{input}`; its inputs are {}",
            if roots.is_empty() {
                "none".to_string()
            } else {
                roots.join(", ")
            }
        ))),
    }
}

/// `<output>/bin/<name>` for each program of each output, sorted, at most
/// [`LISTED_PROGRAMS`].
fn programs(outputs: &[String]) -> Vec<String> {
    let mut found = Vec::new();
    for output in outputs {
        let bin = Path::new(output).join("bin");
        let Ok(entries) = std::fs::read_dir(&bin) else {
            continue;
        };
        let mut names: Vec<String> = entries
            .filter_map(Result::ok)
            .filter(|e| e.file_type().is_ok_and(|t| !t.is_dir()))
            .map(|e| bin.join(e.file_name()).display().to_string())
            .collect();
        names.sort();
        found.extend(names);
    }
    found.truncate(LISTED_PROGRAMS);
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn programs_are_the_files_and_links_in_bin() {
        let dir = tempfile::tempdir().expect("tempdir");
        let out = dir.path().join("out");
        std::fs::create_dir_all(out.join("bin/sub")).expect("mkdir");
        std::fs::write(out.join("bin/b"), "").expect("write");
        std::fs::write(out.join("bin/a"), "").expect("write");
        std::os::unix::fs::symlink("a", out.join("bin/c")).expect("link");
        let lib = dir.path().join("lib");
        std::fs::create_dir_all(&lib).expect("mkdir");
        let listed = programs(&[out.display().to_string(), lib.display().to_string()]);
        let names: Vec<&str> = listed.iter().filter_map(|p| p.rsplit('/').next()).collect();
        assert_eq!(names, ["a", "b", "c"]);
    }

    #[test]
    fn an_input_must_be_a_flake_the_lock_names_at_its_root() {
        let dir = tempfile::tempdir().expect("tempdir");
        let missing = check_input(dir.path(), "nixpkgs").expect_err("no lock");
        assert!(matches!(missing, ToolError::NotFound(_)), "{missing:?}");
        assert!(missing.to_string().contains("no flake.lock"), "{missing}");
        std::fs::write(
            dir.path().join("flake.lock"),
            r#"{"nodes": {
                "root": {"inputs": {"tools": "tools", "data": "data"}},
                "tools": {"locked": {"type": "path", "path": "/nix/store/aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa-tools", "narHash": "sha256-AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="}, "original": {"type": "path", "path": "./tools"}},
                "data": {"flake": false, "locked": {"type": "path", "path": "/nix/store/aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa-data", "narHash": "sha256-AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="}, "original": {"type": "path", "path": "./data"}}
            }, "root": "root", "version": 7}"#,
        )
        .expect("lock");
        assert!(check_input(dir.path(), "tools").is_ok());
        let unknown = check_input(dir.path(), "nixpkgs").expect_err("not an input");
        assert!(matches!(unknown, ToolError::NotFound(_)), "{unknown:?}");
        assert!(unknown.to_string().contains("its inputs are"), "{unknown}");
        let data = check_input(dir.path(), "data").expect_err("not a flake");
        assert!(matches!(data, ToolError::Argument(_)), "{data:?}");
        assert!(data.to_string().contains("not a flake"), "{data}");
        let dotted = check_input(dir.path(), "a.b").expect_err("a dotted name");
        assert!(matches!(dotted, ToolError::Argument(_)), "{dotted:?}");
        assert!(dotted.to_string().contains("`input`"), "{dotted}");
    }
}
