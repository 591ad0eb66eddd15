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

/// What one `git` invocation is asked as.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Git {
    /// Only reads: nobody is asked.
    ReadOnly,
    /// Asked under `git.` and this subcommand (`push`, `branch.delete`, `unknown`).
    Action(String),
    /// Git is told to run a program Chock cannot see (`core.hooksPath`,
    /// `--config-env`), or one built at run time.
    RunsHiddenCode(String),
    /// Git is told to run this shell command (`-c core.pager=less`,
    /// `git config alias.x '!rm -rf ~'`): read as a script.
    RunsCommand(String),
    /// `git config` writes a file outside the repository: `~/.gitconfig`
    /// (`--global`), `/etc/gitconfig` (`--system`), `--file FILE`.
    WritesConfig(ConfigFile),
}

/// A configuration file `git config` writes other than the repository's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConfigFile {
    /// `--global`: the person's own, in their home directory.
    Global,
    /// `--system`: `/etc/gitconfig`.
    System,
    /// `--file FILE` (`-f`), as written.
    File(Value),
}

/// Sorts the words after `git`: every act they hold, none for a read.
pub fn classify(args: &[Value]) -> Vec<Git> {
    let mut acts = Vec::new();
    let mut i = 0;
    while let Some(word) = args.get(i) {
        let Some(text) = word.literal() else {
            // An option built at run time could be `-c core.pager=...`.
            acts.push(unknown());
            acts.push(Git::RunsHiddenCode(
                "a git option only known at run time may name a program".to_owned(),
            ));
            return acts;
        };
        if !text.starts_with('-') {
            break;
        }
        if let Some((option, value)) = text.split_once('=')
            && GLOBAL_WITH_VALUE.contains(&option)
        {
            if option == "-c" {
                acts.extend(setting(value));
            }
            i += 1;
            continue;
        }
        if GLOBAL_WITH_VALUE.contains(&text) {
            let Some(value) = args.get(i + 1).and_then(Value::literal) else {
                acts.push(unknown());
                if text == "-c" {
                    acts.push(Git::RunsHiddenCode(
                        "git -c sets a value only known at run time".to_owned(),
                    ));
                }
                return acts;
            };
            if text == "-c" {
                acts.extend(setting(value));
            }
            i += 2;
            continue;
        }
        if text.starts_with("--config-env") || text.starts_with("--exec-path") {
            acts.push(hidden(text));
            return acts;
        }
        if GLOBAL_FLAGS.contains(&text) {
            i += 1;
            continue;
        }
        acts.push(unknown());
        return acts;
    }
    match args.get(i).map(Value::literal) {
        // `git` alone, or `git --version`, prints and changes nothing.
        None => {}
        Some(None) => acts.push(unknown()),
        Some(Some(subcommand)) => {
            let rest = args.get(i + 1..).unwrap_or(&[]);
            if subcommand == "config" {
                acts.extend(config(rest));
            } else {
                acts.push(sort_subcommand(subcommand, rest));
            }
        }
    }
    acts.retain(|act| *act != Git::ReadOnly);
    acts
}

fn unknown() -> Git {
    Git::Action("unknown".to_owned())
}

fn hidden(setting: &str) -> Git {
    Git::RunsHiddenCode(format!("git is told to run a program through `{setting}`"))
}

/// How git uses a configuration key's value.
enum KeyKind {
    /// A shell command git runs (`core.pager`, `alias.x` starting with `!`).
    Command,
    /// Names code Chock cannot see from here (a hooks folder, an included
    /// file that may set any of these).
    Hidden,
    /// Data.
    Data,
}

/// What git does with `key` (any case) set to `value`.
fn key_kind(key: &str, value: &str) -> KeyKind {
    let key = key.to_ascii_lowercase();
    let (section, rest) = key.split_once('.').unwrap_or((key.as_str(), ""));
    let name = rest.rsplit('.').next().unwrap_or(rest);
    let commands = match section {
        "core" => matches!(
            name,
            "pager" | "editor" | "sshcommand" | "askpass" | "gitproxy" | "alternaterefscommand"
        ),
        "sequence" => name == "editor",
        "diff" => matches!(name, "external" | "textconv" | "command"),
        "merge" | "mergetool" | "difftool" => matches!(name, "driver" | "cmd"),
        "filter" => matches!(name, "clean" | "smudge" | "process"),
        "gpg" => name == "program",
        "credential" => name == "helper",
        "uploadpack" => name == "packobjectshook",
        "pager" | "man" | "browser" => true,
        "web" => name == "browser",
        "interactive" => name == "difffilter",
        "remote" => matches!(name, "uploadpack" | "receivepack" | "proxy"),
        "hook" => name == "command",
        "alias" => value.starts_with('!'),
        _ => false,
    };
    let fsmonitor = section == "core" && name == "fsmonitor";
    if fsmonitor {
        // A boolean asks for git's own daemon; anything else is a command.
        let boolean = matches!(
            value.to_ascii_lowercase().as_str(),
            "true" | "false" | "yes" | "no" | "on" | "off" | "1" | "0" | ""
        );
        return if boolean {
            KeyKind::Data
        } else {
            KeyKind::Command
        };
    }
    if commands {
        return KeyKind::Command;
    }
    if (section == "core" && name == "hookspath") || section == "include" || section == "includeif"
    {
        return KeyKind::Hidden;
    }
    KeyKind::Data
}

/// The command a value names, as a shell would read it: `!` marks a shell
/// command in aliases and credential helpers; a helper without it is
/// `git credential-NAME`.
fn command_of(key: &str, value: &str) -> String {
    let key = key.to_ascii_lowercase();
    if let Some(command) = value.strip_prefix('!') {
        return command.to_owned();
    }
    if key.starts_with("credential.") && !value.starts_with('/') && !value.is_empty() {
        return format!("git credential-{value}");
    }
    value.to_owned()
}

/// The acts of setting `key` to `value`.
fn set(key: &str, value: Option<&Value>) -> Option<Git> {
    let Some(value) = value else {
        // No value: read, or unset.
        return None;
    };
    let Some(text) = value.literal() else {
        return match key_kind(key, "$") {
            KeyKind::Data => None,
            _ => Some(Git::RunsHiddenCode(format!(
                "git is told to run a command built at run time through `{key}`"
            ))),
        };
    };
    match key_kind(key, text) {
        KeyKind::Data => None,
        KeyKind::Hidden => Some(hidden(key)),
        KeyKind::Command => Some(Git::RunsCommand(command_of(key, text))),
    }
}

/// `-c KEY=VALUE`.
fn setting(text: &str) -> Option<Git> {
    let (key, value) = text.split_once('=').unwrap_or((text, "true"));
    set(
        key,
        Some(&Value {
            text: value.to_owned(),
            certain: true,
        }),
    )
}

/// `git config ...`: whether it writes, which file, and what a key that
/// names a program would run.
fn config(rest: &[Value]) -> Vec<Git> {
    let mut acts = Vec::new();
    let mut file = None;
    let mut positional: Vec<&Value> = Vec::new();
    let mut reads = false;
    let mut writes = false;
    let mut i = 0;
    while let Some(word) = rest.get(i) {
        match word.literal() {
            Some("--global") => file = Some(ConfigFile::Global),
            Some("--system") => file = Some(ConfigFile::System),
            Some("-f" | "--file") => {
                file = rest.get(i + 1).cloned().map(ConfigFile::File);
                i += 1;
            }
            Some("--blob" | "--type" | "--default" | "--comment" | "--value") => i += 1,
            Some(
                "--get" | "--get-all" | "--get-regexp" | "--get-urlmatch" | "-l" | "--list"
                | "--show-origin" | "--show-scope" | "--name-only" | "--get-color"
                | "--get-colorbool",
            ) => reads = true,
            Some(
                "--unset" | "--unset-all" | "--add" | "--replace-all" | "--rename-section"
                | "--remove-section" | "-e" | "--edit",
            ) => writes = true,
            Some(a) if a.starts_with("--file=") => {
                file = Some(ConfigFile::File(Value {
                    text: a["--file=".len()..].to_owned(),
                    certain: true,
                }));
            }
            Some(a) if a.starts_with('-') => {}
            // A word only known at run time could be anything: a key, a value.
            _ => positional.push(word),
        }
        i += 1;
    }
    // The subcommand spelling: `git config set KEY VALUE`, `get`, `list`.
    match positional.first().and_then(|v| v.literal()) {
        Some("get" | "list") => {
            reads = true;
            positional.remove(0);
        }
        Some("set" | "unset" | "edit" | "rename-section" | "remove-section") => {
            writes = true;
            positional.remove(0);
        }
        _ => {}
    }
    if positional.len() >= 2 {
        writes = true;
    }
    if !writes || (reads && positional.len() < 2) {
        return acts;
    }
    acts.push(action("config"));
    match positional.first().map(|v| v.literal()) {
        Some(Some(key)) => acts.extend(set(key, positional.get(1).copied())),
        Some(None) => acts.push(Git::RunsHiddenCode(
            "git config sets a key only known at run time".to_owned(),
        )),
        None => {}
    }
    if let Some(file) = file {
        acts.push(Git::WritesConfig(file));
    }
    acts
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
            "branch" | "tag" | "stash" | "remote" | "worktree" | "notes" | "reflog"
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

    fn all(line: &str) -> Vec<Git> {
        let words: Vec<Value> = line
            .split_whitespace()
            .map(|w| Value {
                text: w.to_owned(),
                certain: !w.starts_with('$'),
            })
            .collect();
        classify(&words)
    }

    fn git(line: &str) -> Git {
        all(line).into_iter().next().unwrap_or(Git::ReadOnly)
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
    fn configuration_that_runs_code_names_it() {
        assert_eq!(
            all("-c core.sshCommand=evil fetch"),
            vec![Git::RunsCommand("evil".into()), Git::Action("fetch".into())]
        );
        assert_eq!(
            all("-c alias.x=!rm x"),
            vec![Git::RunsCommand("rm".into()), Git::Action("x".into())]
        );
        assert_eq!(
            all("config core.pager less"),
            vec![
                Git::Action("config".into()),
                Git::RunsCommand("less".into())
            ]
        );
        assert_eq!(
            all("config credential.helper store"),
            vec![
                Git::Action("config".into()),
                Git::RunsCommand("git credential-store".into())
            ]
        );
        assert!(matches!(
            all("config core.hooksPath hooks").get(1),
            Some(Git::RunsHiddenCode(_))
        ));
        assert!(matches!(
            all("config core.editor $EDITOR").get(1),
            Some(Git::RunsHiddenCode(_))
        ));
        // Data is data; a boolean fsmonitor is git's own daemon.
        assert_eq!(asked("-c user.name=x commit").as_deref(), Some("commit"));
        assert_eq!(all("config core.fsmonitor true"), vec![action("config")]);
        assert_eq!(all("config alias.co checkout"), vec![action("config")]);
    }

    #[test]
    fn config_outside_the_repository_is_a_write_of_that_file() {
        assert_eq!(
            all("config --global user.name me"),
            vec![action("config"), Git::WritesConfig(ConfigFile::Global)]
        );
        assert_eq!(
            all("config --system --unset x.y"),
            vec![action("config"), Git::WritesConfig(ConfigFile::System)]
        );
        assert!(all("config --global --get user.name").is_empty());
        assert!(all("config --list").is_empty());
        assert!(all("config user.name").is_empty());
    }
}
