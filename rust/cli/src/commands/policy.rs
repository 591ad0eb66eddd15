//! `chock policy check|explain|defaults`: load the layers, answer one action,
//! print the shipped table. Every answer comes from chock-policy; this module
//! only turns flags into a `LoadOptions` and a `Key`, and the result into text,
//! JSON and an exit code.

use std::path::PathBuf;
use std::process::ExitCode;

use chock_gate::Route;
use chock_policy::{
    Explained, Key, Layer, LoadOptions, Policy, Reading, Verdict, defaults::SHIPPED,
};
use chock_sandbox::project::Project;
use clap::{Args, Subcommand, ValueEnum};

use crate::exit;

#[derive(Debug, Subcommand)]
#[command(defer = true)]
pub enum Command {
    /// Load every layer and report the first fault, or a one-line summary.
    Check {
        #[command(flatten)]
        layers: Layers,
        /// Print `{"ok": true, "files": [...], ...}`, or the fault as `{"error": {"message", "file", "line"}}`.
        #[arg(long)]
        json: bool,
    },
    /// Answer one action and say what decided it, and what rule would change it.
    #[command(after_help = "Examples:
  chock policy explain exec.path.rm            who answers `rm`, and the rule that would change it
  chock policy explain net.fetch.org.github --json")]
    Explain {
        /// The action name, e.g. call.write_file or net.fetch.org.ziglang.docs.
        action: String,
        #[command(flatten)]
        layers: Layers,
        /// The tool making the call; without it, rules that name a tool do not match.
        #[arg(long, value_name = "T")]
        tool: Option<String>,
        /// The model asking; without it, rules that name a model do not match.
        #[arg(long, value_name = "M")]
        model: Option<String>,
        /// The kind of agent asking (default: the route's: `claude` for
        /// a hook, `git` for a git hook, else `main`).
        #[arg(long, visible_alias = "agent", value_name = "K")]
        agent_kind: Option<String>,
        /// The route asking, so the answer and the rule it suggests are
        /// those that route meets: exec, hook, git, ci, mcp, build, inputs or run.
        #[arg(long, value_name = "R", value_parser = parse_route)]
        route: Option<Route>,
        /// How an act no rule names is read: act (ask) or ceiling (allow).
        #[arg(long, value_enum, default_value_t = ReadingArg::Act)]
        reading: ReadingArg,
        /// Print one JSON object instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Print the shipped default rules (as ZON, or JSON with --json).
    Defaults {
        /// Print the rules as one JSON document instead of ZON.
        #[arg(long)]
        json: bool,
    },
    /// Print the control inputs: the files no agent writes unasked, and who reads each.
    Controls {
        /// Print the control inputs as one JSON document.
        #[arg(long)]
        json: bool,
    },
}

// Where the layers are (flattened into each command that loads them; a
// doc comment here would become the command's about).
#[derive(Debug, Args)]
pub struct Layers {
    /// The project directory holding chock.zon (default: the one found from the current directory).
    #[arg(long, value_name = "DIR")]
    project: Option<PathBuf>,
    /// An organisation bundle to bind, besides those found on this machine (repeatable).
    #[arg(long = "org-bundle", value_name = "FILE")]
    org_bundle: Vec<PathBuf>,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum ReadingArg {
    Act,
    Ceiling,
}

impl From<ReadingArg> for Reading {
    fn from(r: ReadingArg) -> Reading {
        match r {
            ReadingArg::Act => Reading::Act,
            ReadingArg::Ceiling => Reading::Ceiling,
        }
    }
}

pub fn run(command: Command) -> anyhow::Result<ExitCode> {
    match command {
        Command::Check { layers, json } => check(&layers, json),
        Command::Explain {
            action,
            layers,
            tool,
            model,
            agent_kind,
            route,
            reading,
            json,
        } => {
            let asked = Asked {
                route,
                named_kind: agent_kind.is_some(),
            };
            let key = Key {
                agent_kind: agent_kind
                    .unwrap_or_else(|| route.map_or("main", Route::usual_agent_kind).to_owned()),
                model,
                tool,
                action,
            };
            explain(&layers, &key, asked, reading.into(), json)
        }
        Command::Defaults { json } => defaults(json),
        Command::Controls { json } => controls(json),
    }
}

/// Loads the policy, or prints `FILE:LINE:COL: message` and gives exit 1.
/// The policy of `layers`, or the exit after its fault was printed (as
/// JSON on stdout too with `json`).
fn load(layers: &Layers, json: bool) -> Result<Policy, ExitCode> {
    let fail = |message: &str| {
        if json {
            outln!("{}", crate::out::error_json(message, None));
        }
        eprintln!("{message}");
        ExitCode::from(exit::FAILURE)
    };
    // Without --project, the project `chock exec` would find: a chock.zon
    // nested in it is not its policy, and is named as ignored.
    let project = match &layers.project {
        Some(dir) => dir.clone(),
        None => {
            let found = Project::for_command(None).map_err(|e| fail(&e.to_string()))?;
            for notice in found.ignored_notices() {
                eprintln!("warning: {notice}");
            }
            found.dir
        }
    };
    let options = LoadOptions::from_env(project, layers.org_bundle.clone())
        .map_err(|e| fail(&e.to_string()))?;
    let policy = Policy::load(&options).map_err(|e| fail(&e.to_string()))?;
    for warning in policy.warnings() {
        eprintln!("warning: {warning}");
    }
    Ok(policy)
}

fn check(layers: &Layers, json: bool) -> anyhow::Result<ExitCode> {
    let policy = match load(layers, json) {
        Ok(p) => p,
        Err(code) => return Ok(code),
    };
    let mut parts = Vec::new();
    if policy.has_project_file() {
        parts.push(format!(
            "{} ({})",
            policy.project_file().display(),
            count(policy.rules().len(), "rule")
        ));
    } else {
        parts.push(format!(
            "no {} (shipped defaults only)",
            policy.project_file().display()
        ));
    }
    if let Some(operator) = policy.config().operator_file() {
        parts.push(format!("operator config {}", operator.display()));
    }
    for bundle in policy.org_bundles() {
        parts.push(format!(
            "org bundle {} ({})",
            bundle.file.display(),
            count(bundle.rules().len(), "rule")
        ));
    }
    parts.push(count(SHIPPED.len(), "shipped default"));
    for warning in chock_policy::unparsed::wide_rules_allowing_unparsed(&policy) {
        eprintln!("warning: {warning}");
    }
    if json {
        outln!(
            "{}",
            serde_json::json!({ "ok": true, "loaded": parts, "identity": policy.identity() })
        );
    } else {
        outln!("policy ok: {}", parts.join(", "));
        outln!("identity: {}", policy.identity());
    }
    Ok(exit::SUCCESS.into())
}

fn count(n: usize, what: &str) -> String {
    format!("{n} {what}{}", if n == 1 { "" } else { "s" })
}

/// A word `--route` does not take; clap says it as a usage error.
#[derive(Debug, thiserror::Error)]
#[error("not a route; one of {}", Route::ALL.map(|r| r.as_str()).join(", "))]
struct NotARoute;

fn parse_route(word: &str) -> Result<Route, NotARoute> {
    Route::parse(word).ok_or(NotARoute)
}

/// Who `chock policy explain` answers for: the route named, and whether
/// the agent kind was named or is the route's usual one.
#[derive(Debug, Clone, Copy)]
struct Asked {
    route: Option<Route>,
    named_kind: bool,
}

fn explain(
    layers: &Layers,
    key: &Key,
    asked: Asked,
    reading: Reading,
    as_json: bool,
) -> anyhow::Result<ExitCode> {
    let policy = match load(layers, as_json) {
        Ok(p) => p,
        Err(code) => return Ok(code),
    };
    let verdict = policy.decide(key, reading);
    if as_json {
        let explained = Explained {
            action: &key.action,
            verdict: &verdict,
        };
        outln!("{}", serde_json::to_string(&explained)?);
    } else {
        out!("{}", explain_text(key, asked, reading, &verdict));
    }
    Ok(exit::SUCCESS.into())
}

fn explain_text(key: &Key, asked: Asked, reading: Reading, verdict: &Verdict) -> String {
    let by = &verdict.decided_by;
    let mut out = format!("{}: {}\n", key.action, verdict.decision);
    let at = match (&by.file, by.line) {
        (Some(file), Some(line)) => format!(" at {}:{line}", file.display()),
        _ => String::new(),
    };
    let place = match &by.policy {
        Some(id) => format!(" `{id}`{at}"),
        None => at,
    };
    match (by.layer, &by.rule) {
        (Layer::Nothing, _) => {
            let answer = match reading {
                Reading::Act => "an act no rule names is asked about",
                Reading::Ceiling => "a capability no rule names is allowed",
            };
            out.push_str(&format!("  decided by: nothing matched ({answer})\n"));
        }
        (layer, Some(rule)) => {
            out.push_str(&format!("  decided by: {}{place}\n", layer.describe()));
            for line in rule.lines() {
                out.push_str(&format!("    {line}\n"));
            }
        }
        (layer, None) => out.push_str(&format!("  decided by: {}{place}\n", layer.describe())),
    }
    if let Some(note) = chock_policy::read_once_note(&key.action)
        && verdict.decision != chock_policy::Decision::Allow
    {
        out.push_str(&format!("  note: {note}\n"));
    }
    if verdict.decision < chock_policy::Decision::Allow {
        let advice = chock_gate::Refusal::new(chock_gate::Refused::Denied, verdict)
            .advice(chock_gate::Layout::Lines);
        if let Some(advice) = advice.strip_prefix('\n') {
            out.push_str(advice);
            out.push('\n');
            out.push_str(&asker_line(key, asked));
        }
    }
    out
}

/// Whom the advice is for: the key it was computed for, and, when no
/// route was named, which routes ask with that key.
fn asker_line(key: &Key, asked: Asked) -> String {
    let tool = key
        .tool
        .as_ref()
        .map_or_else(|| "no tool".to_owned(), |t| format!("tool `{t}`"));
    let kind = &key.agent_kind;
    match asked.route {
        Some(route) => format!(
            "  (for the {} route, asked as agent kind `{kind}` with {tool})\n",
            route.as_str()
        ),
        None if asked.named_kind => {
            format!("  (for calls asked as agent kind `{kind}` with {tool})\n")
        }
        None => format!(
            "  (for calls asked as agent kind `{kind}` with {tool}: Chock's own session, chock exec, chock build; an agent's hook asks as that agent and its tool, so for it pass e.g. --route hook --agent claude --tool Bash)\n"
        ),
    }
}

fn controls(as_json: bool) -> anyhow::Result<ExitCode> {
    use chock_policy::control::{
        CONTROL_INPUTS, ControlKind, ControlShape, OPERATOR_INPUTS, base_dir, control_write,
    };
    let shape = |shape: ControlShape| match shape {
        ControlShape::File => "file",
        ControlShape::Dir => "dir",
    };
    let shown = |path: String, kind: ControlShape| match kind {
        ControlShape::File => path,
        ControlShape::Dir => format!("{path}/"),
    };
    // Each entry: where it is, its path there, shape, kind, who reads it.
    let mut entries: Vec<(&str, String, ControlShape, ControlKind, &str)> = CONTROL_INPUTS
        .iter()
        .map(|i| ("project", i.path.to_owned(), i.shape, i.kind, i.read_by))
        .collect();
    for input in OPERATOR_INPUTS {
        if let Some(base) = base_dir(input.base) {
            let path = base.join(input.path).display().to_string();
            entries.push(("person", path, input.shape, input.kind, input.read_by));
        }
    }
    if as_json {
        let list: Vec<_> = entries
            .iter()
            .map(|(place, path, kind_of, kind, read_by)| {
                serde_json::json!({
                    "in": place,
                    "path": path,
                    "shape": shape(*kind_of),
                    "kind": kind.label(),
                    "action": control_write(*kind),
                    "read_by": read_by,
                })
            })
            .collect();
        outln!("{}", serde_json::to_string_pretty(&list)?);
        return Ok(exit::SUCCESS.into());
    }
    outln!("# Control inputs: held read-only in the sandbox, refused by the file tools,");
    outln!("# asked as control.write.<kind> when an agent writes one, named first by an apply.");
    outln!("# The project's, relative to its top; then the person's own, which no sandbox shows.");
    for (_, path, kind_of, kind, read_by) in &entries {
        outln!(
            "{:<26} {:<22} {read_by}",
            shown(path.clone(), *kind_of),
            control_write(*kind)
        );
    }
    Ok(exit::SUCCESS.into())
}

fn defaults(as_json: bool) -> anyhow::Result<ExitCode> {
    if as_json {
        outln!("{}", serde_json::to_string_pretty(SHIPPED)?);
        return Ok(exit::SUCCESS.into());
    }
    outln!("// Chock's shipped defaults, read only when no rule in chock.zon matches the key.");
    outln!("// An act none of these names answers ask. A project rule that matches wins outright.");
    out!("{}", chock_policy::defaults::shipped_as_zon());
    Ok(exit::SUCCESS.into())
}
