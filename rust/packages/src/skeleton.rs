//! `chock new policy <id>`: a package that passes `chock check` as written,
//! for a person to change: a manifest with one rule and guidance, and two
//! eval cases (a `git clean` the rule asks about, which the shipped
//! defaults allow, so the case fails without the policy; and a call it
//! leaves alone). `chock new skill` and `chock new subagent`: a skill
//! (`<name>/SKILL.md`) or a subagent (`<name>.md`) with the front matter
//! agents read, in the project or inside a policy package.

use std::path::{Path, PathBuf};

use chock_policy::control;
use chock_policy::package::{EVALS_DIR, MANIFEST};
use chock_skills::{PACKAGE_SKILLS, SKILL_FILE, is_skill_name};

use crate::PackageError;
use crate::beneath::{Beneath, PackageFile, create_new, create_new_at};

/// Writes the skeleton of `id` under `project` and returns its folder.
/// An existing folder is never written over.
pub fn new_policy(project: &Path, id: &str) -> Result<PathBuf, PackageError> {
    crate::install::check_id(id)?;
    let policies = Beneath::policies(project)?;
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

/// What `chock new skill` and `chock new subagent` write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Piece {
    /// A skill: `<name>/SKILL.md`, the folder an agent loads it from.
    Skill,
    /// A subagent: `<name>.md`, its prompt and the tools it may use.
    Subagent,
}

impl Piece {
    fn word(self) -> &'static str {
        match self {
            Piece::Skill => "skill",
            Piece::Subagent => "subagent",
        }
    }

    /// Where it goes in the project: `.agents/skills/` (the folder agents
    /// share for skills) or `.claude/agents/` (Claude Code's subagents).
    fn in_project(self, name: &str) -> PathBuf {
        match self {
            Piece::Skill => Path::new(control::SKILLS_DIR).join(name).join(SKILL_FILE),
            Piece::Subagent => claude_dir().join(SUBAGENTS_DIR).join(format!("{name}.md")),
        }
    }

    /// Where it goes inside a policy package.
    fn in_package(self, name: &str) -> PathBuf {
        match self {
            Piece::Skill => Path::new(PACKAGE_SKILLS).join(name).join(SKILL_FILE),
            Piece::Subagent => Path::new(SUBAGENTS_DIR).join(format!("{name}.md")),
        }
    }

    fn text(self, name: &str) -> String {
        match self {
            Piece::Skill => format!(
                "---\nname: {name}\ndescription: Say in one sentence what this skill does and when to use it; an agent reads only this line to decide whether to load the rest.\n---\n\n# {name}\n\nThe steps an agent follows, in order, with the commands it runs and what it checks before it says it is done.\n"
            ),
            Piece::Subagent => format!(
                "---\nname: {name}\ndescription: Say in one sentence what this subagent is for; the main agent reads it to decide when to hand work over.\ntools: Read, Grep, Glob\n---\n\nYou are the {name} subagent. Say what you are given, what you do with it, and what you hand back.\n"
            ),
        }
    }
}

/// Claude Code's own folder in a project, as sync wires it.
fn claude_dir() -> PathBuf {
    let settings = chock_hook::sync::agent_file(Path::new(""), chock_hook::agent::Agent::Claude);
    settings.parent().map(Path::to_path_buf).unwrap_or_default()
}

/// A package's folder of subagents (and, in `.claude/`, Claude Code's).
pub const SUBAGENTS_DIR: &str = "agents";

/// Writes a new skill or subagent named `name`: in `policy`'s package when
/// one is named (which must be installed), else in the project. Returns
/// the file written; an existing one is never written over.
pub fn new_piece(
    project: &Path,
    piece: Piece,
    name: &str,
    policy: Option<&str>,
) -> Result<PathBuf, PackageError> {
    if !is_skill_name(name) {
        return Err(PackageError::Refused(format!(
            "`{name}` is not a {} name: use lowercase letters, digits and `-`, not first or last (such as `review-migrations`), at most 64 bytes",
            piece.word()
        )));
    }
    let text = piece.text(name);
    let Some(id) = policy else {
        return create_new(project, &piece.in_project(name), text.as_bytes());
    };
    crate::install::check_id(id)?;
    let policies = Beneath::policies(project)?;
    let Some(package) = policies.installed(id)? else {
        return Err(PackageError::Refused(format!(
            "{}: there is no policy `{id}` there: write one with `chock new policy {id}`, or install it",
            policies.path().display()
        )));
    };
    create_new_at(
        package,
        &policies.path().join(id),
        &piece.in_package(name),
        text.as_bytes(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn front_matter_name(text: &str) -> Option<&str> {
        let body = text.strip_prefix("---\n")?;
        let (head, _) = body.split_once("\n---\n")?;
        head.lines().find_map(|l| l.strip_prefix("name: "))
    }

    /// Each piece lands where agents read it, in the project or inside the
    /// package, with its name in the front matter; a second write of the
    /// same name, a bad name and a package that is not there are refused
    /// and leave what was there as it was.
    #[test]
    fn a_skill_and_a_subagent_land_in_the_project_or_the_package() {
        let dir = tempfile::tempdir().unwrap();
        let project = dir.path();
        let skill = new_piece(project, Piece::Skill, "review-sql", None).unwrap();
        assert_eq!(skill, project.join(".agents/skills/review-sql/SKILL.md"));
        let agent = new_piece(project, Piece::Subagent, "tester", None).unwrap();
        assert_eq!(agent, project.join(".claude/agents/tester.md"));
        for (file, name) in [(&skill, "review-sql"), (&agent, "tester")] {
            let text = std::fs::read_to_string(file).unwrap();
            assert_eq!(front_matter_name(&text), Some(name), "{text}");
        }
        // The skill reads as the skills' own reader reads one.
        let text = std::fs::read_to_string(&skill).unwrap();
        chock_skills::frontmatter::parse(&text).expect("the skeleton's front matter reads");

        std::fs::write(&skill, "mine\n").unwrap();
        let again = new_piece(project, Piece::Skill, "review-sql", None).unwrap_err();
        assert!(again.to_string().contains("already exists"), "{again}");
        assert_eq!(std::fs::read_to_string(&skill).unwrap(), "mine\n");

        for bad in ["Review", "a/b", "..", "-x", "x-", ""] {
            let error = new_piece(project, Piece::Skill, bad, None).unwrap_err();
            assert!(
                error.to_string().contains("is not a skill name"),
                "{bad}: {error}"
            );
        }

        let missing = new_piece(project, Piece::Skill, "s", Some("nope")).unwrap_err();
        assert!(
            missing.to_string().contains("chock new policy nope"),
            "{missing}"
        );

        new_policy(project, "pkg").unwrap();
        let inside = new_piece(project, Piece::Skill, "s", Some("pkg")).unwrap();
        assert_eq!(
            inside,
            project.join(".agents/policies/pkg/skills/s/SKILL.md")
        );
        assert!(inside.is_file());
        let inside = new_piece(project, Piece::Subagent, "a", Some("pkg")).unwrap();
        assert_eq!(inside, project.join(".agents/policies/pkg/agents/a.md"));
        assert!(inside.is_file());
        let leftovers: Vec<_> =
            std::fs::read_dir(project.join(".agents/skills/s").parent().unwrap())
                .unwrap()
                .map(|e| e.unwrap().file_name())
                .filter(|n| n.to_string_lossy().contains(".new-"))
                .collect();
        assert!(leftovers.is_empty(), "{leftovers:?}");
    }

    /// `.claude` (or `.agents/skills`) swapped with a link to a folder
    /// outside, over and over, while subagents and skills are written:
    /// nothing ever lands outside; each write either lands inside or is
    /// refused.
    #[test]
    fn a_link_swapped_in_on_the_way_is_never_written_through() {
        let root = tempfile::tempdir().unwrap();
        let project = root.path().join("project");
        let outside = root.path().join("outside");
        std::fs::create_dir_all(project.join(".claude")).unwrap();
        std::fs::create_dir_all(project.join(".agents/skills")).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        std::os::unix::fs::symlink(&outside, project.join(".swap-claude")).unwrap();
        std::os::unix::fs::symlink(&outside, project.join(".agents/.swap-skills")).unwrap();
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let swapper = {
            let (stop, project) = (stop.clone(), project.clone());
            std::thread::spawn(move || {
                let top = std::fs::File::open(&project).unwrap();
                let agents = std::fs::File::open(project.join(".agents")).unwrap();
                let mut swaps = 0u64;
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    for (dir, a, b) in [
                        (&top, ".claude", ".swap-claude"),
                        (&agents, "skills", ".swap-skills"),
                    ] {
                        if rustix::fs::renameat_with(
                            dir,
                            a,
                            dir,
                            b,
                            rustix::fs::RenameFlags::EXCHANGE,
                        )
                        .is_ok()
                        {
                            swaps += 1;
                        }
                    }
                }
                swaps
            })
        };
        let (mut landed, mut refused) = (0, 0);
        for round in 0..300 {
            let piece = if round % 2 == 0 {
                Piece::Subagent
            } else {
                Piece::Skill
            };
            match new_piece(&project, piece, &format!("p{round}"), None) {
                Ok(_) => landed += 1,
                Err(e) => {
                    assert!(
                        e.to_string().contains("symbolic link"),
                        "round {round}: {e}"
                    );
                    refused += 1;
                }
            }
        }
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        let swaps = swapper.join().unwrap();
        let written: Vec<_> = std::fs::read_dir(&outside).unwrap().collect();
        assert!(written.is_empty(), "written through a link: {written:?}");
        eprintln!("300 writes under {swaps} swaps: {landed} landed, {refused} refused");
        assert!(
            swaps > 0 && refused > 0,
            "the race was not run: {landed} landed, {swaps} swaps"
        );
    }
}
