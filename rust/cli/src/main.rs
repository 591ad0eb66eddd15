//! The `chock` binary: parses the command line and hands each command to the
//! crate that owns its work. Nothing here decides policy, evaluates Nix or
//! builds a sandbox; a command module only turns arguments into a library
//! call and the result into output and an exit code.

#![forbid(unsafe_code)]

#[macro_use]
mod out;

mod ask;
mod commands;
mod exit;
mod inputs;
mod pager;
mod progress;

use std::process::ExitCode;

use clap::{CommandFactory, FromArgMatches as _, Parser, Subcommand};

/// mimalloc for every allocation, not only the evaluator's values (which
/// chock-fix already takes from it): the parser's trees, builtins' vectors
/// and the policy and store code's strings come from it too, at about a
/// third of glibc malloc's instructions per call. The sandbox's child
/// allocates nothing between `clone` and `execve`, so no allocator runs
/// there.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// The version and the commit the binary was built from (build.rs says
/// where the commit comes from).
const VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (",
    env!("CHOCK_BUILT_FROM"),
    ")"
);

/// Chock decides what a coding agent may do on your machine.
#[derive(Debug, Parser)]
#[command(name = "chock", version = VERSION, about, propagate_version = true, after_help = exit::TABLE)]
struct Cli {
    /// Log what Chock does on stderr (debug level); `CHOCK_LOG` takes a tracing filter instead.
    #[arg(long, global = true)]
    verbose: bool,

    #[command(subcommand)]
    command: Command,
}

/// Each command's own arguments are built only when it is the one named
/// (`defer`): a start of `chock exec` does not build the whole tree.
#[derive(Debug, Subcommand)]
#[command(defer = true)]
enum Command {
    /// Check, explain and list the rules that answer an agent's acts.
    #[command(subcommand)]
    Policy(commands::policy::Command),
    /// Verify, show and print the head of the hash-chained decision log.
    #[command(subcommand)]
    Log(commands::log::Command),
    /// Read `.drv` files the way `nix show-derivation` does.
    #[command(subcommand)]
    Derivation(commands::derivation::Command),
    /// Evaluate a Nix expression with fix, Chock's own evaluator.
    Eval(commands::eval::Args),
    /// Build one attribute of the project through your Nix daemon, after every host it reaches is answered.
    #[command(after_help = "Examples:
  chock build packages x86_64-linux default            build one package
  chock build --plan --json packages x86_64-linux default  what it would fetch and run, asking nobody")]
    Build(commands::build::Args),
    /// List the project's flake inputs, the hosts they come from, and fetch what the policy allows.
    Inputs(commands::inputs::Args),
    /// Run a program in the sandbox, with the project's dev shell as its toolchain.
    #[command(after_help = "Examples:
  chock exec -- cargo test              run the tests in the sandbox, the dev shell as toolchain
  chock exec --json -- make | jq .exit  the decision and the program's status as JSON
  chock exec --workspace -- sh -c 'make && make check'")]
    Exec(commands::exec::Args),
    /// Probe each sandbox layer for real and say whether commands can run here.
    #[command(after_help = "Examples:
  chock doctor                   every check, and whether commands can run here
  chock doctor && chock sync     wire the agents only on a machine that works")]
    Doctor(commands::doctor::Args),
    /// Show or clear the per-project toolchain cache.
    Cache(commands::cache::Args),
    /// Show or clear the notes agents kept about this project (chock run's memory).
    Memory(commands::memory::Args),
    /// Carry a session workspace's work into the project, after one workspace.apply question.
    Apply(commands::apply::Args),
    /// List the session workspaces kept on this machine, or clear them.
    Workspace(commands::workspace::Args),
    /// Serve Chock's tools to an agent over the Model Context Protocol (stdio).
    Mcp(commands::mcp::Args),
    /// Run Chock's own agent session on a task in this project: a model of config.zon, Chock's tools through the gate, the work applied at the end.
    Run(commands::run::Args),
    /// Serve Chock's own agent session to an editor (Zed and others) over the Agent Client Protocol on stdio.
    Acp(commands::acp::Args),
    /// List the sessions of `chock run`, verify their logs, export, remove or prune them.
    Sessions(commands::sessions::Args),
    /// Tokens and cost per session of `chock run`, and in total.
    Usage(commands::usage::Args),
    /// Answer the questions a running `chock mcp` server is waiting on.
    Approve(commands::approve::Args),
    /// Serve a page on 127.0.0.1: the decision log live, the questions waiting (answered there), the sessions.
    Ui(commands::ui::Args),
    /// Store a provider instance's key in the credential store (read without echo, or from stdin); --list, --remove.
    Login(commands::login::Args),
    /// Turn an agent's MCP servers and permissions into chock.zon blocks (shown; written with --write).
    Migrate(commands::migrate::Args),
    /// Decide one tool call of an agent from its hook payload on stdin.
    Hook(commands::hook::Args),
    /// Wire Chock into each agent's hook file, the git hooks and CI.
    #[command(after_help = "Examples:
  chock sync --agents claude,codex   wire Claude Code and Codex in this project
  chock sync                         wire the agents whose folder the project has
  chock sync --user --agents claude  wire Claude Code for every project of yours, nothing to commit
  chock sync --ci                    also the GitHub Actions workflow that runs the checks
  chock sync --check                 exit 1 when a hook file differs from what sync writes (CI)
  chock sync --remove                take back what sync wrote, your own lines kept")]
    Sync(commands::hook::SyncArgs),
    /// List the skills of the three layers (operator, project, packaged) and the decision a read of each gets.
    #[command(subcommand)]
    Skills(commands::skills::Command),
    /// Write Chock's own skills (policy-init first) into your agents' skills folders (Claude Code, Codex, Gemini CLI); --remove takes them back.
    InstallSkills(commands::install_skills::Args),
    /// Write a new policy package, skill, subagent or WebAssembly plugin.
    #[command(subcommand)]
    New(commands::packages::NewCommand),
    /// Arm a one-time override of a policy's refusal, asked at your terminal; the next git commit or push it refuses asks you to use it.
    Override(commands::packages::OverrideArgs),
    /// Compile the installed policies into the control of each hook point (.agents/policies/compiled.json) and INDEX.md; --check exits 1 on drift.
    Compile(commands::compile::Args),
    /// Run the repository's policy checks in order (validate, verify, evals, matrix, mechanisms, index, conflicts, baseline).
    Check(commands::packages::CheckArgs),
    /// Install a policy package from a catalog, pinned in chock.lock; with no argument, exactly what the lock names.
    Install(commands::packages::InstallArgs),
    /// List the policy packages of a catalog whose id, summary or guidance holds every word.
    Search(commands::packages::SearchArgs),
    /// Show one policy package of a catalog: hooks, rules, guard, evals, content hash.
    Info(commands::packages::InfoArgs),
    /// Remove an installed policy package and its chock.lock entry.
    Remove(commands::packages::ManageArgs),
    /// List, install and remove WebAssembly plugins: tools a third party ships, each capability decided at session start.
    #[command(subcommand)]
    Plugins(commands::plugins::Command),
    /// Take a policy package out of force, kept in .agents/policies/.disabled/.
    Disable(commands::packages::ManageArgs),
    /// Put a disabled policy package back in force.
    Enable(commands::packages::ManageArgs),
    /// Export the log head, the verify result and the lock's hashes as one JSON document; serve a C2SP witness that cosigns log checkpoints.
    #[command(subcommand)]
    Witness(commands::packages::WitnessCommand),
    /// Show whether Chock is stopped, the log's head and the wired agents; `--verify-log` walks the log's chain.
    #[command(after_help = "Examples:
  chock status                  stopped or not, the log's head, the wired agents
  chock status --json | jq .stopped
  chock status --verify-log     walk the decision log's chain")]
    Status(commands::status::Args),
    /// Make every hook refuse everything until `chock resume`.
    Stop(commands::hook::StopArgs),
    /// Undo `chock stop`.
    Resume(commands::hook::StopArgs),
    /// Print the completion script for a shell (bash, zsh, fish, elvish, powershell).
    Completions(commands::completions::Args),
    /// Print the manual page chock(1), or write every page into a directory.
    Man(commands::completions::ManArgs),
}

/// `chock --help`'s commands by task, in this order (clap lists
/// subcommands under one heading only). Every visible command is in one
/// group: a test says so.
const GROUPS: &[(&str, &[&str])] = &[
    (
        "Protect your agents",
        &[
            "sync", "status", "doctor", "stop", "resume", "hook", "migrate", "approve", "ui",
        ],
    ),
    (
        "Policy and the decision log",
        &[
            "policy",
            "log",
            "check",
            "compile",
            "new",
            "override",
            "search",
            "info",
            "install",
            "remove",
            "disable",
            "enable",
            "witness",
            "skills",
            "install-skills",
        ],
    ),
    (
        "Sandbox and Nix",
        &["exec", "build", "inputs", "eval", "derivation", "cache"],
    ),
    (
        "Chock's own agent",
        &[
            "run",
            "acp",
            "mcp",
            "plugins",
            "sessions",
            "usage",
            "memory",
            "apply",
            "workspace",
            "login",
        ],
    ),
    ("Shell", &["completions", "man"]),
];

/// The command line with `--help` listing its commands by [`GROUPS`].
fn command() -> clap::Command {
    let command = Cli::command();
    let width = GROUPS
        .iter()
        .flat_map(|(_, names)| names.iter().map(|name| name.len()))
        .max()
        .unwrap_or(0);
    let mut listed = String::new();
    for (heading, names) in GROUPS {
        listed.push_str(&format!("{heading}:\n"));
        for name in *names {
            let about = command
                .find_subcommand(name)
                .and_then(clap::Command::get_about)
                .map(ToString::to_string)
                .unwrap_or_default();
            listed.push_str(&format!("  {name:<width$}  {about}\n"));
        }
        listed.push('\n');
    }
    command.help_template(format!(
        "{{about-with-newline}}\n{{usage-heading}} {{usage}}\n\n{listed}Options:\n{{options}}{{after-help}}"
    ))
}

fn main() -> ExitCode {
    let parsed = command()
        .try_get_matches()
        .and_then(|matches| Cli::from_arg_matches(&matches));
    let cli = match parsed {
        Ok(cli) => cli,
        // --help and --version are no mistake; a closed stdout is not
        // worth a word.
        Err(error) => {
            let _ = error.print();
            return if error.use_stderr() {
                exit::USAGE
            } else {
                exit::SUCCESS
            }
            .into();
        }
    };
    init_tracing(cli.verbose);
    // A line logged where sinks are named keeps a shipper running.
    chock_log::on_append(chock_sinks::wake);
    let outcome = match cli.command {
        Command::Policy(c) => commands::policy::run(c),
        Command::Log(c) => commands::log::run(c),
        Command::Derivation(c) => commands::derivation::run(c),
        Command::Eval(a) => commands::eval::run(a),
        Command::Build(a) => commands::build::run(a),
        Command::Inputs(a) => commands::inputs::run(a),
        Command::Exec(a) => commands::exec::run(a),
        Command::Doctor(a) => commands::doctor::run(a),
        Command::Cache(a) => commands::cache::run(a),
        Command::Memory(a) => commands::memory::run(a),
        Command::Apply(a) => commands::apply::run(a),
        Command::Workspace(a) => commands::workspace::run(a),
        Command::Mcp(a) => commands::mcp::run(a),
        Command::Run(a) => commands::run::run(a),
        Command::Acp(a) => commands::acp::run(a),
        Command::Sessions(a) => commands::sessions::run(a),
        Command::Usage(a) => commands::usage::run(a),
        Command::Approve(a) => commands::approve::run(a),
        Command::Ui(a) => commands::ui::run(a),
        Command::Login(a) => commands::login::run(a),
        Command::Migrate(a) => commands::migrate::run(a),
        Command::Hook(a) => commands::hook::run(a),
        Command::Sync(a) => commands::hook::sync(a),
        Command::Skills(c) => commands::skills::run(c),
        Command::InstallSkills(a) => commands::install_skills::run(a),
        Command::New(c) => commands::packages::new(c),
        Command::Compile(a) => commands::compile::run(a),
        Command::Override(a) => commands::packages::override_once(a),
        Command::Check(a) => commands::packages::check(a),
        Command::Install(a) => commands::packages::install(a),
        Command::Search(a) => commands::packages::search(a),
        Command::Info(a) => commands::packages::info(a),
        Command::Remove(a) => commands::packages::manage(commands::packages::Manage::Remove, a),
        Command::Plugins(c) => commands::plugins::run(c),
        Command::Disable(a) => commands::packages::manage(commands::packages::Manage::Disable, a),
        Command::Enable(a) => commands::packages::manage(commands::packages::Manage::Enable, a),
        Command::Witness(c) => commands::packages::witness(c),
        Command::Status(a) => commands::status::run(a),
        Command::Stop(a) => commands::hook::stop(a),
        Command::Resume(a) => commands::hook::resume(a),
        Command::Completions(a) => commands::completions::run(a, command()),
        Command::Man(a) => commands::completions::man(a, command()),
    };
    match outcome {
        Ok(code) => code,
        Err(error) => {
            let message = format!("{error:#}");
            if out::wants_json() {
                outln!("{}", out::error_json(&message, None));
            }
            eprintln!("chock: {message}");
            exit::FAILURE.into()
        }
    }
}

/// Log lines on stderr (warnings, or what `--verbose`/`CHOCK_LOG` ask for),
/// and the progress line on a terminal (src/progress.rs).
fn init_tracing(verbose: bool) {
    use tracing_subscriber::EnvFilter;
    use tracing_subscriber::prelude::*;
    let filter = EnvFilter::try_from_env("CHOCK_LOG")
        .unwrap_or_else(|_| EnvFilter::new(if verbose { "debug" } else { "warn" }));
    // Colour only for a person at a terminal, never into a pipe or a file.
    let colour = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let log = tracing_subscriber::fmt::layer()
        .with_ansi(colour)
        .with_writer(|| progress::Stderr)
        .with_target(false)
        .without_time()
        .with_filter(filter);
    tracing_subscriber::registry()
        .with(log)
        .with(progress::layer())
        .init();
}

#[cfg(test)]
mod tests {
    use super::Cli;
    use clap::CommandFactory;

    /// Every visible command and flag, each with the words `--help` shows.
    fn walk(command: &clap::Command, path: &str, blank: &mut Vec<String>) {
        for arg in command.get_arguments().filter(|a| !a.is_hide_set()) {
            if arg
                .get_help()
                .is_none_or(|h| h.to_string().trim().is_empty())
            {
                blank.push(format!("{path} {}", arg.get_id()));
            }
        }
        for sub in command.get_subcommands().filter(|c| !c.is_hide_set()) {
            let path = format!("{path} {}", sub.get_name());
            let about = sub.get_about().map(ToString::to_string).unwrap_or_default();
            if about.trim().is_empty() {
                blank.push(path.clone());
            }
            // `--help` prints the long about: a doc comment of the Args
            // struct flattened into the command becomes it, unless the
            // variant's own words are all there is.
            if let Some(long) = sub.get_long_about()
                && !long.to_string().starts_with(about.trim_end_matches('.'))
            {
                blank.push(format!("{path} (--help begins `{long}`)"));
            }
            walk(sub, &path, blank);
        }
    }

    #[test]
    fn every_command_is_in_one_group_of_help() {
        let command = Cli::command();
        let grouped: Vec<&str> = super::GROUPS
            .iter()
            .flat_map(|(_, names)| names.iter().copied())
            .collect();
        for sub in command.get_subcommands().filter(|c| !c.is_hide_set()) {
            let times = grouped
                .iter()
                .filter(|name| **name == sub.get_name())
                .count();
            assert_eq!(
                times,
                1,
                "`chock {}` is in {times} groups of --help",
                sub.get_name()
            );
        }
        for name in grouped {
            assert!(
                command.find_subcommand(name).is_some(),
                "--help groups `{name}`, no command"
            );
        }
    }

    /// clap takes a flattened struct's doc comment for the about of the
    /// command it is flattened into (`chock policy explain` began "Where
    /// the layers are").
    #[test]
    fn no_flattened_struct_brings_an_about() {
        use clap::Args as _;
        let probe = || clap::Command::new("probe");
        for (name, command) in [
            (
                "Layers",
                crate::commands::policy::Layers::augment_args(probe()),
            ),
            (
                "SessionArgs",
                crate::commands::run::SessionArgs::augment_args(probe()),
            ),
        ] {
            assert!(
                command.get_about().is_none(),
                "{name}'s doc comment is an about"
            );
        }
    }

    #[test]
    fn every_command_and_flag_has_help() {
        let mut command = Cli::command();
        // The subcommands' arguments are deferred until built.
        command.build();
        let mut blank = Vec::new();
        walk(&command, "chock", &mut blank);
        assert!(blank.is_empty(), "no help for: {blank:#?}");
    }
}
