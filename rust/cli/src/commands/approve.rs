//! `chock approve`: answer, from this terminal, the questions your running
//! `chock mcp` servers and `chock run` and `chock acp` sessions wait on,
//! each named as the command it is (`chock run 1234`). The socket protocol is chock-mcp's; this
//! module prints each question and reads the person's answer.

use std::io::{BufRead, IsTerminal, Write};
use std::os::fd::AsFd;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;

use chock_gate::Scope;
use chock_mcp::approve::{self, Event, Heard, Watcher};
use chock_mcp::credential::Credential;
use chock_mcp::{Asked, CredentialFor};
use chock_policy::visible;

use chock_sandbox::workspace::apply::diff_start;

use crate::{exit, pager};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Only the server with this process id (`--list` shows them).
    #[arg(value_name = "PID")]
    pub server: Option<u32>,
    /// Print the questions waiting now and exit, instead of answering them.
    #[arg(long)]
    pub list: bool,
    /// With --list, print JSON: one object per server with its waiting questions.
    #[arg(long, requires = "list")]
    pub json: bool,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let dir = approve::socket_dir()?;
    if args.list {
        return list(&dir, args.server, args.json);
    }
    watch(Watcher::new(dir, args.server))
}

fn list(dir: &std::path::Path, only: Option<u32>, json: bool) -> anyhow::Result<ExitCode> {
    let mut servers = Vec::new();
    for path in approve::server_sockets(dir) {
        match approve::list(&path) {
            Ok((connection, waiting)) if only.is_none_or(|pid| pid == connection.pid) => {
                servers.push((
                    connection.command.clone(),
                    connection.pid,
                    connection.project.clone(),
                    waiting,
                ));
            }
            Ok(_) => {}
            Err(error) => eprintln!("chock approve: {error}"),
        }
    }
    if servers.is_empty() {
        eprintln!(
            "chock approve: {}",
            chock_mcp::McpError::NoServer {
                dir: dir.to_path_buf()
            }
        );
        return Ok(exit::FAILURE.into());
    }
    if json {
        let report: Vec<_> = servers
            .iter()
            .map(|(command, pid, project, waiting)| {
                serde_json::json!({"pid": pid, "command": command, "project": project, "questions": waiting})
            })
            .collect();
        outln!("{}", serde_json::Value::Array(report));
        return Ok(exit::SUCCESS.into());
    }
    for (command, pid, project, waiting) in &servers {
        outln!("{command} {pid} for {project}: {} waiting", waiting.len());
        for one in waiting {
            outln!("  question {}: {}", one.id, one.question.headline());
        }
    }
    Ok(exit::SUCCESS.into())
}

/// One question shown, or waiting its turn to be shown.
struct Shown {
    path: std::path::PathBuf,
    /// The server it came from, as it is named: `chock run 1234`.
    from: String,
    id: u64,
    text: String,
    /// For a question carrying a diff (an apply's): its text without the
    /// diff, shown at the prompt when the diff was read in the pager.
    without_diff: Option<String>,
    /// For a credential question: what it is for, and the user name typed
    /// once it has been.
    credential: Option<(CredentialFor, Option<String>)>,
    /// Whether it asks for a line of text (the agent's own question).
    wants_text: bool,
    /// The scopes a yes may have beyond once.
    scopes: Vec<Scope>,
}

impl Shown {
    fn same(&self, path: &std::path::Path, id: u64) -> bool {
        self.path == path && self.id == id
    }
}

/// Prints each question as it comes and sends the answer typed: `y` or
/// `yes` allows it once, `n REASON` refuses it and the agent is told the
/// reason, anything else refuses it. A question for a
/// credential (a `git push` to an http or https remote) asks for a user
/// name, then for the password or token with the terminal's echo off; an
/// empty line refuses it. A question asking for text (the agent's own)
/// takes the line typed as its answer (an empty one gives none). Questions that arrive
/// while one is shown wait their turn. A question the server withdraws
/// (timed out, or the agent cancelled its call) leaves the prompt, so the
/// next line typed never answers a question nobody waits on any more.
/// Ends at the end of input.
fn watch(mut watcher: Watcher) -> anyhow::Result<ExitCode> {
    end_on_ctrl_c()?;
    eprintln!(
        "chock approve: waiting for questions from your chock mcp, chock run and chock acp sessions (Ctrl-D or Ctrl-C to stop)"
    );
    let typed = typed_lines();
    let mut stdout = crate::out::stdout();
    let mut current: Option<Shown> = None;
    let mut queue: std::collections::VecDeque<Shown> = std::collections::VecDeque::new();
    // Each server watched, by its socket, as it is named.
    let mut names: std::collections::HashMap<std::path::PathBuf, String> =
        std::collections::HashMap::new();
    loop {
        if current.is_none()
            && let Some(next) = queue.pop_front()
        {
            let text = match &next.without_diff {
                Some(short) if paging() && typed.paused(|| pager::page(&next.text)) => short,
                _ => &next.text,
            };
            outln!("\nquestion {} from {}:\n{text}", next.id, next.from);
            match &next.credential {
                Some((wanted, _)) => out!(
                    "user name for {}{}: ",
                    visible(&wanted.remote),
                    wanted
                        .username
                        .as_deref()
                        .map_or(String::new(), |u| format!(" [{}]", visible(u)))
                ),
                None if next.wants_text => out!("your answer (one line): "),
                None => out!("{}", answers_offered(&next.scopes)),
            }
            stdout.flush()?;
            current = Some(next);
        }
        match typed.lines.try_recv() {
            Ok(line) => {
                if let Some(shown) = current.take() {
                    current = answer(&mut watcher, shown, &line)?;
                }
            }
            Err(std::sync::mpsc::TryRecvError::Disconnected) => {
                crate::ask::echo(true);
                outln!();
                return Ok(exit::SUCCESS.into());
            }
            Err(std::sync::mpsc::TryRecvError::Empty) => {}
        }
        watcher.refresh();
        let Some(heard) = watcher.next(Duration::from_millis(100)) else {
            continue;
        };
        match heard {
            Heard::Connected {
                path,
                pid,
                project,
                command,
            } => {
                outln!("watching {command} {pid} for {project}");
                names.insert(path, format!("{command} {pid}"));
            }
            Heard::Unreachable(error) => eprintln!("chock approve: {error}"),
            Heard::Closed { pid, path } => {
                if current.as_ref().is_some_and(|c| c.path == path) {
                    current = None;
                    crate::ask::echo(true);
                }
                queue.retain(|q| q.path != path);
                let name = names
                    .remove(&path)
                    .unwrap_or_else(|| format!("server {pid}"));
                outln!("{name} stopped");
            }
            Heard::Event { path, pid, event } => match event {
                Event::Question { id, question } => queue.push_back(Shown {
                    from: names
                        .get(&path)
                        .cloned()
                        .unwrap_or_else(|| format!("server {pid}")),
                    path,
                    id,
                    text: question.text(),
                    without_diff: without_diff(&question),
                    credential: question.credential.map(|wanted| (wanted, None)),
                    wants_text: question.wants_text,
                    scopes: question.scopes,
                }),
                Event::Answered { id, allow, scope } => {
                    outln!(
                        "question {id}: {}",
                        match (allow, scope) {
                            (false, _) => "refused",
                            (true, Some(Scope::Session)) => "allowed for this session",
                            (true, Some(Scope::Always)) =>
                                "allowed, and the rule is written into chock.zon",
                            (true, _) => "allowed once",
                        }
                    );
                }
                Event::Withdrawn { id, why } if why != "answered" => {
                    queue.retain(|q| !q.same(&path, id));
                    if current.as_ref().is_some_and(|c| c.same(&path, id)) {
                        current = None;
                        crate::ask::echo(true);
                        outln!("\nquestion {id} withdrawn: {}", visible(&why));
                    }
                }
                Event::Error { message } => eprintln!("chock approve: {message}"),
                _ => {}
            },
        }
    }
}

/// Takes one line typed for the question shown: the answer, or for a
/// credential question its user name (then the question stays, asking for
/// the password with echo off). The question still shown, if any.
fn answer(watcher: &mut Watcher, mut shown: Shown, line: &str) -> anyhow::Result<Option<Shown>> {
    let line = line.trim_end_matches(['\r', '\n']);
    if shown.wants_text {
        let answered = (None, Some(line.to_owned()), None);
        if let Err(error) = watcher.answer(&shown.path, shown.id, true, answered) {
            eprintln!("chock approve: {error}");
        }
        return Ok(None);
    }
    let (allow, credential) = match &mut shown.credential {
        None => {
            let (allow, scope) = match scope_of_yes(line) {
                Some(scope) => (true, Some(scope)),
                None => (false, None),
            };
            if allow {
                if let Err(error) = watcher.answer(&shown.path, shown.id, true, (None, None, scope))
                {
                    eprintln!("chock approve: {error}");
                }
                return Ok(None);
            }
            if let Some(reason) = reason_of_no(line) {
                let answered = (None, Some(reason.to_owned()), None);
                if let Err(error) = watcher.answer(&shown.path, shown.id, false, answered) {
                    eprintln!("chock approve: {error}");
                }
                return Ok(None);
            }
            (allow, None)
        }
        Some((wanted, typed @ None)) => {
            let name = match line.trim() {
                "" => wanted.username.clone().unwrap_or_default(),
                name => name.to_owned(),
            };
            if !name.is_empty() {
                // Off before the prompt shows, so nothing typed after it is
                // echoed; a password that would show is never asked for.
                match crate::ask::set_echo(false) {
                    Ok(()) => {
                        *typed = Some(name);
                        out!("password or token (not shown; an empty line refuses): ");
                        crate::out::stdout().flush()?;
                        return Ok(Some(shown));
                    }
                    Err(error) => eprintln!(
                        "chock approve: the terminal's echo could not be turned off ({error}), so a password typed would show: question {} refused",
                        shown.id
                    ),
                }
            }
            (false, None)
        }
        Some((_, Some(username))) => {
            crate::ask::echo(true);
            outln!();
            let credential = Credential {
                username: username.clone(),
                password: line.to_owned(),
            };
            (!line.is_empty(), (!line.is_empty()).then_some(credential))
        }
    };
    if let Err(error) = watcher.answer(&shown.path, shown.id, allow, (credential, None, None)) {
        eprintln!("chock approve: {error}");
    }
    Ok(None)
}

/// Whether a long question is read through the pager: this command's
/// output is a terminal, and the pager can be shown there.
fn paging() -> bool {
    std::io::stdout().is_terminal() && pager::can_page()
}

/// The text of `question` without its diff, when it carries one.
fn without_diff(question: &Asked) -> Option<String> {
    let start = diff_start(&question.detail)?;
    let mut short = question.clone();
    short.detail.truncate(start);
    short
        .detail
        .push("(the diff was shown in your pager)".into());
    Some(short.text())
}

/// The answers a question offers, as the prompt lists them.
pub(crate) fn answers_offered(scopes: &[Scope]) -> String {
    let mut more = String::new();
    if scopes.contains(&Scope::Session) {
        more.push_str("`s`: yes for this session, ");
    }
    if scopes.contains(&Scope::Always) {
        more.push_str("`a`: yes always, writing the rule above into chock.zon, ");
    }
    format!("allow it once? [y/N] (or {more}`n REASON`: no, and the agent is told why) ")
}

/// The scope of a yes typed as `y`/`yes` (once), `s`/`session`, or
/// `a`/`always`; `None` for anything else, which is no. A scope the
/// question did not offer is read by the server as once.
pub(crate) fn scope_of_yes(line: &str) -> Option<Scope> {
    match line.trim().to_ascii_lowercase().as_str() {
        "y" | "yes" => Some(Scope::Once),
        "s" | "session" => Some(Scope::Session),
        "a" | "always" => Some(Scope::Always),
        _ => None,
    }
}

/// The reason in a no typed as `n REASON` or `no REASON`.
pub(crate) fn reason_of_no(line: &str) -> Option<&str> {
    let line = line.trim();
    let (word, rest) = line.split_once(char::is_whitespace)?;
    let reason = rest.trim();
    (matches!(word.to_ascii_lowercase().as_str(), "n" | "no") && !reason.is_empty())
        .then_some(reason)
}

/// The lines typed on stdin, read on a thread of their own so that a
/// question can be withdrawn while the person is at the prompt; the channel
/// closes at the end of input.
/// Ctrl-C ends `chock approve` (exit 130) with the terminal's echo on
/// again: it is off while a password is typed, and the default end of a
/// process on SIGINT would leave it off. The handler is in place before the
/// first question shows.
fn end_on_ctrl_c() -> anyhow::Result<()> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .build()
        .context("could not start the runtime that waits for Ctrl-C")?;
    let mut interrupt = runtime
        .block_on(async {
            tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt())
        })
        .context("could not wait for Ctrl-C")?;
    std::thread::spawn(move || {
        if runtime.block_on(interrupt.recv()).is_some() {
            crate::ask::echo(true);
            outln!();
            std::process::exit(exit::INTERRUPTED.into());
        }
    });
    Ok(())
}

/// The lines typed at the prompt, and a switch that keeps them unread
/// while a pager has the terminal (the pager reads its keys from the same
/// terminal: a reader blocked on it would take them).
struct Typed {
    lines: std::sync::mpsc::Receiver<String>,
    paused: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

impl Typed {
    /// Runs `show` with the lines left unread, so every key typed meanwhile
    /// goes to it.
    fn paused<T>(&self, show: impl FnOnce() -> T) -> T {
        use std::sync::atomic::Ordering;
        self.paused.store(true, Ordering::SeqCst);
        let shown = show();
        self.paused.store(false, Ordering::SeqCst);
        shown
    }
}

fn typed_lines() -> Typed {
    use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
    use std::sync::atomic::Ordering;
    let (tell, lines) = std::sync::mpsc::channel();
    let paused = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let held = paused.clone();
    std::thread::spawn(move || {
        let stdin = std::io::stdin();
        loop {
            // Reads only once something was typed and no pager has the
            // terminal: a read waiting on it would race the pager's.
            let mut fds = [PollFd::new(stdin.as_fd(), PollFlags::POLLIN)];
            match poll(&mut fds, PollTimeout::from(100u8)) {
                Ok(0) => continue,
                Ok(_) if held.load(Ordering::SeqCst) => {
                    std::thread::sleep(Duration::from_millis(50));
                    continue;
                }
                Ok(_) => {}
                Err(nix::errno::Errno::EINTR) => continue,
                Err(_) => break,
            }
            let mut line = String::new();
            match stdin.lock().read_line(&mut line) {
                Ok(0) | Err(_) => break,
                Ok(_) => {}
            }
            let line = line.trim_end_matches(['\n', '\r']).to_owned();
            if tell.send(line).is_err() {
                break;
            }
        }
    });
    Typed { lines, paused }
}

#[cfg(test)]
mod tests {
    use super::reason_of_no;

    #[test]
    fn a_no_with_words_after_it_is_a_no_with_that_reason() {
        assert_eq!(
            reason_of_no("n use the scratch folder"),
            Some("use the scratch folder")
        );
        assert_eq!(reason_of_no("  NO\tnot on main  "), Some("not on main"));
        for plain in ["n", "no", "no   ", "y", "yes please", "nope never", ""] {
            assert_eq!(reason_of_no(plain), None, "{plain:?}");
        }
    }
}
