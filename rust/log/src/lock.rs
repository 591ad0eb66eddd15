//! The writers' exclusive lock, waited for at most a bounded time.
//!
//! The lock is `flock(2)` on a separate lock file beside the log, so that it
//! stays the same file while `decisions.jsonl` is renamed by a rotation.

use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;
use std::sync::mpsc;
use std::time::Duration;

/// An exclusive lock held until dropped (closing the file releases it).
#[derive(Debug)]
pub struct Held {
    _file: File,
}

/// Takes the exclusive lock on `file`, waiting at most `wait`.
///
/// Returns `Ok(None)` when another writer kept it the whole time. The wait
/// blocks in the kernel (on a helper thread) rather than polling, so a waiter
/// is woken the moment the lock is free, even with many writers queueing.
pub fn exclusive(file: File, wait: Duration) -> io::Result<Option<Held>> {
    if try_flock(&file, libc::LOCK_EX | libc::LOCK_NB)? {
        return Ok(Some(Held { _file: file }));
    }
    // flock locks belong to the open file description, which the clone shares:
    // when the helper gets the lock, this `file` holds it too.
    let waiter = file.try_clone()?;
    let (sender, receiver) = mpsc::sync_channel(1);
    std::thread::Builder::new()
        .name("chock-log-lock".into())
        .spawn(move || {
            let outcome = try_flock(&waiter, libc::LOCK_EX);
            // If the caller gave up, the send fails; dropping `waiter` then
            // closes the last descriptor and so releases the lock at once.
            let _ = sender.send(outcome);
        })?;
    match receiver.recv_timeout(wait) {
        Ok(Ok(_)) => Ok(Some(Held { _file: file })),
        Ok(Err(e)) => Err(e),
        // Dropping `file` here leaves the helper's clone as the only holder.
        Err(_) => Ok(None),
    }
}

/// One `flock` call, retried on EINTR; `Ok(false)` when a non-blocking try found it held.
fn try_flock(file: &File, operation: libc::c_int) -> io::Result<bool> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    fn open(path: &std::path::Path) -> File {
        std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(path)
            .unwrap()
    }

    #[test]
    fn a_held_lock_times_out_then_frees_after_release() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("l");
        let first = exclusive(open(&path), Duration::from_millis(10))
            .unwrap()
            .expect("a free lock is taken at once");
        let started = Instant::now();
        let second = exclusive(open(&path), Duration::from_millis(200)).unwrap();
        assert!(second.is_none(), "the lock is held by `first`");
        assert!(started.elapsed() >= Duration::from_millis(200));
        drop(first);
        // The abandoned waiter thread takes the lock and must release it at once.
        let third = exclusive(open(&path), Duration::from_millis(1000)).unwrap();
        assert!(third.is_some(), "the abandoned waiter let the lock go");
    }

    #[test]
    fn a_waiter_gets_the_lock_when_it_is_released() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("l");
        let first = exclusive(open(&path), Duration::ZERO).unwrap().unwrap();
        let waiter = std::thread::spawn(move || {
            exclusive(open(&path), Duration::from_secs(5))
                .unwrap()
                .is_some()
        });
        std::thread::sleep(Duration::from_millis(50));
        drop(first);
        assert!(waiter.join().unwrap());
    }
}
