//! Ctrl-C for command-line embeddings: a SIGINT handler that raises a flag
//! the evaluator polls, so an endless evaluation stops with an error
//! instead of being killed half-way through printing.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

static FLAG: OnceLock<Arc<AtomicBool>> = OnceLock::new();

extern "C" fn on_sigint(_signal: libc::c_int) {
    if let Some(flag) = FLAG.get() {
        flag.store(true, Ordering::Relaxed);
    }
}

/// Installs the handler (once per process) and returns the flag to put in
/// `EvalOptions::interrupt`. A second Ctrl-C while the flag is already set
/// still only sets it; the evaluation stops at its next check.
pub fn ctrl_c_flag() -> std::io::Result<Arc<AtomicBool>> {
    let flag = FLAG
        .get_or_init(|| Arc::new(AtomicBool::new(false)))
        .clone();
    // SAFETY: the handler only performs an atomic store through a pointer
    // that stays valid for the life of the process (the `OnceLock`).
    let previous = unsafe {
        libc::signal(
            libc::SIGINT,
            on_sigint as extern "C" fn(libc::c_int) as libc::sighandler_t,
        )
    };
    if previous == libc::SIG_ERR {
        return Err(std::io::Error::last_os_error());
    }
    Ok(flag)
}
