//! Programs that run a command given to them, each in its own way: a
//! subcommand first (`uv run`, `poetry run`, `pipx run`, `npm exec`,
//! `nix develop -c`, `direnv exec`), a command for a shell (`script -c`,
//! `parallel`, `tmux new-session`, `nix-shell --run`), or options that
//! always carry their value (`firejail --opt=v`).

use super::{Inner, NONE, Spec, by_spec, su, unreadable};
use crate::word::Value;

/// What `name` hands control to, when it is one of these.
pub(super) fn inner<'a>(name: &str, args: &'a [Value]) -> Option<Vec<Inner<'a>>> {
    Some(vec![match name {
        "runuser" => return Some(runuser(args)),
        "script" => script(args),
        "parallel" => parallel(args),
        "nix" => nix(args),
        "nix-shell" => nix_shell(args),
        "uv" => after_subcommand(name, args, &["run"], &UV_RUN),
        "poetry" => after_subcommand(name, args, &["run"], &POETRY_RUN),
        "pipx" => after_subcommand(name, args, &["run"], &PIPX_RUN),
        "npm" | "pnpm" => after_subcommand(name, args, &["exec", "x", "dlx"], &NPX),
        "npx" | "bunx" | "pnpx" => npx(name, args),
        "direnv" => direnv(args),
        "tmux" => return Some(tmux(args)),
        "screen" => screen(args),
        "firejail" => firejail(args),
        _ => return None,
    }])
}

const UV_RUN: Spec = Spec {
    short_flags: "qvs",
    short_with_value: "pw",
    long_flags: &[
        "--no-sync",
        "--locked",
        "--frozen",
        "--isolated",
        "--no-project",
        "--all-extras",
        "--all-groups",
        "--all-packages",
        "--no-dev",
        "--dev",
        "--only-dev",
        "--no-default-groups",
        "--active",
        "--no-active",
        "--no-editable",
        "--exact",
        "--script",
        "--gui-script",
        "--offline",
        "--no-cache",
        "--quiet",
        "--verbose",
        "--refresh",
        "--upgrade",
        "--reinstall",
        "--compile-bytecode",
        "--no-env-file",
        "--preview",
        "--native-tls",
        "--no-config",
        "--no-progress",
        "--no-python-downloads",
    ],
    long_with_value: &[
        "--with",
        "--with-editable",
        "--with-requirements",
        "--python",
        "--directory",
        "--project",
        "--package",
        "--extra",
        "--group",
        "--only-group",
        "--no-group",
        "--env-file",
        "--index",
        "--default-index",
        "--index-url",
        "--extra-index-url",
        "--find-links",
        "--config-file",
        "--cache-dir",
        "--color",
        "--resolution",
        "--prerelease",
        "--exclude-newer",
        "--link-mode",
    ],
    // `uv run -m MODULE` runs a Python module, not a program by name.
    no_program: &[],
    chdir: &["--directory"],
    ..NONE
};

const POETRY_RUN: Spec = Spec {
    short_flags: "qvn",
    short_with_value: "CP",
    long_flags: &[
        "--quiet",
        "--verbose",
        "--no-interaction",
        "--no-ansi",
        "--no-plugins",
        "--no-cache",
    ],
    long_with_value: &["--directory", "--project"],
    chdir: &["-C", "--directory"],
    ..NONE
};

const PIPX_RUN: Spec = Spec {
    short_flags: "qv",
    long_flags: &[
        "--no-cache",
        "--path",
        "--pypackages",
        "--system-site-packages",
        "--quiet",
        "--verbose",
    ],
    long_with_value: &[
        "--spec",
        "--python",
        "--pip-args",
        "--index-url",
        "--editable",
    ],
    ..NONE
};

const NPX: Spec = Spec {
    short_flags: "yq",
    short_with_value: "p",
    long_flags: &[
        "--yes",
        "--no",
        "--quiet",
        "--no-install",
        "--ignore-existing",
    ],
    long_with_value: &["--package", "--call", "--workspace", "--prefix"],
    ..NONE
};

/// `uv run ...`, `poetry run ...`: the program after the subcommand's
/// options; any other subcommand runs no program the command names.
fn after_subcommand<'a>(name: &str, args: &'a [Value], runs: &[&str], spec: &Spec) -> Inner<'a> {
    // Global options before the subcommand: flags only, or unreadable.
    let mut i = 0;
    while let Some(word) = args.get(i) {
        match word.literal() {
            Some(text) if text.starts_with('-') => {
                if text.contains('=') || text.starts_with("-q") || text.starts_with("-v") {
                    i += 1;
                } else {
                    return unreadable(format!(
                        "{name} has an option {text} before its subcommand that Chock does not read"
                    ));
                }
            }
            Some(_) => break,
            None => return unreadable(format!("a word after {name} is only known at run time")),
        }
    }
    match args.get(i).and_then(Value::literal) {
        Some(sub) if runs.contains(&sub) => {
            let rest = args.get(i + 1..).unwrap_or(&[]);
            if name == "uv"
                && rest
                    .iter()
                    .any(|w| matches!(w.literal(), Some("-m" | "--module")))
            {
                return unreadable("uv run -m runs a Python module");
            }
            call_or_program(name, spec, rest)
        }
        _ => Inner::Program {
            argv: &[],
            chdir: None,
        },
    }
}

/// `npx -c 'CMD'` runs a shell command; else the package's program.
fn call_or_program<'a>(name: &str, spec: &Spec, args: &'a [Value]) -> Inner<'a> {
    for (at, word) in args.iter().enumerate() {
        match word.literal() {
            Some("-c" | "--call") => {
                return match args.get(at + 1).and_then(Value::literal) {
                    Some(command) => Inner::Script(command.to_owned()),
                    None => unreadable(format!(
                        "the command {name} -c runs is only known at run time"
                    )),
                };
            }
            Some(text) if text.starts_with("--call=") => {
                return Inner::Script(text["--call=".len()..].to_owned());
            }
            Some(text) if !text.starts_with('-') => break,
            _ => {}
        }
    }
    by_spec(name, spec, args)
}

fn npx<'a>(name: &str, args: &'a [Value]) -> Inner<'a> {
    call_or_program(name, &NPX, args)
}

/// `runuser -u USER -- CMD ARGS` runs a program; `runuser USER -c TEXT` a
/// shell command, like su.
fn runuser(args: &[Value]) -> Vec<Inner<'_>> {
    let user_mode = args
        .iter()
        .any(|w| matches!(w.literal(), Some("-u" | "--user")) || w.text.starts_with("--user="));
    if !user_mode {
        return su(args);
    }
    let spec = Spec {
        short_flags: "lmpPf",
        short_with_value: "ugGws",
        long_flags: &["--login", "--preserve-environment", "--pty"],
        long_with_value: &[
            "--user",
            "--group",
            "--supp-group",
            "--whitelist-environment",
            "--shell",
        ],
        ..NONE
    };
    vec![by_spec("runuser", &spec, args)]
}

/// `script [options] [file]` runs a shell; `-c CMD` makes it run CMD.
fn script(args: &[Value]) -> Inner<'_> {
    const LONG_WITH_VALUE: &[&str] = &[
        "--echo",
        "--output-limit",
        "--log-timing",
        "--log-io",
        "--log-in",
        "--log-out",
        "--logging-format",
    ];
    let command = |value: Option<&Value>| match value.and_then(Value::literal) {
        Some(command) => Inner::Script(command.to_owned()),
        None => unreadable("the command script -c runs is only known at run time"),
    };
    let mut i = 0;
    while let Some(word) = args.get(i) {
        let Some(text) = word.literal() else {
            return unreadable("an argument of script is only known at run time");
        };
        if let Some(inline) = text.strip_prefix("--command=") {
            return Inner::Script(inline.to_owned());
        }
        if text == "--command" {
            return command(args.get(i + 1));
        }
        if LONG_WITH_VALUE.contains(&text) {
            i += 2;
            continue;
        }
        if let Some(letters) = text.strip_prefix('-').filter(|l| !l.starts_with('-')) {
            // Bundled short options: `-qc CMD`, `-qcCMD`, `-E never`.
            let mut used = 1;
            for (at, letter) in letters.char_indices() {
                let rest = &letters[at + 1..];
                if letter == 'c' {
                    return if rest.is_empty() {
                        command(args.get(i + 1))
                    } else {
                        Inner::Script(rest.to_owned())
                    };
                }
                if "EoTBIOm".contains(letter) {
                    if rest.is_empty() {
                        used = 2;
                    }
                    break;
                }
                if letter == 't' {
                    // `-t[FILE]`: the file only attached.
                    break;
                }
            }
            i += used;
            continue;
        }
        i += 1;
    }
    // An interactive shell: it reads what a person types.
    Inner::Program {
        argv: &[],
        chdir: None,
    }
}

/// `parallel [options] COMMAND ::: ARGS`: GNU parallel runs COMMAND's
/// words, joined, through a shell; with no command it runs its input.
fn parallel(args: &[Value]) -> Inner<'_> {
    const WITH_VALUE: &[&str] = &[
        "-j",
        "--jobs",
        "-P",
        "--max-procs",
        "-S",
        "--sshlogin",
        "-a",
        "--arg-file",
        "-d",
        "--delimiter",
        "-E",
        "-I",
        "--colsep",
        "-C",
        "-n",
        "--max-args",
        "-N",
        "-L",
        "--max-lines",
        "--results",
        "--joblog",
        "--tmpdir",
        "--delay",
        "--timeout",
        "--halt",
        "--retries",
        "--tag-string",
        "--workdir",
        "--wd",
        "--basefile",
        "--memfree",
        "--load",
        "--header",
        "--sshloginfile",
        "--slf",
    ];
    const FLAGS: &[&str] = &[
        "-k",
        "--keep-order",
        "-u",
        "--ungroup",
        "--group",
        "--line-buffer",
        "--lb",
        "-v",
        "--verbose",
        "--eta",
        "--progress",
        "--bar",
        "--dry-run",
        "--dryrun",
        "--tag",
        "-0",
        "--null",
        "-X",
        "--xargs",
        "-m",
        "--no-notice",
        "--will-cite",
        "--halt-on-error",
        "--citation",
        "-r",
        "--no-run-if-empty",
        "--nonall",
        "--onall",
        "--pipe",
        "--quote",
        "-q",
        "--shuf",
        "--silent",
        "--plain",
    ];
    let mut i = 0;
    while let Some(word) = args.get(i) {
        let Some(text) = word.literal() else {
            return unreadable("an argument of parallel is only known at run time");
        };
        if !text.starts_with('-') || text.starts_with(":::") {
            break;
        }
        let option = text.split('=').next().unwrap_or(text);
        if WITH_VALUE.contains(&option) && !text.contains('=') {
            i += 2;
        } else if WITH_VALUE.contains(&option) || FLAGS.contains(&text) || short_with_number(text) {
            i += 1;
        } else {
            return unreadable(format!("parallel has an option {text} Chock does not know"));
        }
    }
    let mut words = Vec::new();
    for word in args.get(i..).unwrap_or(&[]) {
        match word.literal() {
            Some(t) if t.starts_with(":::") => break,
            Some(t) => words.push(t.to_owned()),
            None => return unreadable("the command parallel runs is only known at run time"),
        }
    }
    if words.is_empty() {
        return unreadable("parallel runs the commands it reads from its input");
    }
    Inner::Script(words.join(" "))
}

/// `-j4`, `-n1`: a short option with its number attached.
fn short_with_number(text: &str) -> bool {
    let mut chars = text.chars();
    chars.next() == Some('-')
        && chars.next().is_some_and(|c| "jPnNL".contains(c))
        && chars.clone().next().is_some()
        && chars.all(|c| c.is_ascii_digit())
}

/// `nix develop [...] -c CMD ARGS`, `nix shell PKGS -c CMD ARGS`; `nix run`
/// runs a flake's program, which the command does not name.
fn nix(args: &[Value]) -> Inner<'_> {
    let sub = args
        .iter()
        .find_map(|w| w.literal().filter(|t| !t.starts_with('-')));
    match sub {
        Some("develop" | "shell" | "dev-shell") => {
            for (at, word) in args.iter().enumerate() {
                if matches!(word.literal(), Some("-c" | "--command")) {
                    return Inner::Program {
                        argv: args.get(at + 1..).unwrap_or(&[]),
                        chdir: None,
                    };
                }
            }
            Inner::Program {
                argv: &[],
                chdir: None,
            }
        }
        Some("run") => {
            unreadable("nix run runs a program of a flake, which the command does not name")
        }
        _ => Inner::Program {
            argv: &[],
            chdir: None,
        },
    }
}

/// `nix-shell --run CMD`, `--command CMD`: a shell command.
fn nix_shell(args: &[Value]) -> Inner<'_> {
    for (at, word) in args.iter().enumerate() {
        if matches!(word.literal(), Some("--run" | "--command")) {
            return match args.get(at + 1).and_then(Value::literal) {
                Some(command) => Inner::Script(command.to_owned()),
                None => unreadable("the command nix-shell runs is only known at run time"),
            };
        }
    }
    Inner::Program {
        argv: &[],
        chdir: None,
    }
}

/// `direnv exec DIR CMD ARGS`: CMD runs in DIR's environment.
fn direnv(args: &[Value]) -> Inner<'_> {
    match args.first().and_then(Value::literal) {
        Some("exec") => Inner::Program {
            argv: args.get(2..).unwrap_or(&[]),
            chdir: None,
        },
        _ => Inner::Program {
            argv: &[],
            chdir: None,
        },
    }
}

/// tmux commands (separated by a `;` word) that run a shell command: its
/// words after the command's options, for `sh -c`. `send-keys` types
/// into a shell, which cannot be read.
fn tmux(args: &[Value]) -> Vec<Inner<'_>> {
    let mut inners = Vec::new();
    // Global options: `-c COMMAND` runs a command; others take values or not.
    let mut i = 0;
    while let Some(word) = args.get(i) {
        let Some(text) = word.literal() else {
            return vec![unreadable("an argument of tmux is only known at run time")];
        };
        if !text.starts_with('-') {
            break;
        }
        match text {
            "-c" => {
                inners.push(match args.get(i + 1).and_then(Value::literal) {
                    Some(command) => Inner::Script(command.to_owned()),
                    None => unreadable("the command tmux -c runs is only known at run time"),
                });
                return inners;
            }
            "-f" | "-L" | "-S" | "-T" => i += 2,
            _ => i += 1,
        }
    }
    let rest = args.get(i..).unwrap_or(&[]);
    for command in rest.split(|w| matches!(w.literal(), Some(";" | "\\;"))) {
        let Some((sub, words)) = command.split_first() else {
            continue;
        };
        let Some(sub) = sub.literal() else {
            inners.push(unreadable("a tmux command is only known at run time"));
            continue;
        };
        let (flags, with_value) = match sub {
            "new-session" | "new" => ("ADEPXd", "cefFnstxy"),
            "new-window" | "neww" => ("abdkPS", "ceFnt"),
            "split-window" | "splitw" => ("bdfhIvPZ", "celtF"),
            "respawn-pane" | "respawnp" | "respawn-window" | "respawnw" => ("k", "cet"),
            "run-shell" | "run" => ("bC", "cdt"),
            "display-popup" | "popup" => ("BCEk", "bcdehsStTwxy"),
            "send-keys" | "send" | "if-shell" | "if" | "pipe-pane" | "pipep" | "source-file"
            | "source" => {
                inners.push(unreadable(format!(
                    "tmux {sub} runs text Chock cannot read"
                )));
                continue;
            }
            _ => continue,
        };
        let spec = Spec {
            short_flags: flags,
            short_with_value: with_value,
            ..NONE
        };
        match by_spec("tmux", &spec, words) {
            Inner::Program { argv, .. } => {
                let mut text = Vec::new();
                for word in argv {
                    match word.literal() {
                        Some(t) => text.push(t.to_owned()),
                        None => {
                            inners.push(unreadable(
                                "the command tmux runs is only known at run time",
                            ));
                            text.clear();
                            break;
                        }
                    }
                }
                if !text.is_empty() {
                    inners.push(Inner::Script(text.join(" ")));
                }
            }
            other => inners.push(other),
        }
    }
    inners
}

/// `screen [options] [CMD ARGS]`; `-X` sends a command to a session.
fn screen(args: &[Value]) -> Inner<'_> {
    if args
        .iter()
        .any(|w| matches!(w.literal(), Some("-X" | "-ls" | "-list" | "-wipe")))
    {
        return if args.iter().any(|w| w.literal() == Some("-X")) {
            unreadable("screen -X sends a command to a session")
        } else {
            Inner::Program {
                argv: &[],
                chdir: None,
            }
        };
    }
    let spec = Spec {
        short_flags: "aAdDfFiLlmOqrRUx",
        short_with_value: "cehpsStT",
        ..NONE
    };
    by_spec("screen", &spec, args)
}

/// `firejail [--option[=value]]... CMD ARGS`: firejail's options carry
/// their value after `=`, so the first word without `-` is the program.
fn firejail(args: &[Value]) -> Inner<'_> {
    let mut i = 0;
    while let Some(word) = args.get(i) {
        match word.literal() {
            Some("--") => {
                i += 1;
                break;
            }
            Some(text) if text.starts_with('-') => i += 1,
            Some(_) => break,
            None => return unreadable("an argument of firejail is only known at run time"),
        }
    }
    Inner::Program {
        argv: args.get(i..).unwrap_or(&[]),
        chdir: None,
    }
}
