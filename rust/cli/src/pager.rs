//! A long question read through the person's pager before they answer:
//! `$PAGER` (`less -R` when unset), run by the shell as git runs it, only
//! when stdin and stderr are a terminal. The text given is already escaped
//! (`Question::shown`), so the pager shows nothing an agent chose raw.

use std::io::{IsTerminal, Write};
use std::os::fd::AsFd;
use std::process::{Command, Stdio};

/// The pager when `$PAGER` is unset or empty.
const DEFAULT_PAGER: &str = "less -R";

/// Whether a pager can be shown: a terminal on stdin and stderr.
pub fn can_page() -> bool {
    std::io::stdin().is_terminal() && std::io::stderr().is_terminal()
}

/// Shows `text` through the pager and waits for the person to leave it;
/// false when no pager could run (the caller shows the text itself).
pub fn page(text: &str) -> bool {
    let pager = std::env::var("PAGER")
        .ok()
        .filter(|p| !p.trim().is_empty())
        .unwrap_or_else(|| DEFAULT_PAGER.to_owned());
    let child = Command::new("sh")
        .args(["-c", &pager])
        .env(
            "LESS",
            std::env::var("LESS").unwrap_or_else(|_| "FRX".into()),
        )
        .stdin(Stdio::piped())
        .stdout(
            std::io::stderr()
                .as_fd()
                .try_clone_to_owned()
                .map_or_else(|_| Stdio::inherit(), Stdio::from),
        )
        .spawn();
    let Ok(mut child) = child else {
        return false;
    };
    if let Some(mut stdin) = child.stdin.take() {
        // A pager the person quits early closes its end: that is no error.
        let _ = stdin.write_all(text.as_bytes());
        let _ = stdin.write_all(b"\n");
    }
    child.wait().is_ok_and(|status| status.success())
}
