//! `chock log verify|head|show`, and the hidden `chock log append` that
//! tests use to write from many processes at once.

use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::SystemTime;

use anyhow::Context;
use chock_log::{AnsweredBy, DecidedBy, Entry, Head, Log, Record, Rotation, Route};
use chock_policy::{Decision, LoadOptions, Pattern, PatternError, Policy};
use clap::{Args, Subcommand};

use crate::exit;

#[derive(Debug, Subcommand)]
#[command(defer = true)]
pub enum Command {
    /// Walk every log file, oldest first, and report the first break in the chain.
    Verify {
        /// Also fail unless this record, as `chock log head` printed it, is still there unchanged.
        #[arg(long, value_name = "SEQ:SHA256")]
        head: Option<Head>,
        /// Print the report as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Print `SEQ:SHA256` of the newest line, for you to keep somewhere else.
    Head {
        /// Print `{"seq", "sha256", "head", "dir"}` instead.
        #[arg(long)]
        json: bool,
    },
    /// Show the decisions as a table: time, action, decision, what decided it, subject.
    #[command(after_help = "Examples:
  chock log show --decision deny --since 1h    the refusals of the last hour
  chock log show -n 20 --project .             this project's newest 20
  chock log show --action 'exec.*' --route hook --follow
  chock log show --since 2026-12-06 --until 2026-12-07T12:00:00Z
  chock log show --json | jq -r .action        the lines as stored, for jq

Filters of one kind add up (--decision deny --decision ask is either); kinds narrow each other.")]
    Show(ShowArgs),
    /// Sign a C2SP checkpoint of the log's Merkle tree, keep it beside the log and print it; --witness has witnesses cosign it.
    #[command(after_help = "Examples:
  chock log checkpoint                                     sign and keep a checkpoint
  chock log checkpoint --witness https://witness.example   and have a witness cosign it")]
    Checkpoint(super::checkpoint::CheckpointArgs),
    /// Print an inclusion proof of a line or a consistency proof between two sizes of the log's tree; --check verifies it against a checkpoint.
    #[command(after_help = "Examples:
  chock log prove --index 41                      line 41 is in the tree of the whole log
  chock log prove --from 100 --check saved.note   the tree a saved checkpoint signed is still a prefix of the log's")]
    Prove(super::checkpoint::ProveArgs),
    /// Send the log's lines to journald or syslog receivers, each from where it stopped.
    #[command(after_help = "Examples:
  chock log ship --to syslog+udp://127.0.0.1:514             the lines a local rsyslog has not had yet
  chock log ship --to siem=syslog+tls://logs.example:6514?ca=/etc/ssl/org-ca.pem --follow
  chock log ship --to journald --follow                        each new line into the journal as it is logged")]
    Ship(super::log_ship::ShipArgs),
    /// Append test decisions and print each line's `SEQ:SHA256` (for tests).
    #[command(hide = true)]
    Append(AppendArgs),
}

#[derive(Debug, Args)]
pub struct ShowArgs {
    /// Only lines from then on: a duration back from now (`90s`, `15m`, `1h`, `2d`), an RFC 3339 time (`2026-12-06T10:00:00Z`), a day (`2026-12-06`, UTC), or a seq.
    #[arg(long, value_name = "WHEN", value_parser = when)]
    since: Option<When>,
    /// Only lines before then (the same forms as --since).
    #[arg(long, value_name = "WHEN", value_parser = when)]
    until: Option<When>,
    /// Only the newest N of the lines that match.
    #[arg(short = 'n', long = "lines", value_name = "N")]
    lines: Option<usize>,
    /// Only actions this pattern matches (a name, or a name ending in `.*`); repeatable.
    #[arg(long, value_name = "PATTERN", value_parser = action_pattern)]
    action: Vec<Pattern>,
    /// Only this decision (allow, ask, deny, agent_review, agent_then_human); repeatable.
    #[arg(long, value_name = "D")]
    decision: Vec<Decision>,
    /// Only this route (hook, exec, mcp, cli, ...); repeatable.
    #[arg(long, value_name = "ROUTE")]
    route: Vec<String>,
    /// Only decisions about this project or a folder in it (`.` for here).
    #[arg(long, value_name = "DIR")]
    project: Option<PathBuf>,
    /// After the lines there are, print each new one as it is logged, until interrupted.
    #[arg(short, long)]
    follow: bool,
    /// Print the matching lines exactly as stored (JSON lines, one object each, for jq).
    #[arg(long)]
    json: bool,
}

#[derive(Debug, Args)]
pub struct AppendArgs {
    #[arg(long, default_value_t = 1)]
    count: u64,
    #[arg(long, default_value = "call.write_file")]
    action: String,
    #[arg(long, default_value = "allow")]
    decision: Decision,
    #[arg(long, default_value = "cli", value_parser = route_word)]
    route: Route,
    #[arg(long, default_value = "test")]
    agent_kind: String,
    #[arg(long)]
    subject: Option<String>,
    /// The project whose settings (config.zon's `.log`) apply; the current directory by default.
    #[arg(long, value_name = "DIR")]
    project: Option<PathBuf>,
    #[arg(long, value_name = "BYTES")]
    rotate_bytes: Option<u64>,
    #[arg(long)]
    keep: Option<u32>,
}

pub fn run(command: Command) -> anyhow::Result<ExitCode> {
    let log = Log::from_env(Rotation::default())?;
    match command {
        Command::Verify { head, json } => verify(&log, head, json),
        Command::Head { json } => head(&log, json),
        Command::Show(args) => show(&log, &args),
        Command::Checkpoint(args) => super::checkpoint::checkpoint(&log, &args),
        Command::Prove(args) => super::checkpoint::prove(&log, &args),
        Command::Ship(args) => super::log_ship::run(&log, &args),
        Command::Append(args) => append(&args),
    }
}

fn verify(log: &Log, kept: Option<Head>, json: bool) -> anyhow::Result<ExitCode> {
    let report = log.verify(kept)?;
    if json {
        outln!("{}", report.to_json()?);
    } else {
        out!("{}", describe(&report));
    }
    Ok(if report.intact() {
        exit::SUCCESS
    } else {
        exit::FAILURE
    }
    .into())
}

/// The verify report for a person: one line when intact, the break and its
/// expected and found links when not.
fn describe(report: &chock_log::Verification) -> String {
    let files = report.files.len();
    let mut out = match (&report.broken, &report.start) {
        (Some(broken), _) => format!("break at {broken}\n"),
        (None, None) => "intact: no decisions are logged yet\n".to_owned(),
        (None, Some(start)) => {
            let head = report
                .head
                .map(|h| format!("; head {h}"))
                .unwrap_or_default();
            let plural = if files == 1 { "" } else { "s" };
            format!(
                "intact: {} lines in {files} file{plural}; {start}{head}\n",
                report.lines
            )
        }
    };
    if report.broken.is_some()
        && let Some(start) = &report.start
    {
        out.push_str(&format!("{start}\n"));
    }
    if let Some(kept) = &report.kept_head {
        out.push_str(&format!("{kept}\n"));
    }
    out
}

fn head(log: &Log, json: bool) -> anyhow::Result<ExitCode> {
    match log.head()? {
        Some(head) if json => {
            let text = head.to_string();
            let (seq, sha) = text.split_once(':').unwrap_or((&text, ""));
            outln!(
                "{}",
                serde_json::json!({ "seq": seq.parse::<u64>().ok(), "sha256": sha, "head": text, "dir": log.dir() })
            );
            Ok(exit::SUCCESS.into())
        }
        Some(head) => {
            outln!("{head}");
            Ok(exit::SUCCESS.into())
        }
        None => {
            let message = format!("no decisions are logged yet in {}", log.dir().display());
            if json {
                outln!("{}", crate::out::error_json(&message, None));
            }
            eprintln!("chock log head: {message}");
            Ok(exit::FAILURE.into())
        }
    }
}

/// A point `--since` and `--until` name: a seq, or a time.
#[derive(Clone, Copy, Debug)]
pub enum When {
    Seq(u64),
    At(SystemTime),
}

/// Why an argument of `chock log` is not what it names; clap says it as a
/// usage error.
#[derive(Debug, thiserror::Error)]
enum ArgError {
    /// A duration back from now that passes the first time there is.
    #[error("{0} back from now is before any time")]
    BeforeAnyTime(String),
    #[error(
        "`{0}` is no time: write a duration back from now (1h, 30m, 2d), an RFC 3339 time (2026-12-06T10:00:00Z), a day (2026-12-06) or a seq"
    )]
    NoTime(String),
    #[error("`{0}` is no route a log line names")]
    NoRoute(String),
    /// `*` alone, which would select what no --action selects.
    #[error("`*` is not a pattern: leave --action out to show every action")]
    Star,
    #[error(transparent)]
    Pattern(PatternError),
}

fn when(text: &str) -> Result<When, ArgError> {
    if let Ok(seq) = text.parse::<u64>() {
        return Ok(When::Seq(seq));
    }
    if let Ok(back) = humantime::parse_duration(text) {
        return SystemTime::now()
            .checked_sub(back)
            .map(When::At)
            .ok_or_else(|| ArgError::BeforeAnyTime(text.to_owned()));
    }
    let day = format!("{text}T00:00:00Z");
    let full = if text.len() == 10 { day.as_str() } else { text };
    humantime::parse_rfc3339_weak(full)
        .map(When::At)
        .map_err(|_| ArgError::NoTime(text.to_owned()))
}

impl When {
    /// Whether `record` is at or after this point.
    fn reached_by(self, record: &Record) -> bool {
        match self {
            When::Seq(seq) => record.seq >= seq,
            When::At(at) => logged_at(record).is_some_and(|t| t >= at),
        }
    }
}

fn logged_at(record: &Record) -> Option<SystemTime> {
    humantime::parse_rfc3339_weak(&record.ts).ok()
}

/// Which lines `show` prints.
struct Filter {
    since: Option<When>,
    until: Option<When>,
    action: Vec<Pattern>,
    decision: Vec<Decision>,
    route: Vec<String>,
    project: Option<PathBuf>,
}

impl Filter {
    fn of(args: &ShowArgs) -> anyhow::Result<Filter> {
        let project = match &args.project {
            Some(dir) => Some(
                std::fs::canonicalize(dir)
                    .with_context(|| format!("--project {}: no such folder", dir.display()))?,
            ),
            None => None,
        };
        Ok(Filter {
            since: args.since,
            until: args.until,
            action: args.action.clone(),
            decision: args.decision.clone(),
            route: args.route.clone(),
            project,
        })
    }

    fn keeps(&self, record: &Record) -> bool {
        let entry = &record.entry;
        self.since.is_none_or(|since| since.reached_by(record))
            && self.until.is_none_or(|until| !until.reached_by(record))
            && (self.action.is_empty() || self.action.iter().any(|p| p.matches(&entry.action)))
            && (self.decision.is_empty() || self.decision.contains(&entry.decision))
            && (self.route.is_empty() || self.route.iter().any(|r| r == entry.route.as_str()))
            && self
                .project
                .as_ref()
                .is_none_or(|dir| std::path::Path::new(&entry.project).starts_with(dir))
    }
}

/// How often `--follow` looks for new lines.
const FOLLOW_EVERY: std::time::Duration = std::time::Duration::from_millis(250);

fn show(log: &Log, args: &ShowArgs) -> anyhow::Result<ExitCode> {
    let filter = Filter::of(args)?;
    let mut kept = std::collections::VecDeque::new();
    let mut unreadable = Vec::new();
    let mut last = None;
    for line in log.records()? {
        let line = line?;
        match &line.record {
            Ok(record) => {
                last = Some(record.seq);
                if filter.keeps(record) {
                    kept.push_back((line.text.clone(), row(record)));
                    if args.lines.is_some_and(|n| kept.len() > n) {
                        kept.pop_front();
                    }
                }
            }
            Err(why) => unreadable.push(format!("{}:{}: {why}", line.file.display(), line.line)),
        }
    }
    if !unreadable.is_empty() {
        eprintln!(
            "chock log show: {} line(s) are not records and were left out; `chock log verify` says why",
            unreadable.len()
        );
        for place in unreadable.iter().take(5) {
            eprintln!("  {place}");
        }
    }
    let width = terminal_width();
    let mut columns = widths(&[]);
    if args.json {
        for (text, _) in &kept {
            outln!("{text}");
        }
    } else {
        let rows: Vec<_> = kept.into_iter().map(|(_, row)| row).collect();
        columns = widths(&rows);
        out!("{}", table(&rows, &columns, width));
    }
    if !args.follow {
        return Ok(exit::SUCCESS.into());
    }
    crate::out::stdout().flush()?;
    let mut seen = log.stamp()?;
    loop {
        std::thread::sleep(FOLLOW_EVERY);
        // An idle log costs a stat a tick; it is read again only once
        // something was appended or rotated.
        let now = log.stamp()?;
        if now == seen {
            continue;
        }
        seen = now;
        for line in log.records()? {
            let line = line?;
            let Ok(record) = &line.record else { continue };
            if last.is_some_and(|seen| record.seq <= seen) {
                continue;
            }
            last = Some(record.seq);
            if !filter.keeps(record) {
                continue;
            }
            if args.json {
                outln!("{}", line.text);
            } else {
                outln!("{}", fitted(&format_row(&row(record), &columns), width));
            }
        }
    }
}

/// The terminal's width when stdout is one (`COLUMNS` wins, as for `ls`);
/// `None` into a pipe or a file, where lines are never cut.
fn terminal_width() -> Option<usize> {
    if let Some(columns) = std::env::var("COLUMNS").ok().and_then(|c| c.parse().ok()) {
        return Some(columns);
    }
    let stdout = std::io::stdout();
    if !std::io::IsTerminal::is_terminal(&stdout) {
        return None;
    }
    rustix::termios::tcgetwinsize(&stdout)
        .ok()
        .map(|size| usize::from(size.ws_col))
        .filter(|&w| w > 0)
}

/// `line` cut to `width` characters, its end shown by `…`.
fn fitted(line: &str, width: Option<usize>) -> String {
    match width {
        Some(width) if line.chars().count() > width => {
            let mut cut: String = line.chars().take(width.saturating_sub(1)).collect();
            cut.push('…');
            cut
        }
        _ => line.to_owned(),
    }
}

/// The table's columns; a row is one cell each.
const HEADER: [&str; 7] = [
    "SEQ",
    "TIME (UTC)",
    "ROUTE",
    "ACTION",
    "DECISION",
    "DECIDED BY",
    "SUBJECT",
];

type Row = [String; 7];

fn row(record: &Record) -> Row {
    let entry = &record.entry;
    let mut seq = record.seq.to_string();
    if record.unchained.is_some() {
        seq.push('*');
    }
    [
        seq,
        readable_time(&record.ts),
        entry.route.to_string(),
        entry.action.clone(),
        entry.decision.to_string(),
        answered(entry),
        entry.subject.clone().unwrap_or_default(),
    ]
}

/// `2025-01-02T03:04:05.678Z` as `2025-01-02 03:04:05`; anything else as written.
fn readable_time(ts: &str) -> String {
    match (ts.get(..10), ts.get(11..19)) {
        (Some(date), Some(time)) if ts.as_bytes().get(10) == Some(&b'T') => {
            format!("{date} {time}")
        }
        _ => ts.to_owned(),
    }
}

/// Who answered, in words, with how far a person's yes reached when it is logged.
fn answered(entry: &Entry) -> String {
    let by = decided_by(entry.answered_by, &entry.decided_by);
    match entry.scope {
        Some(scope) => format!("{by} ({scope})"),
        None => by,
    }
}

/// What decided, in words: the rule's layer and place, a default, a person, or nobody.
fn decided_by(answered_by: AnsweredBy, by: &DecidedBy) -> String {
    match answered_by {
        AnsweredBy::Rule => match (&by.file, by.line) {
            (Some(file), Some(line)) => format!("{} rule {file}:{line}", by.layer.as_str()),
            (Some(file), None) => format!("{} rule {file}", by.layer.as_str()),
            _ => format!("{} rule", by.layer.as_str()),
        },
        AnsweredBy::Default => "shipped default".to_owned(),
        AnsweredBy::Person => "a person".to_owned(),
        AnsweredBy::Nobody => "nobody (unanswered)".to_owned(),
        AnsweredBy::Client => "the client (dismissed, no person answered)".to_owned(),
        AnsweredBy::Reviewer => "a reviewer agent".to_owned(),
    }
}

/// Each column's width: its widest cell, the header's included.
fn widths(rows: &[Row]) -> [usize; 7] {
    let mut widths = HEADER.map(str::len);
    for row in rows {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    widths
}

/// One line of the table: every cell padded but the last, left ragged.
fn format_row(row: &Row, widths: &[usize; 7]) -> String {
    let mut line = String::new();
    for (i, (cell, width)) in row.iter().zip(widths).enumerate() {
        if i + 1 == row.len() {
            line.push_str(cell);
        } else {
            line.push_str(&format!("{cell:<width$}  "));
        }
    }
    line.trim_end().to_owned()
}

/// The header and `rows`, each line cut to the terminal's `width`.
fn table(rows: &[Row], widths: &[usize; 7], width: Option<usize>) -> String {
    let header = HEADER.map(str::to_owned);
    let mut out = String::new();
    for row in std::iter::once(&header).chain(rows) {
        out.push_str(&fitted(&format_row(row, widths), width));
        out.push('\n');
    }
    out
}

/// The project at `project`, else the current directory, and its policy:
/// a line Chock appends by hand rotates as any decision's would (config.zon's
/// `.log`) and is shipped to the same sinks.
pub fn configured(
    project: Option<&std::path::Path>,
) -> anyhow::Result<(std::path::PathBuf, Policy)> {
    configured_with(project, &[])
}

/// [`configured`] with these organisation bundles read as well.
pub fn configured_with(
    project: Option<&std::path::Path>,
    bundles: &[std::path::PathBuf],
) -> anyhow::Result<(std::path::PathBuf, Policy)> {
    let project = match project {
        Some(dir) => dir.to_path_buf(),
        None => std::env::current_dir().context("reading the current directory")?,
    };
    let policy = Policy::load(&LoadOptions::from_env(&project, bundles.to_vec())?)?;
    Ok((project, policy))
}

fn append(args: &AppendArgs) -> anyhow::Result<ExitCode> {
    let (project, policy) = configured(args.project.as_deref())?;
    let configured = Log::configured(policy.config())?;
    let settings = configured.rotation();
    let log = configured.with_rotation(Rotation {
        rotate_bytes: args.rotate_bytes.unwrap_or(settings.rotate_bytes),
        keep: args.keep.unwrap_or(settings.keep),
        fsync: settings.fsync,
    });
    let entry = Entry::unruled(
        args.route,
        project.display().to_string(),
        args.action.clone(),
        args.agent_kind.clone(),
        args.decision,
        args.subject.clone(),
    );
    let mut out = crate::out::stdout();
    for _ in 0..args.count {
        let appended = log
            .try_append(&entry)
            .with_context(|| format!("appending to the log in {}", log.dir().display()))?;
        if let Some(why) = &appended.unchained {
            eprintln!(
                "chock log append: line {} is unchained: {why}",
                appended.head.seq
            );
        }
        std::io::Write::write_fmt(&mut out, format_args!("{}\n", appended.head))?;
    }
    Ok(exit::SUCCESS.into())
}

/// `--route`: a word a log line may carry.
fn route_word(word: &str) -> Result<Route, ArgError> {
    Route::read(word).ok_or_else(|| ArgError::NoRoute(word.to_owned()))
}

/// `--action`: the policy's own pattern language, so `show` selects exactly
/// what a rule with that `.action` would.
fn action_pattern(text: &str) -> Result<Pattern, ArgError> {
    Pattern::parse(text).map_err(|error| match error {
        PatternError::Star => ArgError::Star,
        other => ArgError::Pattern(other),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn action_patterns_are_the_policys() {
        let class = action_pattern("git.*").unwrap();
        assert!(class.matches("git.push"));
        assert!(!class.matches("gitlab.push"));
        assert!(
            action_pattern("*")
                .unwrap_err()
                .to_string()
                .contains("leave --action out")
        );
        for bad in ["", ".*", "git.*.push"] {
            assert!(action_pattern(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn times_read_for_people() {
        assert_eq!(
            readable_time("2025-01-02T03:04:05.678Z"),
            "2025-01-02 03:04:05"
        );
        assert_eq!(readable_time("yesterday"), "yesterday");
    }

    #[test]
    fn table_pads_all_but_the_last_column() {
        let rows = [[
            "1".to_owned(),
            "t".to_owned(),
            "hook".to_owned(),
            "call.write_file".to_owned(),
            "allow".to_owned(),
            "shipped default".to_owned(),
            String::new(),
        ]];
        let text = table(&rows, &widths(&rows), None);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 2);
        assert!(lines[0].starts_with(
            "SEQ  TIME (UTC)  ROUTE  ACTION           DECISION  DECIDED BY       SUBJECT"
        ));
        assert_eq!(
            lines[1],
            "1    t           hook   call.write_file  allow     shipped default"
        );
        let cut = table(&rows, &widths(&rows), Some(20));
        assert!(cut.lines().all(|l| l.chars().count() <= 20), "{cut}");
        assert!(cut.lines().nth(1).unwrap().ends_with('…'), "{cut}");
    }
}
