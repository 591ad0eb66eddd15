//! `chock sessions`: the sessions of `chock run` kept in the state
//! directory (one hash-chained log each): list them, verify their chains,
//! export one with a readable transcript, remove one, prune old ones.

use std::io::{BufRead, IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, SystemTime};

use chock_sessions::{SessionError, Sessions, Summary};

use crate::exit;

#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(subcommand)]
    pub command: Option<Command>,
    /// Print the list as JSON lines, one object a session.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, clap::Subcommand)]
pub enum Command {
    /// Walk each session log's hash chain (all of them without an ID); exit 1 at the first broken line, naming it.
    Verify {
        /// The session (default: every session).
        id: Option<String>,
        /// Print one JSON line a session: `{"id", "intact", "lines", "head", "broken": {"file", "line", "why"}}`.
        #[arg(long)]
        json: bool,
    },
    /// Write the session's log and a readable transcript (ID.jsonl, ID.md) into DIR; nothing is overwritten.
    Export {
        /// The session (`chock sessions` lists them).
        id: String,
        /// The folder to write ID.jsonl and ID.md into.
        #[arg(long, value_name = "DIR")]
        to: PathBuf,
    },
    /// Remove a session's log (never a running one's); asks at a terminal.
    Remove {
        /// The session (`chock sessions` lists them).
        id: String,
        /// Remove without asking.
        #[arg(long)]
        yes: bool,
    },
    /// Remove the logs of sessions last written more than N days ago (never a running one's).
    Prune {
        /// The age in days a session's log must pass to be removed.
        #[arg(long, value_name = "N")]
        older_than: u64,
    },
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let sessions = Sessions::from_env()?;
    match args.command {
        None => list(&sessions, args.json),
        Some(Command::Verify { id, json }) => verify(&sessions, id, json),
        Some(Command::Export { id, to }) => {
            for written in sessions.export(&id, &to)? {
                outln!("wrote {}", written.display());
            }
            Ok(exit::SUCCESS.into())
        }
        Some(Command::Remove { id, yes }) => remove(&sessions, &id, yes),
        Some(Command::Prune { older_than }) => prune(&sessions, older_than),
    }
}

fn list(sessions: &Sessions, json: bool) -> anyhow::Result<ExitCode> {
    let all = sessions.list()?;
    if json {
        for s in &all {
            let model = s
                .model
                .as_ref()
                .map(|m| format!("{}/{}", m.instance, m.model));
            outln!(
                "{}",
                serde_json::json!({
                    "id": s.id,
                    "started": s.started,
                    "last": s.last,
                    "project": s.project,
                    "model": model,
                    "turns": s.turns,
                    "running": s.running,
                    "state": state(s),
                    "title": s.title,
                })
            );
        }
        return Ok(exit::SUCCESS.into());
    }
    if all.is_empty() {
        outln!("no session is kept in {}", sessions.dir().display());
        return Ok(exit::SUCCESS.into());
    }
    outln!("SESSION  STARTED  PROJECT  MODEL  TURNS  ENDED  TITLE");
    for s in &all {
        outln!(
            "{}  {}  {}  {}  {}  {}  {}",
            s.id,
            s.started.as_deref().unwrap_or("-"),
            s.project.as_deref().unwrap_or("-"),
            s.model
                .as_ref()
                .map_or_else(|| "-".to_owned(), |m| format!("{}/{}", m.instance, m.model)),
            s.turns,
            state(s),
            s.title.as_deref().map_or("-".into(), chock_policy::visible)
        );
    }
    Ok(exit::SUCCESS.into())
}

fn state(s: &Summary) -> String {
    match &s.unreadable {
        Some(why) if !s.running => format!("unreadable ({why})"),
        _ => s.state().to_owned(),
    }
}

fn verify(sessions: &Sessions, id: Option<String>, json: bool) -> anyhow::Result<ExitCode> {
    let ids = match id {
        Some(id) => vec![id],
        None => {
            let mut ids = sessions.ids()?;
            ids.sort();
            ids
        }
    };
    if ids.is_empty() && !json {
        outln!("no session is kept in {}", sessions.dir().display());
    }
    let mut broken = 0;
    for id in ids {
        let path = sessions.path(&id)?;
        let checked = sessions.verify(&id)?;
        if json {
            broken += usize::from(checked.broken.is_some());
            let at = checked.broken.as_ref().map(
                |b| serde_json::json!({ "file": path, "line": b.line, "why": b.why.to_string() }),
            );
            outln!(
                "{}",
                serde_json::json!({
                    "id": id,
                    "intact": checked.broken.is_none(),
                    "lines": checked.lines,
                    "head": checked.head.map(|h| h.to_string()),
                    "broken": at,
                })
            );
            continue;
        }
        match checked.broken {
            None => outln!(
                "{id}: intact, {} lines{}",
                checked.lines,
                checked
                    .head
                    .map(|h| format!(", head {h}"))
                    .unwrap_or_default()
            ),
            Some(b) => {
                broken += 1;
                outln!("{id}: broken at {}:{}: {}", path.display(), b.line, b.why);
            }
        }
    }
    Ok(if broken == 0 {
        exit::SUCCESS
    } else {
        exit::FAILURE
    }
    .into())
}

/// The workspace a session kept, if one is.
fn kept_workspace(id: &str) -> Option<PathBuf> {
    chock_sandbox::workspace::list(None)
        .ok()?
        .into_iter()
        .find(|w| w.meta.session == id)
        .map(|w| w.dir)
}

fn remove(sessions: &Sessions, id: &str, yes: bool) -> anyhow::Result<ExitCode> {
    sessions.path(id)?;
    if sessions.running(id) {
        eprintln!("chock sessions: {}", SessionError::Running(id.to_owned()));
        return Ok(exit::REFUSED.into());
    }
    if !yes && !confirm(id) {
        outln!("kept {id}");
        return Ok(exit::REFUSED.into());
    }
    sessions.remove(id)?;
    outln!("removed the log of {id}");
    if let Some(dir) = kept_workspace(id) {
        outln!(
            "its workspace is still kept at {} (`chock apply {id}` carries its work, `chock workspace clear` removes it)",
            dir.display()
        );
    }
    Ok(exit::SUCCESS.into())
}

/// Asks at the terminal; with none, the answer is no.
fn confirm(id: &str) -> bool {
    if !std::io::stdin().is_terminal() || !std::io::stderr().is_terminal() {
        eprintln!(
            "chock sessions: nobody at a terminal to say yes, so {id} is kept; `--yes` removes it"
        );
        return false;
    }
    let mut stderr = std::io::stderr().lock();
    let _ = write!(
        stderr,
        "remove the log of session {id}? It cannot be resumed or verified afterwards. [y/N] "
    );
    let _ = stderr.flush();
    let mut line = String::new();
    let _ = std::io::stdin().lock().read_line(&mut line);
    matches!(line.trim().to_ascii_lowercase().as_str(), "y" | "yes")
}

fn prune(sessions: &Sessions, days: u64) -> anyhow::Result<ExitCode> {
    let cutoff = SystemTime::now()
        .checked_sub(Duration::from_secs(days.saturating_mul(86_400)))
        .unwrap_or(SystemTime::UNIX_EPOCH);
    let mut ids = sessions.ids()?;
    ids.sort();
    let mut removed = 0;
    let mut failed = 0;
    for id in ids {
        if sessions.running(&id) || sessions.last_written(&id)? >= cutoff {
            continue;
        }
        match sessions.remove(&id) {
            Ok(()) => {
                removed += 1;
                outln!("removed {id}");
            }
            // It started running meanwhile.
            Err(SessionError::Running(_)) => {}
            Err(e) => {
                failed += 1;
                eprintln!("chock sessions: {e}");
            }
        }
    }
    outln!("removed {removed} session logs last written more than {days} days ago");
    Ok(if failed == 0 {
        exit::SUCCESS
    } else {
        exit::FAILURE
    }
    .into())
}
