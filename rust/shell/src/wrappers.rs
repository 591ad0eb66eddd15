//! Programs that run another program: `env`, `sudo`, `xargs`, `timeout`,
//! `find -exec`, `sh -c` and their kind. Chock looks through each to the
//! program it runs, so `sudo rm -rf /` is decided as `rm` as well as `sudo`.
//!
//! Each wrapper's options are read from a table of the options it has. An
//! option the table does not know could take a value, and then the word read
//! as the program would be that value instead; such a command is reported as
//! unreadable rather than guessed at.

mod launchers;

use crate::word::Value;

/// What a wrapper hands control to.
#[derive(Debug, PartialEq, Eq)]
pub enum Inner<'a> {
    /// Another program: its argument vector, starting with its name, and the
    /// directory the wrapper moves to first (`env -C DIR`), when it moves.
    Program {
        argv: &'a [Value],
        chdir: Option<&'a Value>,
    },
    /// Text a shell runs (`sh -c TEXT`, `su -c TEXT`, `watch TEXT`).
    Script(String),
    /// A script file a shell runs (`bash build.sh`): decided as a program.
    ScriptFile(&'a Value),
    /// A shell that reads its commands from standard input.
    StdinScript,
    /// Something the reader cannot be certain of, and why.
    Unreadable(String),
}

/// The shells whose `-c TEXT` is read as a script.
const SHELLS: &[&str] = &[
    "sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "yash", "posh",
];

/// Environment variables whose value decides which code runs: a command
/// that sets one cannot be read with certainty.
const CODE_VARIABLES: &[&str] = &[
    "PATH",
    "LD_PRELOAD",
    "LD_AUDIT",
    "LD_LIBRARY_PATH",
    "BASH_ENV",
    "ENV",
    "PROMPT_COMMAND",
    "SHELLOPTS",
    "BASHOPTS",
    // Prompts are expanded, `$( )` and all, when shown: PS4 before each
    // command under `set -x`, PS0 to PS2 in an interactive shell.
    "PS0",
    "PS1",
    "PS2",
    "PS4",
];

/// Whether `name` (a literal program name or path) is a shell whose `-c`
/// text Chock reads.
pub fn is_shell(name: &str) -> bool {
    SHELLS.contains(&name.rsplit('/').next().unwrap_or(name))
}

/// Whether assigning this variable changes which code runs.
pub fn is_code_variable(name: &str) -> bool {
    CODE_VARIABLES.contains(&name) || name.starts_with("BASH_FUNC_")
}

/// The option table of one wrapper.
#[derive(Clone, Copy)]
struct Spec {
    /// Short options without a value.
    short_flags: &'static str,
    /// Short options that take a value (the rest of the word, or the next word).
    short_with_value: &'static str,
    /// Long options without a value.
    long_flags: &'static [&'static str],
    /// Long options that take a value (`--name=v` or `--name v`).
    long_with_value: &'static [&'static str],
    /// Options after which the wrapper runs no program (`command -v`).
    no_program: &'static [&'static str],
    /// Options that name the directory the program starts in.
    chdir: &'static [&'static str],
    /// Words between the options and the program (timeout's duration).
    positionals: usize,
    /// Whether NAME=VALUE words may come before the program (env, sudo).
    assignments: bool,
}

const NONE: Spec = Spec {
    short_flags: "",
    short_with_value: "",
    long_flags: &[],
    long_with_value: &[],
    no_program: &[],
    chdir: &[],
    positionals: 0,
    assignments: false,
};

fn spec(name: &str) -> Option<Spec> {
    Some(match name {
        "env" => Spec {
            short_flags: "i0v",
            short_with_value: "uCS",
            long_flags: &["--ignore-environment", "--null", "--debug"],
            long_with_value: &[
                "--unset",
                "--chdir",
                "--split-string",
                "--block-signal",
                "--default-signal",
                "--ignore-signal",
            ],
            chdir: &["-C", "--chdir"],
            assignments: true,
            ..NONE
        },
        "sudo" => Spec {
            short_flags: "AbEHiKklnPSsVv",
            short_with_value: "CDghpRrTtUu",
            long_flags: &[
                "--askpass",
                "--background",
                "--preserve-env",
                "--set-home",
                "--login",
                "--reset-timestamp",
                "--remove-timestamp",
                "--list",
                "--non-interactive",
                "--preserve-groups",
                "--stdin",
                "--shell",
                "--validate",
            ],
            long_with_value: &[
                "--close-from",
                "--chdir",
                "--group",
                "--host",
                "--prompt",
                "--chroot",
                "--role",
                "--type",
                "--command-timeout",
                "--other-user",
                "--user",
            ],
            no_program: &["-l", "--list", "-v", "--validate", "-k", "-K", "-V"],
            chdir: &["-D", "--chdir"],
            assignments: true,
            ..NONE
        },
        "doas" => Spec {
            short_flags: "nsL",
            short_with_value: "uC",
            no_program: &["-L", "-C"],
            ..NONE
        },
        "nice" => Spec {
            short_with_value: "n",
            long_with_value: &["--adjustment"],
            ..NONE
        },
        "nohup" => NONE,
        "setsid" => Spec {
            short_flags: "cfw",
            long_flags: &["--ctty", "--fork", "--wait"],
            ..NONE
        },
        "time" => Spec {
            short_flags: "pav",
            short_with_value: "fo",
            long_flags: &["--portability", "--append", "--verbose", "--quiet"],
            long_with_value: &["--format", "--output"],
            ..NONE
        },
        "timeout" => Spec {
            short_flags: "v",
            short_with_value: "sk",
            long_flags: &["--foreground", "--preserve-status", "--verbose"],
            long_with_value: &["--signal", "--kill-after"],
            positionals: 1,
            ..NONE
        },
        "stdbuf" => Spec {
            short_with_value: "ioe",
            long_with_value: &["--input", "--output", "--error"],
            ..NONE
        },
        "ionice" => Spec {
            short_flags: "t",
            short_with_value: "cnpPu",
            long_flags: &["--ignore"],
            long_with_value: &["--class", "--classdata", "--pid", "--pgid", "--uid"],
            no_program: &["-p", "--pid", "-P", "--pgid", "-u", "--uid"],
            ..NONE
        },
        "taskset" => Spec {
            short_flags: "ac",
            long_flags: &["--all-tasks", "--cpu-list"],
            no_program: &["-p", "--pid"],
            positionals: 1,
            ..NONE
        },
        "command" => Spec {
            short_flags: "pvV",
            no_program: &["-v", "-V"],
            ..NONE
        },
        "exec" => Spec {
            short_flags: "cl",
            short_with_value: "a",
            ..NONE
        },
        "builtin" | "source" | "." => NONE,
        "pkexec" => Spec {
            long_flags: &["--disable-internal-agent", "--keep-cwd"],
            long_with_value: &["--user"],
            no_program: &["--version", "--help"],
            ..NONE
        },
        "chroot" => Spec {
            long_flags: &["--skip-chdir"],
            long_with_value: &["--userspec", "--groups"],
            positionals: 1,
            ..NONE
        },
        "strace" => Spec {
            short_flags: "cCdDfFhiknqrtTvVwxyzZ",
            short_with_value: "abeEIoOpPsSuUX",
            long_flags: &[
                "--follow-forks",
                "--output-separately",
                "--summary-only",
                "--summary",
                "--summary-wall-clock",
                "--no-abbrev",
                "--verbose",
                "--raw",
                "--instruction-pointer",
                "--stack-trace",
                "--seccomp-bpf",
                "--syscall-times",
                "--relative-timestamps",
                "--absolute-timestamps",
                "--successful-only",
                "--failed-only",
                "--quiet",
                "--decode-fds",
                "--decode-pids",
                "--debug",
                "--daemonize",
            ],
            long_with_value: &[
                "--trace",
                "--signal",
                "--status",
                "--output",
                "--attach",
                "--string-limit",
                "--user",
                "--env",
                "--trace-path",
                "--columns",
                "--summary-columns",
                "--summary-sort-by",
                "--abbrev",
                "--read",
                "--write",
                "--inject",
                "--fault",
                "--const-print-style",
            ],
            ..NONE
        },
        "ltrace" => Spec {
            short_flags: "bcCfhiLrStTV",
            short_with_value: "aAeDFlnopsuwx",
            long_flags: &["--demangle", "--help", "--version", "--no-signals"],
            long_with_value: &["--align", "--indent", "--output", "--library"],
            ..NONE
        },
        "unbuffer" => Spec {
            short_flags: "p",
            ..NONE
        },
        "chrt" => Spec {
            short_flags: "abdefiorRv",
            short_with_value: "TPD",
            long_flags: &[
                "--all-tasks",
                "--batch",
                "--deadline",
                "--fifo",
                "--idle",
                "--other",
                "--rr",
                "--reset-on-fork",
                "--verbose",
            ],
            long_with_value: &["--sched-runtime", "--sched-period", "--sched-deadline"],
            no_program: &["-m", "--max", "-p", "--pid"],
            positionals: 1,
            ..NONE
        },
        "systemd-run" => Spec {
            short_flags: "rtPqGd",
            short_with_value: "upEMH",
            long_flags: &[
                "--user",
                "--system",
                "--scope",
                "--remain-after-exit",
                "--send-sighup",
                "--pty",
                "--pipe",
                "--quiet",
                "--wait",
                "--collect",
                "--same-dir",
                "--no-block",
                "--no-ask-password",
                "--on-clock-change",
                "--on-timezone-change",
                "--slice-inherit",
                "--ignore-failure",
            ],
            long_with_value: &[
                "--unit",
                "--property",
                "--description",
                "--slice",
                "--setenv",
                "--uid",
                "--gid",
                "--nice",
                "--working-directory",
                "--machine",
                "--host",
                "--service-type",
                "--on-active",
                "--on-boot",
                "--on-startup",
                "--on-unit-active",
                "--on-unit-inactive",
                "--on-calendar",
                "--timer-property",
                "--path-property",
                "--socket-property",
                "--expand-environment",
                "--json",
            ],
            chdir: &["--working-directory"],
            ..NONE
        },
        "xargs" => Spec {
            short_flags: "0rtpxo",
            short_with_value: "adEIiLlnPs",
            long_flags: &[
                "--null",
                "--no-run-if-empty",
                "--verbose",
                "--interactive",
                "--exit",
                "--open-tty",
            ],
            long_with_value: &[
                "--arg-file",
                "--delimiter",
                "--eof",
                "--replace",
                "--max-lines",
                "--max-args",
                "--max-procs",
                "--max-chars",
                "--process-slot-var",
            ],
            ..NONE
        },
        _ => return None,
    })
}

/// What `name` (a literal program name, or its last path part) hands control
/// to, given the words after it. `None`: the program is not a wrapper.
pub fn inner<'a>(name: &str, args: &'a [Value]) -> Option<Vec<Inner<'a>>> {
    let base = name.rsplit('/').next().unwrap_or(name);
    if SHELLS.contains(&base) {
        return Some(vec![shell(base, args)]);
    }
    if let Some(inners) = launchers::inner(base, args) {
        return Some(inners);
    }
    match base {
        "find" => return Some(find(args)),
        "watch" => return Some(vec![watch(args)]),
        "su" => return Some(su(args)),
        "flock" => return Some(vec![flock(args)]),
        "busybox" => return Some(busybox(args)),
        _ => {}
    }
    let spec = spec(base)?;
    Some(vec![by_spec(base, &spec, args)])
}

fn unreadable(what: impl Into<String>) -> Inner<'static> {
    Inner::Unreadable(what.into())
}

/// Splits a wrapper's own options from the program it runs, by its table.
fn by_spec<'a>(name: &str, spec: &Spec, args: &'a [Value]) -> Inner<'a> {
    let mut i = 0;
    let mut chdir = None;
    while let Some(word) = args.get(i) {
        let Some(text) = word.literal() else {
            return unreadable(format!("an option of {name} is only known at run time"));
        };
        if text == "--" {
            i += 1;
            break;
        }
        if spec.no_program.contains(&text) {
            return Inner::Program {
                argv: &[],
                chdir: None,
            };
        }
        if let Some(long) = text.strip_prefix("--").filter(|l| !l.is_empty()) {
            let option = format!("--{}", long.split('=').next().unwrap_or(long));
            if spec.long_with_value.contains(&option.as_str()) {
                let (value, used) = if long.contains('=') {
                    (None, 1)
                } else {
                    (args.get(i + 1), 2)
                };
                if spec.chdir.contains(&option.as_str()) {
                    match value {
                        Some(v) => chdir = Some(v),
                        None => {
                            return unreadable(format!("{name} {option}= moves to a directory"));
                        }
                    }
                }
                if option == "--split-string" {
                    return split_string(name, long, value);
                }
                i += used;
                continue;
            }
            if spec.long_flags.contains(&option.as_str()) {
                i += 1;
                continue;
            }
            return unknown_option(name, &option);
        }
        if text.len() > 1 && text.starts_with('-') {
            match short_options(name, spec, text) {
                Short::Flags => i += 1,
                Short::Value { next_word, option } => {
                    let value = if next_word { args.get(i + 1) } else { None };
                    if spec.chdir.contains(&option.as_str()) {
                        match value {
                            Some(v) => chdir = Some(v),
                            None => {
                                return unreadable(format!("{name} {option} moves to a directory"));
                            }
                        }
                    }
                    if name == "env" && option == "-S" {
                        return match value {
                            Some(v) => split_string(name, "split-string", Some(v)),
                            None => unreadable("env -S splits a string Chock cannot read"),
                        };
                    }
                    i += if next_word { 2 } else { 1 };
                }
                Short::NoProgram => {
                    return Inner::Program {
                        argv: &[],
                        chdir: None,
                    };
                }
                Short::Unknown(option) => return unknown_option(name, &option),
            }
            continue;
        }
        break;
    }
    if spec.assignments {
        while let Some(word) = args.get(i) {
            match word.literal() {
                Some(text) => match assignment_name(text) {
                    Some(var) if is_code_variable(var) => {
                        return unreadable(format!(
                            "{name} sets {var}, which changes which code runs"
                        ));
                    }
                    Some(_) => i += 1,
                    None => break,
                },
                // A word built at run time could be an assignment or the program.
                None => {
                    return unreadable(format!("a word after {name} is only known at run time"));
                }
            }
        }
    }
    i += spec.positionals;
    Inner::Program {
        argv: args.get(i..).unwrap_or(&[]),
        chdir,
    }
}

enum Short {
    Flags,
    Value {
        next_word: bool,
        option: String,
    },
    NoProgram,
    /// An option the wrapper's table does not name.
    Unknown(String),
}

fn unknown_option<'a>(name: &str, option: &str) -> Inner<'a> {
    unreadable(format!("{name} has an option {option} Chock does not know"))
}

/// Reads one word of bundled short options (`-iu NAME`, `-n10`).
fn short_options(name: &str, spec: &Spec, text: &str) -> Short {
    let letters = &text[1..];
    for (at, letter) in letters.char_indices() {
        let option = format!("-{letter}");
        if spec.no_program.contains(&option.as_str()) {
            return Short::NoProgram;
        }
        if spec.short_flags.contains(letter) {
            continue;
        }
        if spec.short_with_value.contains(letter) {
            let rest = &letters[at + letter.len_utf8()..];
            return Short::Value {
                next_word: rest.is_empty(),
                option,
            };
        }
        // `nice -10 cmd`: an old spelling of `-n 10`.
        if name == "nice" && letters.bytes().all(|b| b.is_ascii_digit()) {
            return Short::Flags;
        }
        return Short::Unknown(option);
    }
    Short::Flags
}

/// `env -S 'prog args'`: the string is split into the program and its arguments.
fn split_string<'a>(name: &str, long: &str, value: Option<&'a Value>) -> Inner<'a> {
    let inline = long.split_once('=').map(|(_, v)| v.to_owned());
    match inline.or_else(|| value.and_then(|v| v.literal().map(str::to_owned))) {
        Some(text) => Inner::Script(text),
        None => unreadable(format!("{name} splits a string Chock cannot read")),
    }
}

/// `NAME=VALUE` where NAME is a shell identifier.
pub fn assignment_name(text: &str) -> Option<&str> {
    let (name, _) = text.split_once('=')?;
    let mut chars = name.chars();
    let first = chars.next()?;
    if (first.is_ascii_alphabetic() || first == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
    {
        Some(name)
    } else {
        None
    }
}

/// `sh -c TEXT`, `bash FILE`, `bash` reading standard input.
fn shell<'a>(name: &str, args: &'a [Value]) -> Inner<'a> {
    let mut command_mode = false;
    let mut i = 0;
    while let Some(word) = args.get(i) {
        let Some(text) = word.literal() else {
            return unreadable(format!("an argument of {name} is only known at run time"));
        };
        if text == "--" || text == "-" {
            i += 1;
            break;
        }
        match text {
            "--rcfile" | "--init-file" | "-o" | "+o" | "-O" | "+O" => {
                i += 2;
                continue;
            }
            _ => {}
        }
        if text.starts_with("--") {
            // --login, --norc, --noprofile, --posix, --restricted, ...
            i += 1;
            continue;
        }
        if (text.starts_with('-') || text.starts_with('+')) && text.len() > 1 {
            if text[1..].contains('c') && text.starts_with('-') {
                command_mode = true;
            }
            if text[1..].contains('s') && text.starts_with('-') {
                return Inner::StdinScript;
            }
            // A bundled `o` or `O` takes the next word as its value.
            if text[1..].contains(['o', 'O']) {
                i += 1;
            }
            i += 1;
            continue;
        }
        break;
    }
    match args.get(i) {
        None if command_mode => unreadable(format!("{name} -c has no command text")),
        None => Inner::StdinScript,
        Some(first) if command_mode => match first.literal() {
            Some(script) => Inner::Script(script.to_owned()),
            None => unreadable(format!("the text {name} -c runs is only known at run time")),
        },
        Some(file) => Inner::ScriptFile(file),
    }
}

/// `find ... -exec PROG ARGS ;` and its kin, each run on its own.
fn find(args: &[Value]) -> Vec<Inner<'_>> {
    let mut inners = Vec::new();
    let mut i = 0;
    while let Some(word) = args.get(i) {
        match word.literal() {
            Some("-exec" | "-execdir" | "-ok" | "-okdir") => {
                let start = i + 1;
                let mut end = start;
                while let Some(arg) = args.get(end) {
                    if matches!(arg.literal(), Some(";" | "+")) {
                        break;
                    }
                    end += 1;
                }
                inners.push(Inner::Program {
                    argv: args.get(start..end).unwrap_or(&[]),
                    chdir: None,
                });
                i = end + 1;
            }
            Some(_) => i += 1,
            None => {
                // An expression built at run time could hold an -exec.
                inners.push(unreadable("an argument of find is only known at run time"));
                i += 1;
            }
        }
    }
    inners
}

/// `watch [options] COMMAND...`: the words are joined and run by `sh -c`
/// (with `-x`, run as they are).
fn watch(args: &[Value]) -> Inner<'_> {
    let mut exec = false;
    let mut i = 0;
    while let Some(word) = args.get(i) {
        let Some(text) = word.literal() else {
            return unreadable("an argument of watch is only known at run time");
        };
        match text {
            "--" => {
                i += 1;
                break;
            }
            "-n" | "--interval" | "-q" | "--equexit" => i += 2,
            "-x" | "--exec" => {
                exec = true;
                i += 1;
            }
            t if t.starts_with('-') && t.len() > 1 => {
                let known = t.starts_with("--")
                    || t.starts_with("-n")
                    || t[1..].chars().all(|c| "bcdeEgprtwC".contains(c));
                if known {
                    i += 1;
                } else {
                    return unreadable(format!("watch has an option {t} Chock does not know"));
                }
            }
            _ => break,
        }
    }
    let rest = args.get(i..).unwrap_or(&[]);
    if exec {
        return Inner::Program {
            argv: rest,
            chdir: None,
        };
    }
    let mut words = Vec::new();
    for word in rest {
        match word.literal() {
            Some(text) => words.push(text.to_owned()),
            None => return unreadable("the command watch runs is only known at run time"),
        }
    }
    Inner::Script(words.join(" "))
}

/// `su [options] [user] -c TEXT`; without `-c`, su starts a login shell.
pub(crate) fn su(args: &[Value]) -> Vec<Inner<'_>> {
    let mut i = 0;
    while let Some(word) = args.get(i) {
        let Some(text) = word.literal() else {
            return vec![unreadable("an argument of su is only known at run time")];
        };
        if let Some(script) = text.strip_prefix("--command=") {
            return vec![Inner::Script(script.to_owned())];
        }
        let command = |value: Option<&Value>| match value.and_then(Value::literal) {
            Some(script) => vec![Inner::Script(script.to_owned())],
            None => vec![unreadable("the text su -c runs is only known at run time")],
        };
        if matches!(text, "--command" | "--session-command") {
            return command(args.get(i + 1));
        }
        if let Some(letters) = text.strip_prefix('-').filter(|l| !l.starts_with('-')) {
            // Bundled short options: `-lc TEXT`, `-cTEXT`; -g, -G, -s, -w take a value.
            for (at, letter) in letters.char_indices() {
                let rest = &letters[at + 1..];
                if matches!(letter, 'c' | 'C') {
                    return if rest.is_empty() {
                        command(args.get(i + 1))
                    } else {
                        vec![Inner::Script(rest.to_owned())]
                    };
                }
                if "gGsw".contains(letter) {
                    if rest.is_empty() {
                        i += 1;
                    }
                    break;
                }
            }
        }
        i += 1;
    }
    Vec::new()
}

/// `flock [options] FILE PROG ARGS`, `flock FILE -c TEXT`, `flock FD`.
fn flock(args: &[Value]) -> Inner<'_> {
    let mut i = 0;
    while let Some(word) = args.get(i) {
        let Some(text) = word.literal() else {
            return unreadable("an argument of flock is only known at run time");
        };
        match text {
            "-w" | "--wait" | "--timeout" | "-E" | "--conflict-exit-code" => i += 2,
            t if t.starts_with('-') && t.len() > 1 => i += 1,
            _ => break,
        }
    }
    // The lock file (or descriptor), then the command.
    let rest = args.get(i + 1..).unwrap_or(&[]);
    match rest.first().and_then(Value::literal) {
        Some("-c" | "--command") => match rest.get(1).and_then(Value::literal) {
            Some(script) => Inner::Script(script.to_owned()),
            None => unreadable("the text flock -c runs is only known at run time"),
        },
        _ => Inner::Program {
            argv: rest,
            chdir: None,
        },
    }
}

/// `busybox APPLET ARGS`: the applet is the program.
fn busybox(args: &[Value]) -> Vec<Inner<'_>> {
    match args.first().and_then(Value::literal) {
        Some(applet) if !applet.starts_with('-') => {
            let rest = args.get(1..).unwrap_or(&[]);
            match inner(applet, rest) {
                Some(inners) => inners,
                None => vec![Inner::Program {
                    argv: args,
                    chdir: None,
                }],
            }
        }
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(line: &str) -> Vec<Value> {
        line.split_whitespace()
            .map(|w| Value {
                text: w.to_owned(),
                certain: w != "$X",
            })
            .collect()
    }

    fn program_of(line: &str) -> Option<String> {
        let argv = words(line);
        let (name, args) = argv.split_first()?;
        let inners = inner(&name.text, args)?;
        match inners.first()? {
            Inner::Program { argv, .. } => argv.first().map(|v| v.text.clone()),
            other => Some(format!("{other:?}")),
        }
    }

    #[test]
    fn wrappers_are_looked_through() {
        assert_eq!(program_of("sudo -u root rm -rf /").as_deref(), Some("rm"));
        assert_eq!(program_of("sudo -E rm x").as_deref(), Some("rm"));
        assert_eq!(program_of("env -i FOO=1 BAR=2 rm x").as_deref(), Some("rm"));
        assert_eq!(program_of("env -u HOME rm x").as_deref(), Some("rm"));
        assert_eq!(program_of("nice -n 10 rm").as_deref(), Some("rm"));
        assert_eq!(program_of("nice -10 rm").as_deref(), Some("rm"));
        assert_eq!(program_of("timeout -s KILL 5 rm x").as_deref(), Some("rm"));
        assert_eq!(program_of("xargs -0 -n1 rm").as_deref(), Some("rm"));
        assert_eq!(program_of("xargs -I{} rm {}").as_deref(), Some("rm"));
        assert_eq!(program_of("nohup rm x").as_deref(), Some("rm"));
        assert_eq!(program_of("stdbuf -oL rm").as_deref(), Some("rm"));
        assert_eq!(program_of("/usr/bin/env rm").as_deref(), Some("rm"));
        assert_eq!(program_of("busybox rm x").as_deref(), Some("rm"));
    }

    #[test]
    fn an_unknown_option_is_not_guessed_at() {
        let shown = program_of("sudo --frobnicate x rm").unwrap_or_default();
        assert!(shown.contains("Unreadable"), "{shown}");
    }

    #[test]
    fn a_code_variable_makes_the_command_unreadable() {
        let shown = program_of("env PATH=/tmp/evil ls").unwrap_or_default();
        assert!(shown.contains("PATH"), "{shown}");
        let shown = program_of("sudo LD_PRELOAD=/x.so ls").unwrap_or_default();
        assert!(shown.contains("LD_PRELOAD"), "{shown}");
    }

    #[test]
    fn a_shell_with_c_runs_its_text() {
        let argv = vec![
            Value {
                text: "-c".into(),
                certain: true,
            },
            Value {
                text: "rm -rf ~".into(),
                certain: true,
            },
        ];
        assert_eq!(
            inner("bash", &argv),
            Some(vec![Inner::Script("rm -rf ~".into())])
        );
        assert_eq!(inner("sh", &[]), Some(vec![Inner::StdinScript]));
        let file = words("build.sh");
        assert!(matches!(
            inner("bash", &file).as_deref(),
            Some([Inner::ScriptFile(_)])
        ));
        let dynamic = words("-c $X");
        assert!(matches!(
            inner("sh", &dynamic).as_deref(),
            Some([Inner::Unreadable(_)])
        ));
    }

    #[test]
    fn find_exec_runs_each_program() {
        let argv = words("find . -name x -exec rm {} ; -execdir shred -u {} +");
        let inners = inner("find", &argv).unwrap_or_default();
        let programs: Vec<_> = inners
            .iter()
            .filter_map(|i| match i {
                Inner::Program { argv, .. } => argv.first().map(|v| v.text.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(programs, vec!["rm", "shred"]);
    }

    #[test]
    fn lookups_run_nothing() {
        assert_eq!(program_of("command -v rm"), None);
        assert_eq!(program_of("command rm x").as_deref(), Some("rm"));
    }

    #[test]
    fn watch_joins_its_words_for_a_shell() {
        let argv = words("-n 2 rm -rf x");
        assert_eq!(
            inner("watch", &argv),
            Some(vec![Inner::Script("rm -rf x".into())])
        );
    }

    #[test]
    fn env_chdir_is_reported() {
        let argv = words("-C /tmp ./run.sh");
        match inner("env", &argv).as_deref() {
            Some([Inner::Program { argv, chdir }]) => {
                assert_eq!(argv.first().map(|v| v.text.as_str()), Some("./run.sh"));
                assert_eq!(chdir.map(|v| v.text.as_str()), Some("/tmp"));
            }
            other => panic!("{other:?}"),
        }
    }
}
