//! `chock log verify|head|show`, and the hidden `chock log append` that
//! tests use to write from many processes at once.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use chock_log::{AnsweredBy, DecidedBy, Entry, Head, Log, Record, Rotation};
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
    Head,
    /// Show the decisions as a table: time, action, decision, what decided it, subject.
    #[command(after_help = "Examples:
  chock log show --decision deny         every refusal
  chock log show --action 'exec.*'       every program run
  chock log show --json | jq -r .action  the lines as stored, for jq")]
    Show {
        /// Only lines from this seq on.
        #[arg(long, value_name = "SEQ")]
        since: Option<u64>,
        /// Only actions this pattern matches (a name, or a name ending in `.*`).
        #[arg(long, value_name = "PATTERN", value_parser = action_pattern)]
        action: Option<Pattern>,
        /// Only this decision (allow, ask, deny, agent_review, agent_then_human).
        #[arg(long, value_name = "D")]
        decision: Option<Decision>,
        /// Print the matching lines exactly as stored (JSON lines).
        #[arg(long)]
        json: bool,
    },
    /// Append test decisions and print each line's `SEQ:SHA256` (for tests).
    #[command(hide = true)]
    Append(AppendArgs),
}

#[derive(Debug, Args)]
pub struct AppendArgs {
    #[arg(long, default_value_t = 1)]
    count: u64,
    #[arg(long, default_value = "call.write_file")]
    action: String,
    #[arg(long, default_value = "allow")]
    decision: Decision,
    #[arg(long, default_value = "cli")]
    route: String,
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
        Command::Head => head(&log),
        Command::Show {
            since,
            action,
            decision,
            json,
        } => {
            let filter = Filter {
                since,
                action,
                decision,
            };
            show(&log, &filter, json)
        }
        Command::Append(args) => append(&log, &args),
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

fn head(log: &Log) -> anyhow::Result<ExitCode> {
    match log.head()? {
        Some(head) => {
            outln!("{head}");
            Ok(exit::SUCCESS.into())
        }
        None => {
            eprintln!(
                "chock log head: no decisions are logged yet in {}",
                log.dir().display()
            );
            Ok(exit::FAILURE.into())
        }
    }
}

/// Which lines `show` prints.
struct Filter {
    since: Option<u64>,
    action: Option<Pattern>,
    decision: Option<Decision>,
}

impl Filter {
    fn keeps(&self, record: &Record) -> bool {
        self.since.is_none_or(|since| record.seq >= since)
            && self
                .action
                .as_ref()
                .is_none_or(|pattern| pattern.matches(&record.entry.action))
            && self
                .decision
                .is_none_or(|d| d.as_str() == record.entry.decision)
    }
}

fn show(log: &Log, filter: &Filter, json: bool) -> anyhow::Result<ExitCode> {
    let mut rows = Vec::new();
    let mut unreadable = Vec::new();
    for line in log.records()? {
        let line = line?;
        match &line.record {
            Ok(record) if filter.keeps(record) => {
                if json {
                    outln!("{}", line.text);
                } else {
                    rows.push(row(record));
                }
            }
            Ok(_) => {}
            Err(why) => unreadable.push(format!("{}:{}: {why}", line.file.display(), line.line)),
        }
    }
    if !json {
        out!("{}", table(&rows));
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
    Ok(exit::SUCCESS.into())
}

const HEADER: [&str; 6] = [
    "SEQ",
    "TIME (UTC)",
    "ACTION",
    "DECISION",
    "DECIDED BY",
    "SUBJECT",
];

fn row(record: &Record) -> [String; 6] {
    let entry = &record.entry;
    let mut seq = record.seq.to_string();
    if record.unchained.is_some() {
        seq.push('*');
    }
    [
        seq,
        readable_time(&record.ts),
        entry.action.clone(),
        entry.decision.clone(),
        decided_by(entry.answered_by, &entry.decided_by),
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

/// What decided, in words: the rule's layer and place, a default, a person, or nobody.
fn decided_by(answered_by: AnsweredBy, by: &DecidedBy) -> String {
    match answered_by {
        AnsweredBy::Rule => match (&by.file, by.line) {
            (Some(file), Some(line)) => format!("{} rule {file}:{line}", by.layer),
            (Some(file), None) => format!("{} rule {file}", by.layer),
            _ => format!("{} rule", by.layer),
        },
        AnsweredBy::Default => "shipped default".to_owned(),
        AnsweredBy::Person => "a person".to_owned(),
        AnsweredBy::Nobody => "nobody (unanswered)".to_owned(),
        AnsweredBy::Client => "the client (dismissed, no person answered)".to_owned(),
        AnsweredBy::Reviewer => "a reviewer agent".to_owned(),
    }
}

/// Columns padded to their widest cell; the last one is left ragged.
fn table(rows: &[[String; 6]]) -> String {
    let mut widths = HEADER.map(str::len);
    for row in rows {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    let header = HEADER.map(str::to_owned);
    for row in std::iter::once(&header).chain(rows) {
        let mut line = String::new();
        for (i, (cell, width)) in row.iter().zip(widths).enumerate() {
            if i + 1 == row.len() {
                line.push_str(cell);
            } else {
                line.push_str(&format!("{cell:<width$}  "));
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

fn append(log: &Log, args: &AppendArgs) -> anyhow::Result<ExitCode> {
    let project = match &args.project {
        Some(dir) => dir.clone(),
        None => std::env::current_dir().context("reading the current directory")?,
    };
    let settings = Policy::load(&LoadOptions::from_env(&project, Vec::new())?)?.log_settings();
    let rotation = Rotation {
        rotate_bytes: args.rotate_bytes.unwrap_or(settings.rotate_bytes),
        keep: args.keep.unwrap_or(settings.keep),
        fsync: settings.fsync,
    };
    let log = Log::at(log.dir(), rotation);
    let entry = Entry {
        route: args.route.clone(),
        project: project.display().to_string(),
        action: args.action.clone(),
        agent_kind: args.agent_kind.clone(),
        model: None,
        tool: None,
        decision: args.decision.to_string(),
        decided_by: DecidedBy {
            layer: "nothing".into(),
            file: None,
            line: None,
            policy: None,
        },
        answered_by: AnsweredBy::Nobody,
        subject: args.subject.clone(),
    };
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

/// `--action`: the policy's own pattern language, so `show` selects exactly
/// what a rule with that `.action` would.
fn action_pattern(text: &str) -> Result<Pattern, String> {
    Pattern::parse(text).map_err(|error| match error {
        PatternError::Star => {
            "`*` is not a pattern: leave --action out to show every action".into()
        }
        other => other.to_string(),
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
            "call.write_file".to_owned(),
            "allow".to_owned(),
            "shipped default".to_owned(),
            String::new(),
        ]];
        let text = table(&rows);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 2);
        assert!(
            lines[0].starts_with(
                "SEQ  TIME (UTC)  ACTION           DECISION  DECIDED BY       SUBJECT"
            )
        );
        assert_eq!(
            lines[1],
            "1    t           call.write_file  allow     shipped default"
        );
    }
}
