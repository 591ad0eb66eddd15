//! The raw calls of a sandbox's init and program processes (the crate's
//! `child` module) that nix does not make safely without allocating:
//! waiting for a signal with a timeout, reaping with the raw wait status,
//! putting back a signal's default action, starting the program process in
//! init's memory, and `execve` on arrays built beforehand.
//!
//! Each runs between `clone` and `execve` in a child of a process that may
//! have had other threads, so each is async-signal-safe: one system call on
//! the caller's data, no allocation, no lock.

use std::ffi::CString;

use nix::errno::Errno;
use nix::sys::signal::{SigHandler, SigSet, Signal};

/// Waits at most `timeout` for a signal of `set` (which the caller has
/// blocked) and takes it; `None` when none came in time or the wait was
/// interrupted.
pub(crate) fn wait_signal(set: &SigSet, timeout: &libc::timespec) -> Option<Signal> {
    // SAFETY: `set` and `timeout` are live and initialised; the siginfo is
    // plain data, all-zero a valid value, written only by the kernel.
    // Allocation-free: the call and its errno.
    let signal = unsafe {
        let mut info: libc::siginfo_t = std::mem::zeroed();
        libc::sigtimedwait(set.as_ref(), &mut info, timeout)
    };
    Signal::try_from(signal).ok()
}

/// Reaps one ended child without blocking: its pid and raw wait status
/// (what the parent decodes), `None` when no child has ended. nix's
/// `waitpid` decodes the status, which the report pipe carries raw.
pub(crate) fn reap_any() -> Option<(libc::pid_t, libc::c_int)> {
    let mut status = 0;
    // SAFETY: `status` is a live local the kernel writes. Allocation-free.
    let pid = unsafe { libc::waitpid(-1, &mut status, libc::WNOHANG) };
    (pid > 0).then_some((pid, status))
}

/// Gives `signal` its default action again, as a freshly started program
/// expects (Rust ignores SIGPIPE in Chock itself); a refusal leaves the
/// action as it was.
pub(crate) fn default_action(signal: Signal) {
    // SAFETY: SIG_DFL installs no handler, so no code of ours can run in
    // signal context because of it. Allocation-free: nix's `signal` is one
    // `signal(2)` call.
    let _ = unsafe { nix::sys::signal::signal(signal, SigHandler::SigDfl) };
}

/// Runs `entry(start)` in a new process that shares this one's memory
/// until it executes or exits, as `posix_spawn`'s does (see
/// [`super::spawn_sharing_memory`]); returns its pid once it has.
///
/// `entry` keeps [`super::fork_running`]'s rule and a stricter one, which
/// the crate's review keeps: it writes no memory but its own stack (and
/// `errno`, which the caller does not read after a successful spawn), since
/// its writes land in the caller's memory.
pub(crate) fn spawn_sharing<T>(start: &T, entry: fn(&T) -> !) -> Result<libc::pid_t, Errno> {
    let call = Call { start, entry };
    // SAFETY: `trampoline::<T>` never returns (`entry` returns `!`) and does
    // nothing but read `call` and run `entry`, which keeps the rule above;
    // `call` lives on this frame, which outlives the spawn: the call returns
    // only once the new process has executed or exited.
    unsafe {
        super::spawn_sharing_memory(
            trampoline::<T>,
            &call as *const Call<'_, T> as *mut libc::c_void,
        )
    }
}

/// What [`spawn_sharing`] hands the new process.
struct Call<'a, T> {
    start: &'a T,
    entry: fn(&T) -> !,
}

/// The new process's first function, on a stack of its own.
extern "C" fn trampoline<T>(call: *mut libc::c_void) -> libc::c_int {
    // SAFETY: `spawn_sharing` passes a live `Call<T>` and waits, suspended,
    // until this process executes or exits; reading it allocates nothing.
    let call = unsafe { &*(call as *const Call<'_, T>) };
    (call.entry)(call.start)
}

/// A program and the argument and environment arrays `execve` takes, built
/// by the parent: the program process only reads them, and writes nothing
/// but its own stack (it shares init's memory, see [`spawn_sharing`]).
pub(crate) struct ExecArgs {
    program: CString,
    /// The strings the arrays point into, never changed after `new` (a
    /// `CString`'s bytes stay where they are when the vector moves).
    _strings: Vec<CString>,
    /// Null-terminated.
    argv: Vec<*const libc::c_char>,
    /// Null-terminated.
    envp: Vec<*const libc::c_char>,
}

impl ExecArgs {
    pub(crate) fn new(program: CString, argv: Vec<CString>, envp: Vec<CString>) -> ExecArgs {
        let pointers = |strings: &[CString]| {
            strings
                .iter()
                .map(|s| s.as_ptr())
                .chain([std::ptr::null()])
                .collect()
        };
        let (argv_pointers, envp_pointers) = (pointers(&argv), pointers(&envp));
        let mut strings = argv;
        strings.extend(envp);
        ExecArgs {
            program,
            _strings: strings,
            argv: argv_pointers,
            envp: envp_pointers,
        }
    }
}

/// Executes `args`; returns only when the kernel refused, with its errno.
/// nix's `execve` builds its arrays on the heap, which is forbidden here.
pub(crate) fn execve(args: &ExecArgs) -> Errno {
    // SAFETY: both arrays are null-terminated and point into the CStrings
    // `args` holds unchanged for its life (see `ExecArgs::new`).
    // Allocation-free: the call and its errno.
    unsafe {
        libc::execve(
            args.program.as_ptr(),
            args.argv.as_ptr(),
            args.envp.as_ptr(),
        )
    };
    Errno::last()
}
