//! `chock inputs`: the project's flake inputs, the hosts they come from,
//! each host's answer and what the store holds; `--fetch` fetches what the
//! rules allow, as a session start does (nobody is asked). The reading,
//! deciding, fetching and logging are chock-inputs'; this module turns flags
//! into those calls and the report into text, JSON and an exit code.

use std::collections::{BTreeSet, HashMap};
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Mutex;
use std::time::Duration;

use chock_gate::{Layout, Refusal, Refused};
use chock_inputs::{
    Env, Event, Fetcher, FlakeInputs, HostAnswer, InputState, Limits, Progress, Report,
};
use chock_log::Log;
use chock_policy::{LoadOptions, Policy};
use chock_sandbox::project::Project;
use chock_store::StorePath;
use chock_store::daemon::{DaemonConnection, DaemonOptions};
use serde_json::json;

use crate::exit;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The project directory (default: the nearest directory up from here with chock.zon, flake.nix or .git).
    #[arg(long, value_name = "DIR")]
    pub project: Option<PathBuf>,
    /// Fetch the inputs the store lacks whose hosts the rules allow, asking nobody (as a session start does).
    #[arg(long)]
    pub fetch: bool,
    /// Print one JSON object instead of text.
    #[arg(long)]
    pub json: bool,
    /// An organisation bundle to bind, besides those found on this machine (repeatable).
    #[arg(long = "org-bundle", value_name = "FILE")]
    pub org_bundle: Vec<PathBuf>,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let project = Project::for_command(args.project.as_deref())?;
    let policy = Policy::load(&LoadOptions::from_env(&project.dir, args.org_bundle)?)?;
    for warning in policy.warnings() {
        eprintln!("chock: {warning}");
    }
    let Some(mut inputs) = FlakeInputs::open(&project.dir)? else {
        if args.json {
            outln!(
                "{}",
                json!({ "project": project.dir, "lock": null, "inputs": [], "hosts": [], "follows": [] })
            );
        } else {
            outln!(
                "no flake.lock in {}: the project has no flake inputs",
                project.dir.display()
            );
        }
        return Ok(exit::SUCCESS.into());
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let report = if args.fetch {
        let log = Log::configured(policy.config())?;
        let fetcher = Fetcher::from_env(Limits::default())?;
        let progress = Drawn::for_stderr(args.json);
        let env = Env {
            policy: &policy,
            log: &log,
            fetcher: &fetcher,
            progress: &progress,
        };
        let fetched = runtime.block_on(async {
            let mut conn = daemon().await?;
            inputs
                .at_start(&env, &mut conn)
                .await
                .map_err(anyhow::Error::from)
        });
        match fetched {
            Ok(report) => report,
            Err(error) => {
                eprintln!("chock inputs: {error:#}");
                return Ok(exit::FAILURE.into());
            }
        }
    } else {
        let valid = runtime.block_on(valid_paths(&inputs.store_paths()));
        if let Err(error) = &valid {
            eprintln!("chock inputs: cannot ask the store what it holds: {error:#}");
        }
        inputs.survey(&policy, valid.as_ref().ok())
    };
    if args.json {
        print_json(&project.dir, &inputs, &report);
    } else {
        print_text(&inputs, &report, args.fetch);
    }
    Ok(exit_code(&report, args.fetch).into())
}

/// Listing is done whatever it finds; a fetch is done when every input is
/// in the store, refused (3) when the rules or the lock kept one out, and a
/// fault (2) when a fetch failed.
fn exit_code(report: &Report, fetched: bool) -> u8 {
    if !fetched || report.all_present() {
        exit::SUCCESS
    } else if report
        .inputs
        .iter()
        .any(|i| matches!(i.state, InputState::Failed(_)))
    {
        exit::FAILURE
    } else {
        exit::REFUSED
    }
}

async fn daemon() -> anyhow::Result<DaemonConnection> {
    let options = DaemonOptions {
        connect_timeout: Duration::from_secs(5),
        ..DaemonOptions::default()
    };
    Ok(DaemonConnection::connect(&options).await?)
}

async fn valid_paths(paths: &BTreeSet<StorePath>) -> anyhow::Result<BTreeSet<StorePath>> {
    if paths.is_empty() {
        return Ok(BTreeSet::new());
    }
    let mut conn = daemon().await?;
    Ok(chock_inputs::valid_paths(&mut conn, paths).await?)
}

fn print_json(project: &Path, inputs: &FlakeInputs, report: &Report) {
    let mut value = report.to_json();
    value["project"] = json!(project);
    value["lock"] = json!(inputs.lock().file);
    value["follows"] = inputs
        .lock()
        .follows
        .iter()
        .map(|f| json!({ "input": f.from, "follows": f.to, "node": f.node }))
        .collect();
    outln!("{value}");
}

fn print_text(inputs: &FlakeInputs, report: &Report, fetched: bool) {
    let lock = &inputs.lock().file;
    let count = report.inputs.len();
    outln!(
        "{}: {count} input{}",
        lock.display(),
        if count == 1 { "" } else { "s" }
    );
    for input in &report.inputs {
        let what = match (input.input_type, &input.describe) {
            (Some(kind), Some(describe)) => format!(" {kind} {describe}"),
            _ => String::new(),
        };
        outln!("  {}:{what}", input.name);
        if let Some(path) = &input.store_path {
            outln!("    {path}");
        }
        outln!("    {}", input.state.explain());
    }
    for follows in &inputs.lock().follows {
        let to = if follows.to.is_empty() {
            "the project's own flake"
        } else {
            follows.to.as_str()
        };
        outln!("  {} follows {to}", follows.from);
    }
    if report.hosts.is_empty() {
        return;
    }
    outln!(
        "hosts{}:",
        if fetched {
            ""
        } else {
            " (as a session start reads them: only allow fetches)"
        }
    );
    for host in &report.hosts {
        print_host(host);
    }
    // Each host kept out at start, with the rule that would fetch from it
    // then, as the gate words every refusal.
    for verdict in report
        .hosts
        .iter()
        .filter(|h| !h.granted)
        .filter_map(|h| h.verdict.as_ref())
    {
        let advice = Refusal::new(Refused::Nobody, verdict).advice(Layout::Lines);
        if let Some(advice) = advice.strip_prefix('\n') {
            outln!("{advice}");
        }
    }
}

fn print_host(host: &HostAnswer) {
    let by = host.verdict.as_ref().map(|v| {
        let by = &v.decided_by;
        match (&by.file, by.line) {
            (Some(file), Some(line)) => {
                format!("{} ({}:{line})", by.layer.describe(), file.display())
            }
            _ => by.layer.describe().to_string(),
        }
    });
    outln!(
        "  {}:{} {} {} (answered by {}{}) for {}",
        host.host,
        host.port,
        host.action,
        host.decision,
        host.answered_by,
        by.map_or(String::new(), |b| format!("; {b}")),
        host.inputs.join(", ")
    );
}

/// Progress on stderr: a bar per input on a terminal (several at once, as
/// inputs are fetched side by side); on a pipe only how each input ended,
/// no progress; and nothing with `--json`, whose reader wants stdout alone.
struct Drawn {
    style: Style,
    bars: indicatif::MultiProgress,
    by_input: Mutex<HashMap<String, indicatif::ProgressBar>>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Style {
    Bar,
    Lines,
    Quiet,
}

impl Drawn {
    fn for_stderr(json: bool) -> Drawn {
        let style = if json {
            Style::Quiet
        } else if std::io::stderr().is_terminal() {
            Style::Bar
        } else {
            Style::Lines
        };
        Drawn {
            style,
            bars: indicatif::MultiProgress::new(),
            by_input: Mutex::new(HashMap::new()),
        }
    }

    fn new_bar(&self, input: &str, bytes: Option<u64>) -> indicatif::ProgressBar {
        let (bar, template) = match bytes {
            Some(len) => (
                indicatif::ProgressBar::new(len),
                "{prefix} {wide_bar} {bytes}/{total_bytes} {msg}",
            ),
            None => (
                indicatif::ProgressBar::new_spinner(),
                "{prefix} {spinner} {bytes} {msg}",
            ),
        };
        if let Ok(style) = indicatif::ProgressStyle::with_template(template) {
            bar.set_style(style);
        }
        bar.set_prefix(input.to_string());
        bar.enable_steady_tick(Duration::from_millis(120));
        self.bars.add(bar)
    }

    fn draw(&self, input: &str, event: Event<'_>) {
        let mut bars = self
            .by_input
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        match event {
            Event::Start { bytes, .. } => {
                if let Some(old) = bars.insert(input.to_string(), self.new_bar(input, bytes)) {
                    old.finish_and_clear();
                }
            }
            Event::Bytes(n) => {
                if let Some(bar) = bars.get(input) {
                    bar.inc(n);
                }
            }
            Event::Stage(stage) => {
                let bar = bars
                    .entry(input.to_string())
                    .or_insert_with(|| self.new_bar(input, None));
                bar.set_message(stage.to_string());
            }
            Event::Done { ok, message } => {
                if let Some(bar) = bars.remove(input) {
                    bar.finish_and_clear();
                }
                let what = if ok { "in the store: " } else { "" };
                let _ = self
                    .bars
                    .println(format!("chock: {input}: {what}{message}"));
            }
        }
    }
}

impl Progress for Drawn {
    fn event(&self, input: &str, event: Event<'_>) {
        match self.style {
            Style::Quiet => {}
            Style::Bar => self.draw(input, event),
            Style::Lines => match event {
                Event::Done { ok: true, message } => {
                    eprintln!("chock: {input}: in the store: {message}")
                }
                Event::Done { ok: false, message } => eprintln!("chock: {input}: {message}"),
                Event::Start { .. } | Event::Stage(_) | Event::Bytes(_) => {}
            },
        }
    }
}
