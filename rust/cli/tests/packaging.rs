//! What a package installs beside the binary, generated from the clap
//! definitions: `chock completions SHELL` is parsed by that shell (`bash -n`,
//! `zsh -n`, `fish --no-execute`; scripts/setup installs all three), names
//! every subcommand, and completes a subcommand and a flag when typed in
//! that shell; `chock man` names every subcommand and
//! renders with `man -l`; `chock man --dir` writes a page per subcommand.
//! `chock --version` names the commit the binary was built from.

use std::path::Path;
use std::process::{Command, Output};

fn chock(args: &[&str]) -> Output {
    let out = Command::new(env!("CARGO_BIN_EXE_chock"))
        .args(args)
        .output()
        .expect("run chock");
    assert!(
        out.status.success(),
        "chock {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn text(bytes: Vec<u8>) -> String {
    String::from_utf8(bytes).expect("utf-8 output")
}

/// The subcommands `chock --help` lists under its headings by task,
/// without `help`.
fn subcommands() -> Vec<String> {
    let help = text(chock(&["--help"]).stdout);
    let names: Vec<String> = help
        .lines()
        .skip_while(|line| !line.starts_with("Usage:"))
        .skip(1)
        .take_while(|line| *line != "Options:")
        .filter(|line| line.starts_with("  "))
        .filter_map(|line| line.split_whitespace().next())
        .filter(|name| *name != "help")
        .map(str::to_owned)
        .collect();
    for expected in ["policy", "build", "completions", "man"] {
        assert!(
            names.iter().any(|n| n == expected),
            "`chock --help` lists no {expected}:\n{help}"
        );
    }
    names
}

/// Runs `shell` with `args` on `script`; `None` when the shell is not installed.
fn parse_with(shell: &str, args: &[&str], script: &Path) -> Option<Output> {
    match Command::new(shell).args(args).arg(script).output() {
        Ok(out) => Some(out),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            eprintln!(
                "{shell} is not installed (scripts/setup installs it): its script is checked for its contents only"
            );
            None
        }
        Err(e) => panic!("cannot run {shell}: {e}"),
    }
}

#[test]
fn each_shells_completions_parse_and_complete_every_subcommand() {
    let names = subcommands();
    let dir = tempfile::tempdir().expect("temp dir");
    for (shell, check, marker) in [
        ("bash", &["-n"][..], "complete -F _chock"),
        ("zsh", &["-n"][..], "#compdef chock"),
        ("fish", &["--no-execute"][..], "complete -c chock"),
    ] {
        let script = text(chock(&["completions", shell]).stdout);
        assert!(
            script.contains(marker),
            "{shell} completions lack `{marker}`:\n{script}"
        );
        for name in &names {
            assert!(
                script.contains(name.as_str()),
                "{shell} completions do not complete `{name}`"
            );
        }
        let file = dir.path().join(format!("chock.{shell}"));
        std::fs::write(&file, &script).expect("write script");
        if let Some(out) = parse_with(shell, check, &file) {
            assert!(
                out.status.success(),
                "{shell} {check:?} refuses chock's completions: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
    }
}

#[test]
fn an_unknown_shell_is_refused_naming_the_ones_known() {
    let out = Command::new(env!("CARGO_BIN_EXE_chock"))
        .args(["completions", "tcsh"])
        .output()
        .expect("run chock");
    assert_eq!(out.status.code(), Some(2), "clap's usage error");
    let stderr = text(out.stderr);
    assert!(
        stderr.contains("bash") && stderr.contains("zsh") && stderr.contains("fish"),
        "{stderr}"
    );
}

#[test]
fn the_man_page_names_every_subcommand_and_renders() {
    let page = text(chock(&["man"]).stdout);
    assert!(page.contains(".TH chock 1"), "{page}");
    for name in subcommands() {
        assert!(
            page.contains(&format!("chock\\-{}(1)", name.replace('-', "\\-"))),
            "chock(1) does not name `{name}`"
        );
    }
    let dir = tempfile::tempdir().expect("temp dir");
    let file = dir.path().join("chock.1");
    std::fs::write(&file, &page).expect("write page");
    let out = Command::new("man")
        .arg("-l")
        .arg(&file)
        .env("MANPAGER", "cat")
        .env("MANWIDTH", "100")
        .output();
    match out {
        Ok(out) => {
            let rendered = text(out.stdout);
            assert!(
                out.status.success() && rendered.contains("SUBCOMMANDS"),
                "man -l does not render chock(1): {}\n{rendered}",
                String::from_utf8_lossy(&out.stderr)
            );
            assert!(rendered.contains("chock-policy(1)"), "{rendered}");
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            eprintln!("man is not installed: chock(1) is checked for its contents only")
        }
        Err(e) => panic!("cannot run man: {e}"),
    }
}

#[test]
fn man_dir_writes_a_page_for_every_subcommand() {
    let dir = tempfile::tempdir().expect("temp dir");
    let out = dir.path().join("man1");
    std::fs::create_dir(&out).expect("mkdir");
    chock(&["man", "--dir", out.to_str().expect("utf-8 path")]);
    let mut pages: Vec<String> = std::fs::read_dir(&out)
        .expect("read man dir")
        .map(|e| e.expect("entry").file_name().into_string().expect("name"))
        .collect();
    pages.sort();
    assert!(pages.contains(&"chock.1".to_owned()), "{pages:?}");
    assert!(
        pages.contains(&"chock-policy-explain.1".to_owned()),
        "{pages:?}"
    );
    for name in subcommands() {
        assert!(
            pages.contains(&format!("chock-{name}.1")),
            "no page for {name}: {pages:?}"
        );
    }
}

#[test]
fn man_dir_that_cannot_be_written_fails_naming_it() {
    let out = Command::new(env!("CARGO_BIN_EXE_chock"))
        .args(["man", "--dir", "/nonexistent/chock-man"])
        .output()
        .expect("run chock");
    assert_eq!(out.status.code(), Some(1));
    let stderr = text(out.stderr);
    assert!(stderr.contains("/nonexistent/chock-man"), "{stderr}");
}

#[test]
fn the_version_names_the_commit_built_from() {
    let version = text(chock(&["--version"]).stdout);
    let expected = match option_env!("CHOCK_COMMIT") {
        Some("dirty") => "a tree with uncommitted changes".to_owned(),
        Some(commit) if !commit.is_empty() => format!("commit {commit}"),
        _ => {
            let git = Command::new("git")
                .args(["rev-parse", "--short=12", "HEAD"])
                .current_dir(env!("CARGO_MANIFEST_DIR"))
                .output();
            match git {
                Ok(out) if out.status.success() => {
                    format!("commit {}", text(out.stdout).trim())
                }
                _ => "commit unknown".to_owned(),
            }
        }
    };
    assert_eq!(
        version,
        format!("chock {} ({expected})\n", env!("CARGO_PKG_VERSION"))
    );
    // Every subcommand says the same.
    assert_eq!(
        text(chock(&["policy", "--version"]).stdout),
        version.replacen("chock", "chock-policy", 1)
    );
}

/// zsh completes only inside a line editor: this drives an interactive
/// `zsh -f` on a pseudo-terminal (zsh/zpty), loads compinit with the
/// folder holding `_chock` first on `fpath`, types the words and a Tab, and
/// prints every candidate the completion functions hand to `compadd`.
const ZSH_CAPTURE: &str = r#"
zmodload zsh/zpty || exit 1
zpty z zsh -f -i
zpty -w z "PROMPT=''; fpath=($1 \$fpath); autoload -U compinit; compinit -u -D"
zpty -w z "bindkey '^I' complete-word; zstyle ':completion:*' insert-tab false"
zpty -w z 'compadd () { typeset -a __hits; builtin compadd -A __hits "$@"; local h; for h in $__hits; do echo -E - "OFFERED:$h"; done; }'
zpty -w z 'comppostfuncs=( exit )'
zpty -n -w z "$2"$'\t'
local all= out
while zpty -r z out; do all+=$out; done
print -r -- "$all" | tr -d '\r' | grep -a '^OFFERED:' | sed 's/^OFFERED://'
"#;

/// What `shell` offers after `words` with chock's completions loaded;
/// `None` when the shell is not installed.
fn completed(shell: &str, script: &Path, words: &[&str]) -> Option<String> {
    let line = words.join(" ");
    if shell == "zsh" {
        let folder = script.parent().expect("script in a folder");
        let capture = folder.join("capture.zsh");
        std::fs::write(&capture, ZSH_CAPTURE).expect("write capture script");
        return run_shell(
            Command::new("timeout")
                .args(["20", "zsh", "-f"])
                .arg(&capture)
                .arg(folder)
                .arg(&line),
            shell,
        );
    }
    let program = match shell {
        "bash" => format!(
            "source {}; COMP_WORDS=({line}); COMP_CWORD={}; _chock chock {} {}; printf '%s\\n' \"${{COMPREPLY[@]}}\"",
            script.display(),
            words.len() - 1,
            words[words.len() - 1],
            words[words.len() - 2],
        ),
        _ => format!("source {}; complete -C '{line}'", script.display()),
    };
    run_shell(Command::new(shell).args(["-c", &program]), shell)
}

/// The output of a shell run for completions; `None` when the shell is
/// not installed (`timeout` says so with 127).
fn run_shell(command: &mut Command, shell: &str) -> Option<String> {
    match command.output() {
        Ok(out) if out.status.code() == Some(127) => None,
        Ok(out) => {
            assert!(
                out.status.success(),
                "{shell}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            Some(text(out.stdout))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => panic!("cannot run {shell}: {e}"),
    }
}

#[test]
fn each_shell_completes_a_subcommand_and_a_flag() {
    let dir = tempfile::tempdir().expect("temp dir");
    for shell in ["bash", "zsh", "fish"] {
        // zsh finds a completion function by its file name on `fpath`.
        let name = if shell == "zsh" {
            "_chock".to_owned()
        } else {
            format!("chock.{shell}")
        };
        let script = dir.path().join(name);
        std::fs::write(&script, chock(&["completions", shell]).stdout).expect("write script");
        for (words, expected) in [
            (&["chock", "sy"][..], "sync"),
            (&["chock", "sync", "--ag"], "--agents"),
            (&["chock", "log", "show", "--fol"], "--follow"),
        ] {
            let Some(offered) = completed(shell, &script, words) else {
                eprintln!(
                    "{shell} is not installed: its completions are checked for their contents only"
                );
                break;
            };
            assert!(
                offered
                    .lines()
                    .any(|l| l.split('\t').next() == Some(expected)),
                "{shell} completes {words:?} with no `{expected}`:\n{offered}"
            );
        }
    }
}

#[test]
fn each_page_s_name_line_is_its_command_s_own_words() {
    let dir = tempfile::tempdir().expect("temp dir");
    chock(&["man", "--dir", dir.path().to_str().expect("utf-8 path")]);
    for (page, about) in [
        ("chock-policy-explain.1", "Answer one action"),
        ("chock-run.1", "own agent session on a task"),
        ("chock-status.1", "Show whether Chock is stopped"),
    ] {
        let source = std::fs::read_to_string(dir.path().join(page)).expect("page");
        let name = source
            .split(".SH NAME\n")
            .nth(1)
            .and_then(|rest| rest.lines().next())
            .unwrap_or_else(|| panic!("{page} has no NAME section"));
        assert!(name.contains(about), "{page}'s NAME line is `{name}`");
        let out = Command::new("man")
            .arg("-l")
            .arg(dir.path().join(page))
            .env("MANPAGER", "cat")
            .output();
        if let Ok(out) = out {
            // man justifies the lines: compare the words.
            let rendered = text(out.stdout);
            let words = rendered.split_whitespace().collect::<Vec<_>>().join(" ");
            assert!(
                out.status.success() && words.contains(about),
                "man -l {page}:\n{rendered}"
            );
        }
    }
}
