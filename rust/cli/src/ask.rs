//! Asking the person at the terminal: the question on stderr, the answer
//! read from stdin with the letters `chock approve` takes (`y` once, `a`
//! always where the rule is the project's to write, `n` or `n REASON`). A
//! single command is no session, so "for this session" is not offered.
//! With no terminal on both, a command with a project (`chock exec`,
//! `chock build`) asks a running `chock approve` or `chock ui` through an
//! approve socket of its own; with none of them there is nobody to ask,
//! and the caller refuses with the rules that would answer next time.

use std::io::{BufRead, IsTerminal, Read, Write};
use std::path::PathBuf;
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use chock_gate::{Offer, Scope, Word};
use chock_mcp::approve::ApproveHub;
use chock_mcp::{Asked, Reply, Unanswered};
use chock_policy::{Answer, Asker, Question};

use crate::commands::approve::{answers_offered, reason_of_no, scope_of_yes};

/// The person at this terminal.
#[derive(Debug, Default)]
pub struct TerminalAsker {
    /// The project's `chock.zon`, where a yes "always" writes the rule
    /// that answers the question, and the log its edit goes to; without
    /// it "always" is not offered.
    project: Option<(PathBuf, EditLog)>,
    /// The reason of the last no given with one, for the refusal.
    reason: Mutex<Option<String>>,
    /// With no terminal, `chock approve` and `chock ui`, reached through an
    /// approve socket of this process's own made at the first question.
    approvers: OnceLock<Option<Approvers>>,
}

/// How long a process with no terminal waits, at its first question, for
/// a running `chock approve` or `chock ui` to find its socket (they look
/// five times a second) before the question counts as unanswered.
const APPROVER_WAIT: Duration = Duration::from_secs(1);

/// The approve socket of a single command (`chock exec`, `chock build`),
/// served on a thread of its own.
struct Approvers {
    runtime: tokio::runtime::Handle,
    hub: ApproveHub,
    project: String,
}

impl std::fmt::Debug for Approvers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Approvers")
            .field("socket", &self.hub.path())
            .finish()
    }
}

impl Approvers {
    /// The socket, listening, once a running approver watches it; `None`
    /// when it cannot be made or nobody comes.
    fn start(edits: &EditLog) -> Option<Approvers> {
        let (told, heard) = std::sync::mpsc::channel();
        std::thread::Builder::new()
            .name("approve socket".into())
            .spawn(move || {
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build();
                match runtime {
                    Ok(runtime) => {
                        let _ = told.send(Some(runtime.handle().clone()));
                        runtime.block_on(std::future::pending::<()>());
                    }
                    Err(_) => {
                        let _ = told.send(None);
                    }
                }
            })
            .ok()?;
        let runtime = heard.recv().ok()??;
        let command = format!("chock {}", edits.route);
        // On the socket's own runtime, never the caller's (which may be
        // inside one of its own): started there, answered over a channel.
        let (told, heard) = std::sync::mpsc::channel();
        let (project, named) = (edits.project.clone(), command.clone());
        runtime.spawn(async move {
            let started = chock_mcp::approve::socket_dir()
                .and_then(|dir| ApproveHub::start(&dir, &project, &named));
            let _ = told.send(started);
        });
        let hub = match heard.recv().ok()? {
            Ok(hub) => hub,
            Err(e) => {
                tracing::warn!("{command}: `chock approve` cannot reach this command: {e}");
                return None;
            }
        };
        let began = std::time::Instant::now();
        while !hub.watched() {
            if began.elapsed() > APPROVER_WAIT {
                return None;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Some(Approvers {
            runtime,
            hub,
            project: edits.project.clone(),
        })
    }

    /// `question` put to the approvers watching, offered `offer`.
    fn ask(&self, question: &Question, offer: Offer) -> Reply {
        let asked = Asked::new(question, "", &self.project).offering(offer);
        let hub = self.hub.clone();
        let (told, heard) = std::sync::mpsc::channel();
        self.runtime.spawn(async move {
            let _ = told.send(hub.ask(asked, chock_mcp::ASK_TIMEOUT).await);
        });
        heard
            .recv()
            .unwrap_or_else(|_| Reply::Unanswered("the approve socket's thread ended".into()))
    }
}

/// Where a rule written for an "always" is logged, as `policy.edit` with
/// the rule as its subject.
#[derive(Debug)]
pub struct EditLog {
    pub log: chock_log::Log,
    pub route: chock_gate::Route,
    /// The project's folder, as the route's own lines name it.
    pub project: String,
}

impl EditLog {
    fn record(&self, question: &Question) {
        let key = chock_policy::Key::new(chock_mcp::POLICY_EDIT);
        let (verdict, settled) = chock_gate::scope::rule_written();
        let entries: Vec<_> = question
            .rules
            .iter()
            .map(|rule| {
                settled.entry(
                    self.route,
                    self.project.clone(),
                    &key,
                    &verdict,
                    Some(rule.rule.clone()),
                )
            })
            .collect();
        self.log.append_all(&entries);
    }
}

impl TerminalAsker {
    /// An asker that offers "always" for the project whose file is
    /// `project_file`, logging what it writes to `edits`.
    pub fn for_project(project_file: impl Into<PathBuf>, edits: EditLog) -> TerminalAsker {
        TerminalAsker {
            project: Some((project_file.into(), edits)),
            reason: Mutex::default(),
            approvers: OnceLock::new(),
        }
    }

    /// The reason the person gave with their last no, if they gave one.
    pub fn reason(&self) -> Option<String> {
        self.reason.lock().ok().and_then(|r| r.clone())
    }

    /// The approvers of a command with no terminal, found at its first
    /// question ([`Approvers::start`]); none for a process with no project.
    fn approvers(&self) -> Option<&Approvers> {
        let (_, edits) = self.project.as_ref()?;
        self.approvers
            .get_or_init(|| Approvers::start(edits))
            .as_ref()
    }

    /// What `chock approve` or `chock ui` answered, as the terminal's
    /// answers are read.
    fn ask_approvers(&self, approvers: &Approvers, question: &Question) -> Word {
        match approvers.ask(question, self.offer(question)) {
            Reply::Yes => Word::plain(Answer::Yes),
            Reply::YesFor(scope) => Word {
                scope,
                ..Word::plain(Answer::Yes)
            },
            Reply::No => Word::no(None),
            Reply::NoBecause(reason) => Word::no(Some(reason)),
            Reply::Cancelled => Word::plain(Answer::Cancelled),
            Reply::Unanswered(_) => Word::plain(Answer::Unavailable),
        }
    }

    fn offer(&self, question: &Question) -> Offer {
        match &self.project {
            Some((file, _)) => Offer::of(question, false, file),
            None => Offer::default(),
        }
    }

    /// Whether stdin and stderr are a terminal, where the person is asked.
    fn at_terminal(&self) -> bool {
        std::io::stdin().is_terminal() && std::io::stderr().is_terminal()
    }

    /// Keeps a yes "always": the question's rules written into the
    /// project's file, its diff shown and the edit logged. A rule that
    /// cannot be written leaves the yes once, and says why; the scope the
    /// yes kept is answered.
    fn keep_always(&self, question: &Question) -> Scope {
        let Some((file, edits)) = &self.project else {
            return Scope::Once;
        };
        let key = chock_policy::Key::new(question.action.clone());
        match chock_gate::scope::keep(Scope::Always, &key, question, None, file) {
            Ok(Some(edit)) => {
                eprintln!("chock: wrote to {}:\n{}", edit.file.display(), edit.diff());
                edits.record(question);
                Scope::Always
            }
            Ok(None) => Scope::Once,
            Err(why) => {
                eprintln!("chock: the answer \"always\" was kept for this once: {why}");
                Scope::Once
            }
        }
    }
}

/// In a session (`chock run`) the person may answer for the session or
/// always, as `offer` says; the session keeps the answer.
impl chock_mcp::Person for TerminalAsker {
    fn ask_scoped(&self, question: &Question, offer: Offer) -> Word {
        // The gate puts only ask and agent_review to a person.
        if !chock_gate::askable(question.decision) || !self.at_terminal() {
            return Word::plain(Answer::Unavailable);
        }
        // The progress line stays hidden while the person reads and answers.
        crate::progress::suspend(|| {
            let mut stderr = std::io::stderr().lock();
            let _ = write!(stderr, "{}", prompt(question, offer));
            let _ = stderr.flush();
            let mut line = String::new();
            match std::io::stdin().lock().read_line(&mut line) {
                Ok(_) => read_word(&line, offer),
                Err(_) => Word::no(None),
            }
        })
    }
}

impl Asker for TerminalAsker {
    /// A single command's question: "always" where the project's rule can
    /// be written (kept here), never "for this session".
    fn ask(&self, question: &Question) -> Answer {
        self.ask_with_scope(question).0
    }

    /// The log line of an act a yes "always" let go says so. With no
    /// terminal, a running `chock approve` or `chock ui` is asked.
    fn ask_with_scope(&self, question: &Question) -> (Answer, Option<Scope>) {
        let word = match self.approvers().filter(|_| !self.at_terminal()) {
            Some(approvers) if chock_gate::askable(question.decision) => {
                self.ask_approvers(approvers, question)
            }
            _ => chock_mcp::Person::ask_scoped(self, question, self.offer(question)),
        };
        let scope = (word.answer == Answer::Yes).then(|| match word.scope {
            Scope::Always => self.keep_always(question),
            _ => Scope::Once,
        });
        if let Ok(mut reason) = self.reason.lock() {
            reason.clone_from(&word.reason);
        }
        (word.answer, scope)
    }

    /// With a terminal on stdin and stderr, or, for a command with a
    /// project and no terminal, a running `chock approve` or `chock ui`.
    fn can_ask(&self) -> bool {
        self.at_terminal() || self.approvers().is_some()
    }

    /// The question on stderr, one line read from stdin.
    fn ask_text(&self, question: &Question) -> Option<String> {
        if !self.at_terminal() {
            return None;
        }
        crate::progress::suspend(|| {
            let mut stderr = std::io::stderr().lock();
            let _ = write!(
                stderr,
                "chock asks: {}\nyour answer (one line): ",
                question.summary
            );
            let _ = stderr.flush();
            let mut line = String::new();
            let read = std::io::stdin()
                .lock()
                .take(MAX_TEXT_READ)
                .read_line(&mut line);
            Some(read.map_or_else(|_| String::new(), |_| line))
        })
    }
}

/// The most bytes of a free-text answer read at the terminal; the agent
/// keeps fewer (`ask_user` cuts and cleans it).
const MAX_TEXT_READ: u64 = 64 * 1024;

/// Turns the terminal's echo on or off (nothing when stdin is no terminal),
/// saying so on stderr when the terminal refuses.
pub fn echo(on: bool) {
    if let Err(error) = set_echo(on) {
        eprintln!(
            "chock: the terminal's echo could not be turned {}: {error}",
            if on { "on" } else { "off" }
        );
    }
}

pub fn set_echo(on: bool) -> std::io::Result<()> {
    let stdin = std::io::stdin();
    let mut mode = match rustix::termios::tcgetattr(&stdin) {
        Ok(mode) => mode,
        Err(_) if !stdin.is_terminal() => return Ok(()),
        Err(error) => return Err(error.into()),
    };
    mode.local_modes.set(rustix::termios::LocalModes::ECHO, on);
    rustix::termios::tcsetattr(&stdin, rustix::termios::OptionalActions::Now, &mode)?;
    Ok(())
}

/// Shows `prompt` on stderr and reads one line from the terminal with its
/// echo off (from stdin as it is when it is no terminal), without its line
/// end. The terminal's mode is changed before the prompt shows, so nothing
/// typed after it is echoed, and put back however the read ends; Ctrl-C is
/// read as a key there and ends the read as `Interrupted`, so the terminal
/// is never left without its echo. Refuses when the mode cannot be changed.
pub fn read_hidden_line(prompt: &str) -> std::io::Result<String> {
    let stdin = std::io::stdin();
    if !stdin.is_terminal() {
        let mut line = String::new();
        stdin.lock().read_line(&mut line)?;
        return Ok(line.trim_end_matches(['\r', '\n']).to_owned());
    }
    let hidden = HiddenTerminal::start(&stdin)?;
    let mut stderr = std::io::stderr().lock();
    let _ = write!(stderr, "{prompt}");
    let _ = stderr.flush();
    let read = hidden_line(stdin.lock());
    drop(hidden);
    let _ = writeln!(stderr);
    read
}

/// The terminal in the mode a hidden line is read in: no echo, no line
/// editing by the kernel, and Ctrl-C a key rather than a signal (a signal
/// would end the process before the mode is put back). The mode it had is
/// put back on drop.
struct HiddenTerminal {
    saved: rustix::termios::Termios,
}

impl HiddenTerminal {
    fn start(stdin: &std::io::Stdin) -> std::io::Result<HiddenTerminal> {
        use rustix::termios::{LocalModes, OptionalActions, SpecialCodeIndex};
        let saved = rustix::termios::tcgetattr(stdin)?;
        let mut hidden = saved.clone();
        hidden
            .local_modes
            .remove(LocalModes::ECHO | LocalModes::ICANON | LocalModes::ISIG);
        hidden.special_codes[SpecialCodeIndex::VMIN] = 1;
        hidden.special_codes[SpecialCodeIndex::VTIME] = 0;
        rustix::termios::tcsetattr(stdin, OptionalActions::Now, &hidden)?;
        Ok(HiddenTerminal { saved })
    }
}

impl Drop for HiddenTerminal {
    fn drop(&mut self) {
        let stdin = std::io::stdin();
        if let Err(error) =
            rustix::termios::tcsetattr(&stdin, rustix::termios::OptionalActions::Now, &self.saved)
        {
            eprintln!(
                "chock: the terminal's mode could not be put back ({error}): run `stty sane`"
            );
        }
    }
}

/// One line typed with the kernel's line editing off: Enter ends it,
/// Backspace takes back a character, Ctrl-U the whole line, Ctrl-D on an
/// empty line is the end of input, Ctrl-C stops the read.
fn hidden_line(input: impl BufRead) -> std::io::Result<String> {
    const CTRL_C: u8 = 0x03;
    const CTRL_D: u8 = 0x04;
    const CTRL_U: u8 = 0x15;
    const BACKSPACE: u8 = 0x08;
    const DELETE: u8 = 0x7f;
    let mut line = Vec::new();
    for byte in input.bytes() {
        match byte? {
            b'\r' | b'\n' => break,
            CTRL_C => {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::Interrupted,
                    "stopped with Ctrl-C",
                ));
            }
            CTRL_D if line.is_empty() => break,
            CTRL_U => line.clear(),
            BACKSPACE | DELETE => {
                // A whole character: its continuation bytes, then its first.
                while let Some(byte) = line.pop() {
                    if byte & 0xc0 != 0x80 {
                        break;
                    }
                }
            }
            byte => line.push(byte),
        }
    }
    String::from_utf8(line).map_err(|_| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            "what was typed is not UTF-8 text",
        )
    })
}

/// Asks the person at this terminal for the user name and password (or
/// token) of the remote a `git push` reaches: the user name (the URL's as
/// the default), then the password with the terminal's echo off. `Err`
/// says why there is none (no terminal, or an empty answer).
pub fn credential(
    wanted: &chock_mcp::credential::Wanted,
) -> Result<chock_mcp::credential::Credential, Unanswered> {
    if !std::io::stdin().is_terminal() || !std::io::stderr().is_terminal() {
        return Err(Unanswered::Nobody(
            "nobody could be asked for it: there is no terminal",
        ));
    }
    crate::progress::suspend(|| {
        let mut stderr = std::io::stderr().lock();
        let read = |line: &mut String| std::io::stdin().lock().read_line(line).map(|_| ());
        let _ = write!(
            stderr,
            "chock: git push to {} needs a user name and password (or token), given to git for this one command\n  user name{}: ",
            chock_policy::visible(&wanted.url()),
            wanted
                .username
                .as_deref()
                .map_or(String::new(), |u| format!(
                    " [{}]",
                    chock_policy::visible(u)
                ))
        );
        let _ = stderr.flush();
        let mut username = String::new();
        read(&mut username).map_err(|source| Unanswered::Unread {
            what: "user name",
            source,
        })?;
        let username = match username.trim() {
            "" => wanted.username.clone().unwrap_or_default(),
            name => name.to_owned(),
        };
        drop(stderr);
        let password = read_hidden_line("  password or token (not shown): ").map_err(|source| {
            Unanswered::Unread {
                what: "password",
                source,
            }
        })?;
        chock_mcp::credential::typed(&username, password.trim_end_matches(['\r', '\n']))
            .ok_or(Unanswered::NoneGiven("the person gave none"))
    })
}

/// The question as the person sees it, with the answers it offers.
fn prompt(question: &Question, offer: Offer) -> String {
    format!(
        "chock asks: {}\n{}",
        question.shown(),
        answers_offered(&offer.scopes())
    )
}

/// `y` or `yes` (any case) is yes once, `a` or `always` yes always where
/// offered, `n REASON` a no with that reason; anything else (an empty
/// line, end of input, a scope not offered) is no.
fn read_word(line: &str, offer: Offer) -> Word {
    match scope_of_yes(line) {
        Some(scope) if offer.offers(scope) => Word::yes(scope, offer),
        _ => Word::no(reason_of_no(line).map(str::to_owned)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_an_offered_yes_is_yes() {
        let always = Offer {
            session: false,
            always: true,
        };
        assert_eq!(
            read_word("y\n", Offer::default()),
            Word::yes(Scope::Once, always)
        );
        assert_eq!(read_word(" YES \n", always), Word::yes(Scope::Once, always));
        assert_eq!(read_word("a\n", always), Word::yes(Scope::Always, always));
        for no in ["", "\n", "n", "no", "yess", "sure", "s"] {
            assert_eq!(read_word(no, always), Word::no(None), "{no:?}");
        }
        assert_eq!(read_word("a\n", Offer::default()), Word::no(None));
        assert_eq!(
            read_word("n not on main\n", always),
            Word::no(Some("not on main".into()))
        );
    }

    #[test]
    fn the_prompt_shows_the_action_summary_detail_and_the_rule_to_write() {
        let question = Question {
            action: "nix.net.hosts".into(),
            decision: chock_policy::Decision::Ask,
            summary: "1 host".into(),
            detail: vec!["a.example:443".into()],
            rules: vec![chock_policy::Suggestion {
                rule: ".{ .action = \"nix.net.build.example.a.443\", .decision = .allow }".into(),
                block: ".policy.rules in /p/chock.zon".into(),
            }],
        };
        assert_eq!(
            prompt(&question, Offer::default()),
            "chock asks: nix.net.hosts\n  1 host\n    a.example:443\n  to stop being asked, add to .policy.rules in /p/chock.zon:\n    .{ .action = \"nix.net.build.example.a.443\", .decision = .allow },\nallow it once? [y/N] (or `n REASON`: no, and the agent is told why) "
        );
    }

    #[test]
    fn a_hidden_line_is_edited_as_typed() {
        let read = |typed: &[u8]| hidden_line(typed);
        assert_eq!(read(b"secret\r").unwrap(), "secret");
        assert_eq!(read(b"sec\x7fcret\n").unwrap(), "secret");
        assert_eq!(read("ké\x08\x7fey\r".as_bytes()).unwrap(), "ey");
        assert_eq!(read(b"wrong\x15right\r").unwrap(), "right");
        assert_eq!(read(b"\x04").unwrap(), "");
        assert_eq!(read(b"no end").unwrap(), "no end");
        let stopped = read(b"half\x03rest\r").unwrap_err();
        assert_eq!(stopped.kind(), std::io::ErrorKind::Interrupted);
        assert!(read(b"\xff\r").is_err());
    }
}
