//! The bound on how long `chock hook` takes. An agent that hears nothing
//! from a hook by its own timeout runs the call anyway (Claude Code, Codex
//! and Gemini CLI all do), so a hook that is slow for any reason (a payload
//! that never ends, a log on a hung disk, a command that is slow to read)
//! would fail open. The watchdog answers deny itself, in the agent's format,
//! before [`ANSWER_WITHIN`] has passed, and ends the process; whichever of
//! the hook and the watchdog answers first is the only one heard.

use std::io::Write as _;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use crate::agent::Agent;
use crate::answer::{self, HookAnswer};

/// When the watchdog answers: well below the default hook timeouts the
/// agents document (60 s for Claude Code's and Gemini CLI's command
/// hooks), and far above what a hook takes (milliseconds).
pub const DEADLINE: Duration = Duration::from_secs(9);

/// How long the watchdog tries to write its log line before it answers
/// anyway (the log may be what is slow).
const LOG_WITHIN: Duration = Duration::from_secs(1);

/// The latest a `chock hook` for an agent answers: the deadline and the
/// time its log line may take.
pub const ANSWER_WITHIN: Duration = Duration::from_secs(DEADLINE.as_secs() + LOG_WITHIN.as_secs());

/// The action a call refused by the watchdog is logged under.
pub const TIMED_OUT: &str = "chock.hook.timeout";

/// A started watchdog. [`Watchdog::claim`] before printing an answer.
pub struct Watchdog {
    answered: Arc<AtomicBool>,
}

impl Watchdog {
    /// Starts the watchdog for one agent hook; `project` finds the project
    /// a refusal is logged for (only then, on the watchdog's own thread:
    /// finding it reads the file system, which may be what is slow).
    pub fn start(agent: Agent, project: impl FnOnce() -> PathBuf + Send + 'static) -> Watchdog {
        let answered = Arc::new(AtomicBool::new(false));
        let mine = Arc::clone(&answered);
        let spawned = std::thread::Builder::new()
            .name("chock-hook-watchdog".into())
            .spawn(move || {
                std::thread::sleep(DEADLINE);
                if mine.swap(true, Ordering::SeqCst) {
                    return;
                }
                refuse(agent, project);
            });
        if let Err(error) = spawned {
            // Without a watchdog nothing bounds the hook: refuse now.
            answered.store(true, Ordering::SeqCst);
            let reason = format!("Chock could not start its watchdog ({error}), so it refuses");
            print_and_exit(&answer::reply(agent, HookAnswer::Deny, &reason));
        }
        Watchdog { answered }
    }

    /// Claims the right to answer. When the watchdog has already answered,
    /// this never returns: the watchdog is ending the process.
    pub fn claim(&self) {
        if self.answered.swap(true, Ordering::SeqCst) {
            loop {
                std::thread::park();
            }
        }
    }
}

/// Logs the refusal (for at most [`LOG_WITHIN`]), prints it and exits.
fn refuse(agent: Agent, project: impl FnOnce() -> PathBuf + Send + 'static) {
    let reason = format!(
        "Chock could not decide this call within {} s, so it refuses it rather than let the agent's own timeout run it; try again, and if it keeps happening run `chock doctor`",
        DEADLINE.as_secs()
    );
    let (logged, wait) = std::sync::mpsc::channel();
    let subject = reason.clone();
    let _ = std::thread::Builder::new()
        .name("chock-hook-watchdog-log".into())
        .spawn(move || {
            crate::run::Logger::new(&project(), agent.name()).refused(
                TIMED_OUT,
                &subject,
                None,
                &chock_policy::Config::default(),
            );
            let _ = logged.send(());
        });
    let _ = wait.recv_timeout(LOG_WITHIN);
    print_and_exit(&answer::reply(agent, HookAnswer::Deny, &reason));
}

fn print_and_exit(reply: &answer::Reply) -> ! {
    let mut stdout = std::io::stdout().lock();
    let _ = stdout.write_all(reply.stdout.as_bytes());
    let _ = stdout.flush();
    let mut stderr = std::io::stderr().lock();
    let _ = stderr.write_all(reply.stderr.as_bytes());
    let _ = stderr.flush();
    std::process::exit(i32::from(reply.exit_code));
}
