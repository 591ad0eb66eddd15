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

/// The question as the person sees it.
fn prompt(question: &Question) -> String {
    let mut text = format!("chock asks: {}\n  {}\n", question.action, question.summary);
    for line in &question.detail {
        text.push_str(&format!("    {line}\n"));
    }
    text.push_str("allow it for this build? [y/N] ");
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
            "chock asks: nix.net.hosts\n  1 host\n    a.example:443\nallow it for this build? [y/N] "
        );
    }
}
