//! The writers' exclusive lock, waited for at most a bounded time.
//!
//! The lock is `flock(2)` on a separate lock file beside the log, so that it
//! stays the same file while `decisions.jsonl` is renamed by a rotation.

use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Mutex, PoisonError, mpsc};
use std::time::Duration;

/// Why `work` ran without the lock, when it did.
pub type Unlocked = Option<String>;

const WAITING: u8 = 0;
const TAKEN: u8 = 1;
const ABANDONED: u8 = 2;

/// Runs `work` once: holding the exclusive lock on `file` (`work(None)`),
/// or, when the lock could not be had within `wait`, without it
/// (`work(Some(why))`).
///
/// A free lock is taken at once on this thread. Otherwise a helper thread
/// blocks in the kernel for it, so a waiter is woken the moment the lock is
/// free, and the helper runs `work` itself as soon as it has the lock: the
/// lock is never held while a second thread waits to be scheduled, which
/// under heavy load is what would make other writers time out.
///
/// The only error is a helper thread that took `work` and then died (a
/// panic inside `work`): there is no result to give back.
pub fn with_exclusive<T, F>(file: File, wait: Duration, work: F) -> io::Result<T>
where
    T: Send + 'static,
    F: FnOnce(Unlocked) -> T + Send + 'static,
{
    match flock(&file, libc::LOCK_EX | libc::LOCK_NB) {
        Ok(true) => return Ok(run_then_unlock(&file, work)),
        Ok(false) => {}
        Err(e) => return Ok(work(Some(format!("the lock could not be taken: {e}")))),
    }
    let state = Arc::new(AtomicU8::new(WAITING));
    let work = Arc::new(Mutex::new(Some(work)));
    let (sender, receiver) = mpsc::sync_channel(1);
    let spawned = {
        let state = Arc::clone(&state);
        let work = Arc::clone(&work);
        // flock locks belong to the open file description; the clone shares it.
        file.try_clone().and_then(|waiter| {
            std::thread::Builder::new()
                .name("chock-log-lock".into())
                .spawn(move || wait_then_run(&waiter, &state, &work, &sender))
        })
    };
    if let Err(e) = spawned {
        return take(&work).map_or_else(
            || helper_result(&receiver),
            |work| Ok(work(Some(format!("the lock could not be waited for: {e}")))),
        );
    }
    match receiver.recv_timeout(wait) {
        Ok(result) => Ok(result),
        Err(_) => {
            if state
                .compare_exchange(WAITING, ABANDONED, Ordering::AcqRel, Ordering::Acquire)
                .is_ok()
            {
                drop(file);
                let why = format!(
                    "the lock stayed held by another writer for {} ms",
                    wait.as_millis()
                );
                match take(&work) {
                    Some(work) => Ok(work(Some(why))),
                    None => helper_result(&receiver),
                }
            } else {
                // The helper got the lock just now and is running `work`.
                helper_result(&receiver)
            }
        }
    }
}

/// The helper thread: waits for the lock, then runs `work` under it unless
/// the caller gave up first.
fn wait_then_run<T, F>(
    waiter: &File,
    state: &AtomicU8,
    work: &Mutex<Option<F>>,
    sender: &mpsc::SyncSender<T>,
) where
    F: FnOnce(Unlocked) -> T,
{
    let locked = flock(waiter, libc::LOCK_EX);
    let claimed = state
        .compare_exchange(WAITING, TAKEN, Ordering::AcqRel, Ordering::Acquire)
        .is_ok();
    if !claimed {
        // The caller wrote without the lock; let the lock go at once.
        let _ = flock(waiter, libc::LOCK_UN);
        return;
    }
    let Some(work) = take(work) else { return };
    let result = match locked {
        Ok(_) => run_then_unlock(waiter, work),
        Err(e) => work(Some(format!("the lock could not be taken: {e}"))),
    };
    let _ = sender.send(result);
}

fn run_then_unlock<T>(file: &File, work: impl FnOnce(Unlocked) -> T) -> T {
    let result = work(None);
    // Unlock now rather than at the last close of the open file description.
    let _ = flock(file, libc::LOCK_UN);
    // The unlock woke every waiter, but on a busy machine none may get a CPU
    // before this process comes back for the lock; stepping aside once lets
    // them in, so that no writer waits out its second while others go round.
    std::thread::yield_now();
    result
}

fn take<F>(work: &Mutex<Option<F>>) -> Option<F> {
    work.lock().unwrap_or_else(PoisonError::into_inner).take()
}

/// The result of `work` from the helper that claimed it.
fn helper_result<T>(receiver: &mpsc::Receiver<T>) -> io::Result<T> {
    receiver
        .recv()
        .map_err(|_| io::Error::other("the thread writing the line stopped without finishing it"))
}

/// One `flock` call, retried on EINTR; `Ok(false)` when a non-blocking try found it held.
fn flock(file: &File, operation: libc::c_int) -> io::Result<bool> {
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

    fn hold(path: &std::path::Path) -> File {
        let file = open(path);
        assert!(flock(&file, libc::LOCK_EX | libc::LOCK_NB).unwrap());
        file
    }

    #[test]
    fn a_free_lock_runs_the_work_locked() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("l");
        let why = with_exclusive(open(&path), Duration::ZERO, |why| why).unwrap();
        assert_eq!(why, None);
        // And it was let go afterwards.
        drop(hold(&path));
    }

    #[test]
    fn a_held_lock_runs_the_work_unlocked_after_the_wait_then_frees() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("l");
        let holder = hold(&path);
        let started = Instant::now();
        let why = with_exclusive(open(&path), Duration::from_millis(200), |why| why).unwrap();
        assert!(started.elapsed() >= Duration::from_millis(200));
        assert!(why.unwrap().contains("stayed held"));
        drop(holder);
        // The abandoned helper takes the lock and must let it go at once.
        let why = with_exclusive(open(&path), Duration::from_secs(2), |why| why).unwrap();
        assert_eq!(why, None, "the abandoned helper released the lock");
    }

    #[test]
    fn a_waiter_runs_the_work_as_soon_as_the_lock_is_released() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("l");
        let holder = hold(&path);
        let path2 = dir.path().join("l");
        let waiter = std::thread::spawn(move || {
            let file = open(&path2);
            with_exclusive(file, Duration::from_secs(5), move |why| {
                // Under the lock: nobody else may hold it now.
                let probe = open(&path2);
                let free = flock(&probe, libc::LOCK_EX | libc::LOCK_NB).unwrap();
                (why, free)
            })
            .unwrap()
        });
        std::thread::sleep(Duration::from_millis(50));
        drop(holder);
        let (why, probe_got_it) = waiter.join().unwrap();
        assert_eq!(why, None);
        assert!(!probe_got_it, "the work ran while the lock was held");
    }
}
