//! Asking the person at the terminal: the question on stderr, a y/n answer
//! read from stdin. With no terminal on both there is nobody to ask, and the
//! caller refuses with the rules that would answer next time.

use std::io::{BufRead, IsTerminal, Write};

use chock_policy::{Answer, Asker, Question};

/// The person at this terminal.
#[derive(Debug, Clone, Copy, Default)]
pub struct TerminalAsker;

impl Asker for TerminalAsker {
    fn ask(&self, question: &Question) -> Answer {
        // The gate puts only ask and agent_review to a person.
        if !chock_gate::askable(question.decision) {
            return Answer::Unavailable;
        }
        if !std::io::stdin().is_terminal() || !std::io::stderr().is_terminal() {
            return Answer::Unavailable;
        }
        // The progress line stays hidden while the person reads and answers.
        crate::progress::suspend(|| {
            let mut stderr = std::io::stderr().lock();
            let _ = write!(stderr, "{}", prompt(question));
            let _ = stderr.flush();
            let mut line = String::new();
            match std::io::stdin().lock().read_line(&mut line) {
                Ok(_) => read_answer(&line),
                Err(_) => Answer::No,
            }
        })
    }
}

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

fn set_echo(on: bool) -> std::io::Result<()> {
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
/// echo off, turned off before the prompt shows so nothing typed after it
/// is echoed; refuses when the echo cannot be turned off. The echo is on
/// again afterwards, whatever the read did.
pub fn read_hidden_line(prompt: &str) -> std::io::Result<String> {
    set_echo(false)?;
    let mut stderr = std::io::stderr().lock();
    let _ = write!(stderr, "{prompt}");
    let _ = stderr.flush();
    let mut line = String::new();
    let read = std::io::stdin().lock().read_line(&mut line);
    echo(true);
    let _ = writeln!(stderr);
    read.map(|_| line)
}

/// Asks the person at this terminal for the user name and password (or
/// token) of the remote a `git push` reaches: the user name (the URL's as
/// the default), then the password with the terminal's echo off. `Err`
/// says why there is none (no terminal, or an empty answer).
pub fn credential(
    wanted: &chock_mcp::credential::Wanted,
) -> Result<chock_mcp::credential::Credential, String> {
    if !std::io::stdin().is_terminal() || !std::io::stderr().is_terminal() {
        return Err("nobody could be asked for it: there is no terminal".into());
    }
    crate::progress::suspend(|| {
        let mut stderr = std::io::stderr().lock();
        let read = |line: &mut String| std::io::stdin().lock().read_line(line).map(|_| ());
        let _ = write!(
            stderr,
            "chock: git push to {} needs a user name and password (or token), given to git for this one command\n  user name{}: ",
            wanted.url(),
            wanted
                .username
                .as_deref()
                .map_or(String::new(), |u| format!(" [{u}]"))
        );
        let _ = stderr.flush();
        let mut username = String::new();
        read(&mut username).map_err(|e| format!("reading the user name failed: {e}"))?;
        let username = match username.trim() {
            "" => wanted.username.clone().unwrap_or_default(),
            name => name.to_owned(),
        };
        drop(stderr);
        let password = read_hidden_line("  password or token (not shown): ")
            .map_err(|e| format!("reading the password failed: {e}"))?;
        chock_mcp::credential::typed(&username, password.trim_end_matches(['\r', '\n']))
            .ok_or_else(|| "the person gave none".to_owned())
    })
}

/// The question as the person sees it.
fn prompt(question: &Question) -> String {
    let mut text = format!("chock asks: {}\n  {}\n", question.action, question.summary);
    for line in &question.detail {
        text.push_str(&format!("    {line}\n"));
    }
    text.push_str("allow it this once? [y/N] ");
    text
}

/// `y` or `yes` (any case) is yes; anything else, an empty line or end of input, no.
fn read_answer(line: &str) -> Answer {
    match line.trim().to_ascii_lowercase().as_str() {
        "y" | "yes" => Answer::Yes,
        _ => Answer::No,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chock_policy::Decision;

    #[test]
    fn only_yes_is_yes() {
        assert_eq!(read_answer("y\n"), Answer::Yes);
        assert_eq!(read_answer(" YES \n"), Answer::Yes);
        for no in ["", "\n", "n", "no", "yess", "sure"] {
            assert_eq!(read_answer(no), Answer::No, "{no:?}");
        }
    }

    #[test]
    fn the_prompt_shows_the_action_summary_and_detail() {
        let question = Question {
            action: "nix.net.hosts".into(),
            decision: Decision::Ask,
            summary: "1 host".into(),
            detail: vec!["a.example:443".into()],
            rules: vec![],
        };
        assert_eq!(
            prompt(&question),
            "chock asks: nix.net.hosts\n  1 host\n    a.example:443\nallow it this once? [y/N] "
        );
    }
}
