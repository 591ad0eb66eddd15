//! `git` on a command line, sorted the way Chock's git shim sorts it: a
//! subcommand that only reads asks nobody; one that changes state is asked
//! under `git.<subcommand>`; one Chock does not know asks under its own name;
//! an option Chock cannot read makes it `git.unknown`.
//!
//! Like the shim this is a guard against mistakes, not a boundary: a program
//! can always change a repository some other way.

use crate::word::Value;

/// Subcommands that never change the repository, the work tree or a remote.
const READ_ONLY: &[&str] = &[
    "annotate",
    "blame",
    "cat-file",
    "check-attr",
    "check-ignore",
    "check-mailmap",
    "cherry",
    "count-objects",
    "describe",
    "diff",
    "diff-files",
    "diff-index",
    "diff-tree",
    "for-each-ref",
    "grep",
    "help",
    "log",
    "ls-files",
    "ls-tree",
    "merge-base",
    "name-rev",
    "range-diff",
    "rev-list",
    "rev-parse",
    "shortlog",
    "show",
    "show-branch",
    "show-ref",
    "status",
    "var",
    "verify-commit",
    "verify-tag",
    "version",
    "whatchanged",
];

/// Global options (before the subcommand) that take the next word as a value.
const GLOBAL_WITH_VALUE: &[&str] = &["-C", "-c", "--git-dir", "--work-tree", "--namespace"];

/// Global options without a value.
const GLOBAL_FLAGS: &[&str] = &[
    "-p",
    "--paginate",
    "-P",
    "--no-pager",
    "--no-replace-objects",
    "--bare",
    "--literal-pathspecs",
    "--glob-pathspecs",
    "--noglob-pathspecs",
    "--icase-pathspecs",
    "--no-optional-locks",
    "--no-advice",
];

/// Configuration keys that make git run a program of their choosing.
const CODE_CONFIG: &[&str] = &[
    "alias.",
    "core.sshcommand",
    "core.pager",
    "core.editor",
    "core.hookspath",
    "core.fsmonitor",
    "diff.external",
    "credential.helper",
    "sequence.editor",
    "gpg.program",
    "uploadpack.packobjectshook",
];

/// What one `git` invocation is asked as.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Git {
    /// Only reads: nobody is asked.
    ReadOnly,
    /// Asked under `git.` and this subcommand (`push`, `branch.delete`, `unknown`).
    Action(String),
    /// Git is told to run a program Chock cannot see (an alias, `core.sshCommand`).
    RunsHiddenCode(String),
}

/// Sorts the words after `git`.
pub fn classify(args: &[Value]) -> Git {
    let mut i = 0;
    while let Some(word) = args.get(i) {
        let Some(text) = word.literal() else {
            return unknown();
        };
        if !text.starts_with('-') {
            break;
        }
        if let Some((option, value)) = text.split_once('=')
            && GLOBAL_WITH_VALUE.contains(&option)
        {
            if option == "-c" && runs_code(value) {
                return hidden(value);
            }
            i += 1;
            continue;
        }
        if GLOBAL_WITH_VALUE.contains(&text) {
            let Some(value) = args.get(i + 1).and_then(Value::literal) else {
                return unknown();
            };
            if text == "-c" && runs_code(value) {
                return hidden(value);
            }
            i += 2;
            continue;
        }
        if text.starts_with("--config-env") || text.starts_with("--exec-path") {
            return hidden(text);
        }
        if GLOBAL_FLAGS.contains(&text) {
            i += 1;
            continue;
        }
        return unknown();
    }
    let Some(subcommand) = args.get(i).and_then(Value::literal) else {
        // `git` alone, or `git --version`, prints and changes nothing.
        return if args.get(i).is_none() {
            Git::ReadOnly
        } else {
            unknown()
        };
    };
    let rest = args.get(i + 1..).unwrap_or(&[]);
    sort_subcommand(subcommand, rest)
}

fn unknown() -> Git {
    Git::Action("unknown".to_owned())
}

fn hidden(setting: &str) -> Git {
    Git::RunsHiddenCode(format!("git is told to run a program through `{setting}`"))
}

fn runs_code(setting: &str) -> bool {
    let key = setting
        .split('=')
        .next()
        .unwrap_or(setting)
        .to_ascii_lowercase();
    CODE_CONFIG
        .iter()
        .any(|code| key == *code || (code.ends_with('.') && key.starts_with(code)))
}

fn action(name: &str) -> Git {
    Git::Action(name.to_owned())
}

fn literal_args(rest: &[Value]) -> Option<Vec<&str>> {
    rest.iter().map(Value::literal).collect()
}

fn sort_subcommand(subcommand: &str, rest: &[Value]) -> Git {
    if READ_ONLY.contains(&subcommand) {
        return Git::ReadOnly;
    }
    let Some(args) = literal_args(rest) else {
        // The arguments decide between reading and changing for some of these.
        return match subcommand {
            "branch" | "tag" | "stash" | "remote" | "config" | "worktree" | "notes" | "reflog"
            | "submodule" => action(subcommand),
            _ => named(subcommand),
        };
    };
    let first = args.first().copied();
    let any = |options: &[&str]| args.iter().any(|a| options.contains(a));
    match subcommand {
        "branch" => {
            if any(&["-d", "-D", "--delete"]) {
                action("branch.delete")
            } else if args.is_empty()
                || args.iter().all(|a| {
                    matches!(
                        *a,
                        "-l" | "--list"
                            | "-a"
                            | "--all"
                            | "-r"
                            | "--remotes"
                            | "-v"
                            | "-vv"
                            | "--verbose"
                            | "--show-current"
                    ) || a.starts_with("--format")
                        || a.starts_with("--sort")
                        || a.starts_with("--contains")
                        || a.starts_with("--merged")
                        || a.starts_with("--no-merged")
                })
            {
                Git::ReadOnly
            } else {
                action("branch")
            }
        }
        "tag" => {
            if args.is_empty() || any(&["-l", "--list", "-v", "--verify"]) {
                Git::ReadOnly
            } else {
                action("tag")
            }
        }
        "stash" => match first {
            Some("list" | "show") => Git::ReadOnly,
            _ => action("stash"),
        },
        "remote" => match first {
            None | Some("-v" | "--verbose" | "show" | "get-url") => Git::ReadOnly,
            _ => action("remote"),
        },
        "config" => {
            let reads = args.iter().any(|a| {
                matches!(
                    *a,
                    "--get"
                        | "--get-all"
                        | "--get-regexp"
                        | "-l"
                        | "--list"
                        | "get"
                        | "list"
                        | "--show-origin"
                        | "--show-scope"
                )
            });
            let writes = args.iter().any(|a| {
                matches!(
                    *a,
                    "--unset"
                        | "--unset-all"
                        | "--add"
                        | "--replace-all"
                        | "set"
                        | "unset"
                        | "--rename-section"
                        | "--remove-section"
                        | "-e"
                        | "--edit"
                )
            });
            let plain_values = args.iter().filter(|a| !a.starts_with('-')).count();
            if writes {
                action("config")
            } else if reads || plain_values <= 1 {
                Git::ReadOnly
            } else {
                action("config")
            }
        }
        "worktree" => match first {
            Some("list") => Git::ReadOnly,
            _ => action("worktree"),
        },
        "notes" => match first {
            None | Some("list" | "show") => Git::ReadOnly,
            _ => action("notes"),
        },
        "reflog" => match first {
            None | Some("show") => Git::ReadOnly,
            _ => action("reflog"),
        },
        "submodule" => match first {
            None | Some("status" | "summary" | "foreach") => {
                if first == Some("foreach") {
                    // `git submodule foreach CMD` runs CMD in a shell.
                    Git::RunsHiddenCode("git submodule foreach runs a command".to_owned())
                } else {
                    Git::ReadOnly
                }
            }
            _ => action("submodule"),
        },
        "bisect" if first == Some("run") => {
            Git::RunsHiddenCode("git bisect run runs a command".to_owned())
        }
        "rebase" if any(&["-x", "--exec"]) || args.iter().any(|a| a.starts_with("--exec=")) => {
            Git::RunsHiddenCode("git rebase --exec runs a command".to_owned())
        }
        _ => named(subcommand),
    }
}

/// Any other subcommand is asked under its own name, escaped as one segment.
fn named(subcommand: &str) -> Git {
    if subcommand.is_empty()
        || !subcommand
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    {
        return unknown();
    }
    action(subcommand)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn git(line: &str) -> Git {
        let words: Vec<Value> = line
            .split_whitespace()
            .map(|w| Value {
                text: w.to_owned(),
                certain: !w.starts_with('$'),
            })
            .collect();
        classify(&words)
    }

    fn asked(line: &str) -> Option<String> {
        match git(line) {
            Git::Action(name) => Some(name),
            _ => None,
        }
    }

    #[test]
    fn reading_asks_nobody() {
        for line in [
            "status",
            "log --oneline",
            "diff HEAD~1",
            "branch",
            "branch -a",
            "tag",
            "",
        ] {
            assert_eq!(git(line), Git::ReadOnly, "{line}");
        }
    }

    #[test]
    fn changing_state_is_asked_by_name() {
        assert_eq!(asked("push origin main").as_deref(), Some("push"));
        assert_eq!(asked("commit -m x").as_deref(), Some("commit"));
        assert_eq!(asked("-C sub push").as_deref(), Some("push"));
        assert_eq!(asked("branch -D old").as_deref(), Some("branch.delete"));
        assert_eq!(asked("branch new").as_deref(), Some("branch"));
        assert_eq!(asked("frobnicate").as_deref(), Some("frobnicate"));
    }

    #[test]
    fn an_unreadable_option_is_git_unknown() {
        assert_eq!(asked("--weird push").as_deref(), Some("unknown"));
        assert_eq!(asked("$X push").as_deref(), Some("unknown"));
    }

    #[test]
    fn configuration_that_runs_code_is_noticed() {
        assert!(matches!(git("-c alias.x=!rm x"), Git::RunsHiddenCode(_)));
        assert!(matches!(
            git("-c core.sshCommand=evil fetch"),
            Git::RunsHiddenCode(_)
        ));
        assert_eq!(asked("-c user.name=x commit").as_deref(), Some("commit"));
    }
}
