//! The git hooks `pre-commit` and `pre-push`, answered under `git.commit`
//! and `git.push`.
//!
//! Chock's lines live in a marked block near the top of the hook script. A
//! hook the person already has keeps every line of its own: Chock adds its
//! block after the `#!` line, and on later syncs rewrites only what lies
//! between its markers. A hook in a language other than the shell is left
//! alone with an error that names it.

use std::path::{Path, PathBuf};

use crate::HookError;

/// The first line of Chock's block.
pub const BEGIN: &str =
    "# >>> chock: `chock sync` keeps the lines up to `<<< chock`; put your own outside them";
/// The last line of Chock's block.
pub const END: &str = "# <<< chock";

/// A git hook Chock writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GitHook {
    /// Before a commit is made: `git.commit`.
    PreCommit,
    /// Before refs move on a remote: `git.push`.
    PrePush,
}

impl GitHook {
    /// Both hooks, in the order they run in a day's work.
    pub const ALL: [GitHook; 2] = [GitHook::PreCommit, GitHook::PrePush];

    /// The hook's file name, and the word after `chock hook`.
    pub fn name(self) -> &'static str {
        match self {
            GitHook::PreCommit => "pre-commit",
            GitHook::PrePush => "pre-push",
        }
    }

    /// The action the hook is answered under.
    pub fn action(self) -> &'static str {
        match self {
            GitHook::PreCommit => "git.commit",
            GitHook::PrePush => "git.push",
        }
    }

    /// Reads `pre-commit` or `pre-push`.
    pub fn from_name(name: &str) -> Option<GitHook> {
        GitHook::ALL.into_iter().find(|hook| hook.name() == name)
    }

    /// The lines between the markers. pre-push gets the remote's name and
    /// URL; its standard input (the refs) is left for the person's own lines.
    fn body(self, chock: &str) -> String {
        match self {
            GitHook::PreCommit => format!("{chock} hook pre-commit || exit $?"),
            GitHook::PrePush => format!("{chock} hook pre-push \"$@\" </dev/null || exit $?"),
        }
    }
}

/// The hooks folder of the repository holding `project`, honouring
/// `core.hooksPath` (the folder tools such as husky point git at).
pub fn hooks_dir(project: &Path) -> Result<PathBuf, HookError> {
    let output = std::process::Command::new("git")
        .arg("-C")
        .arg(project)
        .args(["rev-parse", "--git-path", "hooks"])
        .output()
        .map_err(|source| HookError::Io {
            path: project.to_owned(),
            action: "running git rev-parse",
            source,
        })?;
    if !output.status.success() {
        return Err(HookError::NotARepository(project.to_owned()));
    }
    let text = String::from_utf8_lossy(&output.stdout);
    let dir = PathBuf::from(text.trim_end_matches(['\n', '\r']));
    Ok(if dir.is_absolute() {
        dir
    } else {
        project.join(dir)
    })
}

/// The hook's new text for its current text (`None` when it has none), or
/// `None` when the hook already holds exactly Chock's block.
/// Where Chock's block is in a hook's text (its `# >>> chock` line to the
/// end of its `# <<< chock` line), if it has one.
fn chocks_block(path: &Path, current: &str) -> Result<Option<(usize, usize)>, HookError> {
    let Some(start) = current.find(BEGIN) else {
        return Ok(None);
    };
    let Some(end_rel) = current[start..].find(END) else {
        return Err(HookError::Unexpected {
            path: path.to_owned(),
            message: format!("Chock's block starts but has no `{END}` line"),
        });
    };
    let mut end = start + end_rel + END.len();
    if current[end..].starts_with('\n') {
        end += 1;
    }
    Ok(Some((start, end)))
}

/// `chock sync --remove`: the hook's text without Chock's block (the
/// person's lines as they were), or `None` when it has none.
pub fn removed(path: &Path, current: Option<&str>) -> Result<Option<String>, HookError> {
    let Some(current) = current else {
        return Ok(None);
    };
    Ok(chocks_block(path, current)?
        .map(|(start, end)| format!("{}{}", &current[..start], &current[end..])))
}

pub fn updated(
    hook: GitHook,
    path: &Path,
    current: Option<&str>,
    chock: &str,
) -> Result<Option<String>, HookError> {
    let block = format!("{BEGIN}\n{}\n{END}\n", hook.body(chock));
    let Some(current) = current.filter(|text| !text.trim().is_empty()) else {
        return Ok(Some(format!("#!/bin/sh\n{block}")));
    };
    if let Some((start, end)) = chocks_block(path, current)? {
        let text = format!("{}{block}{}", &current[..start], &current[end..]);
        return Ok((text != current).then_some(text));
    }
    let first_line = current.lines().next().unwrap_or("");
    if let Some(interpreter) = first_line.strip_prefix("#!") {
        if !is_shell(interpreter) {
            return Err(HookError::ForeignHook {
                path: path.to_owned(),
                interpreter: interpreter.trim().to_owned(),
                hook: hook.name(),
            });
        }
        let rest = current.get(first_line.len()..).unwrap_or("");
        let rest = rest.strip_prefix('\n').unwrap_or(rest);
        return Ok(Some(format!("{first_line}\n{block}{rest}")));
    }
    // No `#!` line: git would run it with the shell.
    Ok(Some(format!("#!/bin/sh\n{block}{current}")))
}

/// Whether a `#!` line names a POSIX-style shell.
fn is_shell(interpreter: &str) -> bool {
    let mut words = interpreter.split_whitespace();
    let Some(program) = words.next() else {
        return false;
    };
    let base = program.rsplit('/').next().unwrap_or(program);
    let base = if base == "env" {
        match words.find(|w| !w.starts_with('-')) {
            Some(next) => next.rsplit('/').next().unwrap_or(next),
            None => return false,
        }
    } else {
        base
    };
    matches!(
        base,
        "sh" | "bash" | "dash" | "zsh" | "ksh" | "ash" | "mksh"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn update(current: Option<&str>) -> Result<Option<String>, HookError> {
        updated(
            GitHook::PrePush,
            Path::new(".git/hooks/pre-push"),
            current,
            "chock",
        )
    }

    #[test]
    fn a_new_hook_is_a_shell_script_with_the_block() -> Result<(), HookError> {
        let text = update(None)?.unwrap_or_default();
        assert!(text.starts_with("#!/bin/sh\n# >>> chock"), "{text}");
        assert!(text.contains("chock hook pre-push \"$@\" </dev/null || exit $?"));
        assert_eq!(update(Some(&text))?, None);
        Ok(())
    }

    #[test]
    fn the_person_s_lines_stay_around_the_block() -> Result<(), HookError> {
        let mine = "#!/usr/bin/env bash\nset -e\nnpm test\n";
        let text = update(Some(mine))?.unwrap_or_default();
        assert!(
            text.starts_with("#!/usr/bin/env bash\n# >>> chock"),
            "{text}"
        );
        assert!(text.ends_with("# <<< chock\nset -e\nnpm test\n"), "{text}");
        assert_eq!(update(Some(&text))?, None);
        // A changed block is rewritten in place, the rest untouched.
        let old = text.replace("</dev/null ", "");
        let again = update(Some(&old))?.unwrap_or_default();
        assert_eq!(again, text);
        Ok(())
    }

    #[test]
    fn a_hook_in_another_language_is_left_alone() {
        let python = "#!/usr/bin/env python3\nprint('hi')\n";
        assert!(matches!(
            update(Some(python)),
            Err(HookError::ForeignHook { .. })
        ));
    }

    #[test]
    fn a_broken_block_is_reported() {
        let broken = format!("#!/bin/sh\n{BEGIN}\nchock hook pre-push\n");
        assert!(matches!(
            update(Some(&broken)),
            Err(HookError::Unexpected { .. })
        ));
    }
}
