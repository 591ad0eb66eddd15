//! Ctrl-C for command-line embeddings: a SIGINT handler that raises a flag
//! the evaluator polls, so an endless evaluation stops with an error
//! instead of being killed half-way through printing.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

static FLAG: OnceLock<Arc<AtomicBool>> = OnceLock::new();

extern "C" fn on_sigint(_signal: libc::c_int) {
    let Some(flag) = FLAG.get() else { return };
    if flag.swap(true, Ordering::Relaxed) {
        // A second Ctrl-C: whatever has not reached a check since the
        // first (a parse, a long step of a builtin) ends now, as a process
        // killed by SIGINT ends.
        crate::sys::die_of_sigint();
    }
}

/// Installs the handler (once per process) and returns the flag to put in
/// `EvalOptions::interrupt`. The first Ctrl-C sets the flag and the
/// evaluation stops with an error at its next check; a second one, while
/// the flag is set, ends the process at once.
pub fn ctrl_c_flag() -> std::io::Result<Arc<AtomicBool>> {
    let flag = FLAG
        .get_or_init(|| Arc::new(AtomicBool::new(false)))
        .clone();
    // The handler only performs an atomic store through a pointer that
    // stays valid for the life of the process (the `OnceLock`).
    crate::sys::on_sigint(on_sigint)?;
    Ok(flag)
}
