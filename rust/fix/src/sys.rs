//! fix's kernel calls: the machine's memory size and the SIGINT handler
//! behind [`crate::ctrl_c_flag`]. Each is one safe function; the callers
//! hold no `unsafe` of their own.

/// The machine's physical memory in bytes, `None` when it cannot be read.
pub(crate) fn physical_memory_bytes() -> Option<usize> {
    // SAFETY: sysconf has no preconditions.
    let (pages, page) = unsafe {
        (
            libc::sysconf(libc::_SC_PHYS_PAGES),
            libc::sysconf(libc::_SC_PAGESIZE),
        )
    };
    usize::try_from(pages)
        .ok()?
        .checked_mul(usize::try_from(page).ok()?)
}

/// Installs `handler` for SIGINT. The one handler fix installs
/// (`interrupt::on_sigint`) does an atomic swap and may call
/// [`die_of_sigint`]: both async-signal-safe.
pub(crate) fn on_sigint(handler: extern "C" fn(libc::c_int)) -> std::io::Result<()> {
    // SAFETY: `handler` is a plain `extern "C"` function that lives for the
    // whole process; signal stores it and reads no other pointer.
    let previous = unsafe { libc::signal(libc::SIGINT, handler as libc::sighandler_t) };
    if previous == libc::SIG_ERR {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// Restores SIGINT's default action and raises it, ending the process as a
/// Ctrl-C does. Async-signal-safe: it is called from the SIGINT handler.
pub(crate) fn die_of_sigint() {
    // SAFETY: `signal` and `raise` are async-signal-safe; SIG_DFL takes no
    // pointer.
    unsafe {
        libc::signal(libc::SIGINT, libc::SIG_DFL);
        libc::raise(libc::SIGINT);
    }
}
