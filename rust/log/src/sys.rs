//! The log's only kernel calls that need `unsafe`: whole-file `flock(2)` and
//! the open-file-description byte-range locks (`F_OFD_*`) the fair lock in
//! `lock.rs` queues on. Each is one safe function; the rest of the crate
//! calls these and holds no `unsafe` of its own.

use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;

/// One `flock` call, retried on EINTR; `Ok(false)` when a non-blocking try found it held.
pub(crate) fn flock(file: &File, operation: libc::c_int, block: bool) -> io::Result<bool> {
    let operation = if block {
        operation
    } else {
        operation | libc::LOCK_NB
    };
    loop {
        // SAFETY: flock takes a descriptor that `file` keeps open for the call.
        let rc = unsafe { libc::flock(file.as_raw_fd(), operation) };
        if rc == 0 {
            return Ok(true);
        }
        let error = io::Error::last_os_error();
        match error.raw_os_error() {
            Some(libc::EINTR) => continue,
            Some(libc::EWOULDBLOCK) => return Ok(false),
            _ => return Err(error),
        }
    }
}

/// Whether another open file holds a lock on the one byte at `offset`.
pub(crate) fn range_held(file: &File, offset: u64) -> io::Result<bool> {
    let mut range = one_byte(libc::F_WRLCK, offset)?;
    // SAFETY: F_OFD_GETLK reads and fills `range`, which lives for the call,
    // on a descriptor `file` keeps open.
    let rc = unsafe { libc::fcntl(file.as_raw_fd(), libc::F_OFD_GETLK, &raw mut range) };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(range.l_type != libc::F_UNLCK as libc::c_short)
}

/// The lock request for the one byte at `offset`.
fn one_byte(kind: libc::c_int, offset: u64) -> io::Result<libc::flock> {
    // SAFETY: flock is plain data; all-zero is a valid value, and l_pid
    // must be 0 for an open-file-description lock.
    let mut range: libc::flock = unsafe { std::mem::zeroed() };
    range.l_type = kind as libc::c_short;
    range.l_whence = libc::SEEK_SET as libc::c_short;
    range.l_start = libc::off_t::try_from(offset).map_err(io::Error::other)?;
    range.l_len = 1;
    Ok(range)
}

/// Locks (`F_WRLCK`) or unlocks (`F_UNLCK`) the one byte at `offset` with an
/// open-file-description lock, retried on EINTR; `Ok(false)` when a
/// non-blocking try found it held.
pub(crate) fn range_lock(
    file: &File,
    kind: libc::c_int,
    offset: u64,
    block: bool,
) -> io::Result<bool> {
    let range = one_byte(kind, offset)?;
    let command = if block {
        libc::F_OFD_SETLKW
    } else {
        libc::F_OFD_SETLK
    };
    loop {
        // SAFETY: fcntl with an OFD lock command reads `range`, which lives
        // for the call, on a descriptor `file` keeps open.
        let rc = unsafe { libc::fcntl(file.as_raw_fd(), command, &raw const range) };
        if rc == 0 {
            return Ok(true);
        }
        let error = io::Error::last_os_error();
        match error.raw_os_error() {
            Some(libc::EINTR) => continue,
            Some(libc::EAGAIN | libc::EACCES) => return Ok(false),
            _ => return Err(error),
        }
    }
}
