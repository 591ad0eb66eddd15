//! The memory bound. What the values of a program (lists, sets, strings,
//! environments, thunks, closures) take from the allocator is added to a
//! per-thread count and taken off when given back: a large block while it
//! lives, a 2 MiB chunk of small blocks from when it is taken until the
//! thread ends (`thin::allocate`). The evaluation runs on a thread of its
//! own, so the count is the memory held for its values (small blocks
//! freed and kept for reuse included); the evaluator compares it with
//! `max_memory` as it goes, and builtins that are about to build something
//! large check first.

use std::cell::Cell;

/// A transparent huge page: 2 MiB on every platform fix runs on (x86-64
/// and AArch64 with 4 KiB base pages). Small blocks come in chunks of this
/// size (`thin`), and the evaluation thread's stack asks for pages of it
/// (`stack`).
pub const HUGE_PAGE: usize = 2 << 20;

thread_local! {
    static LIVE: Cell<usize> = const { Cell::new(0) };
    static PEAK: Cell<usize> = const { Cell::new(0) };
}

#[inline]
pub fn allocated(bytes: usize) {
    let now = LIVE.with(|l| {
        let now = l.get().wrapping_add(bytes);
        l.set(now);
        now
    });
    PEAK.with(|p| {
        if now > p.get() {
            p.set(now);
        }
    });
}

#[inline]
pub fn freed(bytes: usize) {
    LIVE.with(|l| l.set(l.get().wrapping_sub(bytes)));
}

/// A builtin's working set: what it holds in Rust collections of its own
/// (`genericClosure`'s work list and the keys it has seen, the entries
/// `listToAttrs` sorts, the parts `concatStringsSep` joins, the copies
/// `sort` merges), which the values' allocator does not see. Counted as
/// held from [`Held::set`] until the guard is dropped, so the bound covers
/// it as it does values.
#[derive(Default)]
pub(crate) struct Held(usize);

impl Held {
    /// Counts `bytes` from now on, in place of what was counted before.
    #[inline]
    pub(crate) fn set(&mut self, bytes: usize) {
        if bytes >= self.0 {
            allocated(bytes - self.0);
        } else {
            freed(self.0 - bytes);
        }
        self.0 = bytes;
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        freed(self.0);
    }
}

/// A growable collection whose block [`Held`] can count.
pub(crate) trait Growable {
    /// Bytes of one element.
    const ELEMENT: usize;
    fn len(&self) -> usize;
    fn capacity(&self) -> usize;
    fn reserve_exact(&mut self, more: usize);
}

impl<T> Growable for Vec<T> {
    const ELEMENT: usize = std::mem::size_of::<T>();
    fn len(&self) -> usize {
        Vec::len(self)
    }
    fn capacity(&self) -> usize {
        Vec::capacity(self)
    }
    fn reserve_exact(&mut self, more: usize) {
        Vec::reserve_exact(self, more);
    }
}

impl<T> Growable for std::collections::VecDeque<T> {
    const ELEMENT: usize = std::mem::size_of::<T>();
    fn len(&self) -> usize {
        std::collections::VecDeque::len(self)
    }
    fn capacity(&self) -> usize {
        std::collections::VecDeque::capacity(self)
    }
    fn reserve_exact(&mut self, more: usize) {
        std::collections::VecDeque::reserve_exact(self, more);
    }
}

/// The most bytes held at one time by this thread's values (`--stats`).
pub fn peak() -> usize {
    PEAK.with(Cell::get)
}

/// Bytes held by values of this thread's evaluation.
pub fn live() -> usize {
    LIVE.with(Cell::get)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_working_set_is_counted_while_it_is_held() {
        let before = live();
        {
            let mut held = Held::default();
            held.set(1000);
            assert_eq!(live(), before + 1000);
            held.set(400);
            assert_eq!(live(), before + 400);
        }
        assert_eq!(live(), before);
    }

    #[test]
    fn counts_what_is_held() {
        let before = live();
        allocated(100);
        assert_eq!(live(), before + 100);
        assert!(peak() >= before + 100);
        freed(100);
        assert_eq!(live(), before);
    }
}
