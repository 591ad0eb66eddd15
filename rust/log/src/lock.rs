//! The writers' turn: a first-come, first-served queue in front of an
//! exclusive lock, waited for as long as the log keeps moving.
//!
//! `flock(2)` alone is not fair: an unlock wakes every waiter and whichever
//! gets a CPU first wins, so on a busy machine one waiter can lose again and
//! again while others go round. Writers therefore line up first:
//!
//! 1. Under a short `flock` on `decisions.queue`, a writer reads the ticket
//!    counter kept in the file's first 8 bytes, write-locks the byte range
//!    that belongs to its ticket (an open-file-description lock,
//!    `F_OFD_SETLK`, which the kernel drops when the process dies), and
//!    stores the counter plus one.
//! 2. It waits until the ticket before it has let go of its byte
//!    (`F_OFD_SETLKW`): that writer has finished, or died.
//! 3. It takes the exclusive `flock` on `decisions.lock`. Normally nobody
//!    holds it by then; it keeps writers apart when a writer in the queue
//!    died while the one before it was still writing, and it is what
//!    `chock log verify` waits on.
//!
//! Writers are thus served in the order they took tickets. A writer gives
//! up and writes without the lock only when the log has not moved (no line
//! written, no rotation) for a whole lock wait and no writer ahead of it in
//! the queue is runnable or reading the disk: a writer ahead has stopped,
//! rather than waiting for a CPU or its program's pages on a busy machine. Each ticket's process id is kept in
//! the queue file for that look (`/proc/PID/stat`).

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::sync::atomic::{AtomicU8, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError, mpsc};
use std::time::Duration;

use crate::sys::{flock, range_held, range_lock};

/// Why `work` ran without the lock, when it did.
pub type Unlocked = Option<String>;

const WAITING: u8 = 0;
const TAKEN: u8 = 1;
const ABANDONED: u8 = 2;

/// Ticket `t` owns the byte at `SLOTS + t % SLOT_SPAN` of the queue file
/// (a lock range only: what the file holds there does not matter).
const SLOTS: u64 = 8;
const SLOT_SPAN: u64 = 1 << 62;
/// Ticket `t`'s process id is stored as 4 bytes at `PIDS + 4 * (t % PID_RING)`.
const PIDS: u64 = 8;
const PID_RING: u64 = 1024;
/// The process taking a ticket right now (holding the queue's `flock`).
const TAKER: u64 = PIDS + 4 * PID_RING;
/// No ticket taken yet.
const NO_TICKET: u64 = u64::MAX;

/// How far a writer has got towards holding the lock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stage {
    Ticket,
    Predecessor,
    Lock,
    Held,
}

/// One writer's way to the lock: the queue (when there is one) and the lock file.
pub struct Turn {
    lock: File,
    queue: Option<File>,
    /// The ticket once taken, shared with the caller that watches the queue.
    ticket: Arc<AtomicU64>,
    stage: Stage,
}

impl Turn {
    /// A place in the queue `queue` (opened for reading and writing), then the lock on `lock`.
    pub fn queued(lock: File, queue: File) -> Turn {
        Turn {
            lock,
            queue: Some(queue),
            ticket: Arc::new(AtomicU64::new(NO_TICKET)),
            stage: Stage::Ticket,
        }
    }

    /// The lock on `lock` alone, with no place in the queue (a reader
    /// waiting for a moment when no writer writes).
    pub fn lock_only(lock: File) -> Turn {
        Turn {
            lock,
            queue: None,
            ticket: Arc::new(AtomicU64::new(NO_TICKET)),
            stage: Stage::Lock,
        }
    }

    /// Goes as far towards the lock as it can: without `block`, stops at
    /// the first step that would wait. `Ok(true)` once the lock is held.
    fn advance(&mut self, block: bool) -> io::Result<bool> {
        loop {
            match (self.stage, &self.queue) {
                (Stage::Ticket, Some(queue)) => {
                    if !flock(queue, libc::LOCK_EX, block)? {
                        return Ok(false);
                    }
                    let ticket = take_ticket(queue);
                    let _ = flock(queue, libc::LOCK_UN, true);
                    self.ticket.store(ticket?, Ordering::Release);
                    self.stage = Stage::Predecessor;
                }
                (Stage::Predecessor, Some(queue)) => {
                    let ticket = self.ticket.load(Ordering::Acquire);
                    if ticket > 0 {
                        let before = slot(ticket - 1);
                        if !range_lock(queue, libc::F_WRLCK, before, block)? {
                            return Ok(false);
                        }
                        range_lock(queue, libc::F_UNLCK, before, true)?;
                    }
                    self.stage = Stage::Lock;
                }
                (Stage::Ticket | Stage::Predecessor, None) => self.stage = Stage::Lock,
                (Stage::Lock, _) => {
                    if !flock(&self.lock, libc::LOCK_EX, block)? {
                        return Ok(false);
                    }
                    self.stage = Stage::Held;
                }
                (Stage::Held, _) => return Ok(true),
            }
        }
    }

    /// Lets the lock and the place in the queue go now, rather than at the
    /// last close of the files.
    fn release(&self) {
        let _ = flock(&self.lock, libc::LOCK_UN, true);
        if let Some(queue) = &self.queue
            && self.stage != Stage::Ticket
        {
            let ticket = self.ticket.load(Ordering::Acquire);
            let _ = range_lock(queue, libc::F_UNLCK, slot(ticket), true);
        }
    }

    /// What the caller keeps to look at the writers ahead while the turn
    /// is waited for on another thread.
    fn watch(&self) -> Option<Watch> {
        let queue = self.queue.as_ref()?.try_clone().ok()?;
        Some(Watch {
            queue,
            ticket: Arc::clone(&self.ticket),
        })
    }
}

/// The queue as seen by a writer waiting in it.
struct Watch {
    queue: File,
    ticket: Arc<AtomicU64>,
}

impl Watch {
    /// Whether a writer still ahead in the queue is a runnable process (or
    /// one reading the disk): it is only waiting for a CPU or a page, and
    /// the queue will move.
    fn ahead_runnable(&self) -> bool {
        let ticket = self.ticket.load(Ordering::Acquire);
        let mut pid = [0u8; 4];
        if ticket == NO_TICKET {
            // Still waiting to take a ticket: the one taking one now is ahead.
            return self.queue.read_exact_at(&mut pid, TAKER).is_ok()
                && runnable(u32::from_le_bytes(pid));
        }
        for ahead in (ticket.saturating_sub(PID_RING - 1)..ticket).rev() {
            // A free slot: that writer and (but for a writer that died) all
            // before it are done.
            if !matches!(range_held(&self.queue, slot(ahead)), Ok(true)) {
                return false;
            }
            if self
                .queue
                .read_exact_at(&mut pid, pid_offset(ahead))
                .is_ok()
                && runnable(u32::from_le_bytes(pid))
            {
                return true;
            }
        }
        false
    }
}

/// Whether a thread of process `pid` is running, waiting for a CPU or
/// waiting for the disk (state `R` or `D` in `/proc/PID/task/TID/stat`; a
/// process just started pages its program in). The writer's work may run
/// on a helper thread while its main thread sleeps.
fn runnable(pid: u32) -> bool {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return false;
    };
    tasks.flatten().any(|task| {
        std::fs::read(task.path().join("stat")).is_ok_and(|stat| {
            // The state follows the command name, which is in parentheses
            // and may hold anything, so look after the last `)`.
            stat.iter()
                .rposition(|&b| b == b')')
                .and_then(|end| stat.get(end + 2))
                .is_some_and(|&state| matches!(state, b'R' | b'D'))
        })
    })
}

/// Reads the counter, locks the first free slot from it, and stores the
/// next counter. Runs under the queue file's `flock`.
fn take_ticket(queue: &File) -> io::Result<u64> {
    let pid = std::process::id().to_le_bytes();
    // Hints for waiters behind (see `Watch`): a full disk must not keep a
    // writer from its turn.
    let _ = queue.write_all_at(&pid, TAKER);
    let mut bytes = [0u8; 8];
    let read = queue.read_at(&mut bytes, 0)?;
    let mut ticket = if read == 8 {
        u64::from_le_bytes(bytes)
    } else {
        0
    };
    // A slot already locked means the counter was set back (a copied or
    // edited file): skip to one nobody holds.
    while !range_lock(queue, libc::F_WRLCK, slot(ticket), false)? {
        ticket = ticket.wrapping_add(1);
    }
    let _ = queue.write_all_at(&pid, pid_offset(ticket));
    queue.write_all_at(&ticket.wrapping_add(1).to_le_bytes(), 0)?;
    Ok(ticket)
}

fn slot(ticket: u64) -> u64 {
    SLOTS + ticket % SLOT_SPAN
}

fn pid_offset(ticket: u64) -> u64 {
    PIDS + 4 * (ticket % PID_RING)
}

/// Runs `work` once: holding the lock after its turn (`work(None)`), or,
/// when the log did not move for a whole `wait` while this writer waited,
/// without it (`work(Some(why))`).
///
/// `moved` says whether the log changed since it was last asked; while it
/// keeps changing, writers ahead are being served and this one waits on.
/// When it did not change, this one waits on as long as a writer ahead of
/// it in the queue is runnable.
///
/// A turn that needs no wait is taken on this thread. Otherwise a helper
/// thread blocks in the kernel for it, so a waiter is woken the moment its
/// turn comes, and the helper runs `work` itself as soon as it has the
/// lock: the lock is never held while a second thread waits to be
/// scheduled.
///
/// The only error is a helper thread that took `work` and then died (a
/// panic inside `work`): there is no result to give back.
pub fn with_turn<T, F>(
    mut turn: Turn,
    wait: Duration,
    mut moved: impl FnMut() -> bool,
    work: F,
) -> io::Result<T>
where
    T: Send + 'static,
    F: FnOnce(Unlocked) -> T + Send + 'static,
{
    match turn.advance(false) {
        Ok(true) => return Ok(run_then_release(&turn, work)),
        Ok(false) => {}
        Err(e) => return Ok(work(Some(format!("the lock could not be taken: {e}")))),
    }
    let watch = turn.watch();
    let state = Arc::new(AtomicU8::new(WAITING));
    let work = Arc::new(Mutex::new(Some(work)));
    let (sender, receiver) = mpsc::sync_channel(1);
    let spawned = {
        let state = Arc::clone(&state);
        let work = Arc::clone(&work);
        std::thread::Builder::new()
            .name("chock-log-lock".into())
            .spawn(move || wait_then_run(turn, &state, &work, &sender))
    };
    if let Err(e) = spawned {
        return take(&work).map_or_else(
            || helper_result(&receiver),
            |work| Ok(work(Some(format!("the lock could not be waited for: {e}")))),
        );
    }
    moved();
    loop {
        match receiver.recv_timeout(wait) {
            Ok(result) => return Ok(result),
            Err(mpsc::RecvTimeoutError::Disconnected) => return helper_result(&receiver),
            Err(mpsc::RecvTimeoutError::Timeout)
                if moved() || watch.as_ref().is_some_and(Watch::ahead_runnable) => {}
            Err(mpsc::RecvTimeoutError::Timeout) => break,
        }
    }
    if state
        .compare_exchange(WAITING, ABANDONED, Ordering::AcqRel, Ordering::Acquire)
        .is_ok()
    {
        let why = format!(
            "the lock stayed held by another writer for {} ms while the log did not move",
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

/// The helper thread: waits for its turn, then runs `work` under the lock
/// unless the caller gave up first.
fn wait_then_run<T, F>(
    mut turn: Turn,
    state: &AtomicU8,
    work: &Mutex<Option<F>>,
    sender: &mpsc::SyncSender<T>,
) where
    F: FnOnce(Unlocked) -> T,
{
    let locked = turn.advance(true);
    let claimed = state
        .compare_exchange(WAITING, TAKEN, Ordering::AcqRel, Ordering::Acquire)
        .is_ok();
    if !claimed {
        // The caller wrote without the lock; let the turn go at once.
        turn.release();
        return;
    }
    let Some(work) = take(work) else { return };
    let result = match locked {
        Ok(_) => run_then_release(&turn, work),
        Err(e) => {
            turn.release();
            work(Some(format!("the lock could not be taken: {e}")))
        }
    };
    let _ = sender.send(result);
}

fn run_then_release<T>(turn: &Turn, work: impl FnOnce(Unlocked) -> T) -> T {
    let result = work(None);
    turn.release();
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    fn open(path: &std::path::Path) -> File {
        std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .read(true)
            .write(true)
            .open(path)
            .unwrap()
    }

    fn hold(path: &std::path::Path) -> File {
        let file = open(path);
        assert!(flock(&file, libc::LOCK_EX, false).unwrap());
        file
    }

    fn turn(dir: &std::path::Path) -> Turn {
        Turn::queued(open(&dir.join("l")), open(&dir.join("q")))
    }

    #[test]
    fn a_free_lock_runs_the_work_locked() {
        let dir = tempfile::tempdir().unwrap();
        let why = with_turn(turn(dir.path()), Duration::ZERO, || false, |why| why).unwrap();
        assert_eq!(why, None);
        // And it was let go afterwards, the queue too.
        drop(hold(&dir.path().join("l")));
        let why = with_turn(turn(dir.path()), Duration::ZERO, || false, |why| why).unwrap();
        assert_eq!(why, None);
    }

    #[test]
    fn a_held_lock_runs_the_work_unlocked_after_the_wait_then_frees() {
        let dir = tempfile::tempdir().unwrap();
        let holder = hold(&dir.path().join("l"));
        let started = Instant::now();
        let why = with_turn(
            turn(dir.path()),
            Duration::from_millis(200),
            || false,
            |why| why,
        )
        .unwrap();
        assert!(started.elapsed() >= Duration::from_millis(200));
        assert!(why.unwrap().contains("stayed held"));
        drop(holder);
        // The abandoned helper takes the lock and must let it go at once.
        let why = with_turn(
            turn(dir.path()),
            Duration::from_secs(2),
            || false,
            |why| why,
        )
        .unwrap();
        assert_eq!(why, None, "the abandoned helper released the lock");
    }

    #[test]
    fn a_waiter_waits_on_while_the_log_moves() {
        let dir = tempfile::tempdir().unwrap();
        let holder = hold(&dir.path().join("l"));
        let started = Instant::now();
        let release = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(500));
            drop(holder);
        });
        // Each look at the log says it moved: the 100 ms wait is not enough
        // to give up while writers ahead are being served.
        let why = with_turn(
            turn(dir.path()),
            Duration::from_millis(100),
            || true,
            |why| why,
        )
        .unwrap();
        release.join().unwrap();
        assert_eq!(why, None);
        assert!(started.elapsed() >= Duration::from_millis(500));
    }

    #[test]
    fn waiters_are_served_in_the_order_they_came() {
        let dir = tempfile::tempdir().unwrap();
        let holder = hold(&dir.path().join("l"));
        let order = Arc::new(Mutex::new(Vec::new()));
        let mut waiters = Vec::new();
        for n in 0..8 {
            let order = Arc::clone(&order);
            let turn = turn(dir.path());
            waiters.push(std::thread::spawn(move || {
                with_turn(
                    turn,
                    Duration::from_secs(10),
                    || false,
                    move |why| {
                        assert_eq!(why, None);
                        order.lock().unwrap().push(n);
                    },
                )
                .unwrap();
            }));
            // Each takes its ticket before the next one starts.
            std::thread::sleep(Duration::from_millis(30));
        }
        drop(holder);
        for waiter in waiters {
            waiter.join().unwrap();
        }
        assert_eq!(*order.lock().unwrap(), (0..8).collect::<Vec<_>>());
    }

    #[test]
    fn tickets_count_up_in_place_and_name_their_process() {
        let dir = tempfile::tempdir().unwrap();
        for _ in 0..3 {
            with_turn(turn(dir.path()), Duration::ZERO, || false, |_| ()).unwrap();
        }
        let queue = std::fs::read(dir.path().join("q")).unwrap();
        assert_eq!(queue[..8], 3u64.to_le_bytes(), "the counter at the start");
        let pid = std::process::id().to_le_bytes();
        assert_eq!(queue[8..12], pid, "ticket 0's process");
        assert_eq!(queue[16..20], pid, "ticket 2's process");
        assert_eq!(queue[TAKER as usize..], pid, "the last to take a ticket");
    }

    #[test]
    fn a_waiter_runs_the_work_as_soon_as_the_lock_is_released() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("l");
        let holder = hold(&path);
        let turn = turn(dir.path());
        let waiter = std::thread::spawn(move || {
            with_turn(
                turn,
                Duration::from_secs(5),
                || false,
                move |why| {
                    // Under the lock: nobody else may hold it now.
                    let probe = open(&path);
                    let free = flock(&probe, libc::LOCK_EX, false).unwrap();
                    (why, free)
                },
            )
            .unwrap()
        });
        std::thread::sleep(Duration::from_millis(50));
        drop(holder);
        let (why, probe_got_it) = waiter.join().unwrap();
        assert_eq!(why, None);
        assert!(!probe_got_it, "the work ran while the lock was held");
    }
}
